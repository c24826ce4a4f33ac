"""The providers' QDQ node-unit rules: one accepted and one refused case per rule, on graphs built here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import pytest

from mobilegen import providers
from tests.unit.coverage.qdq_helpers import I8, I32, U8, U16, G, qdq_conv, qdq_unary, report, verdict_of

Factory = Callable[[], onnx.ModelProto]
Case = tuple[dict[str, Any], Factory]  # settings incl. "ep", model


def _gemm(b_type: int = U8, *, bias_input: bool = False) -> onnx.ModelProto:
    g = G()
    a = g.qdq(g.input((2, 8)), U8)
    b = g.weight((8, 4), b_type)
    ins = [a, b]
    if bias_input:
        g.inputs.append(onnx.helper.make_tensor_value_info("bias", I32, (4,)))
        ins.append(g.dq("bias", I32, 0.001, 0))
    y = g.node("Gemm", ins)
    return g.model(g.dq(g.q(y, U8), U8))


def _avgpool(out_scale: float) -> onnx.ModelProto:
    return qdq_unary("AveragePool", out_scale=out_scale, kernel_shape=[2, 2])


def _qlinear_conv(act: int = U8, wt: int = U8) -> onnx.ModelProto:
    g = G()
    x = g.q(g.input((1, 3, 8, 8)), act)
    w = g.const(np.ones((4, 3, 3, 3)), {U8: np.uint8, I8: np.int8}[wt])
    xs, xz = g.params(act)
    ws, wz = g.params(wt, 0.02)
    ys, yz = g.params(act, 0.1)
    y = g.node("QLinearConv", [x, xs, xz, w, ws, wz, ys, yz])
    return g.model(g.dq(y, act, 0.1))


def _concat(scale1: float = 0.05) -> onnx.ModelProto:
    g = G()
    a = g.qdq(g.input((1, 4, 8, 8), name="a"), U8)
    b = g.qdq(g.input((1, 4, 8, 8), name="b"), U8, scale1)
    y = g.node("Concat", [a, b], axis=1)
    return g.model(g.dq(g.q(y, U8), U8))


def _gemm_float_out() -> onnx.ModelProto:
    """DQ → Gemm with no Q after it: ORT's Gemm selector forms this unit (empty Q allowed)."""
    g = G()
    y = g.node("Gemm", [g.qdq(g.input((2, 8)), U8), g.weight((8, 4), U8)])
    return g.model(y)


def _convtranspose(wt: int = I8, per_channel: bool = False, m: int = 4) -> onnx.ModelProto:
    """x -> Q -> DQ -> ConvTranspose(DQ weight [C=4, M, 3, 3]) -> Q -> DQ -> y; per-channel along axis 1 (the
    output channels), as ORT's quantizer does for ConvTranspose."""
    g = G()
    x = g.qdq(g.input((1, 4, 8, 8)), wt)
    w = g.weight((4, m, 3, 3), wt, [0.02] * m if per_channel else 0.02, [0] * m if per_channel else 0,
                 1 if per_channel else None)
    y = g.node("ConvTranspose", [x, w], pads=[1, 1, 1, 1])
    return g.model(g.dq(g.q(y, wt), wt))


def _resize(out_scale: float = 0.05) -> onnx.ModelProto:
    """DQ -> Resize -> Q; with another output scale ORT forms no unit and the Resize stays a float node."""
    g = G(13)
    x = g.qdq(g.input((1, 4, 8, 8)), U8)
    y = g.node("Resize", [x, "", g.const([1.0, 1.0, 2.0, 2.0])], mode="linear")
    return g.model(g.dq(g.q(y, U8, out_scale), U8, out_scale))


def _per_channel(act: int, wt: int, zp: Any = 0) -> Factory:
    return lambda: qdq_conv(act, wt, w_scale=[0.02] * 4, w_zp=[zp] * 4 if not isinstance(zp, list) else zp, axis=0)


NN = {"ep": "nnapi"}
XP = {"ep": "xnnpack"}

