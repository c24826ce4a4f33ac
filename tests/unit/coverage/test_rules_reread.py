"""Issue 18's second group: older builder limits mobilegen missed, re-read from ORT's sources at the 1.24
branch point (46e8d454a; unchanged to 2026-03-07). One accepted and one refused case each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import pytest
from cov_helpers import I64, K, T, node_model
from onnx import helper

from mobilegen.coverage import EPTarget
from mobilegen.coverage.analyze import analyze

X4 = T((1, 3, 8, 8))
ML: dict[str, Any] = {"ep": "coreml", "coreml_format": "mlprogram"}
NW: dict[str, Any] = {"ep": "coreml", "coreml_format": "neuralnetwork"}
NN: dict[str, Any] = {"ep": "nnapi"}
NN28: dict[str, Any] = {"ep": "nnapi", "android_api": 28}
XP: dict[str, Any] = {"ep": "xnnpack"}
CT_W = K(np.ones((3, 4, 3, 3)))


def m(*args: Any, **kw: Any) -> Callable[[], onnx.ModelProto]:
    return lambda: node_model(*args, **kw)


def conv_relu(fanout: bool) -> Callable[[], onnx.ModelProto]:
    """Conv -> Relu (the node tested); with ``fanout`` the Conv output is also a graph output."""

    def build() -> onnx.ModelProto:
        conv = helper.make_node("Conv", ["x", "w"], ["c"], name="conv")
        x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, (1, 3, 8, 8))
        model = node_model("Relu", ["c"], pre=[conv], pre_inputs=[x])
        model.graph.initializer.append(helper.make_tensor("w", onnx.TensorProto.FLOAT, (4, 3, 3, 3), np.ones(108).tolist()))
        if fanout:
            model.graph.output.append(helper.make_tensor_value_info("c", onnx.TensorProto.FLOAT, None))
        return model

    return build


Model = Callable[[], onnx.ModelProto]
# name -> (accepting target, model, refusing target, model, a word of the refusal)
CASES: dict[str, tuple[dict[str, Any], Model, dict[str, Any], Model, str]] = {
    # ---- CoreML
    "coreml prelu channel dim": (
        NW, m("PRelu", [X4, K(np.ones((3, 1, 1)))]), NW, m("PRelu", [T((1, "c", 8, 8)), K(np.ones((1, 1, 1)))]), "channel",
    ),
    "coreml convtranspose pads": (
        ML, m("ConvTranspose", [X4, CT_W], {"pads": [1, 1, 1, 1]}), ML, m("ConvTranspose", [X4, CT_W], {"pads": [0, 1, 0, 1]}), "pads",
    ),
    "coreml matmul N-D x 1-D": (ML, m("MatMul", [T((2, 4)), T((4, 5))]), ML, m("MatMul", [T((2, 4)), T((4,))]), "1-D"),
    "coreml resize downscale": (
        ML, m("Resize", [X4, None, K([1, 1, 0.5, 0.5])], {"mode": "linear"}),
        ML, m("Resize", [X4, None, K([1, 1, 0.75, 0.75])], {"mode": "linear"}), "divide",
    ),
    "coreml resize NN upscale": (
        NW, m("Resize", [X4, None, K([1, 1, 2, 2])], {"mode": "linear", "coordinate_transformation_mode": "asymmetric"}),
        NW, m("Resize", [X4, None, K([1, 1, 1.5, 1.5])], {"mode": "linear", "coordinate_transformation_mode": "asymmetric"}),
        "whole-number",
    ),
    "coreml resize linear coords": (
        ML, m("Resize", [X4, None, None, K([1, 3, 16, 16], np.int64)], {"mode": "linear", "coordinate_transformation_mode": "asymmetric"}),
        ML, m("Resize", [X4, None, K([1, 1, 2, 2])], {"mode": "linear", "coordinate_transformation_mode": "asymmetric"}),
        "asymmetric",
    ),
    "coreml split dynamic axis dim": (
        ML, m("Split", [T(("b", 6)), K([3, 3], np.int64)], {"axis": 1}, n_out=2),
        ML, m("Split", [T((4, "n")), K([3, 3], np.int64)], {"axis": 1}, n_out=2), "static",
    ),
    "coreml split-18 num_outputs": (
        ML, m("Split", [T((4, 6))], {"axis": 1, "num_outputs": 2}, n_out=2, opset=18),
        ML, m("Split", [T((4, "n"))], {"axis": 1, "num_outputs": 2}, n_out=2, opset=18), "num_outputs",
    ),
    "coreml slice empty range": (
        ML, m("Slice", [X4, K([0], np.int64), K([2], np.int64), K([2], np.int64)]),
        ML, m("Slice", [X4, K([5], np.int64), K([2], np.int64), K([2], np.int64)]), "empty",
    ),
    "coreml clip min == max": (ML, m("Clip", [X4, K(0.0), K(6.0)]), ML, m("Clip", [X4, K(1.0), K(1.0)]), "min == max"),
    "coreml int64 concat": (
        ML, m("Concat", [T((2, 3), I64), T((2, 3), I64)], {"axis": 0}),
        NW, m("Concat", [T((1, 2, 3, 3), I64), T((1, 2, 3, 3), I64)], {"axis": 1}), "int64",
    ),
    # ---- NNAPI
    "nnapi softmax below opset 13": (
        NN28, m("Softmax", [T((1, 2, 3))], {"axis": 1}, opset=11), NN28, m("Softmax", [T((1, 2, 3))], {"axis": 2}, opset=13), "API 29",
    ),
    "nnapi slice steps without axes": (
        NN, m("Slice", [X4, K([0], np.int64), K([2], np.int64), K([0], np.int64), K([1], np.int64)]),
        NN, m("Slice", [X4, K([0], np.int64), K([2], np.int64), None, K([1], np.int64)]), "axes",
    ),
    "nnapi resize downscale": (
        NN, m("Resize", [X4, None, K([1, 1, 0.5, 0.5])], {"mode": "linear", "coordinate_transformation_mode": "asymmetric"}),
        NN, m("Resize", [X4, None, K([1, 1, 0.75, 0.75])], {"mode": "linear", "coordinate_transformation_mode": "asymmetric"}),
        "divisible",
    ),
    # ---- XNNPACK
    "xnnpack 1-D conv": (
        XP, m("Conv", [T((1, 3, 8)), K(np.ones((4, 3, 3)))]), XP, m("Conv", [T((1, 3, 8, 8, 8)), K(np.ones((4, 3, 3, 3, 3)))]), "1-D or 2-D",
    ),
    "xnnpack opset-10 conv": (
        XP, m("Conv", [X4, K(np.ones((4, 3, 3, 3)))], opset=11), XP, m("Conv", [X4, K(np.ones((4, 3, 3, 3)))], opset=10), "opset 11",
    ),
    "xnnpack 3-D x 2-D matmul": (XP, m("MatMul", [T((2, 3, 4)), K(np.ones((4, 5)))]), XP, m("MatMul", [T((2, 3, 4)), T((4, 5))]), "constant"),
    "xnnpack gemm C shape": (
        XP, m("Gemm", [T((2, 4)), K(np.ones((4, 5))), K(np.ones((5, 5)))]),
        XP, m("Gemm", [T((2, 4)), K(np.ones((4, 5))), K(np.ones((1, 5)))]), "first dim",
    ),
    "xnnpack convtranspose": (XP, m("ConvTranspose", [X4, CT_W]), XP, m("ConvTranspose", [X4, T((3, 4, 3, 3))]), "constant"),
    "xnnpack averagepool": (
        XP, m("AveragePool", [X4], {"kernel_shape": [2, 2]}), XP, m("AveragePool", [X4], {"kernel_shape": [2, 2], "ceil_mode": 1}), "ceil_mode",
    ),
    "xnnpack resize linear": (
        XP, m("Resize", [X4, None, K([1, 1, 2, 2])], {"mode": "linear"}), XP, m("Resize", [X4, None, K([1, 1, 2, 2])], {"mode": "nearest"}), "linear",
    ),
    "xnnpack fusion fan-out": (XP, conv_relu(False), XP, conv_relu(True), "used elsewhere"),
}


def _run(target: dict[str, Any], factory: Model) -> tuple[bool, tuple[str, ...]]:
    report = analyze(factory(), EPTarget(**target), optimize=False)
    node = next(n for n in report.nodes if n.name == "target")
    return node.supported, node.reasons


@pytest.mark.parametrize("case", sorted(CASES))
def test_accepted(case: str) -> None:
    target, factory = CASES[case][0], CASES[case][1]
    ok, reasons = _run(target, factory)
    assert ok, reasons


@pytest.mark.parametrize("case", sorted(CASES))
def test_refused(case: str) -> None:
    target, factory, word = CASES[case][2], CASES[case][3], CASES[case][4]
    ok, reasons = _run(target, factory)
    assert not ok
    assert any(word in r for r in reasons), reasons


@pytest.mark.parametrize(("version", "word"), [("1.27.0", "session creation fails"), ("1.29.0", "does not fuse")])
def test_xnnpack_fan_out_fusion_by_release(version: str, word: str) -> None:
    """PR #28814: before it the fusion dropped the shared Conv output (a failed session); after it the Relu
    is not fused and stays on the CPU."""
    ok, reasons = _run({**XP, "ort_version": version}, conv_relu(True))
    assert not ok and any(word in r for r in reasons), reasons
