"""The CoreML table (NeuralNetwork and MLProgram in one): general rules (checked for every registered op)
and the registered ops with the formats they have a builder for, read from
onnxruntime/core/providers/coreml/builders/."""

from __future__ import annotations

from mobilegen.coverage.common import (
    input0_dtype_reason,
    symbolic_dim_reasons,
    unknown_shape_reasons,
)
from mobilegen.coverage.rules import (
    BOOL,
    DYNAMIC,
    F16,
    F32,
    I32,
    I64,
    EPTable,
    NodeContext,
    OpSpec,
    Rule,
    fmt_shape,
    ops_by_key,
)
from mobilegen.providers.coreml.releases import (
    ADDED,
    FUSEDCONV,
    OPSET_RULES,
    PAD_MLPROGRAM,
    REL_1_24_COMMIT,
    VERSIONED,
)
from mobilegen.providers.coreml.rules import (
    BASE,
    EP,
    EP_SRC,
    HELPER,
    IMPL,
    MAX_RANK,
    OP_RULES,
    coreml_format,
    is_mlp,
)

SOURCE_COMMIT = REL_1_24_COMMIT  # the builders re-read for issue 18 (later changes: releases.py, by PR)
MAX_OPSET = 25  # BaseOpBuilder::GetMaxSupportedOpSet from 1.24.0 (releases.OPSET_RULES: 24 before)
MLP = ("mlprogram",)
NN = ("neuralnetwork",)
BOTH = ("mlprogram", "neuralnetwork")


# --- general rules ----------------------------------------------------------------------------------


def _static(ctx: NodeContext) -> list[str]:
    if not ctx.target.bool_value("require_static_shapes"):
        return []
    return symbolic_dim_reasons(ctx, "static input shapes are required (--require-static-shapes)")


def _zero_dims(ctx: NodeContext) -> list[str]:
    out = []
    for i, name in enumerate(ctx.node.inputs):
        s = ctx.shape(i)
        if not name or s is None or 0 not in s:
            continue
        if ctx.node.op_type == "Resize" and i == 1:  # empty 'roi' is allowed
            continue
        out.append(f"input '{name}' {fmt_shape(s)} has a zero-sized dim: not supported by CoreML")
    return out


def _rank(ctx: NodeContext) -> list[str]:
    out = []
    for i, name in enumerate(ctx.node.inputs):
        r = ctx.rank(i)
        if name and r is not None and r > MAX_RANK:
            out.append(f"input '{name}' has rank {r}: CoreML takes rank <= {MAX_RANK}")
    return out


def _input0_dtype(ctx: NodeContext) -> str | None:
    # Where the op names no types of its own, MLProgram takes float16 and int64 as well
    # (BaseOpBuilder::IsInputDtypeSupport since #24462, 2025-04-30, ORT 1.23).
    return input0_dtype_reason(ctx, f"CoreML {coreml_format(ctx)}", (F32, F16, I64) if is_mlp(ctx) else (F32,))


GENERAL = (
    *OPSET_RULES,
    Rule("coreml.shapes_known", "every input has a shape", HELPER, lambda c: unknown_shape_reasons(c, EP)),
    Rule("coreml.static_shapes", "no symbolic dims when static shapes are required", HELPER, _static, DYNAMIC),
    Rule("coreml.zero_dims", "no zero-sized dims (Resize roi excepted)", HELPER, _zero_dims),
    Rule("coreml.rank", "every input rank <= 5", HELPER, _rank),
    Rule("coreml.input0_dtype", "input 0 float32 (MLProgram also float16/int64) unless the op says otherwise", BASE, _input0_dtype),
)


ANY = (F32, F16, I32, I64, BOOL)


def _op(op: str, src: str, formats: tuple[str, ...] = BOTH, since: int = 1, rules: tuple[str, ...] = (),
        dtypes: tuple[int, ...] | None = None, since_max: int | None = None) -> OpSpec:
    since_ort, ort_source = ADDED.get(op, ("", ""))
    return OpSpec(op, IMPL + src, since, since_max, None, dtypes, rules, "", formats,
                  since_ort=since_ort, ort_source=ort_source)


_ACT = "activation_op_builder.cc"
_UN = "unary_op_builder.cc"
_BIN = "binary_op_builder.cc"
_RED = "reduction_op_builder.cc"
_POOL = "pool_op_builder.cc"

