"""``--const NAME=VALUE``: a model input bound to a value, baked into the shipped model.

A binding is resolved once against the loaded model (:func:`bind_consts`) and carried by the
``LoadedModel``; the bound input is no model input any more (not in the ONNX graph, the generated
wrappers, the golden vectors or the manifest's IO):

- PyTorch modules (TorchScript scripted or traced, pickles, state_dicts) are called through a wrapper
  that passes the value — a Python scalar for an ``int``/``float``/``bool`` argument, a tensor for a
  tensor one — so the exporter traces it in as a constant, and the reference runs the same wrapper;
- a ``.pt2``: an argument the program was exported with as a constant (an ``int`` given to
  ``torch.export``) is bound to its recorded value (a ``--const`` can only repeat it); any other bound
  input is passed to ``module()`` and becomes an initializer of the exported ONNX model;
- ONNX: the bound input becomes an initializer with the input's declared dtype and shape, and the source
  model (the reference) is fed the same value.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from mobilegen.artifacts import BoundConst as BoundConst
from mobilegen.artifacts import Recorded as Recorded
from mobilegen.artifacts import Scalar as Scalar
from mobilegen.artifacts import value_dtype
from mobilegen.errors import UsageError
from mobilegen.spec import IOSpec, TensorSpec, check_tensor_name

if TYPE_CHECKING:
    from mobilegen.artifacts import LoadedModel

Runner = Callable[[dict[str, np.ndarray]], list[np.ndarray]]

_HINT = "write NAME=VALUE with an int (--const sr=16000), a float (--const scale=0.5) or a bool (--const flag=true)"
_INT_RE = re.compile(r"[+-]?[0-9]{1,30}")
_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]{1,4})?")
_INT64 = (-(2**63), 2**63 - 1)


def format_value(value: Recorded) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else repr(value)


@dataclass(frozen=True)
class Const:
    """``--const NAME=VALUE``: input ``name`` bound to ``value`` (an int, a float or a bool)."""

    name: str
    value: Scalar

    def __post_init__(self) -> None:
        if not self.name:
            raise UsageError("--const has an empty NAME", hint=_HINT)
        check_tensor_name(self.name, "--const name")
        if not isinstance(self.value, (bool, int, float)):
            raise UsageError(f"--const {self.name}: {self.value!r} is not an int, a float or a bool", hint=_HINT)
        if isinstance(self.value, float) and not math.isfinite(self.value):
            raise UsageError(f"--const {self.name}={self.value}: the value is not a finite number", hint=_HINT)
        if isinstance(self.value, int) and not isinstance(self.value, bool) and not _INT64[0] <= self.value <= _INT64[1]:
            raise UsageError(f"--const {self.name}={self.value}: the value does not fit in 64 bits", hint=_HINT)

    @property
    def text(self) -> str:
        return f"{self.name}={format_value(self.value)}"


def parse_const(text: str) -> Const:
    """``NAME=VALUE``: ``true``/``false``, an integer (``16000``, ``-3``) or a decimal number
    (``0.5``, ``1e-3``); nothing else (no ``0x10``, ``1_000``, ``nan``, ``yes``)."""
    name, eq, raw = text.partition("=")
    value_text = raw.strip()
    if not eq or not name.strip() or not value_text:
        raise UsageError(f"malformed --const {text!r}", hint=_HINT)
    if value_text in ("true", "True"):
        return Const(name.strip(), True)
    if value_text in ("false", "False"):
        return Const(name.strip(), False)
    if _INT_RE.fullmatch(value_text):
        return Const(name.strip(), int(value_text))
    if _FLOAT_RE.fullmatch(value_text):
        return Const(name.strip(), float(value_text))
    raise UsageError(f"--const {text!r}: {value_text!r} is not an int, a float or true/false", hint=_HINT)


def check_consts(consts: Sequence[Const], input_names: Sequence[str]) -> None:
    """Each name bound once, and not also given an ``--input`` shape (before any heavy work)."""
    wrong = [c for c in consts if not isinstance(c, Const)]
    if wrong:
        raise UsageError(f"ModelOptions.consts holds {wrong[0]!r}, not a Const", hint="pass mobilegen.export.const_inputs.Const(name, value) or parse_const('NAME=VALUE')")
    names = [c.name for c in consts]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UsageError(f"--const {dupes[0]!r} is given more than once", hint="bind each input once")
    both = [n for n in names if n in input_names]
    if both:
        raise UsageError(
            f"input {both[0]!r} is given both --input and --const",
            hint=f"drop --input {both[0]} (a bound input is no model input any more) or drop --const {both[0]}",
        )


@dataclass(frozen=True)
class _Arg:
    """One input of the model as it declares it."""

    name: str
    kind: str  # "tensor", "scalar", "any" (an unannotated Python argument), "recorded", "other"
    type_text: str = ""  # the declared type, for messages ("int", "List[int]", ...)
    scalar: str | None = None  # "int" / "float" / "bool" for kind "scalar"
    spec: TensorSpec | None = None  # a tensor's recorded dtype and shape, when known
    default: Recorded = None  # a scalar's default (TorchScript), or a .pt2's recorded value
    has_default: bool = False


_value_dtype = value_dtype


def _scalar_type(text: str) -> str | None:
    t = text.strip().removeprefix("Optional[").removesuffix("]").strip()
    return t if t in ("int", "float", "bool") else None


def model_args(loaded: LoadedModel) -> list[_Arg]:
    """Every input the model declares (bound ones included), in order."""
    hinted = {t.name: t for t in loaded.io_hint.inputs} if loaded.io_hint else {}
    if loaded.kind == "onnx":
        return [_Arg(t.name, "tensor", t.dtype, spec=t) for t in hinted.values()]
    if loaded.kind == "torchscript":
        return [_schema_arg(a, hinted.get(a.name)) for a in loaded.module.forward.schema.arguments[1:]]
    if loaded.kind == "exported_program":
        return _program_args(loaded.module, hinted)
    if loaded.module is None:
        return []
    return [_python_arg(p, hinted.get(p.name)) for p in _positional(loaded.module)]


def _schema_arg(a: Any, spec: TensorSpec | None) -> _Arg:
    text = str(a.type)
    default = a.default_value if a.has_default_value() else None
    if text in ("Tensor", "Optional[Tensor]"):
        return _Arg(a.name, "tensor", text, spec=spec)
    scalar = _scalar_type(text)
    if scalar is not None:
        usable = isinstance(default, (bool, int, float))
        return _Arg(a.name, "scalar", text, scalar, default=default if usable else None, has_default=usable)
    return _Arg(a.name, "other", text)


def _positional(module: Any) -> list[inspect.Parameter]:
    sig = inspect.signature(module.forward)
    return [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _python_arg(p: inspect.Parameter, spec: TensorSpec | None) -> _Arg:
    ann = p.annotation
    text = ann if isinstance(ann, str) else getattr(ann, "__name__", "") if ann is not inspect.Parameter.empty else ""
    has_default = p.default is not inspect.Parameter.empty
    if text in ("Tensor", "torch.Tensor"):
        return _Arg(p.name, "tensor", text, spec=spec, has_default=has_default)
    scalar = _scalar_type(text) if text else None
    if scalar is not None:
        return _Arg(p.name, "scalar", text, scalar, has_default=has_default)
    return _Arg(p.name, "any", text, spec=spec, has_default=has_default)


def _program_args(ep: Any, hinted: Mapping[str, TensorSpec]) -> list[_Arg]:
    from torch.export.graph_signature import (
        ConstantArgument,
        InputKind,
        SymBoolArgument,
        SymFloatArgument,
        SymIntArgument,
        TensorArgument,
    )

    scalar_kinds = ((SymIntArgument, "int"), (SymFloatArgument, "float"), (SymBoolArgument, "bool"))
    out = []
    for s in ep.graph_signature.input_specs:
        if s.kind != InputKind.USER_INPUT:
            continue
        arg = s.arg
        if isinstance(arg, TensorArgument):
            out.append(_Arg(arg.name, "tensor", "Tensor", spec=hinted.get(arg.name)))
        elif isinstance(arg, ConstantArgument) and (arg.value is None or isinstance(arg.value, (bool, int, float, str))):
            out.append(_Arg(arg.name, "recorded", type(arg.value).__name__, default=arg.value, has_default=True))
        elif (scalar := next((t for cls, t in scalar_kinds if isinstance(arg, cls)), None)) is not None:
            out.append(_Arg(arg.name, "scalar", scalar, scalar))
        else:
            out.append(_Arg(getattr(arg, "name", "?"), "other", type(arg).__name__))
    return out


def bind_consts(loaded: LoadedModel, consts: Sequence[Const]) -> LoadedModel:
    """The model with ``consts`` bound (idempotent: binding again what is bound changes nothing). A
    ``.pt2``'s constant arguments and a TorchScript scalar argument's default are bound as well; an
    unbound Python scalar argument is refused, naming the ``--const`` to give."""
    if loaded.kind == "ort" or (loaded.module is None and loaded.kind != "onnx"):
        return loaded
    args = model_args(loaded)
    by_name = {a.name: a for a in args}
    bound = {b.name: b for b in loaded.consts}
    for c in consts:
        if c.name in bound:
            _same_binding(bound[c.name], c, loaded)
            continue
        arg = by_name.get(c.name)
        if arg is None:
            names = [a.name for a in args if a.name not in bound]
            raise UsageError(
                f"--const {c.text}: {loaded.source.name} has no input {c.name!r}",
                hint=f"its inputs are: {', '.join(names) or 'none'}",
            )
        if arg.kind == "recorded":  # exported as a constant: a --const can only repeat its value
            bound[c.name] = BoundConst(arg.name, arg.default, "recorded")
            _same_binding(bound[c.name], c, loaded)
            continue
        bound[c.name] = _bind(arg, c, loaded)
    for a in args:
        if a.name in bound:
            continue
        if a.kind == "recorded":
            bound[a.name] = BoundConst(a.name, a.default, "recorded")
        elif a.kind == "scalar" and a.has_default and a.default is not None:
            bound[a.name] = BoundConst(a.name, a.default, "scalar")
        elif a.kind in ("scalar", "other") and not a.has_default:
            raise UsageError(
                f"input {a.name!r} of {loaded.source.name} is a Python {a.type_text or a.kind} argument, not a tensor",
                hint=f"give its value with --const {a.name}=VALUE" if a.kind == "scalar" else "mobilegen can only bind int, float and bool arguments: wrap the model so it takes tensors",
            )
    declared = {a.name for a in args}  # an ONNX model's bound inputs are gone from its io_hint
    ordered = tuple(bound[a.name] for a in args if a.name in bound) + tuple(b for n, b in bound.items() if n not in declared)
    if ordered == loaded.consts:
        return loaded
    hint = loaded.io_hint
    if hint is not None:
        hint = IOSpec(inputs=tuple(t for t in hint.inputs if t.name not in bound), outputs=hint.outputs)
    return replace(loaded, consts=ordered, io_hint=hint)


def _same_binding(b: BoundConst, c: Const, loaded: LoadedModel) -> None:
    if b.value == c.value and isinstance(b.value, bool) == isinstance(c.value, bool):
        return
    if b.kind == "recorded":
        raise UsageError(
            f"--const {c.text}: {loaded.source.name} was exported with {c.name}={format_value(b.value)} as a constant "
            "(an int given to torch.export is baked into the program), so it cannot be bound to another value",
            hint=f"drop --const {c.name} (the program uses {format_value(b.value)}), or re-export the model with {c.text}",
        )
    raise UsageError(f"--const {c.text}: {c.name!r} is bound to {format_value(b.value)} already", hint="bind each input once")


def _bind(arg: _Arg, c: Const, loaded: LoadedModel) -> BoundConst:
    what = f"--const {c.text}"
    if arg.kind == "other":
        raise UsageError(f"{what}: input {arg.name!r} is a {arg.type_text}, not an int, float, bool or tensor", hint="bind only scalar or tensor inputs")
    if arg.kind == "scalar":
        return BoundConst(arg.name, _coerce(c, arg.scalar or "", f"{what}: input {arg.name!r} is a Python {arg.scalar}"), "scalar")
    if arg.kind == "any" and arg.spec is None:  # an unannotated Python argument: the value as written
        return BoundConst(arg.name, c.value, "scalar")
    spec = arg.spec
    dtype = spec.dtype if spec is not None else _value_dtype(c.value)
    if spec is not None and spec.dynamic_dims:
        raise UsageError(
            f"{what}: input {arg.name!r} has the dynamic shape {spec.shape_str()}; a bound input needs a fixed shape",
            hint="bind scalar or fixed-shape inputs only",
        )
    try:
        kind = np.dtype(dtype).kind
    except TypeError:
        raise UsageError(f"{what}: input {arg.name!r} is {dtype}, which mobilegen cannot make a constant of", hint="bind numeric or bool inputs only") from None
    expected = {"b": "bool", "i": "int", "u": "int", "f": "float"}.get(kind)
    if expected is None:
        raise UsageError(f"{what}: input {arg.name!r} is {dtype}, which mobilegen cannot make a constant of", hint="bind numeric or bool inputs only")
    value = _coerce(c, expected, f"{what}: input {arg.name!r} holds {dtype}")
    if kind in "iu":
        info = np.iinfo(np.dtype(dtype))
        if not int(info.min) <= int(value) <= int(info.max):
            raise UsageError(f"{what}: {value} does not fit input {arg.name!r} ({dtype}: {info.min}..{info.max})", hint="give a value its dtype holds")
    shape = tuple(int(d) for d in spec.shape) if spec is not None else ()
    return BoundConst(arg.name, value, "tensor", dtype, shape)


def _coerce(c: Const, expected: str, what: str) -> Scalar:
    """The value as the input's type takes it: an int for int, an int or a float for float, a bool for bool."""
    v = c.value
    if expected == "bool" and isinstance(v, bool):
        return v
    if expected == "int" and isinstance(v, int) and not isinstance(v, bool):
        return v
    if expected == "float" and isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    give = {"bool": "true or false", "int": "an integer", "float": "a number"}[expected]
    raise UsageError(f"{what}, {format_value(v)} is not {give}", hint=f"give {give}, e.g. --const {c.name}={ {'bool': 'true', 'int': '1', 'float': '0.5'}[expected]}")


