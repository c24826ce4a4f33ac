"""``gathernd-gather``: GatherND with constant indices -> Reshape + Gather.

torch.export writes advanced indexing with index tensors (``padding_mask[batch_idx, kv_idx]`` in Hugging
Face's attention masks) as GatherND. The rewrite is for providers whose pinned runtime has no GatherND
builder but takes Gather and a Reshape to a constant shape (the declaring providers' ``fix_reasons`` say
which).

With ``batch_dims = 0``, constant indices of shape ``[..., k]`` and a data shape known up to dim ``k``,
GatherND reads slices ``data[i0, ..., ik-1]``: the same as Gather along axis 0 of the data reshaped to
``[d0*...*dk-1, dk, ...]`` at the row-major offset ``i0*(d1*...*dk-1) + ... + ik-1`` (negative indices
counted from the end, as GatherND does). Same elements, same output shape; no Reshape when k is 1.
Indices out of range are left to GatherND (which fails on them).
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper

from mobilegen.passes.base import GraphPass
from mobilegen.passes.const_view import ConstView, const_view
from mobilegen.passes.graph_util import Constants, GraphIndex, Names, Rewrite, attr, is_op, opset


def _offsets(node: onnx.NodeProto, view: ConstView) -> tuple[np.ndarray, tuple[int, ...], int] | None:
    """(row-major offsets, data shape, k), or None when the node is not the case handled."""
    if len(node.input) != 2 or len(node.output) != 1 or not node.output[0] or int(attr(node, "batch_dims", 0)) != 0:  # type: ignore[call-overload]
        return None
    idx = view.value(node.input[1])
    shape = view.static_shape(node.input[0])
    if idx is None or shape is None or idx.ndim < 1 or idx.dtype.kind not in "iu":
        return None
    k = int(idx.shape[-1])
    if not 1 <= k <= len(shape):
        return None
    dims = np.asarray(shape[:k], np.int64)
    idx = idx.astype(np.int64)
    idx = np.where(idx < 0, idx + dims, idx)
    if ((idx < 0) | (idx >= dims)).any():
        return None
    strides = np.asarray([math.prod(shape[j + 1 : k]) for j in range(k)], np.int64)
    return (idx * strides).sum(axis=-1).astype(np.int64), shape, k


def apply(model: onnx.ModelProto) -> int:
    graph = model.graph
    found = [n for n in graph.node if is_op(n, "GatherND")]
    if not found or opset(model) < 5:
        return 0
    view = const_view(model, GraphIndex(graph))
    names = Names(graph)
    consts = Constants(graph, names, "gathernd_gather")
    edit = Rewrite(graph)
    for node in found:
        got = _offsets(node, view)
        if got is None:
            continue
        offsets, shape, k = got
        base = node.name or node.output[0]
        data, nodes = node.input[0], []
        if k > 1:
            flat = names.new(f"{base}/rows")
            nodes.append(helper.make_node("Reshape", [data, consts.ints([math.prod(shape[:k]), *shape[k:]])], [flat], name=names.new(f"{base}/Reshape")))
            data = flat
        nodes.append(helper.make_node("Gather", [data, consts.add(offsets, "offsets")], [node.output[0]], name=names.new(f"{base}/Gather"), axis=0))
        edit.replace([node], nodes)
    return edit.commit()


PASS = GraphPass(
    name="gathernd-gather",
    summary="GatherND (batch_dims 0, constant indices) -> Reshape + Gather at the row-major offsets",
    apply=apply,
)
