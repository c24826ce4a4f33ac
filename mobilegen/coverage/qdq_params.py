"""ONNX Runtime's checks on quantization parameters that decide whether nodes form a QDQ node unit, ported
line for line (the file and function of each are named on it):

* :func:`clip_made_redundant` — ``IsClipMadeRedundantByQ`` (qdq_util.cc): a Relu/Clip before the unit's
  Q joins the unit only when the Q saturates at least as much. ORT compares in the quantized domain:
  ``rint(clip / scale) + zero_point`` against the type's min/max, not float bounds (ReLU6 with scale
  float32(6/255) is redundant although 255 · scale ≠ 6.0 in float);
* :func:`qdq_pair_supported` — ``IsQDQPairSupported`` (qdq_util.cc): the DropQDQ selector's equal
  DQ/Q parameters.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mobilegen.coverage.graph import GraphInfo, NodeInfo

QDQ_UTIL = "onnxruntime/core/optimizer/qdq_transformer/qdq_util.cc"
OPT_UTILS = "onnxruntime/core/optimizer/utils.cc"

_F32 = np.dtype(np.float32)
_MINMAX: dict[np.dtype[Any], tuple[int, int]] = {np.dtype(np.int8): (-128, 127), np.dtype(np.uint8): (0, 255), np.dtype(np.int16): (-32768, 32767), np.dtype(np.uint16): (0, 65535)}
_CODES: dict[int, np.dtype[Any]] = {3: np.dtype(np.int8), 2: np.dtype(np.uint8), 5: np.dtype(np.int16), 4: np.dtype(np.uint16)}  # onnx.TensorProto codes
_INT32 = 2**31


def _const(graph: GraphInfo, name: str) -> np.ndarray | None:
    v = graph.const_value(name) if name else None
    return None if v is None else np.asarray(v)


def _q_scale_zp(graph: GraphInfo, q: NodeInfo) -> tuple[np.float32, int, np.dtype[Any]] | None:
    """GetQScalarScaleZp (qdq_util.cc): a rank-0 float32 constant scale; a rank-0 constant zero point of
    an 8/16-bit type, or none (then ``output_dtype``, default uint8, and zero point 0)."""
    scale = _const(graph, q.inputs[1] if len(q.inputs) > 1 else "")
    if scale is None or scale.ndim != 0 or scale.dtype != _F32:
        return None
    if len(q.inputs) < 3 or not q.inputs[2]:
        dtype = _CODES.get(int(q.attrs.get("output_dtype") or 2))
        return None if dtype is None else (np.float32(scale), 0, dtype)  # other types: GetDataTypeMinMax fails
    zp = _const(graph, q.inputs[2])
    if zp is None or zp.ndim != 0 or zp.dtype not in _MINMAX:
        return None
    return np.float32(scale), int(zp), zp.dtype


def _scalar_or_1d1(a: np.ndarray) -> bool:
    return a.shape in ((), (1,))  # IsScalarOr1Element1DTensor (utils.cc)


def _clip_bound(graph: GraphInfo, clip: NodeInfo, i: int) -> np.float32 | None:
    """GetClipConstantMinMax's update_if_constant_value (utils.cc): input ``i`` absent → the default; a float
    or float16 constant → its first value; the output of a DQ of constant scalars → its dequantized value;
    else not constant (None)."""
    if len(clip.inputs) <= i or not clip.inputs[i]:
        return np.float32(np.finfo(np.float32).min if i == 1 else np.finfo(np.float32).max)
    name = clip.inputs[i]
    if name in graph.initializers:
        v = _const(graph, name)
        return np.float32(v.reshape(-1)[0]) if v is not None and v.size and v.dtype in (_F32, np.dtype(np.float16)) else None
    p = graph.producer.get(name)
    dq = graph.nodes[p] if p is not None else None
    if dq is None or dq.op_type != "DequantizeLinear" or len(dq.inputs) < 3:
        return None
    x, scale, zp = (_const(graph, n) for n in dq.inputs[:3])
    if x is None or scale is None or zp is None or not (_scalar_or_1d1(x) and _scalar_or_1d1(scale) and _scalar_or_1d1(zp)):
        return None
    ints = (np.int8, np.uint8, np.int16, np.uint16, np.int32)
    if scale.dtype not in (_F32, np.dtype(np.float16)) or zp.dtype not in ints or x.dtype not in ints:
        return None
    with np.errstate(all="ignore"):
        return np.float32(np.float32(scale.reshape(-1)[0]) * (np.float32(x.reshape(-1)[0]) - np.float32(zp.reshape(-1)[0])))


def _clip_min_max(graph: GraphInfo, clip: NodeInfo) -> tuple[np.float32, np.float32] | None:
    """GetClipConstantMinMax (utils.cc): attributes before Clip-11, constant inputs from 11 on."""
    if clip.since_version is not None and clip.since_version < 11:
        lo, hi = clip.attrs.get("min"), clip.attrs.get("max")
        lo = np.finfo(np.float32).min if lo is None else lo  # ORT reads the attributes ONNX defaults to these
        hi = np.finfo(np.float32).max if hi is None else hi
        return np.float32(lo), np.float32(hi)
    lo, hi = _clip_bound(graph, clip, 1), _clip_bound(graph, clip, 2)
    return None if lo is None or hi is None else (lo, hi)


def _to_int32(v: np.float32) -> int:
    """``static_cast<int32_t>(::rint(v))`` as the devices (ARM64, ``fcvtzs``) compute it: NaN → 0, out of
    range → saturated (x86 gives INT32_MIN instead; the C++ cast is undefined there)."""
    if np.isnan(v):
        return 0
    r = float(np.rint(v))
    return int(min(max(r, -_INT32), _INT32 - 1))


def _add_int32(a: int, b: int) -> int:
    """int32 addition, wrapping as the devices do (the C++ overflow is undefined)."""
    return (a + b + _INT32) % (2 * _INT32) - _INT32


def clip_made_redundant(graph: GraphInfo, clip: NodeInfo, q: NodeInfo) -> bool:
    """IsClipMadeRedundantByQ (qdq_util.cc): Relu when the zero point is the type's min; Clip when
    ``rint(min / scale) + zp <= type min`` and ``rint(max / scale) + zp >= type max`` (float32 division)."""
    got = _q_scale_zp(graph, q)
    if got is None:
        return False
    scale, zp, dtype = got
    lo, hi = _MINMAX[dtype]
    if clip.op_type == "Relu":
        return zp == lo
    if clip.op_type != "Clip":
        return False
    bounds = _clip_min_max(graph, clip)
    if bounds is None:
        return False
    with np.errstate(all="ignore"):
        q_min = _add_int32(_to_int32(np.float32(bounds[0] / scale)), zp)
        q_max = _add_int32(_to_int32(np.float32(bounds[1] / scale)), zp)
    return q_min <= lo and q_max >= hi


def qdq_pair_supported(graph: GraphInfo, dq: NodeInfo, q: NodeInfo) -> bool:
    """IsQDQPairSupported (qdq_util.cc): both nodes with scale and zero point given, scalar, constant, of
    the same types, the zero points' bytes equal and the scales equal. (GetAllNodeUnits' DropQDQ selector
    allows non-positive scales: RegisterMiscSelectors builds it with allow_nonpositive_scale = true.)"""
    if len(dq.inputs) != 3 or len(q.inputs) != 3 or not all((*dq.inputs[1:], *q.inputs[1:])):
        return False
    values = [_const(graph, n) for n in (q.inputs[2], q.inputs[1], dq.inputs[2], dq.inputs[1])]
    if any(v is None or not _scalar_or_1d1(v) for v in values):
        return False  # optimizer_utils::IsScalar (utils.cc; an initializer's shape is its dims), constant
    q_zp, q_scale, dq_zp, dq_scale = (v for v in values if v is not None)
    if q_zp.dtype != dq_zp.dtype or q_scale.dtype != dq_scale.dtype or q_zp.tobytes() != dq_zp.tobytes():
        return False
    if q_scale.dtype.kind != "f":
        return False  # float, float16 (bfloat16 reads as unknown here)
    return bool(q_scale.reshape(-1)[0] == dq_scale.reshape(-1)[0])
