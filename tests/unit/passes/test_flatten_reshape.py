"""``flatten-reshape``: a Flatten becomes a Reshape to the same shape (CoreML has no Flatten builder;
NNAPI takes no quantized Flatten unit)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from transformer_checks import coreml, ops, refused_ops, rewritten, run, unchanged_by

from mobilegen.passes.flatten_reshape import PASS

F = TensorProto.FLOAT


def flatten_model(axis: int, shape: list[int | str]) -> onnx.ModelProto:
    rank = len(shape)
    a = axis + rank if axis < 0 else axis
    out_shape: list[int | str] = ["m", "n"] if any(isinstance(d, str) for d in shape) else [int(np.prod(shape[:a])), int(np.prod(shape[a:]))]  # type: ignore[arg-type]
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Flatten", ["r"], ["f"], axis=axis, name="flat"), helper.make_node("Relu", ["f"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, shape)], [helper.make_tensor_value_info("y", F, out_shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize(("axis", "shape"), [(1, [2, 3, 4, 5]), (0, [2, 3, 4]), (2, [2, 3, 4, 5]), (-1, [2, 3, 4]), (1, ["batch", 3, 4])])
def test_same_numbers_and_coreml_takes_it(axis: int, shape: list[int | str]) -> None:
    model = flatten_model(axis, shape)
    assert "Flatten" in refused_ops(coreml(model))
    out, changed = rewritten(PASS, model)
    assert changed == 1 and "Flatten" not in ops(out) and "Reshape" in ops(out)
    concrete = [2 if isinstance(d, str) else d for d in shape]
    x = np.random.default_rng(3).standard_normal(concrete).astype(np.float32)
    np.testing.assert_array_equal(run(out, {"x": x})[0], run(model, {"x": x})[0])
    if all(isinstance(d, int) for d in shape):  # CoreML's Reshape needs a static input (a dynamic batch stays dynamic)
        assert not refused_ops(coreml(out))


def test_unknown_leading_dims_are_left_alone() -> None:
    assert unchanged_by(PASS, flatten_model(2, ["batch", "seq", 4, 5]))
