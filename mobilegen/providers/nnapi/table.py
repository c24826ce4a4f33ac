"""The NNAPI table: general rules (checked for every registered op) and the registered ops with their
limits, read from onnxruntime/core/providers/nnapi/nnapi_builtin/builders/ (see docs/coverage.md)."""

from __future__ import annotations

from mobilegen.coverage.common import (
    input0_dtype_reason,
    opset_reason,
    symbolic_dim_reasons,
    unknown_shape_reasons,
)
from mobilegen.coverage.rules import (
    API,
    DYNAMIC,
    F32,
    U8,
    EPTable,
    MinApi,
    NodeContext,
    OpSpec,
    Reason,
    Rule,
    needs_api,
    ops_by_key,
)
from mobilegen.providers.nnapi.facts import MIN_API
from mobilegen.providers.nnapi.rules import BASE, EP, EP_SRC, FACTORY, HELPER, IMPL, OP_RULES, target_api

# BaseOpBuilder::GetMaxSupportedOpSet (impl/base_op_builder.h): 24 -> 25 in commit de398c412 (#26579,
# 2026-01-12, main 1.24-dev; read in the ORT history mirror at d626b568e, 2026-03-07). Main later took 26
# (ONNX 1.21, #27601) and 27 (ONNX 1.22, #28754); 28 is PR #32359, still open in September 2026. None of
# those is dated to a release here, so newer releases keep the proven 25 (nodes above it are refused).
MAX_OPSET = 25
# The source the issue-18 re-read used: the 1.24 branch point (Softmax, Slice, Resize builders; unchanged
# to the mirror's head d626b568e, 2026-03-07). Older rules came from commit 5d24c9547 (../research/ort_mobile.md).
SOURCE_COMMIT = "46e8d454aa27a0356d4f060b66991c63fd06a070"
OPSET_SOURCE = "commit de398c412 'Integration with ONNX==1.20.1' (#26579): cap 24 -> 25; later caps undated"


# --- general rules ----------------------------------------------------------------------------------


def _api(ctx: NodeContext) -> Reason | None:
    spec = ctx.spec
    need = spec.min_api(ctx) if callable(spec.min_api) else spec.min_api or MIN_API
    have = target_api(ctx)
    if need > have:
        return needs_api(f"needs Android API {need}, target is {have}", need)
    return None


def _opset_rule(hi: int, since: str, until: str) -> Rule:
    def check(ctx: NodeContext) -> str | None:
        return opset_reason(ctx, hi, EP)

    return Rule("nnapi.opset", f"node since_version within the builder's range (cap {hi})", IMPL + "base_op_builder.h",
                check, since_ort=since, until_ort=until, ort_source=OPSET_SOURCE)


def _input0_dtype(ctx: NodeContext) -> str | None:
    return input0_dtype_reason(ctx, EP)


GENERAL = (
    Rule("nnapi.min_api", "the op's minimum NNAPI feature level (Android API) is met", IMPL + "base_op_builder.h", _api, API),
    Rule("nnapi.shapes_known", "every input has a shape", BASE, lambda c: unknown_shape_reasons(c, EP)),
    Rule(
        "nnapi.fixed_dims",
        "every input dim is fixed",
        BASE,
        lambda c: symbolic_dim_reasons(c, "NNAPI needs fixed shapes"),
        DYNAMIC,
    ),
    Rule("nnapi.input0_dtype", "input 0 has a supported element type (default float32)", BASE, _input0_dtype),
    _opset_rule(24, "", "1.24.0"),
    _opset_rule(MAX_OPSET, "1.24.0", ""),
)


def _resize_api(ctx: NodeContext) -> int:
    return 28 if ctx.dtype(0) == U8 else 29


def _op(op: str, src: str, since: int = 1, api: MinApi = MIN_API, dtypes: tuple[int, ...] | None = None,
        rules: tuple[str, ...] = (), since_max: int | None = None, domain: str = "") -> OpSpec:
    return OpSpec(op, IMPL + src, since, since_max, api, dtypes, rules, domain)


_UNARY = "unary_op_builder.cc"
_BIN = "binary_op_builder.cc"
_POOL = "pool_op_builder.cc"
_GEMM = "gemm_op_builder.cc"

