"""Golden vectors: the inputs and the PyTorch outputs every artifact (and every device) must reproduce.

Two encodings of the same tensors:

* ``.npz`` for Python (``mobilegen verify``);
* ``.mgv`` for the generated Kotlin / Swift tests, a tiny little-endian binary format that needs no
  JSON or NumPy library on the device::

      magic  b"MGGV"   u32 version (=1)   u32 count
      count × ( u8 role (0 input, 1 output)  u32 name_len  name (UTF-8)
                u8 onnx dtype code  u32 rank  i64 dims[rank]  u64 nbytes  data[nbytes] )

  Data is row-major, little-endian; bool is one byte per element.
"""

from __future__ import annotations

import io
import math
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np

from mobilegen.errors import MobilegenError, UsageError
from mobilegen.spec import DTYPES, ONNX_TO_DTYPE

MAGIC = b"MGGV"
VERSION = 1
ROLE_INPUT, ROLE_OUTPUT = 0, 1


@dataclass(frozen=True)
class GoldenCase:
    """One set of inputs and the reference outputs (ordered as the model declares them)."""

    inputs: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]


def encode_mgv(case: GoldenCase) -> bytes:
    buf = io.BytesIO()
    buf.write(MAGIC)
    buf.write(struct.pack("<II", VERSION, len(case.inputs) + len(case.outputs)))
    for role, tensors in ((ROLE_INPUT, case.inputs), (ROLE_OUTPUT, case.outputs)):
        for name, arr in tensors.items():
            a = np.asarray(arr).copy(order="C")  # (ascontiguousarray would turn a 0-d array into 1-d)
            dtype = str(a.dtype)
            if dtype not in DTYPES or dtype in ("string", "bfloat16"):
                raise MobilegenError(
                    f"golden tensor {name!r} has dtype {dtype}, which the device format cannot hold",
                    hint="cast it at the model boundary (e.g. to float32)",
                )
            data = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
            raw_name = name.encode("utf-8")
            buf.write(struct.pack("<BI", role, len(raw_name)))
            buf.write(raw_name)
            buf.write(struct.pack("<BI", DTYPES[dtype], a.ndim))
            buf.write(struct.pack(f"<{a.ndim}q", *a.shape))
            buf.write(struct.pack("<Q", len(data)))
            buf.write(data)
    return buf.getvalue()


MAX_MGV_TENSORS = 4096
MAX_MGV_RANK = 64
MAX_MGV_NAME = 4096


def decode_mgv(data: bytes) -> GoldenCase:
    """The tensors of a ``.mgv`` file, every field checked against the bytes there are before it is used:
    a malformed, truncated or hostile file (a rank of 2**32, a dims product past the data) is a
    :class:`~mobilegen.errors.UsageError` naming what is wrong, never a struct/key/memory error."""
    if data[:4] != MAGIC:
        raise UsageError("not a golden-vector file (bad magic)", hint="pass a .mgv written by mobilegen")
    r = _MgvReader(data, 4)
    version, count = r.unpack("<II", "the header")
    if version != VERSION:
        raise UsageError(f"golden-vector file version {version} is not supported (expected {VERSION})", hint="regenerate it with this mobilegen")
    if count > MAX_MGV_TENSORS:
        r.fail(f"declares {count} tensors, over {MAX_MGV_TENSORS}")
    inputs: dict[str, np.ndarray] = {}
    outputs: dict[str, np.ndarray] = {}
    for i in range(count):
        role, nlen = r.unpack("<BI", f"tensor {i}")
        if role not in (ROLE_INPUT, ROLE_OUTPUT):
            r.fail(f"tensor {i} has role {role} (0 input, 1 output)")
        if nlen > MAX_MGV_NAME:
            r.fail(f"tensor {i} has a name of {nlen} bytes, over {MAX_MGV_NAME}")
        try:
            name = r.take(nlen, f"tensor {i}'s name").decode("utf-8")
        except UnicodeDecodeError:
            r.fail(f"tensor {i}'s name is not UTF-8")
        code, rank = r.unpack("<BI", f"tensor {name!r}")
        if code not in ONNX_TO_DTYPE or ONNX_TO_DTYPE[code] in ("string", "bfloat16"):
            r.fail(f"tensor {name!r} has element type code {code}, which the format does not carry")
        if rank > MAX_MGV_RANK:
            r.fail(f"tensor {name!r} has rank {rank}, over {MAX_MGV_RANK}")
        dims = r.unpack(f"<{rank}q", f"tensor {name!r}'s dims")
        if any(d < 0 for d in dims):
            r.fail(f"tensor {name!r} has a negative dim {dims}")
        (nbytes,) = r.unpack("<Q", f"tensor {name!r}")
        dt = np.dtype(ONNX_TO_DTYPE[code]).newbyteorder("<")
        if math.prod(dims) * dt.itemsize != nbytes:
            r.fail(f"tensor {name!r} declares {nbytes} bytes for shape {list(dims)} of {ONNX_TO_DTYPE[code]}")
        raw = r.take(nbytes, f"tensor {name!r}'s data")
        if name in (inputs if role == ROLE_INPUT else outputs):
            r.fail(f"tensor {name!r} is given twice")
        arr = np.frombuffer(raw, dtype=dt).reshape(dims).astype(dt.newbyteorder("="))
        (inputs if role == ROLE_INPUT else outputs)[name] = arr
    if r.off != len(data):
        r.fail(f"{len(data) - r.off} bytes follow the last tensor")
    return GoldenCase(inputs, outputs)


class _MgvReader:
    """Reads fields of a ``.mgv`` at an offset that only moves forward, refusing a read past the end."""

    def __init__(self, data: bytes, off: int) -> None:
        self.data = data
        self.off = off

    def fail(self, why: str) -> NoReturn:
        raise UsageError(f"not a valid golden-vector file: {why}", hint="regenerate it with mobilegen (or run mobilegen verify on its package)")

    def take(self, n: int, what: str) -> bytes:
        if n > len(self.data) - self.off:
            self.fail(f"{what} needs {n} bytes, {len(self.data) - self.off} are left (truncated)")
        out = self.data[self.off : self.off + n]
        self.off += n
        return out

    def unpack(self, fmt: str, what: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        values: tuple[int, ...] = struct.unpack(fmt, self.take(size, what))
        return values


def write_npz(path: Path, case: GoldenCase) -> None:
    """Inputs under ``input:<name>``, outputs under ``output:<name>`` (order kept)."""
    arrays: dict[str, np.ndarray] = {}
    for n, a in case.inputs.items():
        arrays[f"input:{n}"] = a
    for n, a in case.outputs.items():
        arrays[f"output:{n}"] = a
    # np.savez stamps the wall-clock time into the zip; write it ourselves with a fixed timestamp so
    # the same model gives byte-identical golden files (reproducible packages).
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for key, arr in arrays.items():
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(arr).copy(order="C"), allow_pickle=False)
            zf.writestr(info, member.getvalue())
    path.write_bytes(buf.getvalue())


def read_npz(path: Path) -> GoldenCase:
    with np.load(path, allow_pickle=False) as z:
        inputs = {k[len("input:") :]: z[k] for k in z.files if k.startswith("input:")}
        outputs = {k[len("output:") :]: z[k] for k in z.files if k.startswith("output:")}
    return GoldenCase(inputs, outputs)
