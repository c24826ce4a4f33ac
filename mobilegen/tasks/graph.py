"""Wrap an exported model in its task's pre- and post-processing, with standard ONNX operators only (no
onnxruntime-extensions: its mobile packages lag), so the steps run on the model's provider and are
verified with it.

    image  uint8 [1, H, W, 3] (RGB, H×W = crop) → Cast(float) → [Gather(channels 2,1,0)] → Mul(scale)
           → Sub(mean) → Div(std) → [Transpose(0,3,1,2)] → the model's input
    pcm    float32 [1, N] (16-bit sample values) → Div(32768) → the model's input
    the model's output → [Softmax(axis=-1)] → [TopK(K) → "scores" float32 [1, K], "indices" int64 [1, K]]

The audio input is float32, not int16: ONNX Runtime's Objective-C API has no int16 tensors (ort_enums.h
ORTTensorElementDataType), and an Android accelerator's Cast may take float input only (its rule table's
Cast entry names the ORT source); Int16 → Float is exact, done by the wrapper.

The image's batch, height and width dims are fixed (1 and the crop) throughout the model; the new nodes
and values get names no other node or value of the graph (subgraphs included) has; a model value that
collides with the new IO names is renamed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from mobilegen.errors import UsageError
from mobilegen.export.onnx_io import check_and_infer
from mobilegen.passes.graph_util import Names, graphs
from mobilegen.tasks.reference import PCM_SCALE
from mobilegen.tasks.spec import INDICES_OUTPUT, SCORES_OUTPUT, TaskSpec

MIN_OPSET = 11  # TopK with k as an input and largest/sorted (11), Softmax on the last axis
PREFIX = "mobilegen_task"


def wrap(model: onnx.ModelProto, spec: TaskSpec) -> onnx.ModelProto:
    """A copy of ``model`` (one float32 input, checked by ``tasks.dispatch.resolve``) with the task's nodes around it."""
    from onnxruntime.tools.onnx_model_utils import fix_output_shapes, make_dim_param_fixed


    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < MIN_OPSET:
        raise UsageError(f"--task needs opset {MIN_OPSET} or later, the model is opset {opset}", hint=f"export with --opset {MIN_OPSET} or later")
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    inits = {i.name for i in g.initializer}
    (x,) = [i for i in g.input if i.name not in inits and i.name not in spec.state_inputs]
    names = Names(g, prefix=PREFIX)
    new_outputs = [SCORES_OUTPUT, INDICES_OUTPUT] if spec.top_k is not None else []
    for taken in (spec.input_name, *new_outputs):  # the new IO names are the wrapper's
        if taken in names:
            _rename(g, taken, names.new(taken))
    x = next(i for i in g.input if i.name not in inits and i.name not in spec.state_inputs)
    _fix_dims(g, x, spec, make_dim_param_fixed)
    y_name = next(o.name for o in g.output if o.name not in spec.state_outputs)  # --state outputs pass through
    state_outs = [o for o in g.output if o.name in spec.state_outputs]
    pre, pre_inits, new_in = _pre(spec, x, names)
    g.input.remove(x)
    g.input.insert(0, new_in)
    post, post_inits, outs = _post(spec, g, y_name, names)
    nodes = [*pre, *g.node, *post]
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend([*pre_inits, *post_inits])
    if outs is not None:  # the task's outputs first, then the state outputs, unchanged
        kept = [onnx.ValueInfoProto() for _ in state_outs]
        for new, old in zip(kept, state_outs, strict=True):
            new.CopyFrom(old)
        del g.output[:]
        g.output.extend([*outs, *kept])
    del g.value_info[:]  # stale hints (named dims now fixed); shape inference below gives them again
    out, _size = check_and_infer(out, out.ir_version)  # checked; large weights not copied (mobilegen.export.onnx_io)
    fix_output_shapes(out)
    return out


def _rename(g: onnx.GraphProto, old: str, new: str) -> None:
    """Rename the value ``old`` everywhere (subgraphs see outer values by name)."""
    for sg in graphs(g):
        for v in (*sg.input, *sg.output, *sg.value_info, *sg.initializer):
            if v.name == old:
                v.name = new
        for node in sg.node:
            node.input[:] = [new if n == old else n for n in node.input]
            node.output[:] = [new if n == old else n for n in node.output]


