"""The XNNPACK table: general and op rules, and the registered kernels, read from
onnxruntime/core/providers/xnnpack/ (detail/node_support_checker.cc and the kernels)."""

from __future__ import annotations

from mobilegen.coverage.common import const_reasons, input0_dtype_reason
from mobilegen.coverage.rules import (
    F16,
    F32,
    I8,
    U8,
    EPTable,
    NodeContext,
    OpSpec,
    Rule,
    fmt_shape,
    ops_by_key,
    rules_by_id,
)
from mobilegen.providers.xnnpack.facts import CHECKER, DISPLAY_NAME, X
from mobilegen.providers.xnnpack.rules import (
    FUSION,
    FUSION_FIXED,
    GEMM_C,
    GEMM_C_FIXED,
    SOURCE_COMMIT,
    avgpool,
    conv,
    matmul,
    resize,
)

EP = DISPLAY_NAME
EP_SRC = X + "xnnpack_execution_provider.cc"
SOURCE = SOURCE_COMMIT  # the ORT commit the kernels' checks were read at (rules.SOURCE_COMMIT)


def _opset(ctx: NodeContext) -> str | None:
    spec: OpSpec = ctx.spec
    v = ctx.node.since_version
    hi = spec.since_max
    if v is None or (spec.since_min <= v and (hi is None or v <= hi)):
        return None
    return f"{ctx.node.op_type} opset {v}: no XNNPACK kernel for since_version {v} (kernels from {spec.since_min})"


def _input0_dtype(ctx: NodeContext) -> str | None:
    return input0_dtype_reason(ctx, EP)


GENERAL = (
    Rule("xnnpack.opset", "a kernel is registered for the node's since_version", CHECKER, _opset),
    Rule("xnnpack.input0_dtype", "input 0 element type has a kernel", CHECKER, _input0_dtype),
)


def _maxpool(ctx: NodeContext) -> list[str]:
    out = []
    s = ctx.shape(0)
    if s is None or len(s) != 4:
        return [f"MaxPool input {fmt_shape(s)}: XNNPACK takes only 2-D pooling (4-D input)"]
    if not all(isinstance(d, int) for d in s[1:]):
        out.append(f"MaxPool input {fmt_shape(s)}: XNNPACK needs C, H and W known")
    if ctx.n_outputs != 1:
        out.append("MaxPool Indices output is not supported by XNNPACK")
    if int(ctx.attr("ceil_mode", 0)) != 0:
        out.append("MaxPool ceil_mode=1 is not supported by XNNPACK")
    if ctx.attr("auto_pad", "NOTSET") == "SAME_LOWER":
        out.append("MaxPool auto_pad SAME_LOWER is not supported by XNNPACK")
    k = tuple(ctx.attr("kernel_shape", ()))
    if len(k) != 2:
        out.append("only 2-D MaxPool is supported by XNNPACK")
    elif k == (1, 1):
        out.append("1x1 MaxPool is not supported by XNNPACK")
    return out


def _softmax(ctx: NodeContext) -> list[str]:
    s = ctx.shape(0)
    if s is None or len(s) == 0:
        return ["Softmax input rank unknown or 0: XNNPACK needs the shape"]
    r = len(s)
    default = -1 if ctx.since >= 13 else 1
    axis = int(ctx.attr("axis", default))
    if ctx.since >= 13 and axis not in (-1, r - 1):
        return [f"Softmax axis {axis} of rank {r}: XNNPACK takes only the last axis"]
    a = axis + r if axis < 0 else axis
    dims = s[a:] if ctx.since < 13 else s[-1:]
    if not all(isinstance(d, int) for d in dims):
        return [f"Softmax input {fmt_shape(s)}: XNNPACK needs the reduced dims known"]
    return []


def _gemm(ctx: NodeContext) -> list[str]:
    out = []
    if float(ctx.attr("alpha", 1.0)) != 1.0 or float(ctx.attr("beta", 1.0)) != 1.0:
        out.append("Gemm alpha/beta != 1 is not supported by XNNPACK")
    out.extend(const_reasons(ctx, ((1, "B"), (2, "C")), EP))
    for i in (0, 1, 2):
        rk = ctx.rank(i)
        if ctx.has_input(i) and (rk is None or rk >= 3):
            out.append(f"Gemm input '{ctx.input_name(i)}' rank {rk}: XNNPACK takes rank <= 2")
    return out


OP_RULES = rules_by_id(
    Rule("xnnpack.conv", "Conv/ConvTranspose opset 11+, 1-D or 2-D, C/H/W known, constant weight and bias",
         X + "nn/conv_base.cc", conv),
    Rule("xnnpack.maxpool", "MaxPool 2-D, C/H/W known, no ceil_mode/indices, not 1x1", X + "nn/max_pool.cc", _maxpool),
    Rule("xnnpack.avgpool", "AveragePool 2-D, C/H/W known, not 1x1, no ceil_mode/count_include_pad/dilations",
         X + "nn/average_pool.cc", avgpool),
    Rule("xnnpack.resize", "Resize linear, 4-D, constant scales/sizes, exact downscale", X + "tensor/resize.cc", resize),
    Rule("xnnpack.softmax", "Softmax on the last axis with known dims", X + "math/softmax.cc", _softmax),
    Rule("xnnpack.gemm", "Gemm alpha=beta=1, constant B and C, rank <= 2", X + "math/gemm.cc", _gemm),
    Rule("xnnpack.matmul", "MatMul A rank >= 1, constant B of rank <= 2", X + "math/matmul.cc", matmul),
    FUSION,
    GEMM_C,
)


def _op(op: str, src: str, since: int, dtypes: tuple[int, ...], rules: tuple[str, ...]) -> OpSpec:
    return OpSpec(op, X + src, since, None, None, dtypes, rules)


OPS = ops_by_key(
    _op("Conv", "nn/conv.cc", 1, (F32, U8, I8), ("xnnpack.conv",)),
    _op("ConvTranspose", "nn/conv_transpose.cc", 1, (F32, U8, I8), ("xnnpack.conv",)),
    _op("MaxPool", "nn/max_pool.cc", 8, (F32, U8, I8), ("xnnpack.maxpool",)),
    _op("AveragePool", "nn/average_pool.cc", 7, (F32, F16, U8), ("xnnpack.avgpool",)),
    _op("Resize", "tensor/resize.cc", 10, (F32, U8, I8), ("xnnpack.resize",)),
    _op("Softmax", "math/softmax.cc", 1, (F32, U8), ("xnnpack.softmax",)),
    _op("Gemm", "math/gemm.cc", 7, (F32, F16), ("xnnpack.gemm", "xnnpack.gemm.c")),
    _op("MatMul", "math/matmul.cc", 1, (F32,), ("xnnpack.matmul",)),
    _op("Clip", "detail/node_support_checker.cc", 1, (F32, U8, I8), ("xnnpack.fusion",)),
    _op("Relu", "detail/node_support_checker.cc", 1, (F32, U8, I8), ("xnnpack.fusion",)),
)

UNMODELLED = ("QLinearConv", "QLinearAveragePool", "QLinearSoftmax")

TABLE = EPTable(
    ep="xnnpack",
    ops=OPS,
    rules=OP_RULES,
    general=GENERAL,
    default_since_max=10_000,
    default_input0_dtypes=(F32,),
    unmodelled=UNMODELLED,
    extra={"ep_source": EP_SRC},
    versioned=(GEMM_C_FIXED, FUSION_FIXED),
)
