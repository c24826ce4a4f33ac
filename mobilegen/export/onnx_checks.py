"""Checks on an ONNX model given as input, before any work: names every later stage can carry, an opset a
pinned runtime implements, outputs and non-empty dims, external data that stays inside the model's folder,
weights whose byte counts match their shapes, and onnx's own checker. Also the model's size with every
weight inline, which protobuf cannot compute past 2 GiB.
"""

from __future__ import annotations

import os
import stat
import warnings
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from mobilegen.errors import LoadError, first_line, shorten
from mobilegen.infra.onnx_size import all_tensors, is_external, tensor_nbytes
from mobilegen.runtimes import RELEASES  # sorted oldest → newest
from mobilegen.spec import check_tensor_name


def _external_info(t: Any, path: Path) -> Any:
    from onnx.external_data_helper import ExternalDataInfo

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unknown keys are ignored; onnx warns on stderr
            return ExternalDataInfo(t)
    except ValueError as err:  # negative or non-numeric offset/length
        raise LoadError(f"tensor {t.name!r} of {path.name} has malformed external data: {first_line(err)}", hint=_REEXPORT) from err


_REEXPORT = "re-export or re-save the model (onnx.save_model writes its external data beside it)"


def check_onnx_source(model: Any, path: Path) -> None:
    """Refuse, before any work, an ONNX model mobilegen could not carry to a verified package."""
    _check_text(model, path)
    _check_names(model)
    _check_outputs_and_dims(model, path)
    _check_opset(model, path)
    _check_external_data(model, path)
    _check_inline_data(model, path)
    _run_checker(model, path)


def _check_text(model: Any, path: Path) -> None:
    """ONNX strings are UTF-8; protobuf hands back a string field that is not as ``bytes``, which no later
    stage expects (a damaged file: one flipped byte in a name does it)."""
    stack = [model]
    while stack:
        message = stack.pop()
        for fd, value in message.ListFields():
            values = value if _repeated(fd) else (value,)
            if fd.type == fd.TYPE_MESSAGE:
                stack.extend(values)
            elif fd.type == fd.TYPE_STRING:
                bad = next((v for v in values if not isinstance(v, str)), None)
                if bad is not None:
                    raise LoadError(
                        f"{path.name} is damaged: the {type(message).__name__.removesuffix('Proto')} field {fd.name!r} holds {shorten(repr(bad), 60)}, which is not UTF-8 text",
                        hint="re-export the model (ONNX stores every name as UTF-8)",
                    )


def _repeated(fd: Any) -> bool:
    return bool(fd.is_repeated) if hasattr(fd, "is_repeated") else fd.label == fd.LABEL_REPEATED


def _io_values(model: Any) -> list[tuple[str, Any]]:
    inits = {i.name for i in model.graph.initializer}
    return [("input", v) for v in model.graph.input if v.name not in inits] + [("output", v) for v in model.graph.output]


def _check_names(model: Any) -> None:
    hint = "rename it in the model to printable characters (e.g. x, input_ids, logits)"
    for role, vi in _io_values(model):
        check_tensor_name(vi.name, f"the model's {role} name", hint=hint)
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param:
                check_tensor_name(d.dim_param, f"the dim name of {role} {vi.name!r}", hint=hint)


def _check_outputs_and_dims(model: Any, path: Path) -> None:
    if not model.graph.output:
        raise LoadError(f"{path.name} declares no outputs: there is nothing to compute", hint="add the graph outputs to the model, or re-export it")
    for role, vi in _io_values(model):
        dims = vi.type.tensor_type.shape.dim
        for axis, d in enumerate(dims):
            if d.HasField("dim_value") and d.dim_value == 0:
                shape = "x".join(str(x.dim_value) if x.HasField("dim_value") else (x.dim_param or "?") for x in dims)
                raise LoadError(
                    f"{role} {vi.name!r} of {path.name} has size 0 on axis {axis} (shape {shape}): a tensor with no elements",
                    hint="give that axis its real size in the model, or a name (dim_param) to make it dynamic",
                )


def _check_opset(model: Any, path: Path) -> None:
    top = max(r.max_opset for r in RELEASES)
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx") and o.version > top:
            raise LoadError(
                f"{path.name} uses ai.onnx opset {o.version}; the mobile runtimes mobilegen pins "
                f"(onnxruntime {RELEASES[0].version} to {RELEASES[-1].version}) implement up to opset {top}",
                hint=f"convert it with onnx.version_converter.convert_model(model, {top}), "
                "or give mobilegen the PyTorch model it came from",
            )


