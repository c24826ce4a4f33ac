"""LoadedModel → OnnxModel: the torch.export-based exporter first, the TorchScript exporter as the
fallback (with the reason), weights inlined into one file, checker + shape inference.
"""

from __future__ import annotations

import inspect
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mobilegen.artifacts import LoadedModel, OnnxModel
from mobilegen.errors import ExportError, LoadError, UsageError, first_line, shorten
from mobilegen.export import const_inputs as bindings
from mobilegen.export import onnx_io as onnx_light
from mobilegen.export.errors import export_failed, fallback_of, unknown_shapes
from mobilegen.export.limits import (
    MAX_EXAMPLE_BYTES,
    refuse_too_large,
)
from mobilegen.infra.quiet import quiet
from mobilegen.load.loader import check_program_inputs
from mobilegen.spec import IOSpec, TensorSpec, check_tensor_name, onnx_io_spec, rename_shared_dims

if TYPE_CHECKING:
    from mobilegen.export.errors import Fallback



@dataclass(frozen=True)
class ExportOptions:
    inputs: tuple[TensorSpec, ...] = ()  # from --input (may carry named dynamic dims)
    example_sizes: tuple[tuple[str, int], ...] = ()  # example size per named dim (from --input / --dynamic)
    opset: int | None = None
    output_names: tuple[str, ...] = ()
    dynamic_given: bool = False  # --dynamic was used (it re-traces, so it only applies to PyTorch models)
    consts: tuple[bindings.Const, ...] = ()  # --const: inputs bound to a value (mobilegen.export.const_inputs)

    def __post_init__(self) -> None:
        """--output-name values are refused before any work (they are only applied after the export)."""
        for name in self.output_names:
            if not name:
                raise UsageError("--output-name is empty", hint="give every output a name")
            check_tensor_name(name, "--output-name")
        dupes = sorted({n for n in self.output_names if self.output_names.count(n) > 1})
        if dupes:
            raise UsageError(f"--output-name {dupes[0]!r} is given more than once", hint="give each output its own name")


def forward_arg_names(loaded: LoadedModel) -> list[str]:
    """The model's inputs, in order, without the ones bound to a value (``--const``)."""
    bound = {c.name for c in loaded.consts}
    return [n for n in _declared_arg_names(loaded) if n not in bound]


def _declared_arg_names(loaded: LoadedModel) -> list[str]:
    m = loaded.module
    if loaded.kind == "torchscript":
        return [a.name for a in m.forward.schema.arguments[1:]]
    if loaded.kind == "exported_program":
        return [t.name for t in loaded.io_hint.inputs] if loaded.io_hint else []
    sig = inspect.signature(m.forward)
    return [
        p.name
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is inspect.Parameter.empty
    ]


def resolve_inputs(loaded: LoadedModel, user: tuple[TensorSpec, ...], sizes: dict[str, int]) -> tuple[list[TensorSpec], dict[str, int]]:
    """The input specs to export with: user --input checked against the model, else the artifact's own."""
    check_program_inputs(loaded, user)  # a .pt2's recorded shapes and dim ranges, before any export
    names = forward_arg_names(loaded)
    hint = loaded.io_hint
    given = set(sizes)
    sizes = {**loaded.example_sizes, **sizes}
    if not user:
        if hint is None or not hint.inputs:
            raise unknown_shapes(loaded, names)
        return list(hint.inputs), sizes
    by_name = {s.name: s for s in user}
    if names:
        unknown = [n for n in by_name if n not in names]
        if unknown:
            raise UsageError(
                f"--input names {', '.join(map(repr, unknown))}, which the model does not take",
                hint=f"the model's inputs are: {', '.join(names)}",
            )
        missing = [n for n in names if n not in by_name and not (hint and any(t.name == n for t in hint.inputs))]
        if missing:
            raise UsageError(f"no --input for model input(s) {', '.join(map(repr, missing))}", hint=f"add --input {missing[0]}:SHAPE[:DTYPE]")
    specs: list[TensorSpec] = []
    hinted = {t.name: t for t in hint.inputs} if hint else {}
    for n in names or list(by_name):
        spec = by_name.get(n) or hinted[n]
        known = hinted.get(n)
        if known is not None and spec is not known:
            match_model_input(spec, known, sizes)
            # A named dim stays dynamic under the user's name when given one (`--input ids:1xseq`), else the model's.
            for d_user, d_model in zip(spec.shape, known.shape, strict=True):
                if isinstance(d_user, str) and isinstance(d_model, str) and d_model in sizes:
                    sizes.setdefault(d_user, sizes[d_model])
            spec = replace(
                spec,
                shape=tuple(
                    (du if isinstance(du, str) else dm) if isinstance(dm, str) else du
                    for du, dm in zip(spec.shape, known.shape, strict=True)
                ),
            )
        specs.append(spec)
    return rename_shared_dims(specs, hinted, sizes, given)


