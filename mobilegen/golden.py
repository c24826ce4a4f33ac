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
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mobilegen.errors import MobilegenError
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


def decode_mgv(data: bytes) -> GoldenCase:
    if data[:4] != MAGIC:
        raise MobilegenError("not a golden-vector file (bad magic)", hint="pass a .mgv written by mobilegen")
    version, count = struct.unpack_from("<II", data, 4)
    if version != VERSION:
        raise MobilegenError(f"golden-vector file version {version} is not supported (expected {VERSION})", hint="regenerate it with this mobilegen")
    off = 12
    inputs: dict[str, np.ndarray] = {}
    outputs: dict[str, np.ndarray] = {}
    for _ in range(count):
        role, nlen = struct.unpack_from("<BI", data, off)
        off += 5
        name = data[off : off + nlen].decode("utf-8")
        off += nlen
        code, rank = struct.unpack_from("<BI", data, off)
        off += 5
        dims = struct.unpack_from(f"<{rank}q", data, off)
        off += 8 * rank
        (nbytes,) = struct.unpack_from("<Q", data, off)
        off += 8
        dt = np.dtype(ONNX_TO_DTYPE[code]).newbyteorder("<")
        arr = np.frombuffer(data[off : off + nbytes], dtype=dt).reshape(dims).astype(dt.newbyteorder("="))
        off += nbytes
        (inputs if role == ROLE_INPUT else outputs)[name] = arr
    return GoldenCase(inputs, outputs)


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
