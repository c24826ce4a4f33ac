"""Detect a model artifact by its content (not its extension) and load it → LoadedModel.

Kinds: TorchScript archive, torch.export ExportedProgram (.pt2; without ``trust_pickle`` only if loading
it runs no code from the file, see pt2_safety), pickled nn.Module (only with ``trust_pickle``: unpickling
runs code), state_dict (needs the class: ``--model-class``), ONNX
(passes through) and ORT format (inspect only).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import os
import sys
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mobilegen.artifacts import LoadedModel
from mobilegen.errors import LoadError, MobilegenError, UsageError, first_line
from mobilegen.export.onnx_checks import check_onnx_source
from mobilegen.infra.digest import sha256_file
from mobilegen.infra.quiet import quiet
from mobilegen.load.pt2_outputs import output_type_error
from mobilegen.load.pt2_safety import load_exported_program
from mobilegen.load.traced_inputs import read_traced_inputs
from mobilegen.spec import IOSpec, TensorSpec, onnx_io_spec

ORT_IDENTIFIER = b"ORTM"


@dataclass(frozen=True)
class LoadOptions:
    trust_pickle: bool = False
    model_class: str | None = None  # "package.module:ClassName" or "path/to/file.py:ClassName"
    model_kwargs: str | None = None  # JSON object


def check_input_file(path: Path) -> None:
    if not path.exists():
        raise UsageError(f"no such file: {path}", hint="check the path to the model")
    if path.is_dir():
        raise UsageError(f"{path} is a directory, not a model file", hint="pass the model file itself (.pt, .pt2, .onnx, .ort)")
    if path.stat().st_size == 0:
        raise LoadError(f"{path} is empty", hint="re-save the model; the file has no content")


def detect_kind(path: Path) -> str:
    """One of torchscript, exported_program, torch_save (pickle or state_dict), pickle, onnx, ort."""
    check_input_file(path)
    with path.open("rb") as f:
        head = f.read(8)
    if head[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(path) as zf:
                names = zf.namelist()
        except zipfile.BadZipFile as err:
            raise LoadError(f"{path} is a damaged zip archive", hint="re-save the model; the file is truncated or corrupt") from err
        tails = {n.split("/", 1)[1] if "/" in n else n for n in names}
        if "models/model.json" in tails or any(t.startswith("models/") and t.endswith(".json") for t in tails):
            return "exported_program"
        if "constants.pkl" in tails and any(t.startswith("code/") for t in tails):
            return "torchscript"
        if "data.pkl" in tails:
            return "torch_save"
        raise LoadError(
            f"{path} is a zip archive but not a PyTorch model (no TorchScript code, torch.export program or torch.save data)",
            hint="pass a file written by torch.jit.save, torch.export.save, torch.save or an .onnx model",
        )
    if head[4:8] == ORT_IDENTIFIER:
        return "ort"
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "pickle"  # legacy (non-zip) torch.save or a raw pickle
    return "onnx"


def load_model(path: Path, options: LoadOptions = LoadOptions()) -> LoadedModel:
    kind = detect_kind(path)
    digest = sha256_file(path)
    if kind == "onnx":
        return _load_onnx(path, digest)
    if kind == "ort":
        return LoadedModel(source=path, kind="ort", sha256=digest)
    import torch

    if kind == "torchscript":
        try:
            module = torch.jit.load(str(path), map_location="cpu")  # type: ignore[no-untyped-call]
        except Exception as err:
            raise LoadError(f"{path} looks like TorchScript but does not load: {first_line(err)}", hint="re-save it with torch.jit.save") from err
        module.eval()

        return LoadedModel(source=path, kind="torchscript", sha256=digest, module=module, traced_inputs=read_traced_inputs(path, module))
    if kind == "exported_program":
        logged = _LoggedErrors()
        torch_export_log = logging.getLogger("torch.export")
        # while loading, what torch.export logs goes to `logged` alone (its error becomes our one line)
        handlers, propagate = torch_export_log.handlers[:], torch_export_log.propagate
        torch_export_log.handlers, torch_export_log.propagate = [logged], False
        try:
            with quiet():  # torch logs a damaged archive's traceback as a warning: the error line says it
                torch_export_log.setLevel(logging.WARNING)  # for `logged` only (quiet() restores the level)
                ep = load_exported_program(path, trust=options.trust_pickle)
        except MobilegenError as err:
            # refused for a pytree type of its own: say it is the output type (--trust-pickle would not help)
            if (why := output_type_error(path, refusal=err)) is not None:
                raise why from err
            raise
        except Exception as err:
            if (why := output_type_error(path)) is not None:  # torch: "... in pytree is not registered"
                raise why from err
            # torch logs the real problem and raises "Please check the warnings above": name the real one
            cause: BaseException = logged.errors[-1] if logged.errors else err
            while (inner := cause.__cause__ or cause.__context__) is not None:
                cause = inner
            raise LoadError(
                f"{path} looks like a torch.export program but does not load: {first_line(cause)}",
                hint="re-save it with torch.export.save using torch 2.13",
            ) from err
        finally:
            torch_export_log.handlers, torch_export_log.propagate = handlers, propagate
        hint, sizes = _exported_io_hint(ep)
        return LoadedModel(
            source=path, kind="exported_program", sha256=digest, module=ep, io_hint=hint, example_sizes=sizes
        )
    return _load_torch_save(path, digest, options)


class _LoggedErrors(logging.Handler):
    """Keeps the exceptions a library logs (with exc_info) instead of raising them."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.errors: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.errors.append(record.exc_info[1])


