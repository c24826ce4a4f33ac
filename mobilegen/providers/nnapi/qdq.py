"""NNAPI's rules for QDQ node units and QLinear ops, read from
onnxruntime/core/providers/nnapi/nnapi_builtin/builders/ (ORT main, commit 28a4cfe, and the 1.25-dev
mirror: the same in both).

``BaseOpBuilder::IsNodeUnitTypeSupported`` (impl/base_op_builder.cc) refuses every QDQ unit; only the
builders that override it take one: Conv, Gemm/MatMul, Add/Mul, AveragePool (not MaxPool or the global
pools), Reshape, Transpose, Softmax, Concat, Resize. Their quantized IO must be uint8 — except the weight
(input 1) of Conv/Gemm/MatMul, which may be int8 ("u8s8") — per-tensor, with constant parameters
(op_builder_helpers.cc ``IsQuantizedIOSupported``; helper.cc ``HasValidBinaryOpQuantizedInputTypes``).
So an int8 (s8s8) model is refused: NNAPI takes int8 only as a Conv/Gemm/MatMul weight. Below API 29 a
quantized Concat needs every input and its output on input 0's scale and zero point (concat_op_builder.cc).

Units of the selectors :mod:`mobilegen.coverage.qdq` leaves out (Pad, the norms, Where, TopK...: ORT forms
them for every EP) come from ``mobilegen.coverage.qdq_selectors.SELECTORS``: NNAPI's base builder refuses
them as a whole, DQs and Qs included, where node by node it would take the DQ, a float Pad and the Q.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from mobilegen.coverage.graph import GraphInfo
from mobilegen.coverage.qdq import (
    QdqOp,
    QdqTable,
    QParam,
    Unit,
    param_size,
    param_values,
    qtype,
    quant,
    type_text,
)
from mobilegen.coverage.qdq_selectors import SELECTORS  # ORT's selectors beyond the shared ones
from mobilegen.coverage.rules import API, U8, EPTable, NodeContext, Reason, Rule, needs_api, rules_by_id
from mobilegen.providers.nnapi.rules import IMPL, B, target_api
from mobilegen.providers.nnapi.table import TABLE as FLOAT_TABLE

HELPERS = B + "op_builder_helpers.cc"
HELPER = B + "helper.cc"
I8 = 3  # onnx.TensorProto.INT8
_WEIGHT_OPS = ("Conv", "Gemm", "MatMul", "QLinearConv", "QLinearMatMul")  # input 1 may be int8 (u8s8)
_NO_PER_CHANNEL = ("MatMul", "QLinearMatMul")  # "QLinearMatMul does not support per-channel quantization"


def _io_indices(ctx: NodeContext) -> list[tuple[int, bool]]:
    """The quantized IO a builder checks (IsQuantizedIOSupported calls): (index, is output)."""
    op = ctx.node.op_type
    n_in = len(ctx.unit.inputs)
    if op in ("Concat",):
        ins = list(range(n_in))
    elif op in (*_WEIGHT_OPS, "Add", "Mul", "QLinearAdd", "QLinearMul"):
        ins = [0, 1]
    else:
        ins = [0]
    return [(i, False) for i in ins] + [(0, True)]


def _u8s8_weight(ctx: NodeContext, i: int, output: bool) -> bool:
    qp = quant(ctx, i, output)
    return not output and i == 1 and ctx.node.op_type in _WEIGHT_OPS and qp is not None and qtype(ctx, qp) == I8


def _types(ctx: NodeContext) -> list[str]:
    out = []
    for i, output in _io_indices(ctx):
        qp = quant(ctx, i, output)
        if qp is None:
            if not output:
                out.append(f"input {i} '{ctx.input_name(i)}' is not quantized: NNAPI's quantized {ctx.node.op_type} needs it quantized")
            continue
        if i == 0 and not output:
            continue  # the general input-0 rule names its type
        dt = qtype(ctx, qp)
        if dt == U8 or _u8s8_weight(ctx, i, output):
            continue
        allowed = "uint8 or int8" if not output and i == 1 and ctx.node.op_type in _WEIGHT_OPS else "uint8"
        where = "output" if output else ("weight" if i == 1 and ctx.node.op_type in _WEIGHT_OPS else f"input {i}")
        out.append(f"{where} '{qp.tensor}' is {type_text(dt)}: NNAPI takes {allowed} here (no s8s8 or 16-bit)")
    if ctx.node.op_type in ("Add", "Mul", "QLinearAdd", "QLinearMul"):
        a, b = quant(ctx, 0), quant(ctx, 1)
        if a is not None and b is not None and qtype(ctx, a) != qtype(ctx, b):
            out.append(f"inputs are {type_text(qtype(ctx, a))} and {type_text(qtype(ctx, b))}: NNAPI quantized {ctx.node.op_type} needs both uint8")
    return out


def _per_channel(ctx: NodeContext) -> list[tuple[QParam, int, int]]:
    """The quantized IO with constant parameters and more than one scale or zero point."""
    out = []
    for i, output in _io_indices(ctx):
        qp = quant(ctx, i, output)
        n_scale = None if qp is None else param_size(ctx, qp.scale)
        n_zp = (param_size(ctx, qp.zero_point) if qp.zero_point else 1) if qp is not None else None
        if qp is not None and n_scale is not None and n_zp is not None and (n_scale, n_zp) != (1, 1):
            out.append((qp, n_scale, n_zp))
    return out


def _per_channel_api(ctx: NodeContext) -> Reason | None:
    if target_api(ctx) >= 29 or not any(_u8s8_weight(ctx, 1, False) and qp == quant(ctx, 1) for qp, _, _ in _per_channel(ctx)):
        return None
    qp = quant(ctx, 1)
    assert qp is not None
    return needs_api(f"per-channel int8 weight '{qp.tensor}' needs Android API 29, target is {target_api(ctx)}", 29)


def _scales(ctx: NodeContext) -> list[str]:
    out: list[str] = []
    for i, output in _io_indices(ctx):
        qp = quant(ctx, i, output)
        if qp is None:
            continue
        n_scale = param_size(ctx, qp.scale)
        if n_scale is None:
            out.append(f"scale '{qp.scale}' is not a constant initializer")
            continue
        n_zp = param_size(ctx, qp.zero_point) if qp.zero_point else 1
        if n_zp is None:
            out.append(f"zero point '{qp.zero_point}' is not a constant initializer")
            continue
        if n_scale == 1 and n_zp == 1:
            continue
        if not _u8s8_weight(ctx, i, output) or ctx.node.op_type in _NO_PER_CHANNEL:
            out.append(f"per-channel quantization of '{qp.tensor}': NNAPI {ctx.node.op_type} takes it only for an int8 Conv/Gemm weight")
            continue
        shape = ctx.graph.info(qp.tensor)
        dim0 = shape.shape[0] if shape is not None and shape.shape else None
        if n_scale not in (1, dim0) or n_zp not in (1, dim0):
            out.append(f"per-channel scale of '{qp.tensor}' has {n_scale} values for {dim0} output channels")
    return out


def _weight_zero_point(ctx: NodeContext) -> str | None:
    qp = quant(ctx, 1)
    if qp is None or not _u8s8_weight(ctx, 1, False) or not qp.zero_point:
        return None
    values = param_values(ctx, qp.zero_point)
    if values is not None and np.any(values != 0):
        return f"int8 weight '{qp.tensor}' has a non-zero zero point: NNAPI takes only 0 for u8s8"
    return None


def _bias(ctx: NodeContext) -> str | None:
    bias = 2 if ctx.node.op_type in ("Conv", "Gemm", "QLinearConv") else None
    if bias is None or not ctx.has_input(bias) or ctx.is_const(bias):
        return None
    return f"bias '{ctx.input_name(bias)}' is not a constant initializer"


def _fixed_output(ctx: NodeContext) -> str | None:
    qp = quant(ctx, 0, output=True)
    if qp is None:
        return None
    scale = param_values(ctx, qp.scale)
    zp = param_values(ctx, qp.zero_point) if qp.zero_point else np.zeros(1)
    if scale is not None and zp is not None and abs(float(scale[0]) - 1 / 256) < 1e-9 and int(zp[0]) == 0:
        return None
    return f"{ctx.node.op_type} output scale/zero point must be 1/256 and 0 for NNAPI"


def _same_in_out(ctx: NodeContext) -> str | None:
    a, y = quant(ctx, 0), quant(ctx, 0, output=True)
    if a is None or y is None:
        return None
    va, vy = param_values(ctx, a.scale), param_values(ctx, y.scale)
    za = param_values(ctx, a.zero_point) if a.zero_point else np.zeros(1)
    zy = param_values(ctx, y.zero_point) if y.zero_point else np.zeros(1)
    if va is None or vy is None or za is None or zy is None:
        return None
    if float(va[0]) == float(vy[0]) and int(za[0]) == int(zy[0]):
        return None
    return "quantized AveragePool input and output scale/zero point differ: NNAPI needs them equal"


def _concat_params(ctx: NodeContext) -> Reason | None:
    """Below FL3 (API 29) every input and the output must have input 0's scale and zero point."""
    if target_api(ctx) >= 29:
        return None
    first = _scale_zp(ctx, quant(ctx, 0))
    if first is None:
        return None
    others = [(f"input {i}", quant(ctx, i)) for i in range(1, len(ctx.unit.inputs))] + [("output", quant(ctx, 0, True))]
    for where, qp in others:
        got = _scale_zp(ctx, qp)
        if got is not None and got != first:
            return needs_api(f"{where} '{qp.tensor if qp else ''}' has scale/zero point {got[0]:g}/{got[1]}, input 0 has "
                             f"{first[0]:g}/{first[1]}: below Android API 29 NNAPI's quantized Concat needs them equal "
                             f"(target is {target_api(ctx)})", 29)
    return None


