"""``conv1d-2d``: Conv over one spatial dim -> Unsqueeze [N, C, 1, L], Conv 2-D (kernel [1, k]), Squeeze.

For providers whose Conv takes 2-D convolutions with a constant 4-D weight only (their ``fix_reasons``
say which and where). The 2-D weight [M, C/group, 1, k] is a new initializer next to the original (which
is left as it is, per the pass contract; nothing reads it afterwards). A weight computed from constants
(weight normalization, as the dynamo exporter writes wav2vec2's positional conv) gets an Unsqueeze
instead, which onnxruntime's Level1 constant folding turns into a 4-D initializer before partitioning.
Strides, dilations, pads, auto_pad and group carry over with a unit first spatial dim, which neither pads
nor strides: the result is the same numbers. What a provider requires of the 2-D
conv's dilations and groups it still requires, as before the rewrite.

onnxruntime's Level1 rules leave the three ops alone: ``UnsqueezeElimination`` folds only an Unsqueeze
of an initializer, and Conv+Add/Mul/BatchNormalization fusions need the Add/Mul/BN right after the Conv
(here a Squeeze sits between).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

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
    weight: np.ndarray | None  # [M, C/group, k]; None: computed in the graph (e.g. weight norm)
    attrs: dict[str, Any]  # the 2-D Conv's attributes


def _ints(node: onnx.NodeProto, name: str, default: list[int]) -> list[int] | None:
    value = attr(node, name, default)
    return [int(v) for v in value] if isinstance(value, list) else None


def _plan(node: onnx.NodeProto, index: GraphIndex, types: dict[str, TensorType]) -> _Plan | None:
    if len(node.input) < 2 or not node.input[0] or len(node.output) != 1 or not node.output[0]:
        return None
    weight = index.const(node.input[1])
    if weight is not None:
        shape: tuple[int | None, ...] | None = weight.shape
    elif index.computed_from_constants(node.input[1]):
        wt = types.get(node.input[1])
        shape = None if wt is None else wt.shape
    else:
        return None  # a run-time weight stays run-time in the 2-D form: nothing to gain
    if shape is None or len(shape) != 3:
        return None
    xt = types.get(node.input[0])
    if xt is not None and xt.shape is not None and len(xt.shape) != 3:
        return None
    kernel = _ints(node, "kernel_shape", [] if shape[2] is None else [shape[2]])
    if kernel is None or len(kernel) != 1:
        return None
    k = kernel[0]
    strides = _ints(node, "strides", [1])
    dilations = _ints(node, "dilations", [1])
    pads = _ints(node, "pads", [0, 0])
    if shape[2] not in (None, k) or strides is None or len(strides) != 1 or dilations is None or len(dilations) != 1:
        return None
    if pads is None or len(pads) != 2:
        return None
    auto_pad = attr(node, "auto_pad", b"NOTSET")
    attrs: dict[str, Any] = {
        "kernel_shape": [1, k],
        "strides": [1, strides[0]],
        "dilations": [1, dilations[0]],
        "group": int(attr(node, "group", 1)),  # type: ignore[call-overload]
    }
    if auto_pad in (b"NOTSET", "NOTSET"):
        attrs["pads"] = [0, pads[0], 0, pads[1]]
    else:
        attrs["auto_pad"] = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    return _Plan(weight, attrs)


class _Axes:
    """The ``[2]`` axes of Unsqueeze/Squeeze: an input from opset 13, an attribute before."""

    def __init__(self, version: int, consts: Constants) -> None:
        self.version, self.consts = version, consts

    def node(self, op: str, src: str, out: str, name: str) -> onnx.NodeProto:
        if self.version >= 13:
            return helper.make_node(op, [src, self.consts.ints([2], "axes")], [out], name=name)
        return helper.make_node(op, [src], [out], name=name, axes=[2])


def apply(model: onnx.ModelProto) -> int:
    graph = model.graph
    if not any(is_op(n, "Conv") for n in graph.node):
        return 0
    index = GraphIndex(graph)
    types = tensor_types(model)
    names = Names(graph)
    consts = Constants(graph, names, "conv1d_2d")
    axes = _Axes(opset(model), consts)
    weights: dict[str, str] = {}  # original weight -> its 4-D form (shared by Convs sharing the weight)
    edit = Rewrite(graph)
    for node in list(graph.node):
        if not is_op(node, "Conv"):
            continue
        plan = _plan(node, index, types)
        if plan is None:
            continue
        w_name = node.input[1]
        base = f"{node.output[0]}/conv1d_2d"
        new_nodes = []
        if w_name not in weights:
            weights[w_name] = names.new(f"{w_name}/2d")
            if plan.weight is not None:
                graph.initializer.append(numpy_helper.from_array(plan.weight[:, :, None, :], weights[w_name]))
            else:  # computed from constants: onnxruntime's Level1 constant folding makes it a 4-D initializer
                new_nodes.append(axes.node("Unsqueeze", w_name, weights[w_name], names.new(f"{base}/Unsqueeze")))
        x4, y4 = names.new(f"{base}/x_4d"), names.new(f"{base}/y_4d")
        inputs = [x4, weights[w_name], *node.input[2:]]
        new_nodes += [
            axes.node("Unsqueeze", node.input[0], x4, names.new(f"{base}/Unsqueeze")),
            helper.make_node("Conv", inputs, [y4], name=names.new(f"{base}/Conv"), **plan.attrs),
            axes.node("Squeeze", y4, node.output[0], names.new(f"{base}/Squeeze")),
        ]
        edit.replace([node], new_nodes)
    return edit.commit()


PASS = GraphPass(
    name="conv1d-2d",
    summary="Conv1d -> Unsqueeze, Conv2d (kernel [1, k], new 4-D weight), Squeeze",
    apply=apply,
)
