"""``gathernd-gather``: GatherND with constant indices -> Reshape + Gather (CoreML has no GatherND
builder before ONNX Runtime 1.28); the same elements for every depth of index and negative indices."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from transformer_checks import all_taken, coreml, ops, refused_ops, rewritten, run, unchanged_by

from mobilegen.passes.gathernd_gather import PASS

F = TensorProto.FLOAT
SHAPE = (2, 3, 4)


def model(indices: np.ndarray, *, batch_dims: int = 0, const: bool = True) -> onnx.ModelProto:
    """x[2,3,4] -> Relu -> GatherND(indices) -> Relu (CoreML takes the Relus)."""
    inputs = [helper.make_tensor_value_info("x", F, list(SHAPE))]
    inits = [numpy_helper.from_array(indices.astype(np.int64), "idx")] if const else []
    if not const:
        inputs.append(helper.make_tensor_value_info("idx", TensorProto.INT64, list(indices.shape)))
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("GatherND", ["r", "idx"], ["g"], batch_dims=batch_dims),
        helper.make_node("Relu", ["g"], ["y"]),
    ]
    out_shape = [*indices.shape[:-1], *SHAPE[batch_dims + indices.shape[-1] :]]
    graph = helper.make_graph(nodes, "gnd", inputs, [helper.make_tensor_value_info("y", F, out_shape)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


CASES = {
    "k=1": np.array([[1], [0], [-1]]),
    "k=2 with negatives": np.array([[[0, 2], [1, -1]], [[-2, 0], [1, 1]]]),
    "k=3 (elements)": np.array([[0, 0, 0], [1, 2, 3], [-1, -1, -4]]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_elements_and_coreml_takes_it(case: str) -> None:
    before = model(CASES[case])
    after, count = rewritten(PASS, before)
    assert count == 1 and "GatherND" not in ops(after) and "Gather" in ops(after)
    assert ("Reshape" in ops(after)) == (CASES[case].shape[-1] > 1)
    x = np.random.default_rng(3).standard_normal(SHAPE).astype(np.float32)
    np.testing.assert_array_equal(run(after, {"x": x})[0], run(before, {"x": x})[0])
    assert refused_ops(coreml(before)) == {"GatherND"}
    assert all_taken(coreml(after)), refused_ops(coreml(after))


def test_what_it_does_not_handle_stays() -> None:
    assert unchanged_by(PASS, model(np.array([[1], [0]]), const=False))  # indices computed at run time
    assert unchanged_by(PASS, model(np.array([[1], [0]]), batch_dims=1))
    assert unchanged_by(PASS, model(np.array([[2, 0]])))  # out of range: GatherND's own error stays