def _scale_zp(ctx: NodeContext, qp: QParam | None) -> tuple[float, int] | None:
    """GetQuantizationScaleAndZeroPoint: the first scale and zero point (zero point 0 when absent)."""
    if qp is None:
        return None
    scale = param_values(ctx, qp.scale)
    zp = param_values(ctx, qp.zero_point) if qp.zero_point else np.zeros(1)
    return None if scale is None or zp is None else (float(scale[0]), int(zp[0]))


def _output_quantized(ctx: NodeContext) -> str | None:
    """Reached (and fatal) only once the input shapes and types pass: else ORT refuses the unit before."""
    a, b = quant(ctx, 0), quant(ctx, 1)
    if quant(ctx, 0, output=True) is not None or a is None or b is None:
        return None
    if qtype(ctx, a) != U8 or qtype(ctx, b) not in (U8, I8) or not all(
        ctx.is_static(i) for i in range(len(ctx.node.inputs)) if ctx.has_input(i)
    ):
        return None
    return (f"the output '{ctx.node.outputs[0]}' has no QuantizeLinear (ORT forms such a Gemm unit): NNAPI's "
            "IsQuantizedIOSupported hits ORT_ENFORCE 'has no quant_param', so GetCapability throws and the session "
            "fails to load")


RULES = rules_by_id(
    Rule("nnapi.qdq.types", "quantized IO uint8; a Conv/Gemm/MatMul weight may be int8 (u8s8)", HELPERS, _types),
    Rule("nnapi.qdq.scales", "scales/zero points constant, per-tensor; per-channel only for an int8 Conv/Gemm weight",
         HELPERS, _scales),
    Rule("nnapi.qdq.per_channel_api", "a per-channel int8 weight needs Android API 29", HELPERS, _per_channel_api, API),
    Rule("nnapi.qdq.weight_zero_point", "an int8 weight's zero point is 0", HELPERS, _weight_zero_point),
    Rule("nnapi.qdq.bias", "a quantized Conv/Gemm bias is a constant initializer", IMPL + "conv_op_builder.cc", _bias),
    Rule("nnapi.qdq.fixed_output", "quantized Softmax/Sigmoid output scale 1/256, zero point 0", IMPL + "softmax_op_builder.cc", _fixed_output),
    Rule("nnapi.qdq.pool_params", "quantized AveragePool keeps its input's scale and zero point", IMPL + "pool_op_builder.cc", _same_in_out),
    Rule("nnapi.qdq.concat_params", "below API 29 a quantized Concat's inputs and output share input 0's scale and zero point",
         IMPL + "concat_op_builder.cc", _concat_params, API),
    Rule("nnapi.qdq.output_quantized", "a Gemm unit's output is quantized (else ORT_ENFORCE fails in GetCapability)",
         HELPERS, _output_quantized),
)