def _fix_dims(g: onnx.GraphProto, x: onnx.ValueInfoProto, spec: TaskSpec, fix: object) -> None:
    """Batch 1 (and for an image channels 3 and the crop's height/width), wherever the model names those
    dims; an audio model's sample count stays as it is."""
    sizes: tuple[int, ...] = (1,)
    if spec.is_image:
        assert spec.crop is not None
        sizes = (1, 3, *spec.crop) if spec.layout == "nchw" else (1, *spec.crop, 3)
    dims = x.type.tensor_type.shape.dim
    for axis, size in enumerate(sizes):
        if dims[axis].dim_param:
            fix(g, dims[axis].dim_param, size)  # type: ignore[operator]
        dims[axis].dim_value = size


def _const(name: str, value: np.ndarray) -> TensorProto:
    return numpy_helper.from_array(value, name)


def _pre(spec: TaskSpec, x: onnx.ValueInfoProto, names: Names) -> tuple[list[onnx.NodeProto], list[TensorProto], onnx.ValueInfoProto]:
    nodes: list[onnx.NodeProto] = []
    inits: list[TensorProto] = []

    def step(op: str, inputs: list[str], what: str, *, last: bool = False, **attrs: Any) -> str:
        out = x.name if last else names.new(what)
        nodes.append(helper.make_node(op, inputs, [out], name=names.new(f"{what}_node"), **attrs))
        return out

    def const(what: str, value: np.ndarray) -> str:
        name = names.new(what)
        inits.append(_const(name, value))
        return name

    if not spec.is_image:
        dims = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in x.type.tensor_type.shape.dim]
        new_in = helper.make_tensor_value_info(spec.input_name, TensorProto.FLOAT, [1, dims[1]])
        step("Div", [spec.input_name, const("pcm_scale", np.array(PCM_SCALE, dtype=np.float32))], "pcm_float", last=True)
        return nodes, inits, new_in
    assert spec.crop is not None
    new_in = helper.make_tensor_value_info(spec.input_name, TensorProto.UINT8, [1, spec.crop[0], spec.crop[1], 3])
    v = step("Cast", [spec.input_name], "pixels_float", to=TensorProto.FLOAT)
    if spec.channels == "bgr":
        v = step("Gather", [v, const("bgr_order", np.array([2, 1, 0], dtype=np.int64))], "pixels_bgr", axis=3)
    v = step("Mul", [v, const("scale", np.array(spec.scale, dtype=np.float32))], "scaled")
    v = step("Sub", [v, const("mean", np.array(spec.channel_values(spec.mean), dtype=np.float32))], "centred")
    if spec.layout == "nchw":
        v = step("Div", [v, const("std", np.array(spec.channel_values(spec.std), dtype=np.float32))], "normalized")
        step("Transpose", [v], "nchw", last=True, perm=[0, 3, 1, 2])
    else:
        step("Div", [v, const("std", np.array(spec.channel_values(spec.std), dtype=np.float32))], "normalized", last=True)
    return nodes, inits, new_in


def _post(spec: TaskSpec, g: onnx.GraphProto, y: str, names: Names) -> tuple[list[onnx.NodeProto], list[TensorProto], list[onnx.ValueInfoProto] | None]:
    """The post nodes, their constants, and the new graph outputs (None: the model's own)."""
    if not spec.softmax and spec.top_k is None:
        return [], [], None
    nodes: list[onnx.NodeProto] = []
    inits: list[TensorProto] = []
    classes = next(o for o in g.output if o.name == y).type.tensor_type.shape.dim[1].dim_value
    source = y
    if spec.top_k is None:  # Softmax alone: it takes the model's output name
        source = names.new("logits")
        _rename(g, y, source)
    v = source
    if spec.softmax:
        v = y if spec.top_k is None else names.new("probabilities")
        nodes.append(helper.make_node("Softmax", [source], [v], name=names.new("softmax_node"), axis=-1))
    if spec.top_k is None:
        return nodes, inits, [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, classes])]
    k = names.new("k")
    inits.append(_const(k, np.array([spec.top_k], dtype=np.int64)))
    nodes.append(helper.make_node("TopK", [v, k], [SCORES_OUTPUT, INDICES_OUTPUT], name=names.new("topk_node"), axis=-1))
    return nodes, inits, [
        helper.make_tensor_value_info(SCORES_OUTPUT, TensorProto.FLOAT, [1, spec.top_k]),
        helper.make_tensor_value_info(INDICES_OUTPUT, TensorProto.INT64, [1, spec.top_k]),
    ]
