"""``avgpool-pad``: AveragePool with count_include_pad / ceil_mode becomes forms NNAPI takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from transformer_checks import (
    all_taken,
    device_ops,
    nnapi,
    ops,
    optimized_ops,
    refused_ops,
    rewritten,
    run,
    unchanged_by,
)

from mobilegen.passes.avgpool_pad import PASS

RNG = np.random.default_rng(11)
F = TensorProto.FLOAT


def pool_model(attrs: dict[str, Any], *, shape: tuple[int, ...] = (1, 3, 9, 9), opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("AveragePool", ["x"], ["p"], name="pool", **attrs), helper.make_node("Relu", ["p"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", F, list(shape))],
        [helper.make_tensor_value_info("y", F, None)],
    )
    return onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8))


def feeds(shape: tuple[int, ...] = (1, 3, 9, 9)) -> dict[str, np.ndarray]:
    return {"x": RNG.normal(2.0, 1.0, shape).astype(np.float32)}  # off zero: a wrong divisor shows


def attr_of(model: onnx.ModelProto, op: str, name: str) -> object:
    node = next(n for n in model.graph.node if n.op_type == op)
    return next((helper.get_attribute_value(a) for a in node.attribute if a.name == name), None)


CASES: dict[str, tuple[dict[str, Any], list[str]]] = {
    "padded": ({"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}, ["Pad", "AveragePool", "Relu"]),
    "asymmetric-strided": (
        {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [0, 1, 2, 1], "count_include_pad": 1},
        ["Pad", "AveragePool", "Relu"],
    ),
    "unpadded": ({"kernel_shape": [3, 3], "strides": [2, 2], "count_include_pad": 1}, ["AveragePool", "Relu"]),
    "valid": ({"kernel_shape": [2, 2], "auto_pad": "VALID", "count_include_pad": 1}, ["AveragePool", "Relu"]),
    # transformers' EfficientNet pooler: AvgPool2d(hidden_dim, ceil_mode=True) on a smaller map
    "efficientnet-global": (
        {"kernel_shape": [320, 320], "strides": [320, 320], "pads": [0, 0, 0, 0], "ceil_mode": 1, "count_include_pad": 1},
        ["GlobalAveragePool", "Relu"],
    ),
    "exact-global-ceil": ({"kernel_shape": [9, 9], "ceil_mode": 1}, ["GlobalAveragePool", "Relu"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_averagepool_becomes_a_form_nnapi_takes(case: str) -> None:
    attrs, form = CASES[case]
    before = pool_model(attrs)
    after, count = rewritten(PASS, before)
    assert count == 1
    assert ops(after) == form
    if "AveragePool" in form:
        assert attr_of(after, "AveragePool", "auto_pad") == b"VALID"
        assert attr_of(after, "AveragePool", "count_include_pad") is None
    x = feeds()
    np.testing.assert_allclose(run(after, x)[0], run(before, x)[0], rtol=1e-6, atol=1e-6)
    assert refused_ops(nnapi(before)) == {"AveragePool"}
    assert all_taken(nnapi(after)), refused_ops(nnapi(after))


def test_pad_and_pool_reach_the_device_unfused(tmp_path: Path) -> None:
    after, _ = rewritten(PASS, pool_model(CASES["padded"][0]))
    in_ort, in_app = device_ops(after, tmp_path)
    assert in_ort == ["Pad", "AveragePool", "Relu"]
    assert in_app[:2] == ["Pad", "AveragePool"]
    assert ops(after)[:2] == optimized_ops(after, tmp_path, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)[:2]


def test_zero_pads_would_be_fused_back(tmp_path: Path) -> None:
    """Why the new pool says auto_pad=VALID: with explicit zero pads, onnxruntime's Level1 PadFusion folds
    the Pad back into the pool with count_include_pad=1, the form NNAPI refuses."""
    graph = helper.make_graph(
        [
            helper.make_node("Pad", ["x", "pads", "zero"], ["xp"], mode="constant"),
            helper.make_node("AveragePool", ["xp"], ["y"], kernel_shape=[3, 3], pads=[0, 0, 0, 0]),
        ],
        "g",
        [helper.make_tensor_value_info("x", F, [1, 3, 9, 9])],
        [helper.make_tensor_value_info("y", F, [1, 3, 9, 9])],
        [numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"), numpy_helper.from_array(np.array(0, np.float32), "zero")],
    )
    fused = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    assert device_ops(fused, tmp_path)[0] == ["AveragePool"]
    assert refused_ops(nnapi(fused)) == {"AveragePool"}


def test_other_pools_are_left_alone() -> None:
    assert unchanged_by(PASS, pool_model({"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}))  # NNAPI takes it
    assert unchanged_by(PASS, pool_model({"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1, "ceil_mode": 1}))
    assert unchanged_by(PASS, pool_model({"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "count_include_pad": 1}))
    assert unchanged_by(PASS, pool_model({"kernel_shape": [3, 3], "dilations": [2, 2], "count_include_pad": 1}, opset=19))
    assert unchanged_by(PASS, pool_model({"kernel_shape": [3], "count_include_pad": 1}, shape=(1, 3, 9)))  # 1-D
    assert unchanged_by(PASS, pool_model({"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}, opset=10))
    relu = helper.make_model(
        helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", F, [1, 3])],
            [helper.make_tensor_value_info("y", F, [1, 3])],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    assert unchanged_by(PASS, relu)
