"""``matmul-2d``: MatMul [..., K] x constant [K, N] -> Reshape [M, K], MatMul (Gemm), Reshape [..., N].

For providers whose MatMul/Gemm takes A and B both 2-D (a fully connected layer) but refuses a 3-D
activation times a 2-D weight (their ``fix_reasons`` say which and where). Static shapes only: the
Reshape targets are constants.

When the MatMul's only reader is an Add of a constant [N] bias, the pair becomes one Gemm(A, B, C)
(a fully connected layer with its bias; C of shape [N]). onnxruntime's
Level1 ``MatMulAddFusion`` would do the same to MatMul + Add itself, except around what it takes for an
attention block (a LayerNormalization feeding 3 MatMuls and an Add: ``preserve_attention_pattern``);
after this pass no MatMul of a constant 2-D weight is left for it. Its other Level1 neighbour,
``ReshapeFusion``, only merges Reshape chains or Shape-computed targets: the matmul stays 2-D.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper

from mobilegen.passes.base import GraphPass
from mobilegen.passes.graph_util import Constants, GraphIndex, Names, Rewrite, TensorType, is_op, tensor_types


@dataclass(frozen=True)
class _Plan:
    a: str
    b: str
    bias: str  # "" when there is no bias Add to fold in
    y: str
    lead: tuple[int, ...]  # A's dims but the last
    k: int
    n: int
    nodes: tuple[onnx.NodeProto, ...]


def _plan(node: onnx.NodeProto, index: GraphIndex, types: dict[str, TensorType]) -> _Plan | None:
    if len(node.input) != 2 or not node.output or not node.output[0]:
        return None
    a, b = node.input
    weight = index.const(b)
    at = types.get(a)
    if weight is None or weight.ndim != 2 or at is None or at.shape is None or not at.static or len(at.shape) < 3:
        return None
    if at.elem_type != TensorProto.FLOAT or weight.dtype != np.float32:
        return None
    dims = tuple(d for d in at.shape if d is not None)
    k, n = (int(d) for d in weight.shape)
    if dims[-1] != k or min(dims) <= 0:
        return None
    plan = _Plan(a, b, "", node.output[0], dims[:-1], k, n, (node,))
    add = index.only_use(node.output[0])
    if add is None or not is_op(add, "Add") or len(add.input) != 2 or list(add.input).count(node.output[0]) != 1:
        return plan
    bias = add.input[1] if add.input[0] == node.output[0] else add.input[0]
    value = index.const(bias)
    if value is None or value.shape != (n,) or value.dtype != np.float32:
        return plan
    return _Plan(a, b, bias, add.output[0], dims[:-1], k, n, (node, add))


def _rewrite(plan: _Plan, names: Names, consts: Constants) -> list[onnx.NodeProto]:
    base = f"{plan.y}/matmul_2d"
    flat_in, flat_out = names.new(f"{base}/a_2d"), names.new(f"{base}/y_2d")
    m = math.prod(plan.lead)
    nodes = [helper.make_node("Reshape", [plan.a, consts.ints((m, plan.k))], [flat_in], name=names.new(f"{base}/Reshape"))]
    if plan.bias:
        nodes.append(helper.make_node("Gemm", [flat_in, plan.b, plan.bias], [flat_out], name=names.new(f"{base}/Gemm")))
    else:
        nodes.append(helper.make_node("MatMul", [flat_in, plan.b], [flat_out], name=names.new(f"{base}/MatMul")))
    nodes.append(
        helper.make_node("Reshape", [flat_out, consts.ints((*plan.lead, plan.n))], [plan.y], name=names.new(f"{base}/Reshape"))
    )
    return nodes


def apply(model: onnx.ModelProto) -> int:
    graph = model.graph
    if not any(is_op(n, "MatMul") for n in graph.node):
        return 0
    index = GraphIndex(graph)
    types = tensor_types(model)
    names = Names(graph)
    consts = Constants(graph, names, "matmul_2d")
    edit = Rewrite(graph)
    for node in list(graph.node):
        if not is_op(node, "MatMul") or edit.claimed([node]):
            continue
        plan = _plan(node, index, types)
        if plan is not None and not edit.claimed(plan.nodes):
            edit.replace(plan.nodes, _rewrite(plan, names, consts))
    return edit.commit()


PASS = GraphPass(
    name="matmul-2d",
    summary="MatMul [..,K]x[K,N] (constant weight) -> Reshape, 2-D MatMul (Gemm with the bias Add), Reshape",
    apply=apply,
)
