"""``sum-add``: a Sum becomes a chain of Adds (neither NNAPI nor CoreML registers Sum)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from transformer_checks import (
    all_taken,
    coreml,
    device_ops,
    nnapi,
    ops,
    optimized_ops,
    refused_ops,
    rewritten,
    run,
    unchanged_by,
)

from mobilegen.passes.sum_add import PASS

RNG = np.random.default_rng(21)
F = TensorProto.FLOAT
SHAPES = {"a": [2, 3, 4], "b": [2, 3, 4], "c": [1, 3, 1], "d": [4]}  # Sum broadcasts like Add


def sum_model(n: int, *, opset: int = 17, relu: bool = True) -> onnx.ModelProto:
    names = list(SHAPES)[:n]
    nodes = [helper.make_node("Sum", names, ["s" if relu else "y"], name="sum")]
    if relu:  # something after the Sum, so an Identity has a node to hand over to
        nodes.append(helper.make_node("Relu", ["s"], ["y"]))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(k, F, SHAPES[k]) for k in names],
        [helper.make_tensor_value_info("y", F, [2, 3, 4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def feeds(n: int) -> dict[str, np.ndarray]:
    return {k: RNG.standard_normal(SHAPES[k]).astype(np.float32) for k in list(SHAPES)[:n]}


@pytest.mark.parametrize("n", [2, 3, 4])
def test_sum_becomes_an_add_chain(n: int) -> None:
    before = sum_model(n)
    after, count = rewritten(PASS, before)
    assert count == 1
    assert ops(after) == ["Add"] * (n - 1) + ["Relu"]
    adds = [node for node in after.graph.node if node.op_type == "Add"]
    assert [list(a.input) for a in adds][0] == ["a", "b"]  # Sum's order: ((a + b) + c) + d
    x = feeds(n)
    np.testing.assert_array_equal(run(after, x)[0], run(before, x)[0])
    assert refused_ops(nnapi(before)) == {"Sum"} and refused_ops(coreml(before)) == {"Sum"}
    assert all_taken(nnapi(after)), refused_ops(nnapi(after))
    assert all_taken(coreml(after)), refused_ops(coreml(after))


def test_a_one_input_sum_is_an_identity_onnxruntime_removes(tmp_path: Path) -> None:
    before = sum_model(1)
    after, count = rewritten(PASS, before)
    assert count == 1 and ops(after) == ["Identity", "Relu"]
    x = feeds(1)
    np.testing.assert_array_equal(run(after, x)[0], run(before, x)[0])
    assert device_ops(after, tmp_path)[0] == ["Relu"]
    assert all_taken(nnapi(after))


def test_the_add_chain_reaches_the_device(tmp_path: Path) -> None:
    after, _ = rewritten(PASS, sum_model(3))
    in_ort, in_app = device_ops(after, tmp_path)
    assert in_ort == ["Add", "Add", "Relu"]
    assert "Sum" not in in_app
    assert "Sum" not in optimized_ops(after, tmp_path, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)


def test_graphs_without_a_sum_are_left_alone() -> None:
    relu = helper.make_model(
        helper.make_graph(
            [helper.make_node("Relu", ["a"], ["y"])],
            "g",
            [helper.make_tensor_value_info("a", F, [2])],
            [helper.make_tensor_value_info("y", F, [2])],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    assert unchanged_by(PASS, relu)
    assert unchanged_by(PASS, sum_model(3, opset=6))  # Add-6 broadcasts only with its own attribute
