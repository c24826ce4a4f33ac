"""XNNPACK's rules for QDQ node units and QLinear ops, read from onnxruntime/core/providers/xnnpack/
(ORT 1.25-dev mirror, commit d626b56).

``XnnpackExecutionProvider::GetCapability`` (xnnpack_execution_provider.cc) checks each node unit by its
target through ``NodeSupportChecker::IsNodeSupported`` (detail/node_support_checker.cc: ONNX-domain
Conv, ConvTranspose, QLinearConv, MaxPool, AveragePool, Softmax, Resize, Gemm, MatMul only) and fuses a
QDQ Conv/MaxPool/AveragePool/Softmax/Resize/ConvTranspose unit into one NHWC kernel (detail/utils.cc
``FuseQDQGroup``). Quantized types come from detail/utils.cc ``GetTensorQuantType``: uint8 per-tensor
only; int8 per-tensor, or per-channel along dim 0 (a weight).

A QDQ ConvTranspose unit passes the Conv checks (nn/conv_base.cc ``IsValidQuantConv``) and becomes the
NHWC ``QLinearConvTranspose`` kernel; a per-channel weight is refused (see the rule). A QDQ Resize unit
passes the float Resize checker, but ``FuseQDQGroup`` names its fused node ONNX-domain ``Resize`` while
XNNPACK registers Resize only in the NHWC domain since 4f2096be3 (#18038, 1.17.0, before every modelled
release): the fused node finds no kernel, ORT falls back to ``Compile``, which XNNPACK does not implement,
so the session fails to load. The units of the selectors the shared grouping leaves out (Pad, the
norms...) change nothing here: XNNPACK has no kernel for those ops.
"""

from __future__ import annotations

from dataclasses import replace

from mobilegen.coverage.graph import GraphInfo
from mobilegen.coverage.qdq import QdqOp, QdqTable, Unit, param_size, param_values, qtype, quant, type_text
from mobilegen.coverage.rules import U8, EPTable, NodeContext, Rule, rules_by_id
from mobilegen.providers.xnnpack.facts import CHECKER, X
from mobilegen.providers.xnnpack.table import TABLE as FLOAT_TABLE

UTILS = X + "detail/utils.cc"
CONV = X + "nn/conv_base.cc"
I8, I32 = 3, 6  # onnx.TensorProto.INT8 / INT32


def _quant_type(ctx: NodeContext, i: int, output: bool = False) -> str | None:
    """GetTensorQuantType: "u8", "s8", "s8c" (per-channel int8), or None when XNNPACK has no such type."""
    qp = quant(ctx, i, output)
    if qp is None:
        return None
    dt = qtype(ctx, qp)
    n_scale = param_size(ctx, qp.scale)
    n_zp = param_size(ctx, qp.zero_point) if qp.zero_point else 0
    if n_scale is None or n_zp is None:
        return None
    if dt == U8:
        return "u8" if not qp.zero_point or (n_scale == 1 and n_zp == 1) else None
    if dt == I8:
        if n_scale != n_zp and n_zp != 0:
            return None
        if n_scale == 1:
            return "s8"
        info = ctx.graph.info(qp.tensor)
        return "s8c" if info is not None and info.shape and info.shape[0] == n_scale else None
    return None


def _describe(ctx: NodeContext, i: int, output: bool = False) -> str:
    qp = quant(ctx, i, output)
    if qp is None:
        return "not quantized"
    n = param_size(ctx, qp.scale)
    per = "per-tensor" if n == 1 else f"{n} scales"
    return f"{type_text(qtype(ctx, qp))} {per}"


def _conv_types(ctx: NodeContext) -> str | None:
    """GetConvCompType (nn/conv_base.cc): u8·u8→u8 per-tensor, or s8·s8(per-tensor or per-channel)→s8;
    a bias is a constant int32."""
    if _transpose_per_channel(ctx):
        return None  # xnnpack.qdq.convtranspose_per_channel says why
    x, w, y = _quant_type(ctx, 0), _quant_type(ctx, 1), _quant_type(ctx, 0, True)
    ok = (w == "u8" and x == "u8" and y == "u8") or (w in ("s8", "s8c") and x == "s8" and y == "s8")
    bias = 2
    if ok and ctx.has_input(bias) and (ctx.dtype(bias) != I32 or not ctx.is_const(bias)):
        return f"bias '{ctx.input_name(bias)}' is not a constant int32 initializer: XNNPACK's quantized Conv needs one"
    if ok:
        return None
    return (f"input {_describe(ctx, 0)}, weight {_describe(ctx, 1)}, output {_describe(ctx, 0, True)}: XNNPACK's "
            "quantized Conv takes uint8/uint8 per-tensor or int8/int8 (weight per-tensor or per-channel), no u8s8")


def _conv_opset(ctx: NodeContext) -> str | None:
    v = ctx.node.since_version
    return None if v is None or v >= 11 else f"{ctx.node.op_type} since_version {v}: XNNPACK takes Conv from opset 11"


def _maxpool_types(ctx: NodeContext) -> str | None:
    x, y = _quant_type(ctx, 0), _quant_type(ctx, 0, True)
    if x == y and x in ("u8", "s8"):
        return None
    return f"input {_describe(ctx, 0)}, output {_describe(ctx, 0, True)}: XNNPACK's quantized MaxPool takes uint8 or int8 per-tensor, the same in and out"


