"""``reduce``: float ReduceSum, ReduceL2 and ReduceSumSquare -> ReduceMean forms.

- ReduceSum(x, axes) -> ReduceMean(x, axes) * N, N the number of elements each output sums (static);
- ReduceL2(x, axes) -> Sqrt(ReduceMean(x * x, axes) * N);
- ReduceSumSquare(x, axes) -> ReduceMean(x * x, axes) * N.

For providers whose only reduction is ReduceMean (up to rank 4), and for those that have ReduceSum but
not ReduceL2 or ReduceSumSquare (up to rank 5): one form serves both, with Mul and Sqrt, which they take
(the declaring providers' ``fix_reasons`` cite their builders). N is exact in float32 (at most 2**24
here), and a mean times N is the sum within float32 rounding. Only float32 tensors with static reduced
dims, of rank 1..4 for a ReduceSum (only the ReduceMean-only providers refused it, and their limit is
4), up to 5 for the others; the axes (attribute, or constant input from ReduceSum-13 / ReduceMean-18)
carry over as what the opset wants.

onnxruntime's Level1 fusions leave the forms alone: ``LayerNormFusion`` needs ReduceMean -> Sub, and
there is no rule folding ReduceMean * constant back into ReduceSum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper

from mobilegen.passes.base import GraphPass
from mobilegen.passes.graph_util import (
    Constants,
    GraphIndex,
    Names,
    Rewrite,
    TensorType,
    attr,
    is_op,
    opset,
    tensor_types,
)

_OPS = ("ReduceSum", "ReduceL2", "ReduceSumSquare")
_MAX_COUNT = 1 << 24  # every integer up to here is a float32
_AXES_INPUT_SINCE = {"ReduceSum": 13, "ReduceL2": 18, "ReduceSumSquare": 18, "ReduceMean": 18}


@dataclass(frozen=True)
class _Plan:
    x: str
    y: str
    axes: tuple[int, ...]  # normalized, sorted
    keepdims: int
    count: int  # elements summed into each output


def _axes(node: onnx.NodeProto, index: GraphIndex, rank: int, version: int) -> tuple[int, ...] | None:
    if version >= _AXES_INPUT_SINCE[node.op_type]:
        if len(node.input) > 1 and node.input[1]:
            value = index.const(node.input[1])
            if value is None or value.ndim > 1:
                return None
            raw = [int(v) for v in value.reshape(-1)]
        else:
            raw = []
        if not raw and int(attr(node, "noop_with_empty_axes", 0)):  # type: ignore[call-overload]
            return None  # an identity: nothing to reduce
    else:
        got = attr(node, "axes", [])
        raw = [int(v) for v in got] if isinstance(got, list) else []
    axes = sorted({a + rank if a < 0 else a for a in raw}) if raw else list(range(rank))
    return tuple(axes) if all(0 <= a < rank for a in axes) else None


def _plan(node: onnx.NodeProto, index: GraphIndex, types: dict[str, TensorType], version: int) -> _Plan | None:
    if not node.input or not node.input[0] or len(node.output) != 1 or not node.output[0]:
        return None
    xt = types.get(node.input[0])
    # ReduceSum helps the ReduceMean-only providers (rank <= 4); ReduceL2 / ReduceSumSquare others too (rank <= 5)
    max_rank = 4 if node.op_type == "ReduceSum" else 5
    if xt is None or xt.elem_type != TensorProto.FLOAT or xt.shape is None or not 1 <= len(xt.shape) <= max_rank:
        return None
    axes = _axes(node, index, len(xt.shape), version)
    if axes is None:
        return None
    dims = [xt.shape[a] for a in axes]
    if any(d is None or d <= 0 for d in dims):
        return None
    count = math.prod(int(d) for d in dims if d is not None)
    if count > _MAX_COUNT:
        return None
    return _Plan(node.input[0], node.output[0], axes, int(attr(node, "keepdims", 1)), count)  # type: ignore[call-overload]


def _rewrite(op: str, plan: _Plan, version: int, names: Names, consts: Constants) -> list[onnx.NodeProto]:
    base = f"{plan.y}/reduce"
    nodes: list[onnx.NodeProto] = []
    src = plan.x
    if op in ("ReduceL2", "ReduceSumSquare"):
        src = names.new(f"{base}/square")
        nodes.append(helper.make_node("Mul", [plan.x, plan.x], [src], name=names.new(f"{base}/Mul")))
    mean = names.new(f"{base}/mean")
    if version >= _AXES_INPUT_SINCE["ReduceMean"]:
        reduce = helper.make_node(
            "ReduceMean", [src, consts.ints(plan.axes, "axes")], [mean], name=names.new(f"{base}/ReduceMean"), keepdims=plan.keepdims
        )
    else:
        reduce = helper.make_node(
            "ReduceMean", [src], [mean], name=names.new(f"{base}/ReduceMean"), axes=list(plan.axes), keepdims=plan.keepdims
        )
    nodes.append(reduce)
    total = plan.y if op != "ReduceL2" else names.new(f"{base}/sum")
    nodes.append(helper.make_node("Mul", [mean, consts.scalar(float(plan.count), np.float32)], [total], name=names.new(f"{base}/Mul")))
    if op == "ReduceL2":
        nodes.append(helper.make_node("Sqrt", [total], [plan.y], name=names.new(f"{base}/Sqrt")))
    return nodes


def apply(model: onnx.ModelProto) -> int:
    graph = model.graph
    if not any(is_op(n, op) for n in graph.node for op in _OPS):
        return 0
    version = opset(model)
    index = GraphIndex(graph)
    types = tensor_types(model)
    names = Names(graph)
    consts = Constants(graph, names, "reduce")
    edit = Rewrite(graph)
    for node in list(graph.node):
        if not any(is_op(node, op) for op in _OPS):
            continue
        plan = _plan(node, index, types, version)
        if plan is not None:
            edit.replace([node], _rewrite(node.op_type, plan, version, names, consts))
    return edit.commit()


PASS = GraphPass(
    name="reduce",
    summary="ReduceSum -> ReduceMean * N; ReduceL2 -> Sqrt(ReduceMean(x * x) * N); ReduceSumSquare likewise",
    apply=apply,
)
