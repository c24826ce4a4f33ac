"""A text model wrapped for the generated tokenizers, with standard ONNX operators only:

    inputs   the model's ids / attention mask / token types, renamed input_ids, attention_mask,
             token_type_ids (int64 [1, L]; batch fixed to 1)
    embedding  hidden [1, L, H] → mean: Σ hidden·mask / max(Σ mask, 1e-9)  |  cls: hidden[:, 0]
               → [x / max(‖x‖₂, 1e-12)]  → "embedding" float32 [1, H]   (sentence-transformers' Pooling, Normalize)
    classification  logits [1, C] → Softmax → "scores";  per token: [1, L, C] → Softmax(axis=-1) → "scores"

Only the model's first output is kept (a Hugging Face model's pooler output and attentions are dropped).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from mobilegen.errors import UsageError
from mobilegen.passes.graph_util import Names
from mobilegen.tasks.graph import MIN_OPSET, PREFIX, _rename
from mobilegen.tasks.spec import EMBEDDING_OUTPUT, MASK_INPUT, SCORES_OUTPUT, TaskSpec


def wrap_text(model: onnx.ModelProto, spec: TaskSpec) -> onnx.ModelProto:
    """A copy of ``model`` (checked by ``resolve_text``) with the text task's nodes after it."""
    from onnxruntime.tools.onnx_model_utils import fix_output_shapes, make_dim_param_fixed

    from mobilegen.export.onnx_io import check_and_infer

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < MIN_OPSET:
        raise UsageError(f"--task needs opset {MIN_OPSET} or later, the model is opset {opset}", hint=f"export with --opset {MIN_OPSET} or later")
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    names = Names(g, prefix=PREFIX)
    new_io = [gname for gname, _ in spec.text_inputs] + [EMBEDDING_OUTPUT if spec.kind == "text-embedding" else SCORES_OUTPUT]
    model_names = {m for _, m in spec.text_inputs}
    for taken in new_io:  # the wrapper's IO names: a model value of that name (not the input itself) moves aside
        if taken in names and taken not in model_names:
            _rename(g, taken, names.new(taken))
    for gname, mname in spec.text_inputs:
        if gname != mname:
            _rename(g, mname, gname)
    for i in g.input:
        dims = i.type.tensor_type.shape.dim
        if len(dims) >= 1 and dims[0].dim_param:
            make_dim_param_fixed(g, dims[0].dim_param, 1)
        if len(dims) >= 1:
            dims[0].dim_value = 1
    y_info = g.output[0]
    y = y_info.name
    source = names.new("model_output")
    _rename(g, y, source)
    rank = len(y_info.type.tensor_type.shape.dim)
    last = y_info.type.tensor_type.shape.dim[rank - 1].dim_value
    nodes: list[onnx.NodeProto] = []
    inits: list[TensorProto] = []

    def const(what: str, value: np.ndarray) -> str:
        name = names.new(what)
        inits.append(numpy_helper.from_array(value, name))
        return name

    def node(op: str, inputs: list[str], what: str, out_name: str | None = None, **attrs: Any) -> str:
        o = out_name or names.new(what)
        nodes.append(helper.make_node(op, inputs, [o], name=names.new(f"{what}_node"), **attrs))
        return o

    def reduce_sum(x: str, axis: int, what: str) -> str:
        if opset >= 13:
            return node("ReduceSum", [x, const(f"{what}_axes", np.array([axis], dtype=np.int64))], what, keepdims=1)
        return node("ReduceSum", [x], what, axes=[axis], keepdims=1)

    if spec.kind == "text-embedding":
        out_name = EMBEDDING_OUTPUT
        v = source
        if rank == 3:
            if spec.pooling == "cls":
                v = node("Gather", [v, const("first_token", np.array(0, dtype=np.int64))], "cls_token", axis=1)
            else:
                m = node("Cast", [MASK_INPUT], "mask_float", to=TensorProto.FLOAT)
                m = node("Reshape", [m, const("mask_shape", np.array([0, -1, 1], dtype=np.int64))], "mask_column")
                s = reduce_sum(node("Mul", [v, m], "masked_hidden"), 1, "hidden_sum")  # [1, 1, H]
                n = node("Max", [reduce_sum(m, 1, "mask_sum"), const("min_count", np.array(1e-9, dtype=np.float32))], "token_count")  # [1, 1, 1]
                v = node("Div", [s, n], "mean_3d")
                v = node("Reshape", [v, const("embedding_shape", np.array([1, -1], dtype=np.int64))], "mean_pooled")
        if spec.normalize:
            sq = reduce_sum(node("Mul", [v, v], "squares"), 1, "square_sum")
            norm = node("Max", [node("Sqrt", [sq], "l2_norm"), const("min_norm", np.array(1e-12, dtype=np.float32))], "l2_norm_clamped")
            v = node("Div", [v, norm], "normalized")
        nodes.append(helper.make_node("Identity", [v], [out_name], name=names.new("embedding_node")))
        out_info = helper.make_tensor_value_info(out_name, TensorProto.FLOAT, [1, last])
    else:
        node("Softmax", [source], "softmax", out_name=SCORES_OUTPUT, axis=-1)
        shape: list[int | str] = [1, last] if rank == 2 else [1, _seq_dim(g), last]
        out_info = helper.make_tensor_value_info(SCORES_OUTPUT, TensorProto.FLOAT, shape)
    g.node.extend(nodes)
    g.initializer.extend(inits)
    del g.output[:]
    g.output.append(out_info)
    del g.value_info[:]
    out, _size = check_and_infer(out, out.ir_version)
    fix_output_shapes(out)
    return out


def _seq_dim(g: onnx.GraphProto) -> int | str:
    d = g.input[0].type.tensor_type.shape.dim[1]
    return d.dim_value if d.HasField("dim_value") else d.dim_param or "sequence"
