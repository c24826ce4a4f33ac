"""``rank6``: Reshape -> Transpose (rank >= 5) -> Reshape with the Transpose on as few dims as it needs.

Swin's window attention reshapes [B, H, W, C] to [B, H/w, w, W/w, w, C], swaps dims 2 and 3, and
reshapes to [B*H*W/w^2, w, w, C] (and back). Providers refuse tensors above rank 4 or 5 (the declaring
providers' ``fix_reasons`` say which limit each has, and where). A Transpose only needs the dims it moves apart: unit dims can go,
and dims that stay next to each other in the same order move as one. For the window partition that is
[B*H/w, w, W/w, w*C] with perm [0, 2, 1, 3], rank 4: within either limit.

The rewrite, exact (it moves the same elements to the same places), with static shapes only:
- the Reshape feeding the Transpose reshapes straight to the merged shape (a new Reshape from the same
  input; the old one goes when the Transpose was its only reader);
- the Transpose permutes the merged dims;
- each Reshape reading the Transpose (its only readers) reshapes that to its own static output shape.
Shapes and computed Reshape targets come from the folded view (:mod:`~mobilegen.passes.const_view`), so
a TorchScript export's run-time shape arithmetic is no obstacle once the dims are fixed. The new shapes
are constants with no 0 or -1. onnxruntime's Level1 ``ReshapeFusion`` may merge the new Reshapes with
neighbouring ones (their targets stay low-rank), and ``TransposeOptimizer`` has nothing to push a
Transpose between two Reshapes through.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import onnx
from onnx import helper

from mobilegen.passes.base import GraphPass
from mobilegen.passes.const_view import ConstView, const_view
from mobilegen.passes.graph_util import Constants, GraphIndex, Names, Rewrite, attr, is_op

MIN_RANK = 5  # the providers' rank limits are 4 or 5 dims: a Transpose of rank 5 or more is what they refuse
MAX_RANK = 5  # a merged Transpose of more dims helps no provider


@dataclass(frozen=True)
class Merged:
    """A Transpose on merged dims: the input reshaped to ``shape``, then permuted by ``perm``."""

    shape: tuple[int, ...]
    perm: tuple[int, ...]


def merge(shape: tuple[int, ...], perm: tuple[int, ...]) -> Merged:
    """The fewest dims that transpose like ``shape`` under ``perm``: unit dims dropped, and input dims
    that stay adjacent and in order in the output merged into one."""
    kept = [a for a in range(len(shape)) if shape[a] != 1]
    position = {a: i for i, a in enumerate(kept)}
    groups: list[list[int]] = []  # in output order
    for a in (a for a in perm if a in position):
        if groups and position[a] == position[groups[-1][-1]] + 1:
            groups[-1].append(a)
        else:
            groups.append([a])
    by_input = sorted(groups, key=lambda g: g[0])
    return Merged(
        tuple(math.prod(shape[a] for a in g) for g in by_input),
        tuple(by_input.index(g) for g in groups),
    )


@dataclass(frozen=True)
class _Plan:
    transpose: onnx.NodeProto
    source: onnx.NodeProto  # the Reshape feeding it
    source_goes: bool  # the Transpose is the source's only reader
    readers: tuple[tuple[onnx.NodeProto, tuple[int, ...]], ...]  # each Reshape reading it, its output shape
    merged: Merged


def _plan(node: onnx.NodeProto, index: GraphIndex, view: ConstView) -> _Plan | None:
    if len(node.input) != 1 or len(node.output) != 1 or not node.output[0] or not index.internal(node.output[0]):
        return None
    shape = view.static_shape(node.input[0])
    if shape is None or len(shape) < MIN_RANK or 0 in shape:
        return None
    got = attr(node, "perm", None)
    perm = tuple(int(p) for p in got) if isinstance(got, list) else tuple(reversed(range(len(shape))))
    if sorted(perm) != list(range(len(shape))):
        return None
    merged = merge(shape, perm)
    if not merged.shape or len(merged.shape) >= len(shape) or len(merged.shape) > MAX_RANK:
        return None
    source = index.producer.get(node.input[0])
    if source is None or not is_op(source, "Reshape") or len(source.input) < 2 or not source.input[0]:
        return None
    readers = []
    for reader in index.uses(node.output[0]):
        out = view.static_shape(reader.output[0]) if is_op(reader, "Reshape") and reader.output else None
        if out is None or list(reader.input).count(node.output[0]) != 1 or reader.input[0] != node.output[0] or 0 in out:
            return None
        readers.append((reader, out))
    if not readers:
        return None
    return _Plan(node, source, index.only_use(node.input[0]) is node, tuple(readers), merged)


def _rewrite(plan: _Plan, names: Names, consts: Constants, edit: Rewrite) -> None:
    out = plan.transpose.output[0]
    base = f"{out}/rank6"
    flat, moved = names.new(f"{base}/merged"), names.new(f"{base}/transposed")
    reshape = helper.make_node(
        "Reshape", [plan.source.input[0], consts.ints(plan.merged.shape)], [flat], name=names.new(f"{base}/Reshape")
    )
    transpose = helper.make_node("Transpose", [flat], [moved], name=names.new(f"{base}/Transpose"), perm=list(plan.merged.perm))
    edit.replace([plan.source, plan.transpose] if plan.source_goes else [plan.transpose], [reshape, transpose])
    for reader, shape in plan.readers:
        edit.replace(
            [reader],
            [helper.make_node("Reshape", [moved, consts.ints(shape)], list(reader.output), name=names.new(f"{base}/Reshape"))],
        )


def _rank(node: onnx.NodeProto) -> int:
    """The Transpose's rank as its ``perm`` tells (0 without one: the default reverses any rank)."""
    perm = attr(node, "perm", None)
    return len(perm) if isinstance(perm, list) else 0


def apply(model: onnx.ModelProto) -> int:
    graph = model.graph
    transposes = [n for n in graph.node if is_op(n, "Transpose") and _rank(n) >= MIN_RANK]
    if not transposes:
        return 0
    index = GraphIndex(graph)
    view = const_view(model, index)
    names = Names(graph)
    consts = Constants(graph, names, "rank6")
    edit = Rewrite(graph)
    for node in transposes:
        if edit.claimed([node]):
            continue
        plan = _plan(node, index, view)
        if plan is None or edit.claimed([plan.source, *(r for r, _ in plan.readers)]):
            continue
        _rewrite(plan, names, consts, edit)
    return edit.commit()


PASS = GraphPass(
    name="rank6",
    summary="Reshape -> Transpose of rank >= 5 -> Reshape: unit dims dropped and adjacent dims merged (rank <= 5)",
    apply=apply,
)