def _load_onnx(path: Path, digest: str) -> LoadedModel:
    import onnx
    from google.protobuf.message import DecodeError

    try:
        model = onnx.load_model(str(path), load_external_data=False)
    except (DecodeError, RuntimeWarning, ValueError, OSError) as err:
        raise LoadError(
            f"{path} is not a model mobilegen can read (not PyTorch, and not valid ONNX: {first_line(err)})",
            hint="pass a .pt (torch.jit.save / torch.save), .pt2 (torch.export.save) or .onnx file; if it is ONNX, it may be truncated",
        ) from err
    if not model.HasField("graph") or len(model.graph.node) == 0 or model.ir_version == 0:
        raise LoadError(
            f"{path} is not a model mobilegen can read (no ONNX graph in it)",
            hint="pass a .pt (torch.jit.save / torch.save), .pt2 (torch.export.save) or .onnx file",
        )

    check_onnx_source(model, path)
    return LoadedModel(source=path, kind="onnx", sha256=digest, onnx_path=path, io_hint=onnx_io_spec(model))


def _torch_dtype_name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


@dataclass(frozen=True)
class ProgramDim:
    """A symbolic dim of a ``.pt2``'s inputs: the name mobilegen gives it (``<input>_dim<axis>`` of its
    first use: inputs that share the symbol share the name) and its range in the program."""

    name: str
    low: int | None
    high: int | None

    def range_text(self) -> str:
        return f"{self.low if self.low is not None else 0}..{self.high if self.high is not None else 'inf'}"


def _bound(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError, AttributeError):  # sympy/torch infinities
        return None


def exported_dims(ep: Any) -> dict[str, ProgramDim]:
    """The symbolic dims of the program's tensor inputs, keyed by their expression (``s34``), in order of
    first use; ranges from the program's range constraints (what the loader already read)."""
    import torch
    from torch.export.graph_signature import InputKind, TensorArgument

    ranges = {str(k): v for k, v in getattr(ep, "range_constraints", {}).items()}
    nodes = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    out: dict[str, ProgramDim] = {}
    for s in ep.graph_signature.input_specs:
        if s.kind != InputKind.USER_INPUT or not isinstance(s.arg, TensorArgument):
            continue
        node = nodes.get(s.arg.name)
        val = node.meta.get("val") if node is not None else None
        for i, d in enumerate(getattr(val, "shape", ())):
            if isinstance(d, torch.SymInt):
                key = str(d.node.expr)
                if key not in out:
                    vr = ranges.get(key)
                    out[key] = ProgramDim(f"{s.arg.name}_dim{i}", _bound(vr.lower) if vr else None, _bound(vr.upper) if vr else None)
    return out