_IO = ("nnapi.qdq.types", "nnapi.qdq.scales", "nnapi.qdq.per_channel_api")
_W = (*_IO, "nnapi.qdq.weight_zero_point", "nnapi.qdq.bias")


def _op(op: str, src: str, rules: tuple[str, ...] = _IO) -> QdqOp:
    return QdqOp(op, IMPL + src, (U8,), rules)


UNIT_OPS = {  # the builders overriding IsNodeUnitTypeSupported
    "Conv": _op("Conv", "conv_op_builder.cc", _W),
    "Gemm": _op("Gemm", "gemm_op_builder.cc", (*_W, "nnapi.qdq.output_quantized")),
    "MatMul": _op("MatMul", "gemm_op_builder.cc", _W),
    "Add": _op("Add", "binary_op_builder.cc"),
    "Mul": _op("Mul", "binary_op_builder.cc"),
    "AveragePool": _op("AveragePool", "pool_op_builder.cc", (*_IO, "nnapi.qdq.pool_params")),
    "Reshape": _op("Reshape", "reshape_op_builder.cc"),
    "Transpose": _op("Transpose", "transpose_op_builder.cc"),
    "Softmax": _op("Softmax", "softmax_op_builder.cc", (*_IO, "nnapi.qdq.fixed_output")),
    "Concat": _op("Concat", "concat_op_builder.cc", (*_IO, "nnapi.qdq.concat_params")),
    "Resize": _op("Resize", "resize_op_builder.cc"),
}
QLINEAR_OPS = {  # op_builder_factory.cc registrations of the QLinear ops
    "QLinearConv": _op("Conv", "conv_op_builder.cc", _W),
    "QLinearMatMul": _op("MatMul", "gemm_op_builder.cc", _W),
    "QLinearAdd": _op("Add", "binary_op_builder.cc"),
    "QLinearMul": _op("Mul", "binary_op_builder.cc"),
    "QLinearAveragePool": _op("AveragePool", "pool_op_builder.cc", (*_IO, "nnapi.qdq.pool_params")),
    "QLinearSigmoid": _op("Sigmoid", "unary_op_builder.cc", (*_IO, "nnapi.qdq.fixed_output")),
}