OPS = ops_by_key(
    _op("Conv", "conv_op_builder.cc", 1, 28, rules=("nnapi.conv.weight", "nnapi.conv.dilations")),
    _op("BatchNormalization", "batchnorm_op_builder.cc", 7, 27, rules=("nnapi.batchnorm",)),
    _op("Relu", "relu_op_builder.cc", 1, 27),
    _op("Clip", "clip_op_builder.cc", 1, 27, rules=("nnapi.clip.range",)),
    _op("Sigmoid", _UNARY, 6, 27, rules=("nnapi.rank_1_4",)),
    _op("Tanh", _UNARY, 6, 27),
    _op("Floor", _UNARY, 6, 27),
    _op("Abs", _UNARY, 6, 29),
    _op("Exp", _UNARY, 6, 29),
    _op("Log", _UNARY, 6, 29),
    _op("Neg", _UNARY, 6, 29),
    _op("Sin", _UNARY, 6, 29),
    _op("Sqrt", _UNARY, 6, 29),
    _op("LeakyRelu", "leakyrelu_op_builder.cc", 6, 27, rules=("nnapi.rank_1_4",)),
    _op("Elu", "elu_op_builder.cc", 6, 30),
    _op("PRelu", _BIN, 1, 29, rules=("nnapi.binary.rank",)),
    _op("Add", _BIN, 7, 27, rules=("nnapi.binary.rank",)),
    _op("Mul", _BIN, 7, 27, rules=("nnapi.binary.rank",)),
    _op("Sub", _BIN, 7, 28, rules=("nnapi.binary.rank",)),
    _op("Div", _BIN, 7, 28, rules=("nnapi.binary.rank",)),
    _op("Pow", _BIN, 7, 29, rules=("nnapi.binary.rank", "nnapi.pow.dtype")),
    _op("Max", "minmax_op_builder.cc", 6, 29, rules=("nnapi.minmax.inputs",)),
    _op("Min", "minmax_op_builder.cc", 6, 29, rules=("nnapi.minmax.inputs",)),
    _op("MatMul", _GEMM, 1, 27, rules=("nnapi.matmul",)),
    _op("Gemm", _GEMM, 7, 27, rules=("nnapi.gemm.attrs", "nnapi.gemm.rank", "nnapi.gemm.b_const", "nnapi.gemm.bias")),
    _op("Reshape", "reshape_op_builder.cc", 5, 27, rules=("nnapi.rank_1_4", "nnapi.reshape.shape_const", "nnapi.reshape.zero")),
    _op("Flatten", "flatten_op_builder.cc", 1, 27, rules=("nnapi.rank_1_4",)),
    _op("Transpose", "transpose_op_builder.cc", 1, 28, dtypes=(F32, U8), rules=("nnapi.rank_1_4",)),
    _op("Concat", "concat_op_builder.cc", 1, 27, dtypes=(F32, U8), rules=("nnapi.rank_1_4",)),
    _op("Split", "split_op_builder.cc", 13, 29, rules=("nnapi.split",)),
    _op("Slice", "slice_op_builder.cc", 10, 28, rules=("nnapi.slice",)),
    _op("Gather", "gather_op_builder.cc", 1, 29, rules=("nnapi.gather",)),
    _op("Softmax", "softmax_op_builder.cc", 1, 28, rules=("nnapi.softmax",)),
    _op("ReduceMean", "reduction_op_builder.cc", 1, 28, rules=("nnapi.reducemean",)),
    _op("GlobalAveragePool", _POOL, 1, 28, rules=("nnapi.pool.rank4",)),
    _op("GlobalMaxPool", _POOL, 1, 28, rules=("nnapi.pool.rank4",)),
    _op("AveragePool", _POOL, 1, 28, rules=("nnapi.pool.rank4", "nnapi.pool.attrs")),
    _op("MaxPool", _POOL, 1, 28, dtypes=(F32, U8), rules=("nnapi.pool.rank4", "nnapi.pool.attrs")),
    _op("Resize", "resize_op_builder.cc", 11, _resize_api, dtypes=(F32, U8), rules=("nnapi.resize",)),
    _op("Pad", "pad_op_builder.cc", 11, 29, rules=("nnapi.rank_1_4", "nnapi.pad")),
    _op("Squeeze", "squeeze_op_builder.cc", 1, 28, rules=("nnapi.rank_1_4", "nnapi.axes_const")),
    _op("Unsqueeze", "unsqueeze_op_builder.cc", 1, 27, rules=("nnapi.rank_1_4", "nnapi.axes_const")),
    _op("Cast", "cast_op_builder.cc", 6, 29, rules=("nnapi.cast.to",)),
    _op("Identity", "identity_op_builder.cc", 1, 27),
    _op("DepthToSpace", "depthtospace_op_builder.cc", 1, 27, rules=("nnapi.depthtospace",)),
    _op("LRN", "LRN_op_builder.cc", 1, 28, rules=("nnapi.pool.rank4",)),
    _op("QuantizeLinear", "quantizelinear_op_builder.cc", 10, 29, rules=("nnapi.qdq.params", "nnapi.quantize.out")),
    _op("DequantizeLinear", "dequantizelinear_op_builder.cc", 10, 27, dtypes=(U8,), rules=("nnapi.qdq.params",)),
)

# Registered in op_builder_factory.cc; modelled as node units in mobilegen.providers.nnapi.qdq (which
# drops them from this list for the table the provider uses).
UNMODELLED = ("QLinearConv", "QLinearMatMul", "QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearAveragePool")

TABLE = EPTable(
    ep="nnapi",
    ops=OPS,
    rules=OP_RULES,
    general=GENERAL,
    default_since_max=MAX_OPSET,
    default_input0_dtypes=(F32,),
    unmodelled=UNMODELLED,
    domain_blind=("com.microsoft",),  # contrib ops the builders look up by op type only
    extra={"factory": FACTORY, "helper": HELPER, "ep_source": EP_SRC},
)