def _exported_io_hint(ep: Any) -> tuple[IOSpec | None, dict[str, int]]:
    """Input specs from the program's tensor placeholders (its scalar and constant arguments are bound
    with ``--const``, see mobilegen.export.const_inputs). A symbolic dim is named ``<input>_dim<i>`` after its first
    use, so inputs that share it (``state`` and ``input`` both batch-sized) share the name and one
    example size, taken from the saved example inputs."""
    import torch
    from torch.export.graph_signature import InputKind, TensorArgument

    specs = []
    sizes: dict[str, int] = {}
    dims = exported_dims(ep)
    user_inputs = [s for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
    nodes = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    examples: list[Any] = []
    try:
        examples = list(ep.example_inputs[0]) if ep.example_inputs else []
    except Exception:  # noqa: BLE001 — example inputs are optional in the archive
        examples = []
    for idx, s in enumerate(user_inputs):
        if not isinstance(s.arg, TensorArgument):
            continue
        node = nodes.get(s.arg.name)
        val = node.meta.get("val") if node is not None else None
        if val is None or not hasattr(val, "shape"):
            return None, {}
        shape: list[int | str] = []
        for i, d in enumerate(val.shape):
            if isinstance(d, torch.SymInt):
                name = dims[str(d.node.expr)].name
                shape.append(name)
                ex = examples[idx] if idx < len(examples) else None
                if ex is not None and hasattr(ex, "shape") and len(ex.shape) > i:
                    sizes.setdefault(name, int(ex.shape[i]))
            else:
                shape.append(int(d))
        specs.append(TensorSpec(s.arg.name, _torch_dtype_name(val.dtype), tuple(shape)))
    return IOSpec(inputs=tuple(specs)), sizes


def check_program_inputs(loaded: LoadedModel, user: tuple[TensorSpec, ...]) -> None:
    """A ``--input`` shape for a ``.pt2`` against what the program records, before any export: a size for
    a symbolic dim inside the dim's range, and one size for a dim that several inputs share. (Rank, dtype
    and fixed dims: ``export.match_model_input``.)"""
    if loaded.kind != "exported_program" or loaded.io_hint is None or loaded.module is None:
        return
    by_name = {d.name: d for d in exported_dims(loaded.module).values()}
    known = {t.name: t for t in loaded.io_hint.inputs}
    given: dict[str, tuple[str, int, int]] = {}  # dim name -> (input, axis, size) where first given
    for u in user:
        k = known.get(u.name)
        if k is None or len(k.shape) != len(u.shape):
            continue
        for axis, (du, dk) in enumerate(zip(u.shape, k.shape, strict=True)):
            if not (isinstance(du, int) and isinstance(dk, str)):
                continue
            dim = by_name.get(dk)
            recorded = _recorded_shape(k, by_name, loaded.example_sizes)
            where = f"--input {u.name}:{u.shape_str()} does not fit {loaded.source.name}'s input {u.name!r}, recorded as {recorded}"
            if dim is not None and ((dim.low is not None and du < dim.low) or (dim.high is not None and du > dim.high)):
                example = loaded.example_sizes.get(dk)
                raise UsageError(
                    f"{where}: dim {axis} ({dk}) must be in {dim.range_text()}, given {du}",
                    hint=f"give dim {axis} a size in {dim.range_text()} (the range the program was exported with"
                    + (f"; its example size is {example})" if example is not None else ")"),
                )
            first = given.setdefault(dk, (u.name, axis, du))
            if first[2] != du:
                raise UsageError(
                    f"{where}: dim {axis} ({dk}) is the same dim as dim {first[1]} of {first[0]!r}, given {first[2]} there and {du} here",
                    hint=f"give both inputs the same size for {dk}",
                )


def _recorded_shape(spec: TensorSpec, dims: Mapping[str, ProgramDim], sizes: Mapping[str, int]) -> str:
    """``2x{input_dim0: 1..64, example 3}x16``: a recorded shape with the range of each symbolic dim."""
    parts = []
    for d in spec.shape:
        if isinstance(d, int):
            parts.append(str(d))
            continue
        dim = dims.get(d)
        extra = [dim.range_text()] if dim is not None else []
        if d in sizes:
            extra.append(f"example {sizes[d]}")
        parts.append(f"{{{d}: {', '.join(extra)}}}" if extra else d)
    return "x".join(parts) or "scalar"


def _load_torch_save(path: Path, digest: str, options: LoadOptions) -> LoadedModel:
    import pickle

    import torch

    # weights_only=True never runs code from the file: it only rebuilds tensors and plain containers.
    try:
        obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        if not options.trust_pickle:
            raise LoadError(
                f"{path} is a pickled Python object (e.g. torch.save(model)); loading it would run code from the file",
                hint="pass --trust-pickle if you trust this file, or save the model with torch.jit.save / torch.export.save, "
                "or save its state_dict and pass --model-class",
            ) from err
        # Like `python -m`, let the pickle find classes defined next to it or in the current folder.
        extra = [p for p in (str(path.resolve().parent), os.getcwd()) if p not in sys.path]
        sys.path[:0] = extra
        try:
            obj = torch.load(str(path), map_location="cpu", weights_only=False)
        except ModuleNotFoundError as err2:
            raise LoadError(
                f"{path} was pickled with classes from module {err2.name!r}, which cannot be imported here",
                hint=f"make {err2.name!r} importable (run from its folder or add it to PYTHONPATH), or re-save the model with torch.export.save",
            ) from err2
        except Exception as err2:
            raise LoadError(f"{path} could not be unpickled: {first_line(err2)}", hint="load it in Python and re-save it with torch.jit.save") from err2
        finally:
            for p in extra:
                if p in sys.path:
                    sys.path.remove(p)
        if isinstance(obj, torch.nn.Module):
            obj.eval()
            return LoadedModel(source=path, kind="pickle", sha256=digest, module=obj)
    except Exception as err:
        raise LoadError(f"{path} could not be read by torch.load: {first_line(err)}", hint="the file may be truncated; re-save it") from err
    if isinstance(obj, Mapping) and "state_dict" in obj and isinstance(obj["state_dict"], Mapping):
        obj = obj["state_dict"]  # a common checkpoint layout: {"state_dict": ..., "epoch": ...}
    if isinstance(obj, Mapping) and obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
        if not options.model_class:
            raise LoadError(
                f"{path} holds only weights (a state_dict): the model's architecture is needed to run them",
                hint="pass --model-class package.module:ClassName (and --model-kwargs '{\"arg\": 1}' if its constructor needs them)",
            )
        module = _instantiate(options.model_class, options.model_kwargs)
        try:
            module.load_state_dict(obj, strict=True)
        except RuntimeError as err:
            problems = [ln.strip() for ln in str(err).splitlines()[1:] if ln.strip()]
            raise LoadError(
                f"the weights in {path} do not fit {options.model_class}: "
                + (f"{len(problems)} problem(s), first: {problems[0][:200]}" if problems else first_line(err)),
                hint="check --model-class and --model-kwargs match the model that was saved",
                details=problems[:20],
            ) from err
        module.eval()
        return LoadedModel(source=path, kind="state_dict", sha256=digest, module=module)
    raise LoadError(
        f"{path} was written by torch.save but holds a {type(obj).__name__}, not a model or a state_dict",
        hint="save the model itself (torch.jit.save / torch.export.save) or its state_dict",
    )


def _instantiate(model_class: str, model_kwargs: str | None) -> Any:
    """Import the class named by ``--model-class`` (a file the user names, so its code is trusted) and
    construct it. Its import and constructor may not end the process: ``sys.exit`` there is a load error."""
    import torch

    if ":" not in model_class:
        raise UsageError(f"malformed --model-class {model_class!r}", hint="write package.module:ClassName or path/to/file.py:ClassName")
    mod_name, _, cls_name = model_class.rpartition(":")
    try:
        kwargs = json.loads(model_kwargs) if model_kwargs else {}
    except json.JSONDecodeError as err:
        raise UsageError(f"--model-kwargs is not valid JSON: {err.msg}", hint="pass a JSON object, e.g. --model-kwargs '{\"num_classes\": 10}'") from err
    if not isinstance(kwargs, dict):
        raise UsageError("--model-kwargs must be a JSON object", hint="e.g. --model-kwargs '{\"num_classes\": 10}'")
    module = _import_model_module(mod_name)
    cls = getattr(module, cls_name, None)
    if cls is None:
        raise UsageError(f"{mod_name} has no {cls_name!r}", hint="check the class name after the ':'")
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        kind = type(cls).__name__
        what = f"the class {cls.__name__}" if isinstance(cls, type) else f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
        raise UsageError(
            f"--model-class {model_class} names {what}, not a torch.nn.Module subclass (it was not called)",
            hint="point --model-class at the model's nn.Module class",
        )
    try:
        instance = cls(**kwargs)
    except TypeError as err:
        raise UsageError(f"cannot construct {model_class}: {first_line(err)}", hint="pass the constructor's arguments with --model-kwargs") from err
    except SystemExit as err:
        raise _exited(f"constructing {model_class}", err) from None
    except Exception as err:  # noqa: BLE001 — the user's constructor failed
        raise LoadError(
            f"constructing {model_class} failed: {type(err).__name__}: {first_line(err)}",
            hint="fix the error in that class (construct it in Python to see the traceback)",
        ) from err
    if not isinstance(instance, torch.nn.Module):  # a __new__ that returns something else
        raise UsageError(f"{model_class}(...) did not return a torch.nn.Module", hint="point --model-class at the model's nn.Module class")
    return instance


def _import_model_module(mod_name: str) -> Any:
    if mod_name.endswith(".py"):
        file = Path(mod_name)
        if not file.is_file():
            what = "is not a file" if file.exists() else "does not exist"
            raise UsageError(f"--model-class file {file} {what}", hint="check the path before the ':'")
        spec = importlib.util.spec_from_file_location(f"_mobilegen_user_{file.stem}", file)
        if spec is None or spec.loader is None:
            raise UsageError(f"--model-class file {file} cannot be imported as a Python module", hint="give a .py file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        loader = spec.loader
        try:
            _run_import(mod_name, lambda: loader.exec_module(module))
        except BaseException:
            sys.modules.pop(spec.name, None)
            raise
        return module
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # let users name modules of the current directory
    return _run_import(mod_name, lambda: importlib.import_module(mod_name))


def _run_import(mod_name: str, load: Callable[[], Any]) -> Any:
    try:
        result = load()
    except ImportError as err:
        raise UsageError(f"cannot import {mod_name!r} for --model-class: {first_line(err)}", hint="make the module importable (PYTHONPATH) or give a .py file path") from err
    except SystemExit as err:
        raise _exited(f"importing {mod_name!r} for --model-class", err) from None
    except Exception as err:  # noqa: BLE001 — the user's own module failed while importing
        raise LoadError(
            f"importing {mod_name!r} for --model-class failed: {type(err).__name__}: {first_line(err)}",
            hint="fix the error in that module (run it with python to see the traceback)",
        ) from err
    return result


def _exited(action: str, err: SystemExit) -> LoadError:
    """``sys.exit()`` in user code would end mobilegen silently with the user's status (often 0)."""
    return LoadError(
        f"{action} called sys.exit({err.code!r}) instead of defining the model",
        hint="guard the module's script code with `if __name__ == \"__main__\":`",
    )
