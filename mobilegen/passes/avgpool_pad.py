"""``avgpool-pad``: 2-D AveragePool with ``count_include_pad`` or ``ceil_mode`` -> forms without them, with
the same numbers: a constant zero Pad before an unpadded AveragePool, or GlobalAveragePool.

Why a provider wants it (a pool builder refusing those attributes while it takes GlobalAveragePool and a
constant Pad) is in that provider's ``fix_reasons``. onnxruntime's CPU kernel (core/providers/cpu/nn/pool_functors.h,
``AveragePool2DTask``) clips each window to the padded input, ``[-pad_begin, size + pad_end)``, and
with ``count_include_pad`` divides by the clipped window's size, else by the input elements in it. So:

- explicit pads, ``count_include_pad=1``, ``ceil_mode=0`` -> Pad (constant 0) + AveragePool without pads:
  every window lies inside the padded input, and both divide by the kernel size;
- no pads, ``count_include_pad=1``, ``ceil_mode=0`` -> the same AveragePool with ``count_include_pad=0``;
- no pads and one window covering the whole input (kernel >= H, W, a 1x1 output, any ``ceil_mode``:
  HF EfficientNet's ``AvgPool2d(hidden_dim, ceil_mode=True)`` pooler) -> GlobalAveragePool.

The new AveragePool says ``auto_pad="VALID"`` rather than zero pads: onnxruntime's Level1 ``PadFusion``
(core/optimizer/pad_fusion.cc) folds a zero-valued constant Pad into a following AveragePool with
explicit padding (setting ``count_include_pad=1``, the form this pass removes), but leaves an AveragePool
whose ``auto_pad`` is not NOTSET alone. Dilated pooling and ``SAME_*`` auto padding are left as they are.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from mobilegen.passes.base import GraphPass
from mobilegen.passes.const_view import static_types
from mobilegen.passes.graph_util import Constants, Names, Rewrite, TensorType, attr, is_op, opset


def _ints(node: onnx.NodeProto, name: str, default: list[int]) -> list[int]:
    value = attr(node, name, default)
    return [int(v) for v in value] if isinstance(value, list) else default


def _int(node: onnx.NodeProto, name: str, default: int) -> int:
    value = attr(node, name, default)
    return int(value) if isinstance(value, int) else default


def _auto_pad(node: onnx.NodeProto) -> str:
    value = attr(node, "auto_pad", b"NOTSET")
    return value.decode() if isinstance(value, bytes) else str(value)


def _pooled(size: int, kernel: int, stride: int, pads: int, ceil_mode: int) -> int:
    span = size + pads - kernel
    return (-(-span // stride) if ceil_mode else span // stride) + 1


def _global(node: onnx.NodeProto, xt: TensorType | None, kernel: list[int], strides: list[int], ceil_mode: int) -> bool:
    if xt is None or xt.shape is None or len(xt.shape) != 4:
        return False
    spatial = xt.shape[2:]
    if any(d is None for d in spatial):
        return False
    dims = [int(d) for d in spatial if d is not None]
    return all(k >= d and _pooled(d, k, s, 0, ceil_mode) == 1 for d, k, s in zip(dims, kernel, strides, strict=True))


def _rewrite(node: onnx.NodeProto, types: dict[str, TensorType], version: int, names: Names, consts: Constants) -> list[onnx.NodeProto] | None:
    if len(node.input) != 1 or len(node.output) != 1 or not node.output[0]:
        return None
    kernel = _ints(node, "kernel_shape", [])
    if len(kernel) != 2:
        return None
    strides = _ints(node, "strides", [1, 1])
    pads = _ints(node, "pads", [0, 0, 0, 0])
    auto_pad = _auto_pad(node)
    ceil_mode = _int(node, "ceil_mode", 0)
    include_pad = _int(node, "count_include_pad", 0)
    if any(d != 1 for d in _ints(node, "dilations", [1, 1])) or len(strides) != 2 or len(pads) != 4:
        return None
    if auto_pad not in ("NOTSET", "VALID") or (not include_pad and not ceil_mode):
        return None  # SAME_* needs the padding computed; without either attribute there is nothing to remove
    padded = auto_pad == "NOTSET" and any(pads)
    if any(p < 0 for p in pads):
        return None
    x, y = node.input[0], node.output[0]
    base = f"{y}/avgpool_pad"
    if not padded and _global(node, types.get(x), kernel, strides, ceil_mode):
        return [helper.make_node("GlobalAveragePool", [x], [y], name=names.new(f"{base}/GlobalAveragePool"))]
    if ceil_mode:
        return None  # only the global form drops ceil_mode: any other rewrite would keep it
    def pool(src: str) -> onnx.NodeProto:
        return helper.make_node(
            "AveragePool", [src], [y], name=names.new(f"{base}/AveragePool"), kernel_shape=kernel, strides=strides, auto_pad="VALID"
        )

    if not padded:
        return [pool(x)]
    xt = types.get(x)
    if version < 11 or xt is None or xt.elem_type != onnx.TensorProto.FLOAT:
        return None  # Pad takes its pads as an input from opset 11 (the only form written); a float32 zero
    xp = names.new(f"{base}/padded")
    full = [0, 0, pads[0], pads[1], 0, 0, pads[2], pads[3]]  # [N, C, H, W] begins, then ends
    zero = consts.scalar(0.0, np.float32)
    pad = helper.make_node("Pad", [x, consts.ints(full, "pads"), zero], [xp], name=names.new(f"{base}/Pad"), mode="constant")
    return [pad, pool(xp)]


def apply(model: onnx.ModelProto) -> int:
    graph = model.graph
    pools = [n for n in graph.node if is_op(n, "AveragePool") and (_int(n, "count_include_pad", 0) or _int(n, "ceil_mode", 0))]
    if not pools:
        return 0
    types = static_types(model, [n.input[0] for n in pools if n.input])
    names = Names(graph)
    consts = Constants(graph, names, "avgpool_pad")
    version = opset(model)
    edit = Rewrite(graph)
    for node in pools:
        new = _rewrite(node, types, version, names, consts)
        if new is not None:
            edit.replace([node], new)
    return edit.commit()


PASS = GraphPass(
    name="avgpool-pad",
    summary="AveragePool count_include_pad/ceil_mode -> Pad + AveragePool (VALID), or GlobalAveragePool",
    apply=apply,
)
