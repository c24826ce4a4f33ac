"""``pad``: Pad -> Concat (and Slice) of the input with constant blocks or slices of itself; a Pad that pads
nothing -> Identity.

For providers that refuse a Pad (any Pad, or some of its modes) but take Concat and Slice with constant
starts/ends/axes/steps on a static shape: the declaring providers' ``fix_reasons`` say which Pads each
refuses, and where a runtime takes the Pad after all, the fix stage finds no gain and undoes this pass.
With the input's shape static and the pads, value and axes constant (computed ones are read from the
folded view, :mod:`~mobilegen.passes.const_view`):

- every pad 0 -> Identity (onnxruntime's Level1 ``EliminateIdentity`` then removes it: Swin's
  window padding when the window divides the feature map);
- ``constant``: negative pads crop with one Slice; each padded axis in turn becomes Concat(block, x,
  block) with constant blocks of the pad value (corners get the value, as Pad gives them);
- ``reflect``: Concat(Slice reversed, x, Slice reversed) per axis (pads must be below the dim);
- ``edge``: Concat of the first/last slice repeated, x; ``wrap``: Concat(tail slice, x, head slice)
  (so a provider taking only constant Pads gets the other modes too).

Axis by axis on the growing tensor is what Pad computes (numpy.pad's order). A constant block is at most
1 MiB (else the node is left alone). onnxruntime's Level1 rules turn neither Concat nor Slice back into a
Pad (``PadFusion`` starts from a Pad node).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from mobilegen.passes.base import GraphPass
from mobilegen.passes.const_view import FOLD_MAX_BYTES, ConstView, const_view
from mobilegen.passes.graph_util import Constants, Names, Rewrite, attr, is_op, opset

_MODES = ("constant", "reflect", "edge", "wrap")


@dataclass(frozen=True)
class _Plan:
    x: str
    y: str
    mode: str
    shape: tuple[int, ...]
    begins: tuple[int, ...]
    ends: tuple[int, ...]
    value: np.ndarray  # the constant, as the input's dtype (0-d)


def _mode(node: onnx.NodeProto) -> str:
    value = attr(node, "mode", b"constant")
    return value.decode() if isinstance(value, bytes) else str(value)


def _plan(node: onnx.NodeProto, view: ConstView) -> _Plan | None:
    if len(node.input) < 2 or not node.input[0] or len(node.output) != 1 or not node.output[0]:
        return None
    shape = view.static_shape(node.input[0])
    xt = view.types.get(node.input[0])
    pads = view.value(node.input[1])
    mode = _mode(node)
    if shape is None or xt is None or pads is None or mode not in _MODES or not shape or 0 in shape:
        return None
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(xt.elem_type))
    except (KeyError, TypeError, ValueError):
        return None
    rank = len(shape)
    axes = list(range(rank))
    if len(node.input) > 3 and node.input[3]:
        given = view.value(node.input[3])
        if given is None:
            return None
        axes = [int(a) + rank if int(a) < 0 else int(a) for a in given.reshape(-1)]
    flat = [int(p) for p in pads.reshape(-1)]
    if len(flat) != 2 * len(axes) or len(set(axes)) != len(axes) or not all(0 <= a < rank for a in axes):
        return None
    begins, ends = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        begins[a], ends[a] = flat[i], flat[i + len(axes)]
    value = np.zeros((), dtype)
    if len(node.input) > 2 and node.input[2]:
        given = view.value(node.input[2])
        if given is None or given.size != 1:
            return None
        value = given.reshape(()).astype(dtype)
    return _Plan(node.input[0], node.output[0], mode, shape, tuple(begins), tuple(ends), value)


class _Builder:
    def __init__(self, plan: _Plan, names: Names, consts: Constants) -> None:
        self.plan, self.names, self.consts = plan, names, consts
        self.base = f"{plan.y}/pad"
        self.nodes: list[onnx.NodeProto] = []

    def out_name(self, last: bool, hint: str) -> str:
        return self.plan.y if last else self.names.new(f"{self.base}/{hint}")

    def slice(self, src: str, axis: int, start: int, end: int, step: int = 1) -> str:
        out = self.names.new(f"{self.base}/slice")
        inputs = [src, self.consts.ints([start], "starts"), self.consts.ints([end], "ends"), self.consts.ints([axis], "axes")]
        if step != 1:
            inputs.append(self.consts.ints([step], "steps"))
        self.nodes.append(helper.make_node("Slice", inputs, [out], name=self.names.new(f"{self.base}/Slice")))
        return out

    def concat(self, parts: list[str], axis: int, last: bool) -> str:
        out = self.out_name(last, "padded")
        self.nodes.append(helper.make_node("Concat", parts, [out], name=self.names.new(f"{self.base}/Concat"), axis=axis))
        return out

    def sides(self, src: str, shape: list[int], axis: int, before: int, after: int) -> tuple[list[str], list[str]] | None:
        mode, dim = self.plan.mode, shape[axis]
        if mode == "constant":
            blocks: list[list[str]] = []
            for size in (before, after):
                if not size:
                    blocks.append([])
                    continue
                block_shape = [*shape[:axis], size, *shape[axis + 1 :]]
                if math.prod(block_shape) * self.plan.value.itemsize > FOLD_MAX_BYTES:
                    return None
                blocks.append([self.consts.add(np.full(block_shape, self.plan.value), "block")])
            return blocks[0], blocks[1]
        if mode == "reflect":
            if before >= dim or after >= dim:
                return None
            left = [self.slice(src, axis, before, 0, -1)] if before else []
            end = dim - 2 - after
            right = [self.slice(src, axis, dim - 2, end if end >= 0 else -(dim + 1), -1)] if after else []
            return left, right
        if mode == "edge":
            first = [self.slice(src, axis, 0, 1)] if before else []
            last = [self.slice(src, axis, dim - 1, dim)] if after else []
            return first * before, last * after
        if before > dim or after > dim:  # wrap
            return None
        return ([self.slice(src, axis, dim - before, dim)] if before else []), ([self.slice(src, axis, 0, after)] if after else [])


def _rewrite(plan: _Plan, names: Names, consts: Constants) -> list[onnx.NodeProto] | None:
    b = _Builder(plan, names, consts)
    if not any(plan.begins) and not any(plan.ends):
        return [helper.make_node("Identity", [plan.x], [plan.y], name=names.new(f"{b.base}/Identity"))]
    if any(p < 0 for p in (*plan.begins, *plan.ends)) and plan.mode != "constant":
        return None
    shape = list(plan.shape)
    cur = plan.x
    crop = [a for a in range(len(shape)) if plan.begins[a] < 0 or plan.ends[a] < 0]
    padded = [a for a in range(len(shape)) if plan.begins[a] > 0 or plan.ends[a] > 0]
    if crop:
        starts = [max(0, -plan.begins[a]) for a in crop]
        stops = [shape[a] - max(0, -plan.ends[a]) for a in crop]
        if any(s >= e for s, e in zip(starts, stops, strict=True)):
            return None
        out = b.out_name(not padded, "cropped")
        inputs = [cur, consts.ints(starts, "starts"), consts.ints(stops, "ends"), consts.ints(crop, "axes")]
        b.nodes.append(helper.make_node("Slice", inputs, [out], name=names.new(f"{b.base}/Slice")))
        cur = out
        for a, s, e in zip(crop, starts, stops, strict=True):
            shape[a] = e - s
    for i, a in enumerate(padded):
        before, after = max(0, plan.begins[a]), max(0, plan.ends[a])
        sides = b.sides(cur, shape, a, before, after)
        if sides is None:
            return None
        cur = b.concat([*sides[0], cur, *sides[1]], a, last=i == len(padded) - 1)
        shape[a] += before + after
    return b.nodes


def apply(model: onnx.ModelProto) -> int:
    graph = model.graph
    pads = [n for n in graph.node if is_op(n, "Pad")]
    if not pads or opset(model) < 11:
        return 0  # before opset 11 Pad has attributes (the pads this pass reads are an input)
    view = const_view(model)
    names = Names(graph)
    consts = Constants(graph, names, "pad")
    edit = Rewrite(graph)
    for node in pads:
        plan = _plan(node, view)
        new = _rewrite(plan, names, consts) if plan is not None else None
        if new is not None:
            edit.replace([node], new)
    return edit.commit()


PASS = GraphPass(
    name="pad",
    summary="Pad -> Concat of constant blocks / Slices of the input; zero pads -> Identity",
    apply=apply,
)
