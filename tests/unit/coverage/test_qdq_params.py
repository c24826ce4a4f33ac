"""ORT's quantization-parameter checks behind QDQ node units (mobilegen.coverage.qdq_params):
IsClipMadeRedundantByQ compares rint(clip / scale) + zero point with the type's range, IsQDQPairSupported
(DropQDQ) wants explicit, equal zero points and equal scales of any sign, and only the ONNX,
com.microsoft and com.ms.internal.nhwc domains are selected (SelectorManager::GetQDQSelections)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest

from mobilegen.coverage.analyze import prepare
from mobilegen.coverage.qdq import units_of
from tests.unit.coverage.qdq_helpers import I8, I32, U8, G

RELU6_SCALE = float(np.float32(6.0 / 255))  # what a quantizer calibrating ReLU6's [0, 6] writes


def _units(model: onnx.ModelProto) -> list[tuple[str, list[str]]]:
    graph = prepare(model, optimize=False).graph
    found = units_of(graph)
    return [] if found is None else [(graph.nodes[u.target].op_type, [graph.nodes[i].op_type for i in u.members]) for u in found.units]


def _conv_clip(act: int, zp: int, lo: Any, hi: Any, *, scale: float = RELU6_SCALE, opset: int = 17) -> onnx.ModelProto:
    """Q/DQ → Conv → Clip(lo, hi) → Q(scale, zp) → DQ; ``lo``/``hi`` are tensor names or floats."""
    g = G(opset)
    x = g.qdq(g.input((1, 3, 8, 8)), act)
    w = g.weight((4, 3, 3, 3), act, 0.02, 0)
    b = g.dq(g.const([1, 2, 3, 4], np.int32), I32, 0.001, 0)
    y = g.node("Conv", [x, w, b], pads=[1, 1, 1, 1])
    bounds = [v if isinstance(v, str) else g.const(v) for v in (lo, hi)]
    c = g.node("Clip", [y, *bounds], name="clip")
    return g.model(g.dq(g.q(c, act, scale, zp), act, scale, zp))


CONV_CLIP_UNIT = ("Conv", ["DequantizeLinear", "DequantizeLinear", "DequantizeLinear", "Conv", "Clip", "QuantizeLinear"])


@pytest.mark.parametrize(("act", "zp"), [(U8, 0), (I8, -128)])
def test_relu6_before_a_q_of_6_over_255_joins_the_unit(act: int, zp: int) -> None:
    # 255 * float32(6/255) rounds above 6.0 in float, yet rint(6 / scale) + zp is the type's max: redundant
    assert 255 * RELU6_SCALE != 6.0
    assert _units(_conv_clip(act, zp, 0.0, 6.0)) == [CONV_CLIP_UNIT]


def test_a_clip_that_clips_inside_the_q_range_forms_no_unit() -> None:
    assert _units(_conv_clip(U8, 0, 0.0, 3.0)) == []  # the Q reaches 6: Clip's max 3 still clips
    assert _units(_conv_clip(U8, 0, 0.5, 6.0)) == []  # rint(0.5 / scale) = 21 > 0: the min clips
    assert _units(_conv_clip(U8, 10, 0.0, 6.0)) == []  # zero point 10: rint(0) + 10 > 0


def test_clip_bounds_from_a_dq_of_constants_count_as_constant() -> None:
    def model(hi_value: int) -> onnx.ModelProto:
        g = G()
        x = g.qdq(g.input((1, 3, 8, 8)), U8)
        y = g.node("Conv", [x, g.weight((4, 3, 3, 3), U8, 0.02, 0)], pads=[1, 1, 1, 1])
        lo = g.dq(g.const(0, np.uint8), U8, 0.05, 0)
        hi = g.dq(g.const(hi_value, np.uint8), U8, 0.05, 0)  # GetClipConstantMinMax: scale * (x - zp)
        c = g.node("Clip", [y, lo, hi], name="clip")
        return g.model(g.dq(g.q(c, U8, RELU6_SCALE, 0), U8, RELU6_SCALE, 0))

    unit = ("Conv", ["DequantizeLinear", "DequantizeLinear", "Conv", "Clip", "QuantizeLinear"])
    assert unit in _units(model(120))  # max 6.0
    assert unit not in _units(model(60))  # max 3.0 clips


def _drop_qdq(scale: float, *, zero_points: bool = True, domain: str = "") -> onnx.ModelProto:
    """Q/DQ → Transpose → Q/DQ with equal parameters (the DropQDQ selector)."""
    g = G()
    x = g.qdq(g.input((1, 4, 8, 8)), U8, scale, 3)
    t = g.node("Transpose", [x], perm=[0, 2, 3, 1], domain=domain)
    model = g.model(g.dq(g.q(t, U8, scale, 3), U8, scale, 3))
    if not zero_points:
        for n in model.graph.node:
            if n.op_type in ("QuantizeLinear", "DequantizeLinear"):
                del n.input[2]
        model.graph.output[0].type.tensor_type.elem_type = onnx.TensorProto.FLOAT
    return model


DROP_UNIT = ("Transpose", ["DequantizeLinear", "Transpose", "QuantizeLinear"])


def test_drop_qdq_takes_a_negative_scale_but_not_a_missing_zero_point() -> None:
    assert DROP_UNIT in _units(_drop_qdq(0.05))
    assert DROP_UNIT in _units(_drop_qdq(-0.05))  # RegisterMiscSelectors: allow_nonpositive_scale = true
    assert DROP_UNIT not in _units(_drop_qdq(0.05, zero_points=False))  # IsQDQPairSupported: 3 inputs each


def test_only_the_domains_ort_selects_form_units() -> None:
    assert _units(_conv_clip(U8, 0, 0.0, 6.0)) == [CONV_CLIP_UNIT]
    nchwc = _conv_clip(U8, 0, 0.0, 6.0)
    for n in nchwc.graph.node:
        if n.op_type == "Conv":
            n.domain = "com.microsoft.nchwc"
    nchwc.opset_import.append(onnx.helper.make_opsetid("com.microsoft.nchwc", 1))
    assert _units(nchwc) == []
    alias = _conv_clip(U8, 0, 0.0, 6.0)
    for n in alias.graph.node:
        if n.op_type == "Conv":
            n.domain = "ai.onnx"  # ORT's Node::Init reads it as ""
    assert _units(alias) == [CONV_CLIP_UNIT]