# ---- applying a binding -------------------------------------------------------------------------


def bound_callable(fn: Any, loaded: LoadedModel, free: Sequence[str]) -> Any:
    """``fn`` called with the free inputs (``free``, in order) and the bound values in their places;
    ``fn`` itself when nothing is bound. The wrapper is an ``nn.Module`` whose ``forward`` declares the
    free inputs, so ``torch.export`` takes it (and its ``dynamic_shapes`` by name) like the model."""
    if not loaded.consts:
        return fn
    import torch

    order = [a.name for a in model_args(loaded)]
    values = {b.name: b.torch_value() for b in loaded.consts}
    names = list(free)

    def forward(self: Any, *args: Any) -> Any:
        merged = {**dict(zip(names, args, strict=True)), **values}
        positional: list[Any] = []
        for n in order:
            if n not in merged:
                break
            positional.append(merged.pop(n))
        return self.inner(*positional, **merged)

    P = inspect.Parameter
    forward.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [P("self", P.POSITIONAL_OR_KEYWORD)] + [P(n, P.POSITIONAL_OR_KEYWORD) for n in names]
    )

    def init(self: Any) -> None:
        torch.nn.Module.__init__(self)
        self.inner = fn

    cls = type("BoundInputs", (torch.nn.Module,), {"__init__": init, "forward": forward, "mobilegen_bound": True})
    return cls()


