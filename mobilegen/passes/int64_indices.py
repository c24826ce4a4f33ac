"""``int64-indices``: Gather indices cast to int64 at run time -> cast to int32 (or not cast at all).

For providers whose Gather takes run-time indices as int32 only, and whose Cast takes float32 or int32
input (the declaring providers' ``fix_reasons`` say which, read from their builders). Rewritten are
indices made by ``Cast(to=int64)`` of a float32 tensor (-> ``Cast(to=int32)``) or of an int32 tensor
(-> read it directly): every node the rewrite adds is then one such a provider takes. Valid indices lie
within the data's axis, far inside int32, and float -> int32 truncates as float -> int64 does, so the
Gather reads the same rows.

Left as they are: constant int64 indices (a builder converts a constant initializer itself), and int64
indices that are a graph input (token ids): the Cast to int32 they would need reads an int64 tensor,
which such a provider refuses too, so it would stay on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx
from onnx import TensorProto, helper

from mobilegen.passes.base import GraphPass
from mobilegen.passes.graph_util import GraphIndex, Names, Rewrite, TensorType, attr, is_op, tensor_types

_SOURCES = (TensorProto.FLOAT, TensorProto.INT32)


@dataclass(frozen=True)
class _Plan:
    cast: onnx.NodeProto
    source_type: int
    gathers: tuple[onnx.NodeProto, ...]  # in graph order
    cast_goes: bool  # every reader of the int64 indices is one of the Gathers


def _plan(cast: onnx.NodeProto, index: GraphIndex, types: dict[str, TensorType], position: dict[int, int]) -> _Plan | None:
    if len(cast.input) != 1 or len(cast.output) != 1 or not cast.output[0] or attr(cast, "to") != TensorProto.INT64:
        return None
    src = types.get(cast.input[0])
    if src is None or src.elem_type not in _SOURCES:
        return None
    out = cast.output[0]
    readers = index.uses(out)
    gathers = [
        g for g in readers
        if is_op(g, "Gather") and len(g.input) == 2 and g.input[1] == out and g.input[0] != out
    ]  # fmt: skip
    if not gathers:
        return None
    cast_goes = index.internal(out) and len(gathers) == len(readers)
    ordered = tuple(sorted({id(g): g for g in gathers}.values(), key=lambda g: position[id(g)]))
    return _Plan(cast, src.elem_type, ordered, cast_goes)


def _rewrite(plan: _Plan, names: Names, edit: Rewrite) -> None:
    base = f"{plan.cast.output[0]}/int32"
    indices = plan.cast.input[0]
    first: list[onnx.NodeProto] = []
    if plan.source_type != TensorProto.INT32:
        indices = names.new(base)
        first.append(helper.make_node("Cast", [plan.cast.input[0]], [indices], name=names.new(f"{base}/Cast"), to=TensorProto.INT32))
    for i, gather in enumerate(plan.gathers):
        new = onnx.NodeProto()
        new.CopyFrom(gather)
        new.input[1] = indices
        old = [plan.cast, gather] if i == 0 and plan.cast_goes else [gather]
        edit.replace(old, [*first, new] if i == 0 else [new])


def apply(model: onnx.ModelProto) -> int:
    graph = model.graph
    casts = [n for n in graph.node if is_op(n, "Cast") and attr(n, "to") == TensorProto.INT64]
    if not casts or not any(is_op(n, "Gather") for n in graph.node):
        return 0
    index = GraphIndex(graph)
    types = tensor_types(model)
    position = {id(n): i for i, n in enumerate(graph.node)}
    names = Names(graph)
    edit = Rewrite(graph)
    for cast in casts:
        plan = _plan(cast, index, types, position)
        if plan is not None and not edit.claimed(plan.gathers):
            _rewrite(plan, names, edit)
    return edit.commit()


PASS = GraphPass(
    name="int64-indices",
    summary="Gather indices Cast to int64 from float32/int32 -> Cast to int32 (or the int32 tensor itself)",
    apply=apply,
)