def match_model_input(user: TensorSpec, known: TensorSpec, sizes: dict[str, int]) -> None:
    """Refuse a ``--input`` whose rank, dtype or fixed dims contradict what the model records; sizes
    given for the model's named dims become their example sizes (in ``sizes``)."""
    n = user.name
    if len(known.shape) != len(user.shape):
        raise UsageError(
            f"--input {n} has rank {len(user.shape)} ({user.shape_str()}), the model's {n!r} has rank {len(known.shape)} ({known.shape_str()})",
            hint=f"give {len(known.shape)} dims",
        )
    if known.dtype != user.dtype:
        raise UsageError(f"--input {n} has dtype {user.dtype}, the model's {n!r} is {known.dtype}", hint=f"use :{known.dtype}")
    for d_user, d_model in zip(user.shape, known.shape, strict=True):
        if isinstance(d_user, int) and isinstance(d_model, int) and d_user != d_model:
            raise UsageError(
                f"--input {n} shape {user.shape_str()} does not match the model's fixed shape {known.shape_str()}",
                hint=f"use --input {n}:{known.shape_str()}",
            )
        if isinstance(d_model, str) and isinstance(d_user, int):
            sizes[d_model] = d_user


def example_arrays(specs: list[TensorSpec] | tuple[TensorSpec, ...], sizes: dict[str, int], seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded inputs: normal floats, small non-negative ints (valid ids/indices for any vocabulary), bools."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for s in specs:
        shape = s.concrete_shape(sizes)
        if s.dtype.startswith("float") or s.dtype == "bfloat16":
            out[s.name] = rng.standard_normal(shape).astype(s.dtype if s.dtype != "bfloat16" else "float32")
        elif s.dtype == "bool":
            out[s.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            out[s.name] = rng.integers(0, 2, shape).astype(s.dtype)
    return out


def torch_callable(loaded: LoadedModel) -> Any:
    """The model as a callable of its free inputs (bound ones are passed by a wrapper, mobilegen.export.const_inputs)."""
    return bindings.bound_callable(_torch_module(loaded), loaded, forward_arg_names(loaded))


def _torch_module(loaded: LoadedModel) -> Any:
    if loaded.kind == "exported_program":
        try:
            return loaded.module.module()
        except Exception as err:  # noqa: BLE001 — torch rebuilds the module from the archive's graph and sample inputs; an inconsistent archive fails in any way
            raise LoadError(
                f"torch cannot rebuild the program in {loaded.source.name} as a module: {first_line(err)}",
                hint="the archive is damaged or inconsistent; re-save the model with torch.export.save",
            ) from err
    return loaded.module


def refuse_large_examples(specs: list[TensorSpec], sizes: dict[str, int], source: Path, user: tuple[TensorSpec, ...]) -> None:
    """The seeded example inputs stay under the limit also when the model's own recorded shapes set them
    (``ModelOptions`` checks the ``--input`` shapes alone): a model whose input is fixed at 2**40 elements
    is refused before any work, not left to fail in numpy."""

    def nbytes(s: TensorSpec) -> int:
        try:
            itemsize = np.dtype(s.dtype if s.dtype != "bfloat16" else "float32").itemsize
        except TypeError:  # a dtype numpy does not know ("onnx:N"): refused later, counted as 8 bytes here
            itemsize = 8
        return math.prod(s.concrete_shape(sizes)) * itemsize

    total = sum(nbytes(s) for s in specs)
    if total <= MAX_EXAMPLE_BYTES:
        return
    big = max(specs, key=nbytes)
    shape = "x".join(map(str, big.concrete_shape(sizes)))
    what = f"the example inputs of {source.name} would take {total / 2**30:.1f} GiB per run (input {big.name!r} is {shape})"
    limit = f"the limit is {MAX_EXAMPLE_BYTES // 2**30} GiB"
    if any(u.name == big.name for u in user):
        raise UsageError(what, hint=f"use a smaller --input shape (mark large axes dynamic with a name); {limit}")
    raise LoadError(
        f"{what}: the model records that shape",
        hint=f"give the large axes a name in the model (a dynamic dim) and pass a smaller size with --input; {limit}",
    )


def _export_program(
    loaded: LoadedModel, args: tuple[Any, ...], names: list[str], dyn: dict[str, dict[int, str]], opset: int | None, out_path: Path
) -> tuple[Any, str, Fallback | None]:
    """(ONNX model, exporter used, why the fallback was used). torch.export first; a module it fails on
    falls back to the TorchScript exporter, a TorchScript file goes there directly (its exporter by design,
    not a fallback), a .pt2 never does (its program has no TorchScript form). A failure names the primary
    exporter's innermost cause first."""
    primary: BaseException | None = None
    if loaded.kind != "torchscript":
        try:
            return _export_dynamo(loaded, args, names, dyn, opset), "dynamo", None
        except Exception as err:  # noqa: BLE001 — any exporter failure is reported (or falls back) with its cause
            if loaded.kind == "exported_program":
                raise export_failed(loaded.source.name, loaded.kind, err, None) from err
            primary = err
    try:
        model = _export_torchscript(loaded, args, names, dyn, opset, out_path)
    except Exception as err:  # noqa: BLE001
        # --debug shows the cause's traceback: torch.export's when it failed first.
        raise export_failed(loaded.source.name, loaded.kind, primary, err) from (primary or err)
    return model, "torchscript", fallback_of(primary) if primary is not None else None


def export_pytorch(loaded: LoadedModel, options: ExportOptions, out_path: Path, *, write: bool = True, torchscript_only: bool = False) -> OnnxModel:
    """A PyTorch model (its ``--const`` inputs bound) to ``out_path`` (a single self-contained .onnx): see
    :func:`mobilegen.export.stage.export_onnx`. ``torchscript_only``: a module goes to the TorchScript
    exporter directly (mobilegen.export.advice compares the two)."""
    import torch

    specs, sizes = resolve_inputs(loaded, options.inputs, dict(options.example_sizes))
    for s in specs:  # named dims nobody gave a size for
        for axis, d in enumerate(s.shape):
            if isinstance(d, str):
                sizes.setdefault(d, default_dim_size(axis))
    refuse_large_examples(specs, sizes, loaded.source, options.inputs)
    arrays = example_arrays(specs, sizes)
    args = tuple(torch.from_numpy(arrays[s.name]) for s in specs)
    names = [s.name for s in specs]
    dyn = {s.name: {i: d for i, d in enumerate(s.shape) if isinstance(d, str)} for s in specs}
    dyn = {k: v for k, v in dyn.items() if v}

    if not _traced_with(loaded, options.inputs, specs):
        _check_example_run(loaded, specs, args)
    else:
        _torch_module(loaded)  # no forward pass, but an archive torch cannot rebuild is still refused here (exit 3)

    if torchscript_only and loaded.kind in ("pickle", "state_dict"):
        program_model, exporter, fallback = _export_torchscript(loaded, args, names, dyn, options.opset, out_path), "torchscript", None
    else:
        program_model, exporter, fallback = _export_program(loaded, args, names, dyn, options.opset, out_path)
    model = bindings.bind_onnx_inputs(program_model, loaded.consts)  # a .pt2's bound inputs (modules had them traced in)
    del program_model  # one reference: finish_model's result replaces it (see finish_model)
    if loaded.kind == "exported_program":
        specs = _pin_program_dims(model, specs, options.inputs, sizes)
    _rename_dims(model, specs)
    rename_outputs(model, options.output_names)
    model = finish_model(model, out_path, source=None, write=False)
    if write:  # after the exported proto is gone (its memory is freed only with the whole message)
        save_onnx(model, out_path)
    io_spec = _onnx_io(model)
    specialised: list[str] = []
    static_now = [s for s in io_spec.inputs if s.is_static]
    for s in specs:
        if s.dynamic_dims and any(t.name == s.name for t in static_now):
            specialised.append(f"the exporter specialised the dynamic dims of {s.name!r}: the ONNX input is fixed-size")
    return OnnxModel(
        path=out_path,
        io=io_spec,
        opset=opset_of(model),
        exporter=exporter,
        fallback_reason=fallback.reason if fallback else None,
        fallback_cause=fallback.cause if fallback else "",
        example_sizes={k: v for k, v in sizes.items()},
        notes=tuple(specialised),
        proto=model,
    )


def _traced_with(loaded: LoadedModel, user: tuple[TensorSpec, ...], specs: list[TensorSpec]) -> bool:
    """A ``.pt2`` exported with inputs of exactly these (static) shapes and dtypes, no ``--input`` given:
    the program was traced on such inputs, so running it once more only to see them accepted is skipped
    (a forward pass of the whole model: seconds on a large one). The verification runs it on every case
    anyway, and reports a failure there."""
    return loaded.kind == "exported_program" and not user and not loaded.consts and bool(specs) and all(s.is_static for s in specs)


def _check_example_run(loaded: LoadedModel, specs: list[TensorSpec], args: tuple[Any, ...]) -> None:
    """Run the model once on the example inputs: a model that rejects them is a usage error (wrong
    ``--input`` names, shapes or dtypes), said before the export."""
    import torch

    fn = torch_callable(loaded)
    with torch.no_grad():
        try:
            with quiet():
                fn(*args)
        except Exception as err:
            raise UsageError(
                "the model rejected the example inputs "
                + ", ".join(f"{s.name}:{'x'.join(map(str, a.shape))}:{s.dtype}" for s, a in zip(specs, args, strict=True))
                + f": {shorten(str(err).strip().splitlines()[-1]) if str(err).strip() else type(err).__name__}",
                hint="check --input names, shapes and dtypes against what the model's forward expects",
            ) from err


def _export_dynamo(loaded: LoadedModel, args: tuple[Any, ...], names: list[str], dyn: dict[str, dict[int, str]], opset: int | None) -> Any:
    import torch

    kwargs: dict[str, Any] = {"dynamo": True, "external_data": False, "verbose": False, "input_names": names}
    if opset is not None:
        kwargs["opset_version"] = opset
    if loaded.kind == "exported_program":
        target = loaded.module
        kwargs["input_names"] = bindings.program_input_names(target)  # bound inputs too: they are bound in the ONNX model
        with quiet():
            prog = torch.onnx.export(target, **kwargs)
    else:
        if dyn:
            kwargs["dynamic_shapes"] = {n: {ax: torch.export.Dim.DYNAMIC for ax in dyn[n]} if n in dyn else None for n in names}
        with quiet():
            prog = torch.onnx.export(torch_callable(loaded), args, **kwargs)
    if prog is None:
        raise RuntimeError("the exporter returned no program")
    return prog.model_proto


def _export_torchscript(
    loaded: LoadedModel, args: tuple[Any, ...], names: list[str], dyn: dict[str, dict[int, str]], opset: int | None, out_path: Path
) -> Any:
    import onnx
    import torch

    tmp = out_path.with_name(out_path.name + ".ts-export")
    try:
        with quiet():
            torch.onnx.export(
                bindings.for_torchscript_exporter(torch_callable(loaded), args),
                args,
                str(tmp),
                dynamo=False,
                input_names=names,
                dynamic_axes={n: dict(d) for n, d in dyn.items()} or None,
                opset_version=opset or 20,
                do_constant_folding=True,
            )
        return onnx.load_model(str(tmp), load_external_data=True)
    finally:
        tmp.unlink(missing_ok=True)
        for extra in tmp.parent.glob(tmp.name + "*"):
            extra.unlink(missing_ok=True)


def _pin_program_dims(model: Any, specs: list[TensorSpec], user: tuple[TensorSpec, ...], sizes: dict[str, int]) -> list[TensorSpec]:
    """A ``.pt2`` keeps the dynamic dims it was exported with (torch.onnx.export takes the program as it
    is): a size the user gave for one of them (``--input x:1x128`` where the program has ``x_dim1``)
    fixes it in the ONNX model, as it would for a module or TorchScript input. The exporter's symbol
    becomes the size in every shape of every graph; a shape expression over it (``16*s27``) is cleared
    and inferred again (finish_model). The range and shared-dim checks ran before the export
    (``load.check_program_inputs``). Returns the specs with those dims fixed."""
    from onnxruntime.tools.onnx_model_utils import iterate_graph_per_graph_func

    given = {u.name: u for u in user}
    symbols: dict[str, int] = {}  # the exporter's symbol (s27) and mobilegen's name (x_dim1) -> size
    graph_inputs = {vi.name: vi for vi in model.graph.input}
    for s in specs:
        u, vi = given.get(s.name), graph_inputs.get(s.name)
        if u is None or len(u.shape) != len(s.shape):
            continue
        dims = vi.type.tensor_type.shape.dim if vi is not None else ()
        for axis, (du, ds) in enumerate(zip(u.shape, s.shape, strict=True)):
            if isinstance(du, int) and isinstance(ds, str):
                symbols[ds] = sizes[ds] = du
                if axis < len(dims) and dims[axis].dim_param:
                    symbols[dims[axis].dim_param] = du
    if not symbols:
        return specs
    token = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

    def pin(graph: Any) -> None:
        for coll in (graph.input, graph.output, graph.value_info):
            for v in coll:
                if not v.type.HasField("tensor_type"):
                    continue
                for d in v.type.tensor_type.shape.dim:
                    if not d.dim_param:
                        continue
                    if d.dim_param in symbols:
                        size = symbols[d.dim_param]
                        d.Clear()
                        d.dim_value = size
                    elif any(t in symbols for t in token.findall(d.dim_param)):
                        d.Clear()  # an expression over a fixed dim: shape inference gives its size

    iterate_graph_per_graph_func(model.graph, pin)
    return [replace(s, shape=tuple(symbols.get(d, d) if isinstance(d, str) else d for d in s.shape)) for s in specs]


def _rename_dims(model: Any, specs: list[TensorSpec]) -> None:
    """Give the exporter's symbols (s27, ...) the user's names for dynamic dims, everywhere in the graph."""
    mapping: dict[str, str] = {}
    by_name = {s.name: s for s in specs}
    for vi in model.graph.input:
        s = by_name.get(vi.name)
        if s is None:
            continue
        for d, want in zip(vi.type.tensor_type.shape.dim, s.shape, strict=False):
            if d.dim_param and isinstance(want, str) and d.dim_param != want:
                mapping.setdefault(d.dim_param, want)
    if not mapping:
        return
    for coll in (model.graph.input, model.graph.output, model.graph.value_info):
        for vi in coll:
            for d in vi.type.tensor_type.shape.dim:
                if d.dim_param in mapping:
                    d.dim_param = mapping[d.dim_param]


def rename_outputs(model: Any, wanted: tuple[str, ...]) -> None:
    outs = list(model.graph.output)
    if wanted:
        if len(wanted) != len(outs):
            raise rename_outputs_count_error(len(wanted), len(outs))
        _check_output_names(model, wanted)
        new = list(wanted)
    elif any(o.name.isdigit() for o in outs):
        new = ["output"] if len(outs) == 1 else [f"output_{i}" for i in range(len(outs))]
    else:
        return
    mapping = {o.name: n for o, n in zip(outs, new, strict=True)}
    for node in model.graph.node:
        for i, name in enumerate(node.output):
            if name in mapping:
                node.output[i] = mapping[name]
        for i, name in enumerate(node.input):
            if name in mapping:
                node.input[i] = mapping[name]
    for o in model.graph.output:
        o.name = mapping.get(o.name, o.name)
    for vi in model.graph.value_info:
        vi.name = mapping.get(vi.name, vi.name)


def rename_outputs_count_error(given: int, outputs: int) -> UsageError:
    """``--output-name`` given a number of times other than the model's output count (also said before
    the export, mobilegen.export.early_checks)."""
    return UsageError(f"--output-name given {given} time{'' if given == 1 else 's'}, the model has {outputs} output{'' if outputs == 1 else 's'}", hint="name every output, in order")


def _check_output_names(model: Any, wanted: tuple[str, ...]) -> None:
    """A new output name must not already name another tensor of the graph (the model would break)."""
    outputs = {o.name for o in model.graph.output}
    taken = {v.name for v in model.graph.input} | {i.name for i in model.graph.initializer}
    taken |= {n for node in model.graph.node for n in node.output if n not in outputs}
    clash = [n for n in wanted if n in taken]
    if clash:
        raise UsageError(f"--output-name {clash[0]!r} is already the name of another tensor in the model", hint="choose another name")


def finish_model(model: Any, out_path: Path, *, source: Path | None, write: bool = True) -> Any:
    """Check, infer shapes, and write one self-contained file (weights inlined). ``source`` is the ONNX
    file the model came from (its problems are load errors), None for a model exported from PyTorch.
    ``model`` is left without its large weights (the result has them); protobuf frees their memory only
    with the whole message, so a caller that writes the result drops ``model`` first and passes
    ``write=False`` (the writer then does not hold two models' memory)."""
    import onnx


    try:
        inferred, size = onnx_light.check_and_infer(model, _lowest_ir_version(model))
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as err:
        if source is not None:
            raise LoadError(f"{source.name} is not a valid ONNX model: {first_line(err)}", hint="fix the model or re-export it") from err
        raise ExportError(f"the ONNX model is invalid: {first_line(err)}", hint="try another --opset, or export with the other exporter") from err
    refuse_too_large(size, "the exported model is" if source is None else f"{source.name} is")
    if write:
        save_onnx(inferred, out_path)
    return inferred


def save_onnx(model: Any, out_path: Path) -> None:
    """Write one self-contained .onnx through a temporary name (never a half-written file); the bytes
    onnx.save_model writes for a model without external data."""
    from mobilegen.infra.outputs import write_bytes_atomic

    write_bytes_atomic(out_path, model.SerializeToString())


def _lowest_ir_version(model: Any) -> int:
    """The lowest IR version the model's opsets need: onnx writes its newest IR (14 for onnx 1.23), which
    onnxruntime releases older than the model cannot load."""
    from onnx import helper

    return max(helper.find_min_ir_version_for(list(model.opset_import), ignore_unknown=True), 4)


def opset_of(model: Any) -> int:
    return max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)


def _onnx_io(model: Any) -> IOSpec:
    return onnx_io_spec(model)


def default_dim_size(axis: int) -> int:
    """Example size of a named dim nobody gave a size for: 1 for a leading (batch) axis, else 32
    (big enough for most strided convs and sequences). ``--input`` sets the real one."""
    return 1 if axis == 0 else 32
