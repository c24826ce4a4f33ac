"""The example inputs a traced TorchScript file records, read without running code from the file.

``torch.jit.trace`` saves them in the archive: ``<archive>/traced_inputs.pkl`` (``{"forward": [tensor,
...]}``) and empty ``<archive>/traced_inputs/<n>`` storage records (torch 2.13 writes no tensor data for
them). ``torch.jit.load`` does not hand them back (only ``_restore_shapes=True`` does, by re-tracing the
module). They are read here with torch's ``weights_only`` unpickler — the rules ``torch.load(weights_only=True)``
applies to every pickle mobilegen reads from an untrusted file (``mobilegen.load.pt2_safety``) — with one
addition, ``torch.jit._pickle.restore_type_tag`` (TorchScript's list type tag, which returns its value).
Storages are never read: each tensor is rebuilt on the ``meta`` device, which has a dtype and a shape and
no data. Anything else (a bigger entry, other globals, nested inputs) gives nothing.

What is read only ever fills the ``--input`` hint: the shapes a model was traced with are an example, not
a limit, so they never become the model's recorded shapes.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mobilegen.spec import DTYPES, MAX_DIM, TensorSpec

ENTRY = "traced_inputs.pkl"
MAX_ENTRY_BYTES = 1 << 20  # a few hundred bytes per input: anything near this is not torch's


def read_traced_inputs(path: Path, module: Any) -> tuple[TensorSpec, ...]:
    """One spec (name, dtype, shape) per argument of the loaded ``module``'s forward, in order; () when
    the file records no example inputs, or they are not one plain tensor per argument, or they cannot be
    read safely."""
    try:
        arg_names = [a.name for a in module.forward.schema.arguments[1:]]
    except (AttributeError, RuntimeError):  # no forward method: the export says so
        return ()
    data = _entry(path)
    if data is None:
        return ()
    try:
        recorded = _unpickle(data)
    except Exception:  # noqa: BLE001 — a hostile or unexpected pickle: derive nothing, run nothing
        return ()
    forward = recorded.get("forward") if isinstance(recorded, dict) else None
    if not isinstance(forward, (list, tuple)) or len(forward) != len(arg_names):
        return ()
    specs = tuple(_spec(name, t) for name, t in zip(arg_names, forward, strict=True))
    return () if any(s is None for s in specs) else tuple(s for s in specs if s is not None)


def _entry(path: Path) -> bytes | None:
    try:
        with zipfile.ZipFile(path) as zf:
            found = [i for i in zf.infolist() if i.filename.count("/") == 1 and i.filename.split("/", 1)[1] == ENTRY]
            if len(found) != 1 or found[0].file_size > MAX_ENTRY_BYTES:
                return None
            with zf.open(found[0]) as f:
                data = f.read(MAX_ENTRY_BYTES + 1)  # the header's size is not trusted
    except (OSError, zipfile.BadZipFile, ValueError, NotImplementedError, RuntimeError):
        return None
    return data if len(data) <= MAX_ENTRY_BYTES else None


def _unpickle(data: bytes) -> Any:
    import torch
    import torch.jit._pickle as jit_pickle
    from torch import _weights_only_unpickler

    unpickler = _weights_only_unpickler.Unpickler(io.BytesIO(data), encoding="utf-8")
    unpickler.persistent_load = _meta_storage  # type: ignore[method-assign]
    with torch.serialization.safe_globals([jit_pickle.restore_type_tag]):
        return unpickler.load()  # type: ignore[no-untyped-call]


def _meta_storage(saved_id: Any) -> Any:
    """A storage record (``("storage", torch.LongStorage, key, location, numel)``) as an empty storage
    on the meta device: the dtype and the size, never the bytes."""
    import torch

    if not (isinstance(saved_id, tuple) and len(saved_id) == 5 and saved_id[0] == "storage"):
        raise ValueError("not a storage record")
    dtype, numel = getattr(saved_id[1], "dtype", None), saved_id[4]
    if not isinstance(dtype, torch.dtype) or not isinstance(numel, int) or not 0 <= numel <= 2**48:
        raise ValueError("not a storage record")
    untyped = torch.UntypedStorage(numel * dtype.itemsize, device="meta")  # type: ignore[no-untyped-call]
    return torch.storage.TypedStorage(wrap_storage=untyped, dtype=dtype, _internal=True)  # type: ignore[no-untyped-call]


def _spec(name: str, value: Any) -> TensorSpec | None:
    import torch

    if not isinstance(value, torch.Tensor):
        return None
    dtype = str(value.dtype).removeprefix("torch.")
    shape = tuple(int(d) for d in value.shape)
    if dtype not in DTYPES or dtype in ("string", "bfloat16") or not shape or not all(0 < d <= MAX_DIM for d in shape):
        return None
    return TensorSpec(name, dtype, shape)


def input_flags(traced: Sequence[TensorSpec], names: Sequence[str]) -> tuple[str, bool]:
    """The ``--input`` flags for ``names``, and whether they come from the traced example inputs (when
    those are these inputs: ``--input ids:1x128:int64``, float32 being the default is left out); else
    placeholders, ``--input ids:SHAPE[:DTYPE]``."""
    if traced and [t.name for t in traced] == list(names):
        return " ".join(f"--input {t.name}:{t.shape_str()}" + ("" if t.dtype == "float32" else f":{t.dtype}") for t in traced), True
    return " ".join(f"--input {n}:SHAPE[:DTYPE]" for n in names), False
