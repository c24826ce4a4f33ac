"""The QNN table: the op builders ORT registers and the limits they check before the QNN SDK is asked.

Read from onnxruntime/core/providers/qnn/builder/ at d626b568e (2026-03-07, the 1.25 development line):
``op_builder_factory.cc`` (which ops), ``opbuilder/*_op_builder.cc`` (IsOpSupported / ExplicitOpCheck),
``qnn_model_wrapper.cc`` (GetOnnxShape: every tensor's shape must be static) and ``qnn_utils.cc``
(OnnxDataTypeToQnnDataType). Builders added to the QNN EP after that commit are not modelled.

Every verdict is an estimate: after these checks ORT hands each node to the QNN SDK's
``backendValidateOpConfig`` on the device, which can still refuse it (SDK version, SoC, HTP generation).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from mobilegen.coverage.common import const_reasons, rank_reason, symbolic_dim_reasons
from mobilegen.coverage.rules import (
    DYNAMIC,
    CheckFn,
    EPTable,
    NodeContext,
    OpSpec,
    Rule,
    dtype_name,
    fmt_shape,
    ops_by_key,
    rules_by_id,
)
from mobilegen.providers.qnn.facts import DISPLAY_NAME, QB
from mobilegen.providers.qnn.units import qdq_table

EP = DISPLAY_NAME
OB = QB + "opbuilder/"
SIMPLE = OB + "simple_op_builder.cc"
WRAPPER = QB + "qnn_model_wrapper.cc"
UTILS = QB + "qnn_utils.cc"
FACTORY = QB + "op_builder_factory.cc"

# qnn_utils.cc OnnxDataTypeToQnnDataType: the ONNX element types with a QNN data type.
QNN_DTYPES = frozenset(
    {
        TensorProto.INT8,
        TensorProto.INT16,
        TensorProto.INT32,
        TensorProto.INT64,
        TensorProto.UINT8,
        TensorProto.UINT16,
        TensorProto.UINT32,
        TensorProto.UINT64,
        TensorProto.FLOAT16,
        TensorProto.FLOAT,
        TensorProto.BOOL,
        TensorProto.INT4,
        TensorProto.UINT4,
    }
)


# --- general rules (every registered op) ------------------------------------------------------------


def _tensors(ctx: NodeContext) -> list[tuple[str, str]]:
    """(role, name) of every input and output the node has."""
    ins = [("input", t) for t in ctx.node.inputs if t]
    outs = [("output", t) for t in ctx.node.outputs if t]
    return ins + outs


def _shapes_known(ctx: NodeContext) -> list[str]:
    out = []
    for role, t in _tensors(ctx):
        info = ctx.graph.info(t)
        if info is None or info.shape is None:
            out.append(f"shape of {role} '{t}' is unknown: {EP} needs every tensor's shape (GetOnnxShape)")
    return out


def _fixed_dims(ctx: NodeContext) -> list[str]:
    out = symbolic_dim_reasons(ctx, f"{EP} takes no dynamic shape (fix the dims)")
    for t in ctx.node.outputs:
        info = ctx.graph.info(t) if t else None
        if info is not None and info.shape is not None and not all(isinstance(d, int) for d in info.shape):
            out.append(f"output '{t}' has a symbolic dim {fmt_shape(info.shape)}: {EP} takes no dynamic shape (fix the dims)")
    return out


def _dtypes(ctx: NodeContext) -> list[str]:
    out = []
    for role, t in _tensors(ctx):
        info = ctx.graph.info(t)
        if info is not None and info.elem_type is not None and info.elem_type not in QNN_DTYPES:
            out.append(f"{role} '{t}' is {dtype_name(info.elem_type)}: {EP} has no such data type")
    return out


GENERAL = (
    Rule("qnn.shapes_known", "every input and output shape is known", WRAPPER, _shapes_known),
    Rule("qnn.fixed_dims", "every input and output shape is static (no symbolic dim)", WRAPPER, _fixed_dims, DYNAMIC),
    Rule("qnn.dtype", "every input and output type has a QNN data type (no float64, string, bfloat16)", UTILS, _dtypes),
)


# --- op rules ------------------------------------------------------------------------------------------


def _two_inputs(ctx: NodeContext) -> str | None:
    n = sum(1 for t in ctx.node.inputs if t)
    return None if n == 2 else f"{ctx.node.op_type} with {n} inputs: {EP} takes exactly 2 (QNN's element-wise op is binary)"


def _lpnorm(ctx: NodeContext) -> str | None:
    p = int(ctx.attr("p", 2))
    return None if p == 2 else f"LpNormalization p={p}: {EP} takes p=2 only"


def _gridsample(ctx: NodeContext) -> list[str]:
    out = []
    mode = ctx.attr("mode", "linear")
    if mode not in ("bilinear", "nearest", "linear"):
        out.append(f"GridSample mode '{mode}': {EP} takes bilinear, linear or nearest")
    padding = ctx.attr("padding_mode", "zeros")
    if padding not in ("zeros", "border", "reflection"):
        out.append(f"GridSample padding_mode '{padding}': {EP} takes zeros, border or reflection")
    return out


def _scatter(ctx: NodeContext) -> str | None:
    reduction = ctx.attr("reduction", "none")
    allowed = ("none", "add", "mul") if ctx.node.op_type == "ScatterND" else ("none", "add", "mul", "max")
    return None if reduction in allowed else f"{ctx.node.op_type} reduction '{reduction}': {EP} takes {', '.join(allowed)}"


def _conv(ctx: NodeContext) -> list[str]:
    out = []
    r = rank_reason(ctx, 0, 3, 5, EP)
    if r:
        out.append(r)
    if ctx.node.op_type == "ConvTranspose":
        dil = list(ctx.attr("dilations", []))
        if any(int(d) != 1 for d in dil):
            out.append(f"ConvTranspose dilations {dil}: {EP}'s TransposeConv takes dilation 1 only")
    return out


def _gemm(ctx: NodeContext) -> list[str]:
    out = []
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    if alpha != 1.0:
        out.append(f"Gemm alpha={alpha:g}: {EP}'s FullyConnected takes alpha=1 only")
    if beta != 1.0:
        out.append(f"Gemm beta={beta:g}: {EP}'s FullyConnected takes beta=1 only")
    return out


def _softmax(ctx: NodeContext) -> str | None:
    if ctx.is_const(0):
        return f"{ctx.node.op_type} of a constant input '{ctx.input_name(0)}': {EP} refuses it (ORT folds it away)"
    return None


def _reduce(ctx: NodeContext) -> list[str]:
    out = []
    if ctx.node.op_type == "ReduceProd":
        out.append(f"ReduceProd is not supported by the {EP} HTP backend")
    if ctx.has_input(1) and not ctx.is_const(1):
        out.append(f"axes input '{ctx.input_name(1)}' is not a constant initializer: {EP} needs it constant")
    return out


def _reshape(ctx: NodeContext) -> str | None:
    # allowzero=1 is refused only when the shape is not a constant or holds a 0 (ReshapeOpBuilder::ProcessInputs)
    if ctx.node.op_type != "Reshape" or int(ctx.attr("allowzero", 0)) == 0:
        return None
    shape = ctx.const(1)
    if shape is None:
        return f"Reshape allowzero=1 with a non-constant shape '{ctx.input_name(1)}': {EP} needs it constant"
    if (np.asarray(shape) == 0).any():
        return f"Reshape allowzero=1 with a 0 in its shape: {EP} does not support zero dimensions"
    return None


def _gather(ctx: NodeContext) -> str | None:
    idx = ctx.const(1)
    dim = ctx.static_dim(0, int(ctx.attr("axis", 0)))
    if idx is None or dim is None or idx.size == 0:
        return None
    values = np.asarray(idx).astype(np.int64)
    if values.min() < -dim or values.max() >= dim:
        return f"{ctx.node.op_type} constant indices outside [-{dim}, {dim}): {EP} cannot fix them (FixStaticIndices)"
    return None


def _layernorm(ctx: NodeContext) -> list[str]:
    out = []
    if ctx.n_outputs > 1:
        out.append(f"LayerNormalization with {ctx.n_outputs} outputs: {EP} takes 1 output only")
    r = ctx.rank(0)
    axis = int(ctx.attr("axis", -1))
    if r is not None and (axis + r if axis < 0 else axis) != r - 1:
        out.append(f"LayerNormalization axis {axis} of rank {r}: the {EP} HTP takes the last axis only")
    return out


def _pool(ctx: NodeContext) -> list[str]:
    out = []
    op = ctx.node.op_type
    r = ctx.rank(0)
    if r is not None and not 3 <= r <= 5:
        out.append(f"{op} input rank {r}: {EP} pools take rank 3, 4 or 5")
    if ctx.n_outputs > 1:
        out.append(f"{op} Indices output is not supported by {EP}")
    dil = list(ctx.attr("dilations", []))
    if any(int(d) != 1 for d in dil):
        out.append(f"{op} dilations {dil}: {EP} takes dilation 1 only")
    if r == 5 and op in ("MaxPool", "GlobalMaxPool"):
        out.append(f"3-D {op}: the {EP} HTP has no PoolMax3d")
    return out


def _const_inputs(*inputs: tuple[int, str]) -> CheckFn:
    def check(ctx: NodeContext) -> list[str]:
        return const_reasons(ctx, inputs, EP)

    return check


def _slice(ctx: NodeContext) -> list[str]:
    return const_reasons(ctx, ((1, "starts"), (2, "ends"), (3, "axes"), (4, "steps")), EP)


def _pad(ctx: NodeContext) -> list[str]:
    out = const_reasons(ctx, ((1, "pads"), (2, "constant_value")), EP)
    if ctx.has_input(3):
        out.append(f"Pad axes input '{ctx.input_name(3)}': {EP} does not take axes")
    r = ctx.rank(0)
    if r is not None and r > 5:
        out.append(f"Pad input rank {r}: {EP} takes up to 5 dims")
    mode = ctx.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge"):
        out.append(f"Pad mode '{mode}': {EP} takes constant, reflect or edge")
    return out


def _resize(ctx: NodeContext) -> list[str]:
    out = []
    if int(ctx.attr("antialias", 0)):
        out.append(f"Resize antialias=1 is not supported by {EP}")
    mode = ctx.attr("mode", "nearest")
    if mode not in ("nearest", "linear"):
        out.append(f"Resize mode '{mode}': {EP} takes nearest or linear")
    ctm = ctx.attr("coordinate_transformation_mode", "half_pixel")
    if ctm not in ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"):
        out.append(f"Resize coordinate_transformation_mode '{ctm}' is not supported by {EP}")
    r = ctx.rank(0)
    if r is not None and not 3 <= r <= 5:
        out.append(f"Resize input rank {r}: the {EP} HTP takes rank 3 to 5")
    return out


def _instance_norm(ctx: NodeContext) -> str | None:
    r = ctx.rank(0)
    return None if r is None or r in (3, 4) else f"InstanceNormalization input rank {r}: {EP} takes rank 3 or 4"


def _batch_norm(ctx: NodeContext) -> list[str]:
    out = const_reasons(ctx, ((1, "scale"), (2, "B"), (3, "mean"), (4, "var")), EP)
    r = ctx.rank(0)
    if r is not None and r > 4:
        out.append(f"BatchNormalization input rank {r}: {EP} takes rank <= 4")
    if ctx.n_outputs > 1:
        out.append(f"BatchNormalization with {ctx.n_outputs} outputs: {EP} takes 1 output only")
    return out


def _argmax(ctx: NodeContext) -> str | None:
    return f"{ctx.node.op_type} select_last_index=1 is not supported by {EP}" if int(ctx.attr("select_last_index", 0)) else None


def _topk(ctx: NodeContext) -> list[str]:
    out = const_reasons(ctx, ((1, "K"),), EP)
    if ctx.n_outputs != 2:
        out.append(f"TopK with {ctx.n_outputs} outputs: {EP} expects both values and indices")
    return out


OP_RULES = rules_by_id(
    Rule("qnn.two_inputs", "Min/Max/Sum with exactly 2 inputs", SIMPLE, _two_inputs),
    Rule("qnn.lpnorm", "LpNormalization p=2", SIMPLE, _lpnorm),
    Rule("qnn.gridsample", "GridSample mode and padding_mode QNN has", SIMPLE, _gridsample),
    Rule("qnn.scatter", "ScatterND/ScatterElements reductions QNN has", SIMPLE, _scatter),
    Rule("qnn.conv", "Conv/ConvTranspose rank 3..5; ConvTranspose dilation 1", OB + "conv_op_builder.cc", _conv),
    Rule("qnn.gemm", "Gemm alpha = beta = 1", OB + "gemm_op_builder.cc", _gemm),
    Rule("qnn.softmax", "(Log)Softmax input not a constant", OB + "softmax_op_builder.cc", _softmax),
    Rule("qnn.reduce", "no ReduceProd on the HTP; axes input constant", OB + "reduce_op_builder.cc", _reduce),
    Rule("qnn.reshape", "Reshape allowzero=1 only with a constant shape holding no 0", OB + "reshape_op_builder.cc", _reshape),
    Rule("qnn.gather", "constant Gather indices within the axis", OB + "gather_op_builder.cc", _gather),
    Rule("qnn.layernorm", "LayerNormalization one output, last axis (HTP)", OB + "layer_norm_op_builder.cc", _layernorm),
    Rule("qnn.pool", "pools rank 3..5, one output, dilation 1, no 3-D MaxPool on the HTP", OB + "pool_op_builder.cc", _pool),
    Rule("qnn.slice", "Slice starts/ends/axes/steps constant", OB + "slice_op_builder.cc", _slice),
    Rule("qnn.expand", "Expand shape constant", OB + "expand_op_builder.cc", _const_inputs((1, "shape"))),
    Rule("qnn.pad", "Pad pads/constant_value constant, no axes, rank <= 5, constant/reflect/edge", OB + "pad_op_builder.cc", _pad),
    Rule("qnn.resize", "Resize nearest/linear, known coordinate modes, no antialias, rank 3..5 (HTP)", OB + "resize_op_builder.cc", _resize),
    Rule("qnn.instance_norm", "InstanceNormalization rank 3 or 4", OB + "instance_norm_op_builder.cc", _instance_norm),
    Rule("qnn.batch_norm", "BatchNormalization constant parameters, rank <= 4, one output", OB + "batch_norm_op_builder.cc", _batch_norm),
    Rule("qnn.tile", "Tile repeats constant", OB + "tile_op_builder.cc", _const_inputs((1, "repeats"))),
    Rule("qnn.clip", "Clip min/max constant", OB + "clip_op_builder.cc", _const_inputs((1, "min"), (2, "max"))),
    Rule("qnn.argmax", "ArgMax/ArgMin select_last_index=0", OB + "argmax_min_op_builder.cc", _argmax),
    Rule("qnn.topk", "TopK constant K, both outputs", OB + "topk.cc", _topk),
)


def _op(op: str, src: str, *rules: str, domain: str = "") -> OpSpec:
    return OpSpec(op, OB + src, rules=rules, domain=domain)


# op_builder_factory.cc: every ONNX op type with a builder (the QNN EP looks builders up by op type).
_SIMPLE_OPS = (
    "Add Asin Atan Mul Abs And Ceil Cos Sign Div Equal Exp Floor Greater GreaterOrEqual LeakyRelu Less LessOrEqual "
    "Log Neg Not Or Pow PRelu Relu Gelu Elu Round Where Sigmoid Sin Sqrt Sub Tanh QuantizeLinear "
    "DequantizeLinear HardSwish HardSigmoid DepthToSpace SpaceToDepth"
).split()
_PLAIN = {  # op -> builder file, for builders whose limits beyond the general rules are left to the device
    "Concat": "concat_op_builder.cc",
    "Cast": "cast_op_builder.cc",
    "Split": "split_op_builder.cc",
    "Upsample": "upsample_op_builder.cc",
    "Transpose": "transpose_op_builder.cc",
    "Reciprocal": "reciprocal_op_builder.cc",
    "Einsum": "einsum_op_builder.cc",
    "MatMul": "matmul_op_builder.cc",
    "Mean": "mean_op_builder.cc",
    "LSTM": "lstm_op_builder.cc",
    "CumSum": "cumsum_op_builder.cc",
    "RandomUniformLike": "random_uniform_like_op_builder.cc",
    "GatherND": "gather_nd_op_builder.cc",
    "Mod": "mod_op_builder.cc",
    "ThresholdedRelu": "thresholdedrelu_op_builder.cc",
    "STFT": "stft_op_builder.cc",
    "RMSNormalization": "rms_norm_op_builder.cc",
    "LRN": "lrn_op_builder.cc",
}

OPS = ops_by_key(
    *(_op(op, "simple_op_builder.cc") for op in _SIMPLE_OPS),
    *(_op(op, src) for op, src in _PLAIN.items()),
    _op("Min", "simple_op_builder.cc", "qnn.two_inputs"),
    _op("Max", "simple_op_builder.cc", "qnn.two_inputs"),
    _op("Sum", "simple_op_builder.cc", "qnn.two_inputs"),
    _op("LpNormalization", "simple_op_builder.cc", "qnn.lpnorm"),
    _op("GridSample", "simple_op_builder.cc", "qnn.gridsample"),
    _op("ScatterND", "simple_op_builder.cc", "qnn.scatter"),
    _op("ScatterElements", "simple_op_builder.cc", "qnn.scatter"),
    _op("Softmax", "softmax_op_builder.cc", "qnn.softmax"),
    _op("LogSoftmax", "softmax_op_builder.cc", "qnn.softmax"),
    *(_op(op, "reduce_op_builder.cc", "qnn.reduce") for op in ("ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceL2")),
    _op("Conv", "conv_op_builder.cc", "qnn.conv"),
    _op("ConvTranspose", "conv_op_builder.cc", "qnn.conv"),
    *(_op(op, "pool_op_builder.cc", "qnn.pool") for op in ("GlobalAveragePool", "AveragePool", "MaxPool", "GlobalMaxPool")),
    *(_op(op, "reshape_op_builder.cc", "qnn.reshape") for op in ("Reshape", "Flatten", "Squeeze", "Unsqueeze")),
    _op("Gemm", "gemm_op_builder.cc", "qnn.gemm"),
    _op("Gather", "gather_op_builder.cc", "qnn.gather"),
    _op("GatherElements", "gather_op_builder.cc"),
    _op("ArgMax", "argmax_min_op_builder.cc", "qnn.argmax"),
    _op("ArgMin", "argmax_min_op_builder.cc", "qnn.argmax"),
    _op("Clip", "clip_op_builder.cc", "qnn.clip"),
    _op("Slice", "slice_op_builder.cc", "qnn.slice"),
    _op("Resize", "resize_op_builder.cc", "qnn.resize"),
    _op("TopK", "topk.cc", "qnn.topk"),
    _op("Tile", "tile_op_builder.cc", "qnn.tile"),
    _op("InstanceNormalization", "instance_norm_op_builder.cc", "qnn.instance_norm"),
    _op("BatchNormalization", "batch_norm_op_builder.cc", "qnn.batch_norm"),
    _op("LayerNormalization", "layer_norm_op_builder.cc", "qnn.layernorm"),
    _op("Pad", "pad_op_builder.cc", "qnn.pad"),
    _op("Expand", "expand_op_builder.cc", "qnn.expand"),
    # Not registered in op_builder_factory.cc: Erf is taken only fused into Gelu (qnn_node_group/gelu_fusion.cc).
    OpSpec("Erf", QB + "qnn_node_group/gelu_fusion.cc", note="only inside a decomposed Gelu"),
    # com.microsoft ops with builders. The factory is keyed by op type alone (GetOpBuilder), so a
    # com.microsoft node also finds an ONNX op's builder (domain_blind below).
    _op("QuickGelu", "quick_gelu_op_builder.cc", domain="com.microsoft"),
    _op("FusedMatMul", "fused_matmul_op_builder.cc", domain="com.microsoft"),
    _op("MatMulNBits", "matmulnbits_op_builder.cc", domain="com.microsoft"),
    _op("Inverse", "inverse_op_builder.cc", domain="com.microsoft"),
    _op("QuantizeLinear", "simple_op_builder.cc", domain="com.microsoft"),
    _op("DequantizeLinear", "simple_op_builder.cc", domain="com.microsoft"),
)

TABLE = EPTable(
    ep="qnn",
    ops=OPS,
    rules=OP_RULES,
    general=GENERAL,
    default_since_max=10_000,  # the QNN builders check no since-version range
    default_input0_dtypes=tuple(sorted(QNN_DTYPES)),
    domain_blind=("com.microsoft",),
    extra={"ep_source": "onnxruntime/core/providers/qnn/qnn_execution_provider.cc", "factory": FACTORY},
    # QDQ node units as ORT groups them (mobilegen.coverage.qdq, plus mobilegen.coverage.qdq_selectors.SELECTORS),
    # each checked by its target op's builder
    qdq=qdq_table(s for s in OPS.values() if s.domain == ""),
)