CASES: dict[str, tuple[Case, Case]] = {
    # ---- NNAPI
    "nnapi.qdq.unit_op": ((NN, lambda: qdq_conv()), (NN, lambda: qdq_unary("MaxPool", kernel_shape=[2, 2]))),
    "nnapi.input0_dtype": ((NN, lambda: qdq_conv(U8, I8)), (NN, lambda: qdq_conv(I8, I8))),
    "nnapi.qdq.types": ((NN, lambda: _gemm(I8)), (NN, lambda: _gemm(U16))),
    "nnapi.qdq.scales": ((NN, _per_channel(U8, I8)), (NN, _per_channel(U8, U8))),
    "nnapi.qdq.per_channel_api": (({**NN, "android_api": 29}, _per_channel(U8, I8)), ({**NN, "android_api": 28}, _per_channel(U8, I8))),
    "nnapi.qdq.weight_zero_point": ((NN, lambda: qdq_conv(U8, I8, w_zp=0)), (NN, lambda: qdq_conv(U8, I8, w_zp=3))),
    "nnapi.qdq.bias": ((NN, lambda: _gemm(U8)), (NN, lambda: _gemm(U8, bias_input=True))),
    "nnapi.qdq.fixed_output": (
        (NN, lambda: qdq_unary("Softmax", shape=(2, 5), out_scale=1 / 256)),
        (NN, lambda: qdq_unary("Softmax", shape=(2, 5), out_scale=0.05)),
    ),
    "nnapi.qdq.pool_params": ((NN, lambda: _avgpool(0.05)), (NN, lambda: _avgpool(0.1))),
    "nnapi.qdq.concat_params": (({**NN, "android_api": 28}, _concat), ({**NN, "android_api": 28}, lambda: _concat(0.1))),
    "nnapi.qdq.output_quantized": ((NN, lambda: _gemm(U8)), (NN, _gemm_float_out)),
    # ---- XNNPACK
    "xnnpack.qdq.unit_op": ((XP, lambda: qdq_conv()), (XP, lambda: _gemm(U8))),
    "xnnpack.qdq.conv_types": ((XP, _per_channel(I8, I8)), (XP, lambda: qdq_conv(U8, I8))),
    "xnnpack.qdq.conv_opset": ((XP, lambda: qdq_conv(opset=11)), (XP, lambda: qdq_conv(opset=10))),
    "xnnpack.qdq.maxpool_types": (
        (XP, lambda: qdq_unary("MaxPool", I8, kernel_shape=[2, 2])),
        (XP, lambda: qdq_unary("MaxPool", U16, kernel_shape=[2, 2])),
    ),
    "xnnpack.qdq.convtranspose_per_channel": ((XP, _convtranspose), (XP, lambda: _convtranspose(per_channel=True))),
    "xnnpack.qdq.resize": ((XP, lambda: _resize(0.1)), (XP, _resize)),
    "xnnpack.qdq.softmax": (
        (XP, lambda: qdq_unary("Softmax", shape=(2, 5), out_scale=1 / 256)),
        (XP, lambda: qdq_unary("Softmax", shape=(2, 5), out_scale=0.05)),
    ),
}


def _rules(case: Case) -> tuple[bool, tuple[str, ...], tuple[str, ...]]:
    settings, factory = case
    settings = dict(settings)
    ep = settings.pop("ep")
    return verdict_of(report(factory(), ep, **settings))


def test_every_qdq_rule_has_both_cases() -> None:
    ids = {f"{name}.qdq.unit_op" for name in ("nnapi", "xnnpack")}
    for name in ("nnapi", "xnnpack"):
        table = providers.get(name).rule_table()
        ids |= set(table.qdq.rules)
        for rule in table.qdq.rules.values():
            assert rule.source.startswith("onnxruntime/core/providers/"), rule.id
    assert sorted(ids - set(CASES)) == []


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_qdq_rule_accepts(rule_id: str) -> None:
    supported, reasons, rules = _rules(CASES[rule_id][0])
    assert rule_id not in rules, reasons
    assert supported, reasons


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_qdq_rule_refuses(rule_id: str) -> None:
    supported, reasons, rules = _rules(CASES[rule_id][1])
    assert not supported
    assert rule_id in rules, reasons


def test_refusals_name_the_unit_and_the_fact() -> None:
    _, reasons, _ = _rules(CASES["nnapi.qdq.unit_op"][1])
    assert reasons == (
        "QDQ node unit of MaxPool 'target' (1 DQ → MaxPool → 1 Q): NNAPI's pool builder takes a QDQ unit only "
        "for AveragePool (pool_op_builder.cc), not MaxPool; ORT forms this unit only for MaxPool-12, so from opset 22 "
        "the float MaxPool between the DQ and Q is taken",
    )
    _, reasons, _ = _rules(CASES["nnapi.qdq.per_channel_api"][1])
    assert reasons[0].endswith("needs Android API 29, target is 28")
    rep = report(_per_channel(U8, I8)(), "nnapi", android_api=28)
    assert any("--android-api 29" in s for s in rep.suggestions)


def test_qlinear_conv_is_modelled() -> None:
    """QLinearConv used to be "not modelled": NNAPI takes it as uint8 (and u8s8), refuses s8s8; XNNPACK
    refuses it, since its only schema is since_version 10 and XNNPACK's Conv starts at 11 (conv_base.cc)."""
    assert verdict_of(report(_qlinear_conv(), "nnapi"))[0]
    assert verdict_of(report(_qlinear_conv(U8, I8), "nnapi"))[0]
    supported, reasons, rules = verdict_of(report(_qlinear_conv(I8, I8), "nnapi"))
    assert not supported and "nnapi.input0_dtype" in rules and "int8: NNAPI QLinearConv takes uint8" in reasons[0]
    supported, reasons, rules = verdict_of(report(_qlinear_conv(), "xnnpack"))
    assert not supported and rules == ("xnnpack.qdq.conv_opset",)
    for ep in ("nnapi", "xnnpack"):
        assert not any("does not model" in r for r in verdict_of(report(_qlinear_conv(), ep))[1])


