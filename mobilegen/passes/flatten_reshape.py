"""``flatten-reshape``: Flatten(axis=a) -> Reshape to the same 2-D shape.

For providers with a Reshape builder (constant shape) and no Flatten one, or none for a quantized
Flatten unit (ORT's selectors group DQ -> Flatten -> Q, qdq_transformer/selectors_actions/shared/utils.cc,
the "misc" ops); a provider's ``fix_reasons`` say why it declares the pass, and a quantization recipe may
run it before quantizing (:func:`apply`).

The shape is ``[0, -1]`` for axis 1 (0 copies the batch dim, so a dynamic batch stays dynamic), ``[1, -1]``
for axis 0, and ``[d0*...*d(a-1), -1]`` for a larger axis when those dims are known; a Flatten whose
leading dims are not known, or with a negative axis on an unknown rank, is left alone. Reshape's default
``allowzero=0`` makes 0 mean "copy": exact, the same numbers.
"""

from __future__ import annotations

import math

import onnx
from onnx import helper

from mobilegen.passes.base import GraphPass
from mobilegen.passes.graph_util import Constants, Names, Rewrite, attr, is_op, opset, tensor_types


def _shape(node: onnx.NodeProto, rank: int | None, dims: tuple[int | None, ...] | None) -> list[int] | None:
    axis_attr = attr(node, "axis", 1)
    axis = axis_attr if isinstance(axis_attr, int) else 1
    if axis < 0:
        if rank is None:
            return None
        axis += rank
    if axis == 0:
        return [1, -1]
    if axis == 1:
        return [0, -1]
    if dims is None or len(dims) < axis or any(d is None for d in dims[:axis]):
        return None
    return [math.prod(d for d in dims[:axis] if d is not None), -1]


def apply(model: onnx.ModelProto) -> int:
    graph = model.graph
    flattens = [n for n in graph.node if is_op(n, "Flatten") and len(n.input) == 1 and len(n.output) == 1]
    if not flattens or opset(model) < 5:  # Reshape with a shape input: opset 5
        return 0
    types = tensor_types(model)
    names = Names(graph)
    consts = Constants(graph, names, "flatten_reshape")
    edit = Rewrite(graph)
    for node in flattens:
        t = types.get(node.input[0])
        dims = None if t is None else t.shape
        shape = _shape(node, None if dims is None else len(dims), dims)
        if shape is None:
            continue
        reshape = helper.make_node("Reshape", [node.input[0], consts.ints(shape)], [node.output[0]], name=names.new(f"{node.name or node.output[0]}/Reshape"))
        edit.replace([node], [reshape])
    return edit.commit()


PASS = GraphPass(
    name="flatten-reshape",
    summary="Flatten -> Reshape to the same 2-D shape (a constant [0, -1] for axis 1)",
    apply=apply,
)