def _check_external_data(model: Any, path: Path) -> None:
    """Every external-data file must be a regular file inside the model's folder, reached without symlinks,
    and hold the bytes its tensor needs. Checked from the paths alone: nothing outside is opened or read."""
    base = Path(os.path.abspath(path.parent))
    for t in all_tensors(model):
        if not is_external(t):
            continue
        info = _external_info(t, path)
        loc = str(info.location or "")
        what = f"external data file {loc!r} of tensor {t.name!r} ({path.name})"
        if not loc or "\0" in loc:
            raise LoadError(f"tensor {t.name!r} of {path.name} is stored outside the model but names no usable file ({loc!r})", hint=_REEXPORT)
        win = PureWindowsPath(loc)
        if loc.startswith(("/", "\\")) or win.drive or win.is_absolute() or os.path.isabs(loc):
            raise LoadError(f"the {what} is an absolute path: mobilegen reads external data only from the model's folder", hint=_REEXPORT)
        if ".." in win.parts or ".." in PurePosixPath(loc).parts:
            raise LoadError(f"the {what} points outside the model's folder", hint=_REEXPORT)
        st = _walk(base, PurePosixPath(loc).parts, what)
        _check_extent(t, info, st.st_size, what)


def _walk(base: Path, parts: tuple[str, ...], what: str) -> os.stat_result:
    """lstat each component below ``base``: a symlink anywhere, or a final entry that is not a regular file
    (FIFO, device, folder), is refused before anything is opened."""
    cur = base
    st = None
    for i, part in enumerate(parts):
        cur = cur / part
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            raise LoadError(f"the {what} is missing (no {cur})", hint="put the data file next to the model, as it was saved") from None
        except OSError as err:
            raise LoadError(f"the {what} cannot be read: {err.strerror}", hint="check the file's permissions") from err
        if stat.S_ISLNK(st.st_mode):
            raise LoadError(f"the {what} is reached through a symlink ({cur}): mobilegen follows none", hint="copy the data file itself next to the model")
        last = i == len(parts) - 1
        if not last and not stat.S_ISDIR(st.st_mode):
            raise LoadError(f"the {what} is missing ({cur} is not a folder)", hint="put the data file next to the model, as it was saved")
        if last and not stat.S_ISREG(st.st_mode):
            raise LoadError(f"the {what} is not a regular file", hint="put the data file itself next to the model")
    assert st is not None
    return st


def _check_extent(t: Any, info: Any, size: int, what: str) -> None:
    offset = info.offset or 0
    length = info.length if info.length is not None else size - offset
    if offset + length > size or length < 0:
        raise LoadError(f"the {what} is {size} bytes, too short for bytes {offset}..{offset + length} of the tensor", hint=_REEXPORT)
    need = tensor_nbytes(t)
    if need is not None and length != need:
        raise LoadError(f"the {what} holds {length} bytes for the tensor, its shape and type need {need}", hint=_REEXPORT)


def _check_inline_data(model: Any, path: Path) -> None:
    for t in all_tensors(model):
        if is_external(t) or not t.raw_data:
            continue
        need = tensor_nbytes(t)
        if need is not None and len(t.raw_data) != need:
            raise LoadError(
                f"tensor {t.name!r} of {path.name} holds {len(t.raw_data)} bytes of data, its shape "
                f"{'x'.join(map(str, t.dims)) or 'scalar'} and type need {need}",
                hint="the file is damaged or was written by a faulty tool; re-export the model",
            )


def _run_checker(model: Any, path: Path) -> None:
    """onnx's checker, as the model would be exported: on the file (external data resolved against the
    model's folder), or, for an IR version newer than this onnx knows, on the model stamped with it."""
    import onnx

    try:
        if model.ir_version <= onnx.IR_VERSION:
            onnx.checker.check_model(str(path))
        elif not any(is_external(t) for t in all_tensors(model)):
            # Without a path the checker resolves external data against the working folder: only for
            # models that have none. (Newer-IR models with external data are checked after loading it.)
            original = model.ir_version
            model.ir_version = onnx.IR_VERSION
            try:
                onnx.checker.check_model(model)
            finally:
                model.ir_version = original
    except (onnx.checker.ValidationError, ValueError) as err:
        raise LoadError(f"{path.name} is not a valid ONNX model: {first_line(err)}", hint="fix the model or re-export it") from err