def for_torchscript_exporter(fn: Any, args: tuple[Any, ...]) -> Any:
    """The TorchScript exporter cannot trace a Python module that calls a scripted one: a bound
    TorchScript model is traced first (the script keeps its control flow; the bound values are constants)."""
    import torch

    if getattr(fn, "mobilegen_bound", False) and isinstance(fn.inner, torch.jit.ScriptModule):
        return torch.jit.trace(fn, args, check_trace=False, strict=False)  # type: ignore[no-untyped-call]
    return fn


def program_input_names(ep: Any) -> list[str]:
    """The ONNX inputs the exporter makes of a ``.pt2``: its user inputs, without its constant arguments."""
    from torch.export.graph_signature import ConstantArgument, InputKind

    return [s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT and not isinstance(s.arg, ConstantArgument)]


def bind_onnx_inputs(model: Any, consts: Sequence[BoundConst]) -> Any:
    """Each bound input that is a graph input becomes an initializer of the input's declared dtype and
    shape (a scalar when it declares none); returns ``model``, changed in place."""
    from onnx import helper, numpy_helper

    wanted = {b.name: b for b in consts if b.kind != "recorded"}
    inits = {i.name for i in model.graph.initializer}
    for vi in [v for v in model.graph.input if v.name in wanted and v.name not in inits]:
        tt = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        if any(d is None for d in dims):
            raise UsageError(
                f"--const {vi.name}: the model's input {vi.name!r} has a dynamic shape; a bound input needs a fixed shape",
                hint="bind scalar or fixed-shape inputs only",
            )
        dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        array = np.full([int(d) for d in dims if d is not None], wanted[vi.name].value, dtype=dtype)
        model.graph.input.remove(vi)
        model.graph.initializer.append(numpy_helper.from_array(array, vi.name))
    if wanted:
        model.ir_version = max(model.ir_version, 4)  # initializers that are not inputs
    return model


def with_const_feeds(run: Runner, loaded: LoadedModel) -> Runner:
    """An onnxruntime runner of the source ONNX model that is fed the bound inputs too."""
    feeds = {b.name: b.array() for b in loaded.consts if b.kind == "tensor"}
    if not feeds:
        return run
    return lambda arrays: run({**arrays, **feeds})

