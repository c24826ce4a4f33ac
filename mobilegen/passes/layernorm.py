"""``layernorm``: LayerNormalization -> ReduceMean, Sub, Mul, ReduceMean, Add, Sqrt, Div, Mul (, Add).

For providers with no LayerNormalization builder that take every op of the decomposition (their
``fix_reasons`` say which).

The variance is ``ReduceMean(Mul(d, d))``, not ``ReduceMean(Pow(d, 2))``, on purpose. onnxruntime's
``LayerNormFusion`` (onnxruntime/core/optimizer/layer_norm_fusion.cc) fuses ReduceMean -> Sub -> Pow ->
ReduceMean -> Add -> Sqrt -> Div -> Mul -> Add back into one LayerNormalization; it is registered at
Level1 (ORT_ENABLE_BASIC) for every execution provider (graph_transformer_utils.cc: "no filtering on
execution provider for L1 optimizations") and fuses at Level1 whenever the model imports opset >= 17.
Level1 runs before partitioning, and the Runtime-style ``.ort`` conversion applies it: a ``Pow`` form
reaches the device as LayerNormalization again. The matcher insists on ``Pow`` feeding the second
ReduceMean (and on the Sub having exactly 2 consumers), so ``Mul(d, d)`` survives it, and the Level2
``SimplifiedLayerNormFusion`` (CPU/CUDA nodes only, also ``Pow``-based) too. Level2 never runs on the
nodes an accelerator's provider takes, nor at the ``.ort`` conversion (it only records runtime optimizations for CPU).

The two-pass form (mean, then mean of squared deviations) is at least as accurate as onnxruntime's own
kernel, which uses E[x^2] - E[x]^2.
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
    scale: str
    bias: str  # "" when the node has none
    y: str
    axes: tuple[int, ...]  # negative, last one -1
    epsilon: float


def _plan(node: onnx.NodeProto, index: GraphIndex, types: dict[str, TensorType]) -> _Plan | None:
    if len(node.input) < 2 or not node.input[0] or not node.input[1] or not node.output or not node.output[0]:
        return None
    # Mean and InvStdDev have no counterpart here: only a node whose extra outputs nobody reads
    if any(o and (index.uses(o) or not index.internal(o)) for o in node.output[1:]):
        return None
    if attr(node, "stash_type", 1) != 1:
        return None  # computes in another precision than its float input
    x = node.input[0]
    xt = types.get(x)
    if xt is None or xt.elem_type != TensorProto.FLOAT:
        return None
    rank = None if xt.shape is None else len(xt.shape)
    axis = int(attr(node, "axis", -1))  # type: ignore[call-overload]
    if axis < 0:
        if rank is not None and axis < -rank:
            return None
        axes = tuple(range(axis, 0))
    else:
        if rank is None or axis >= rank:
            return None
        axes = tuple(range(axis - rank, 0))
    bias = node.input[2] if len(node.input) > 2 else ""
    eps = float(attr(node, "epsilon", 1e-5))  # type: ignore[arg-type]
    return _Plan(x, node.input[1], bias, node.output[0], axes, eps)


def _decompose(plan: _Plan, base: str, op_version: int, names: Names, consts: Constants) -> list[onnx.NodeProto]:
    def t(what: str) -> str:
        return names.new(f"{base}/{what}")

    def node(op: str, inputs: list[str], output: str, **attrs: Any) -> onnx.NodeProto:
        return helper.make_node(op, inputs, [output], name=names.new(f"{base}/{op}"), **attrs)

    def reduce_mean(src: str, out: str) -> onnx.NodeProto:
        if op_version >= 18:  # axes became an input in opset 18
            return node("ReduceMean", [src, consts.ints(plan.axes, "axes")], out, keepdims=1)
        return node("ReduceMean", [src], out, axes=list(plan.axes), keepdims=1)

    mean, dev, sq, var, var_eps, std, normed = (
        t("mean"), t("deviation"), t("squared"), t("variance"), t("variance_eps"), t("std"), t("normalized"),
    )
    scaled = t("scaled") if plan.bias else plan.y
    nodes = [
        reduce_mean(plan.x, mean),
        node("Sub", [plan.x, mean], dev),
        node("Mul", [dev, dev], sq),  # not Pow: see the module docstring
        reduce_mean(sq, var),
        node("Add", [var, consts.scalar(plan.epsilon, np.float32)], var_eps),
        node("Sqrt", [var_eps], std),
        node("Div", [dev, std], normed),
        node("Mul", [normed, plan.scale], scaled),
    ]
    if plan.bias:
        nodes.append(node("Add", [scaled, plan.bias], plan.y))
    return nodes


def apply(model: onnx.ModelProto) -> int:
    graph = model.graph
    found = [n for n in graph.node if is_op(n, "LayerNormalization")]
    if not found:
        return 0
    index = GraphIndex(graph)
    types = tensor_types(model)
    names = Names(graph)
    consts = Constants(graph, names, "layernorm")
    rewrite = Rewrite(graph)
    version = opset(model)
    for ln in found:
        plan = _plan(ln, index, types)
        if plan is not None:
            rewrite.replace([ln], _decompose(plan, ln.name or "layernorm", version, names, consts))
    return rewrite.commit()


PASS = GraphPass(
    name="layernorm",
    summary="LayerNormalization -> ReduceMean/Sub/Mul/ReduceMean/Add/Sqrt/Div/Mul/Add (a form ORT does not re-fuse)",
    apply=apply,
)
