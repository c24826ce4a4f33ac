"""``instancenorm``: InstanceNormalization -> ReduceMean, Sub, Mul, ReduceMean, Add, Sqrt, Div (, Mul, Add).

For providers with no InstanceNormalization builder that take every op of the decomposition (their
``fix_reasons`` say which, and from where). torch exports ``GroupNorm`` as a Reshape to [N, groups, -1],
an InstanceNormalization with unit scale and zero bias, and the affine Mul/Add: wav2vec2's feature
extractor (``feat_extract_norm="group"``, the base models) has one.

y = (x - mean) / sqrt(var + epsilon) * scale + B, mean and var over the spatial axes 2.. of each (n, c),
with scale and B per channel: they become [C, 1, ...] (a new initializer when constant, per the pass
contract; an Unsqueeze otherwise). A constant unit scale and a constant zero bias are left out (torch's
GroupNorm form), which is exact. The variance is ``ReduceMean(Mul(d, d))``, the two-pass form of
:mod:`mobilegen.passes.layernorm` (no ``Pow``: onnxruntime's Level1 ``LayerNormFusion`` needs one, and
would otherwise fuse the form back into a LayerNormalization when the reduced axis is the last one);
onnxruntime's own InstanceNormalization kernel computes the same two means
(onnxruntime/core/providers/cpu/nn/instance_norm.cc), so the rewrite matches it within float32 rounding.

Only float32 inputs of rank 3 or 4 (the rank-4 ReduceMean is the largest the declaring providers take:
a rank-5 one gains nothing). A provider that takes InstanceNormalization whole does not declare the pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class _Plan:
    x: str
    scale: str | None  # None: a constant 1 (left out)
    bias: str | None  # None: a constant 0 (left out)
    y: str
    rank: int
    epsilon: float


def _is_const(value: np.ndarray | None, target: float) -> bool:
    return value is not None and bool((value == target).all())


def _plan(node: onnx.NodeProto, index: GraphIndex, types: dict[str, TensorType]) -> _Plan | None:
    if len(node.input) != 3 or not all(node.input) or len(node.output) != 1 or not node.output[0]:
        return None
    xt = types.get(node.input[0])
    if xt is None or xt.elem_type != TensorProto.FLOAT or xt.shape is None or len(xt.shape) not in (3, 4):
        return None
    channels = xt.shape[1]
    for name in node.input[1:]:
        t = types.get(name)
        if t is None or t.shape is None or len(t.shape) != 1 or t.shape[0] is None:
            return None  # scale and B are [C]: a broadcast [C, 1, ...] needs C
        if channels is not None and t.shape[0] != channels:
            return None
    eps = float(attr(node, "epsilon", 1e-5))  # type: ignore[arg-type]
    scale, bias = node.input[1], node.input[2]
    return _Plan(
        node.input[0],
        None if _is_const(index.const(scale), 1.0) else scale,
        None if _is_const(index.const(bias), 0.0) else bias,
        node.output[0],
        len(xt.shape),
        eps,
    )


class _Builder:
    def __init__(self, plan: _Plan, base: str, version: int, index: GraphIndex, names: Names, consts: Constants) -> None:
        self.plan, self.base, self.version = plan, base, version
        self.index, self.names, self.consts = index, names, consts
        self.nodes: list[onnx.NodeProto] = []
        self.spatial = list(range(2, plan.rank))  # the reduced axes
        self.trailing = list(range(1, plan.rank - 1))  # [C] -> [C, 1, ...]: the axes Unsqueeze adds

    def op(self, op: str, inputs: list[str], out: str = "", **attrs: Any) -> str:
        out = out or self.names.new(f"{self.base}/{op.lower()}")
        self.nodes.append(helper.make_node(op, inputs, [out], name=self.names.new(f"{self.base}/{op}"), **attrs))
        return out

    def mean(self, src: str) -> str:
        if self.version >= 18:  # axes became an input in opset 18
            return self.op("ReduceMean", [src, self.consts.ints(self.spatial, "axes")], keepdims=1)
        return self.op("ReduceMean", [src], axes=self.spatial, keepdims=1)

    def per_channel(self, name: str) -> str:
        """``name`` ([C]) as [C, 1, ...]: a new initializer when constant, else an Unsqueeze."""
        value = self.index.const(name)
        if value is not None:  # a new initializer (the pass contract keeps the [C] one as it is)
            return self.consts.add(value.reshape(-1, *[1] * len(self.trailing)), "per_channel")
        if self.version >= 13:
            return self.op("Unsqueeze", [name, self.consts.ints(self.trailing, "axes")])
        return self.op("Unsqueeze", [name], axes=self.trailing)


def _decompose(plan: _Plan, b: _Builder) -> list[onnx.NodeProto]:
    mean = b.mean(plan.x)
    dev = b.op("Sub", [plan.x, mean])
    var = b.mean(b.op("Mul", [dev, dev]))  # not Pow: see the module docstring
    std = b.op("Sqrt", [b.op("Add", [var, b.consts.scalar(plan.epsilon, np.float32)])])
    last = plan.scale is None and plan.bias is None
    normed = b.op("Div", [dev, std], out=plan.y if last else "")
    if plan.scale is not None:
        normed = b.op("Mul", [normed, b.per_channel(plan.scale)], out=plan.y if plan.bias is None else "")
    if plan.bias is not None:
        b.op("Add", [normed, b.per_channel(plan.bias)], out=plan.y)
    return b.nodes


def apply(model: onnx.ModelProto) -> int:
    graph = model.graph
    found = [n for n in graph.node if is_op(n, "InstanceNormalization")]
    if not found:
        return 0
    index = GraphIndex(graph)
    types = tensor_types(model)
    names = Names(graph)
    consts = Constants(graph, names, "instancenorm")
    version = opset(model)
    edit = Rewrite(graph)
    for node in found:
        plan = _plan(node, index, types)
        if plan is None:
            continue
        builder = _Builder(plan, node.name or f"{plan.y}/instancenorm", version, index, names, consts)
        edit.replace([node], _decompose(plan, builder))
    return edit.commit()


PASS = GraphPass(
    name="instancenorm",
    summary="InstanceNormalization -> ReduceMean/Sub/Mul/ReduceMean/Add/Sqrt/Div (, Mul, Add per channel)",
    apply=apply,
)