OPS = ops_by_key(
    _op("Conv", "conv_op_builder.cc", rules=("coreml.conv",)),
    _op("ConvTranspose", "convtranspose_op_builder.cc", MLP, rules=("coreml.convtranspose", "coreml.conv")),
    _op("BatchNormalization", "batch_norm_op_builder.cc", rules=("coreml.batchnorm",)),
    _op("Relu", _ACT, since=6),
    _op("Sigmoid", _ACT, since=6),
    _op("Tanh", _ACT, since=6),
    _op("LeakyRelu", _ACT, since=6),
    _op("PRelu", _ACT, since=7, rules=("coreml.prelu",)),
    _op("Elu", _ACT, MLP, since=6),
    _op("Softplus", _ACT, MLP),
    _op("HardSigmoid", _ACT, since=6),  # both formats (#28182)
    _op("Gelu", _ACT, MLP, since=20),
    _op("Clip", "clip_op_builder.cc", since=6, rules=("coreml.clip",)),
    _op("Erf", _UN, MLP),
    _op("Exp", _UN, MLP),
    _op("Round", _UN, MLP),
    _op("Cos", _UN, MLP),
    _op("Sin", _UN, MLP),
    _op("Ceil", _UN, MLP),
    _op("Sqrt", _UN),
    _op("Reciprocal", _UN),
    _op("Add", _BIN, since=7, rules=("coreml.binary.dtype",), dtypes=ANY),
    _op("Sub", _BIN, since=7, rules=("coreml.binary.dtype",), dtypes=ANY),
    _op("Mul", _BIN, since=7, rules=("coreml.binary.dtype",), dtypes=ANY),
    _op("Div", _BIN, since=7, rules=("coreml.binary.dtype",), dtypes=ANY),
    _op("Pow", _BIN, since=7, rules=("coreml.pow",)),
    _op("Max", _BIN, MLP, rules=("coreml.max.binary",)),
    _op("MatMul", "gemm_op_builder.cc", rules=("coreml.matmul",)),
    _op("Gemm", "gemm_op_builder.cc", rules=("coreml.gemm",)),
    _op("Reshape", "reshape_op_builder.cc", since=5, rules=("coreml.reshape",), dtypes=(F32, F16, I32, I64)),
    _op("Flatten", "flatten_op_builder.cc", NN),
    _op("Transpose", "transpose_op_builder.cc"),
    _op("Concat", "concat_op_builder.cc", rules=("coreml.concat",)),
    _op("Split", "split_op_builder.cc", rules=("coreml.split",)),  # opset < 13 from 1.27 (#28270)
    _op("Slice", "slice_op_builder.cc", since=10, rules=("coreml.slice",), dtypes=(F32, F16, I64)),
    _op("Gather", "gather_op_builder.cc", rules=("coreml.gather",), dtypes=(F32, F16, I64)),
    _op("GatherND", "gather_nd_op_builder.cc", MLP, rules=("coreml.gathernd",), dtypes=(F32, F16, I32, I64)),
    _op("Shape", "shape_op_builder.cc", rules=("coreml.shape",), dtypes=ANY),
    _op("Softmax", "softmax_op_builder.cc", rules=("coreml.softmax",)),
    _op("LayerNormalization", "normalization_op_builder.cc", MLP, rules=("coreml.norm",)),
    _op("GroupNormalization", "normalization_op_builder.cc", MLP, rules=("coreml.norm",)),
    _op("InstanceNormalization", "normalization_op_builder.cc", MLP, rules=("coreml.norm",)),
    _op("ReduceMean", _RED, rules=("coreml.reduce",)),
    _op("ReduceSum", _RED, rules=("coreml.reduce",)),
    _op("ReduceMax", _RED, MLP, rules=("coreml.reduce",)),
    _op("ReduceMin", _RED, MLP, rules=("coreml.reduce",)),
    _op("ReduceProd", _RED, MLP, rules=("coreml.reduce",)),
    _op("ArgMax", "argmax_op_builder.cc", rules=("coreml.argmax",)),
    _op("GlobalAveragePool", _POOL, rules=("coreml.pool.rank4",)),
    _op("GlobalMaxPool", _POOL, rules=("coreml.pool.rank4",)),
    _op("AveragePool", _POOL, rules=("coreml.pool.rank4", "coreml.pool.attrs")),
    _op("MaxPool", _POOL, rules=("coreml.pool.rank4", "coreml.pool.attrs")),
    _op("Resize", "resize_op_builder.cc", since=11, rules=("coreml.resize",)),
    _op("Pad", "pad_op_builder.cc", since=11, rules=("coreml.pad", "coreml.pad.mlprogram")),
    _op("Squeeze", "squeeze_op_builder.cc", rules=("coreml.axes_const",), dtypes=(F32, F16, I32, I64)),
    _op("Unsqueeze", "squeeze_op_builder.cc", MLP, rules=("coreml.axes_const", "coreml.unsqueeze.rank"), dtypes=(F32, F16, I32, I64)),
    _op("Cast", "cast_op_builder.cc", rules=("coreml.cast.producer", "coreml.cast"), dtypes=ANY),
    _op("DepthToSpace", "depthtospace_op_builder.cc", rules=("coreml.depthtospace",)),
    _op("LRN", "LRN_op_builder.cc", NN, rules=("coreml.lrn",)),
    _op("Where", "where_op_builder.cc", MLP, rules=("coreml.where",), dtypes=(BOOL,)),
    _op("And", "logical_op_builder.cc", MLP, rules=("coreml.and",), dtypes=(BOOL,)),
    _op("Tile", "tile_op_builder.cc", MLP, rules=("coreml.tile",), dtypes=(F32, F16, I32, I64, BOOL)),
    _op("Identity", "identity_op_builder.cc", MLP, dtypes=ANY),
    # com.microsoft:FusedConv through the Conv builder, ML Program (the format its shipped op table lists;
    # #28289 says NeuralNetwork too, not modelled: refused there). Conv's limits plus the activation's.
    OpSpec("FusedConv", IMPL + "conv_op_builder.cc", rules=("coreml.conv", FUSEDCONV.id), domain="com.microsoft",
           formats=MLP, since_ort=FUSEDCONV.since_ort, ort_source=FUSEDCONV.ort_source),
)

# Builders that exist in ORT but whose limits mobilegen does not model yet: reported as unsupported,
# with that reason (pessimistic, never optimistic).
UNMODELLED = ("GridSample", "QuickGelu", "Expand", "Equal", "Not", "Mod", "Neg", "Range")

TABLE = EPTable(
    ep="coreml",
    ops=OPS,
    rules={**OP_RULES, PAD_MLPROGRAM.id: PAD_MLPROGRAM, FUSEDCONV.id: FUSEDCONV},
    general=GENERAL,
    default_since_max=MAX_OPSET,
    versioned=VERSIONED,
    default_input0_dtypes=(F32,),
    unmodelled=UNMODELLED,
    domain_blind=("com.microsoft",),  # contrib ops the builders look up by op type only
    extra={"helper": HELPER, "ep_source": EP_SRC},
)
