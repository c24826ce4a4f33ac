"""``reduce``: ReduceSum / ReduceL2 / ReduceSumSquare become ReduceMean forms NNAPI and CoreML take."""

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

from mobilegen.passes.reduce import PASS

RNG = np.random.default_rng(5)
F = TensorProto.FLOAT
SHAPE = [2, 6, 8]
AXES_INPUT = {"ReduceSum": 13, "ReduceL2": 18, "ReduceSumSquare": 18}


def reduce_model(op: str, axes: list[int] | None, *, opset: int = 17, keepdims: int = 1, dtype: int = F,
                 shape: list[Any] | None = None, noop: int | None = None) -> onnx.ModelProto:
    inputs, inits, attrs = ["x"], [], {"keepdims": keepdims}
    if noop is not None:
        attrs["noop_with_empty_axes"] = noop
    if axes is not None:
        if opset >= AXES_INPUT[op]:
            inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
            inputs.append("axes")
        else:
            attrs["axes"] = axes
    node = helper.make_node(op, inputs, ["r"], name="reduce", **attrs)
    relu = helper.make_node("Relu", ["r"], ["y"])  # a reader, as in a real model
    graph = helper.make_graph(
        [node, relu],
        "g",
        [helper.make_tensor_value_info("x", dtype, shape or SHAPE)],
        [helper.make_tensor_value_info("y", dtype, None)],
        inits,
    )
    return onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8))


def feeds() -> dict[str, np.ndarray]:
    return {"x": RNG.standard_normal(SHAPE).astype(np.float32)}


FORMS = {
    "ReduceSum": ["ReduceMean", "Mul", "Relu"],
    "ReduceL2": ["Mul", "ReduceMean", "Mul", "Sqrt", "Relu"],
    "ReduceSumSquare": ["Mul", "ReduceMean", "Mul", "Relu"],
}
CASES = {
    "sum-axes-attribute": ("ReduceSum", [1], {"opset": 11}),
    "sum-axes-input": ("ReduceSum", [-1], {"opset": 13}),
    "sum-all-keepdims-0": ("ReduceSum", None, {"opset": 18, "keepdims": 0}),
    "sum-two-axes-opset-18": ("ReduceSum", [0, 2], {"opset": 18}),
    "l2-attribute": ("ReduceL2", [1], {"opset": 17}),
    "l2-input-keepdims-0": ("ReduceL2", [-1], {"opset": 18, "keepdims": 0}),
    "sumsquare": ("ReduceSumSquare", [2], {"opset": 17}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_reductions_become_reducemean_forms(case: str) -> None:
    op, axes, kw = CASES[case]
    before = reduce_model(op, axes, **kw)
    after, count = rewritten(PASS, before)
    assert count == 1
    assert ops(after) == FORMS[op]
    mean = next(n for n in after.graph.node if n.op_type == "ReduceMean")
    assert (len(mean.input) == 2) == (kw["opset"] >= 18)  # ReduceMean's axes: an input from opset 18
    x = feeds()
    np.testing.assert_allclose(run(after, x)[0], run(before, x)[0], rtol=1e-6, atol=1e-6)
    assert refused_ops(nnapi(before)) == {op}
    assert all_taken(nnapi(after)), refused_ops(nnapi(after))
    if op != "ReduceSum":
        assert refused_ops(coreml(before)) == {op}  # CoreML registers no ReduceL2 / ReduceSumSquare
    assert all_taken(coreml(after)), refused_ops(coreml(after))


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceL2"])
def test_the_forms_reach_the_device(op: str, tmp_path: Path) -> None:
    after, _ = rewritten(PASS, reduce_model(op, [1], opset=18))
    in_ort, in_app = device_ops(after, tmp_path)
    assert in_ort == FORMS[op]
    assert op not in in_app
    assert op not in optimized_ops(after, tmp_path, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)


def test_graphs_without_a_float_static_reduction_are_left_alone() -> None:
    relu = helper.make_model(
        helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", F, SHAPE)],
            [helper.make_tensor_value_info("y", F, SHAPE)],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    assert unchanged_by(PASS, relu)
    assert unchanged_by(PASS, reduce_model("ReduceSum", [1], dtype=TensorProto.INT64))  # NNAPI: float32 only
    assert unchanged_by(PASS, reduce_model("ReduceSum", [1], shape=[2, "n", 8]))  # N unknown
    assert unchanged_by(PASS, reduce_model("ReduceSum", None, opset=18, noop=1))  # an identity
    assert unchanged_by(PASS, reduce_model("ReduceSum", [1], shape=[2, 2, 2, 2, 2]))  # NNAPI: rank <= 4
