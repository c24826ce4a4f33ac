"""``sum-add``: Sum(a, b, c, ...) -> Add(Add(a, b), c) ...; a one-input Sum -> Identity.

For providers that register no Sum builder (or one of two inputs only) but take Add: the declaring
providers' ``fix_reasons`` cite their builder factories. Add broadcasts the way Sum does (both multidirectional from opset 8; Sum-6 takes equal shapes), and the
chain adds in Sum's order, so the numbers are the same. Opset 7 or newer (Add before 7 broadcasts only
with an attribute). onnxruntime's Level1 rules have no Add-chain fusion (``GemmSumFusion`` only folds a
Sum into a Gemm before it, and after this pass there is no Sum left).
"""

from __future__ import annotations

import onnx
from onnx import helper

from mobilegen.passes.base import GraphPass
from mobilegen.passes.graph_util import Names, Rewrite, is_op, opset


def _chain(node: onnx.NodeProto, names: Names) -> list[onnx.NodeProto]:
    inputs = list(node.input)
    out = node.output[0]
    base = f"{out}/sum_add"
    if len(inputs) == 1:
        return [helper.make_node("Identity", inputs, [out], name=names.new(f"{base}/Identity"))]
    nodes = []
    acc = inputs[0]
    for i, term in enumerate(inputs[1:], start=1):
        last = i == len(inputs) - 1
        result = out if last else names.new(f"{base}/partial")
        nodes.append(helper.make_node("Add", [acc, term], [result], name=names.new(f"{base}/Add")))
        acc = result
    return nodes


def apply(model: onnx.ModelProto) -> int:
    graph = model.graph
    sums = [n for n in graph.node if is_op(n, "Sum") and n.input and all(n.input) and len(n.output) == 1]
    if not sums or opset(model) < 7:
        return 0
    names = Names(graph)
    edit = Rewrite(graph)
    for node in sums:
        edit.replace([node], _chain(node, names))
    return edit.commit()


PASS = GraphPass(
    name="sum-add",
    summary="Sum of n inputs -> n-1 Adds (a one-input Sum -> Identity)",
    apply=apply,
)