def _refuse(graph: GraphInfo, unit: Unit) -> str:
    op = unit.node.op_type
    if unit.qlinear:
        return f"NNAPI has no {unit.node.qualified} builder (op_builder_factory.cc)"
    if op == "MaxPool":
        return (f"NNAPI's pool builder takes a QDQ unit only for AveragePool (pool_op_builder.cc), not {op}; ORT forms "
                "this unit only for MaxPool-12, so from opset 22 the float MaxPool between the DQ and Q is taken")
    takes = ", ".join(UNIT_OPS)
    if FLOAT_TABLE.lookup(unit.node.domain, op) is None:
        return f"NNAPI has no {op} builder (op_builder_factory.cc), so it takes no such node unit (QDQ units only for {takes})"
    return f"NNAPI's {op} builder takes no QDQ node unit (QDQ units only for {takes})"


QDQ = QdqTable("nnapi", UNIT_OPS, QLINEAR_OPS, RULES, _refuse, IMPL + "base_op_builder.cc", SELECTORS)

# The float table with the node-unit rules; the QLinear ops it models are no longer "not modelled".
TABLE: EPTable = replace(
    FLOAT_TABLE, qdq=QDQ, unmodelled=tuple(op for op in FLOAT_TABLE.unmodelled if op not in QLINEAR_OPS)
)