def test_xnnpack_refuses_com_microsoft_qlinear_ops() -> None:
    g = G()
    x = g.q(g.input((1, 4, 8, 8)))
    xs, xz = g.params(U8)
    ys, yz = g.params(U8)
    y = g.node("QLinearAveragePool", [x, xs, xz, ys, yz], domain="com.microsoft", kernel_shape=[2, 2])
    supported, reasons, _ = verdict_of(report(g.model(y, out_type=U8), "xnnpack"))
    assert not supported
    assert reasons == (
        "QLinearAveragePool 'target': XNNPACK's node checker takes ONNX-domain ops only: no kernel for "
        "com.microsoft:QLinearAveragePool (node_support_checker.cc)",
    )


def test_nnapi_refuses_a_qlinear_op_it_has_no_builder_for() -> None:
    g = G()
    x = g.q(g.input((2, 5)))
    xs, xz = g.params(U8)
    ys, yz = g.params(U8, 1 / 256)
    y = g.node("QLinearSoftmax", [x, xs, xz, ys, yz], domain="com.microsoft", opset=13)
    supported, reasons, rules = verdict_of(report(g.model(y, out_type=U8), "nnapi"))
    assert not supported and rules == ("nnapi.qdq.unit_op",)
    assert reasons == ("QLinearSoftmax 'target': NNAPI has no com.microsoft:QLinearSoftmax builder (op_builder_factory.cc)",)


def test_nnapi_concat_scales_may_differ_from_api_29() -> None:
    assert verdict_of(report(_concat(0.1), "nnapi", android_api=29))[0]
    rep = report(_concat(0.1), "nnapi", android_api=28)
    assert any("--android-api 29" in s for s in rep.suggestions)


def _pad_unit() -> onnx.ModelProto:
    g = G()
    y = g.node("Pad", [g.qdq(g.input((1, 4, 8, 8))), g.const([0, 0, 1, 1, 0, 0, 1, 1], np.int64)])
    return g.model(g.dq(g.q(y)))


def test_nnapi_refuses_a_pad_unit_as_a_whole() -> None:
    """ORT forms DQ → Pad → Q units for every EP (PadNodeGroupSelector); NNAPI's base builder refuses a QDQ
    unit, so the DQ and Q it would take one by one (with a float Pad) go with the Pad."""
    rep = report(_pad_unit(), "nnapi", android_api=30)
    refused = [(n.op_type, n.refusals[0].rule) for n in rep.nodes if not n.supported]
    assert refused == [("DequantizeLinear", "nnapi.qdq.unit_op"), ("Pad", "nnapi.qdq.unit_op"),
                       ("QuantizeLinear", "nnapi.qdq.unit_op")]
    assert "NNAPI's Pad builder takes no QDQ node unit" in verdict_of(rep)[1][0]


def test_nnapi_names_a_unit_op_it_has_no_builder_for() -> None:
    g = G()
    a, b = g.qdq(g.input((2, 3), name="a")), g.qdq(g.input((3, 4), name="b"))
    y = g.node("Einsum", [a, b], equation="ij,jk->ik")
    supported, reasons, rules = verdict_of(report(g.model(g.dq(g.q(y))), "nnapi"))
    assert not supported and rules == ("nnapi.qdq.unit_op",)
    assert "NNAPI has no Einsum builder (op_builder_factory.cc), so it takes no such node unit" in reasons[0]


def test_xnnpack_takes_qdq_convtranspose_units() -> None:
    for wt in (U8, I8):
        supported, reasons, _ = verdict_of(report(_convtranspose(wt), "xnnpack"))
        assert supported, reasons
    rep = report(_convtranspose(U8), "xnnpack")  # the unit in one partition; the model's input Q and output DQ stay
    op = {n.name: n.op_type for n in rep.nodes}
    assert [[op[m] for m in part] for part in rep.partitions] == [
        ["DequantizeLinear", "DequantizeLinear", "ConvTranspose", "QuantizeLinear"]]


def test_xnnpack_names_the_per_channel_convtranspose_fact_once() -> None:
    """Along axis 1 with M != C the scales match no dim XNNPACK checks: one reason, not a misleading Conv one."""
    supported, reasons, rules = verdict_of(report(_convtranspose(per_channel=True, m=8), "xnnpack"))
    assert not supported and rules == ("xnnpack.qdq.convtranspose_per_channel",)
    assert "ORT quantizes ConvTranspose along axis 1" in reasons[0]