def _softmax(ctx: NodeContext) -> str | None:
    x, y = _quant_type(ctx, 0), _quant_type(ctx, 0, True)
    qp = quant(ctx, 0, True)
    if x != "u8" or y != "u8" or qp is None:
        return f"input {_describe(ctx, 0)}, output {_describe(ctx, 0, True)}: XNNPACK's quantized Softmax takes uint8 only"
    scale = param_values(ctx, qp.scale)
    zp = param_values(ctx, qp.zero_point) if qp.zero_point else None
    if scale is None or abs(float(scale[0]) - 1 / 256) > 1e-4 or (zp is not None and int(zp[0]) != 0):
        return "quantized Softmax output scale/zero point must be 1/256 and 0 for XNNPACK"
    return None


def _transpose_per_channel(ctx: NodeContext) -> bool:
    qp = quant(ctx, 1)
    n = None if qp is None else param_size(ctx, qp.scale)
    return ctx.node.op_type == "ConvTranspose" and n is not None and n > 1


def _convtranspose_per_channel(ctx: NodeContext) -> str | None:
    """GetTensorQuantType matches the scales against dim 0 of the weight, ConvTranspose's input channels,
    but ORT's quantizer quantizes it along axis 1; when the counts happen to match, conv_base.cc builds it
    with xnn_create_convolution2d_nhwc_qs8_qc8w, a convolution, not a deconvolution."""
    if not _transpose_per_channel(ctx):
        return None
    return ("per-channel weight: XNNPACK matches its scales against dim 0 (the input channels; ORT quantizes "
            "ConvTranspose along axis 1) and would build a convolution, not a deconvolution, for it "
            "(nn/conv_base.cc): quantize ConvTranspose weights per-tensor")


# Every modelled release (1.24.1 on) has it: earlier than any of them, the fused node found its kernel.
RESIZE_SOURCE = ("commit 4f2096be3 'Update XNNPACK to latest version' (#18038, main 1.17.0): Resize kernels moved to "
                 "the NHWC domain; detail/utils.cc FuseQDQGroup still names the fused QDQ Resize ONNX-domain (the same "
                 "on main in 2026)")


def _resize(ctx: NodeContext) -> str:
    return ("XNNPACK claims the unit, but its fused node is an ONNX-domain Resize and XNNPACK registers Resize "
            "only in the NHWC domain (detail/utils.cc FuseQDQGroup): no kernel, no Compile, the session fails to load")


RULES = rules_by_id(
    Rule("xnnpack.qdq.conv_types", "quantized Conv: u8/u8/u8 per-tensor or s8/s8(per-channel)/s8, constant int32 bias", CONV, _conv_types),
    Rule("xnnpack.qdq.conv_opset", "quantized Conv since_version >= 11", CONV, _conv_opset),
    Rule("xnnpack.qdq.maxpool_types", "quantized MaxPool uint8 or int8 per-tensor, same in and out", X + "nn/max_pool.cc", _maxpool_types),
    Rule("xnnpack.qdq.softmax", "quantized Softmax uint8, output scale 1/256 and zero point 0", X + "math/softmax.cc", _softmax),
    Rule("xnnpack.qdq.convtranspose_per_channel", "quantized ConvTranspose weight per-tensor", CONV, _convtranspose_per_channel),
    Rule("xnnpack.qdq.resize", "a QDQ Resize unit's fused node has a kernel", UTILS, _resize, ort_source=RESIZE_SOURCE),
)

_U8_I8 = (U8, I8)
UNIT_OPS = {
    "Conv": QdqOp("Conv", CONV, _U8_I8, ("xnnpack.qdq.conv_types", "xnnpack.qdq.conv_opset")),
    "MaxPool": QdqOp("MaxPool", X + "nn/max_pool.cc", _U8_I8, ("xnnpack.qdq.maxpool_types",)),
    "Softmax": QdqOp("Softmax", X + "math/softmax.cc", (U8,), ("xnnpack.qdq.softmax",)),
    "ConvTranspose": QdqOp("ConvTranspose", X + "nn/conv_transpose.cc", _U8_I8,
                           ("xnnpack.qdq.conv_types", "xnnpack.qdq.conv_opset", "xnnpack.qdq.convtranspose_per_channel")),
    "Resize": QdqOp("Resize", X + "tensor/resize.cc", _U8_I8, ("xnnpack.qdq.resize",)),
}
QLINEAR_OPS = {"QLinearConv": UNIT_OPS["Conv"]}

_REFUSED = {
    "AveragePool": ("IsQuantAvgPoolSupported returns false: XNNPACK takes no quantized AveragePool", "nn/average_pool.cc"),
    "Gemm": ("XNNPACK's Gemm kernel takes a float32/float16 A only (a QDQ unit's A is quantized)", "math/gemm.cc"),
    "MatMul": ("XNNPACK's MatMul kernel takes a float32/float16 A only (a QDQ unit's A is quantized)", "math/matmul.cc"),
}


def _refuse(graph: GraphInfo, unit: Unit) -> str:
    op = unit.node.op_type
    if op in _REFUSED:
        return _REFUSED[op][0]
    if not unit.node.is_onnx_domain:
        return f"XNNPACK's node checker takes ONNX-domain ops only: no kernel for {unit.node.qualified} (node_support_checker.cc)"
    return f"XNNPACK has no kernel for {op} (node_support_checker.cc)"


QDQ = QdqTable("xnnpack", UNIT_OPS, QLINEAR_OPS, RULES, _refuse, CHECKER)

# The float table with the node-unit rules. XNNPACK's checker takes ONNX-domain ops only, so the
# com.microsoft QLinearAveragePool/QLinearSoftmax nodes are refused (no kernel), not "not modelled".
_KNOWN = ("QLinearConv", "QLinearAveragePool", "QLinearSoftmax")
TABLE: EPTable = replace(FLOAT_TABLE, qdq=QDQ, unmodelled=tuple(op for op in FLOAT_TABLE.unmodelled if op not in _KNOWN))
