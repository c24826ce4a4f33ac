"""``fold-constants``: nodes computing constants (shape arithmetic once the dims are fixed, a Pad's pads,
a Reshape's target...) -> initializers holding their values.

The values come from :mod:`mobilegen.passes.const_view` (onnx's reference evaluator, node by node, with
shape inference re-run on what it learns). Bounded so a model's weights are never duplicated: no node
reading or writing a tensor above ``FOLD_MAX_BYTES`` (1 MiB) is folded, and only the folded tensors
that an unfolded node reads become initializers (named as the tensor, so readers are unchanged); the
rest were intermediate. Nothing writing a graph output is folded.

onnxruntime's Level1 ``ConstantFolding`` folds much of the same when a session is created, so this
pass changes what a provider sees only where onnxruntime's folding stops (what the fix stage measures).
It also leaves a smaller graph for the passes after it.
"""

from __future__ import annotations

import onnx
from onnx import numpy_helper

from mobilegen.passes.base import GraphPass
from mobilegen.passes.const_view import const_view
from mobilegen.passes.graph_util import GraphIndex, Rewrite


def apply(model: onnx.ModelProto) -> int:
    graph = model.graph
    index = GraphIndex(graph)
    view = const_view(model, index)
    folded = view.folded
    if not folded:
        return 0
    gone = {id(n) for n in folded}
    written = {o for n in folded for o in n.output if o}
    read = {i for n in graph.node if id(n) not in gone for i in n.input}
    frontier = sorted(written & (read | index.used_in_subgraphs))
    edit = Rewrite(graph)
    for node in folded:
        edit.replace([node], [])
    graph.initializer.extend(numpy_helper.from_array(view.values[name], name) for name in frontier)
    return edit.commit()


PASS = GraphPass(
    name="fold-constants",
    summary="nodes computing constants (<= 1 MiB each) -> initializers",
    apply=apply,
)
