"""``matmul-2d``: a 3-D activation times a constant 2-D weight becomes a 2-D MatMul (Gemm with its bias)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from transformer_checks import all_taken, device_ops, nnapi, ops, refused_ops, rewritten, run, unchanged_by

from mobilegen.passes.matmul_2d import PASS

RNG = np.random.default_rng(7)
F = TensorProto.FLOAT


def model(
    nodes: list[onnx.NodeProto],
    inits: dict[str, np.ndarray],
    *,
    x: list[object] | None = None,
    y: list[object] | None = None,
    extra_inputs: list[onnx.ValueInfoProto] | None = None,
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, x or [2, 5, 16]), *(extra_inputs or [])],
        [helper.make_tensor_value_info("y", F, y or [2, 5, 24])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def weight(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def no_bias() -> onnx.ModelProto:
    return model([helper.make_node("MatMul", ["x", "w"], ["y"])], {"w": weight(16, 24)})


def with_bias() -> onnx.ModelProto:
    return model(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["b", "xw"], ["y"])],
        {"w": weight(16, 24), "b": weight(24)},
    )


def heads_split() -> onnx.ModelProto:
    """MatMul, then the attention head split: ORT's ReshapeFusion merges the two Reshapes after it."""
    return model(
        [helper.make_node("MatMul", ["x", "w"], ["q"]), helper.make_node("Reshape", ["q", "heads"], ["y"])],
        {"w": weight(16, 24), "heads": np.array([2, 5, 4, 6], np.int64)},
        y=[2, 5, 4, 6],
    )


def feeds() -> dict[str, np.ndarray]:
    return {"x": RNG.standard_normal((2, 5, 16)).astype(np.float32)}


def test_matmul_without_bias_becomes_2d() -> None:
    before = no_bias()
    after, count = rewritten(PASS, before)
    assert count == 1
    assert ops(after) == ["Reshape", "MatMul", "Reshape"]
    x = feeds()
    np.testing.assert_allclose(run(after, x)[0], run(before, x)[0], rtol=1e-5, atol=1e-5)
    assert refused_ops(nnapi(before)) == {"MatMul"}  # 3-D A, 2-D B: "A and B must be 2D"
    assert all_taken(nnapi(after))


def test_matmul_with_its_bias_add_becomes_one_gemm() -> None:
    before = with_bias()
    after, count = rewritten(PASS, before)
    assert count == 2
    assert ops(after) == ["Reshape", "Gemm", "Reshape"]
    gemm = after.graph.node[1]
    assert list(gemm.input[1:]) == ["w", "b"] and not gemm.attribute  # transA=0, alpha=beta=1: what NNAPI takes
    x = feeds()
    np.testing.assert_allclose(run(after, x)[0], run(before, x)[0], rtol=1e-5, atol=1e-5)
    assert all_taken(nnapi(after))


def test_two_d_matmul_reaches_the_device(tmp_path: Path) -> None:
    after, count = rewritten(PASS, heads_split())
    assert count == 1
    in_ort, in_app = device_ops(after, tmp_path)
    assert in_ort == in_app == ["Reshape", "MatMul", "Reshape"]  # the two trailing Reshapes merged
    app = onnx.shape_inference.infer_shapes(onnx.load(tmp_path / "app.onnx"))
    shapes = {v.name: len(v.type.tensor_type.shape.dim) for v in (*app.graph.value_info, *app.graph.input)}
    matmul = next(n for n in app.graph.node if n.op_type == "MatMul")
    assert shapes[matmul.input[0]] == 2
    assert "MatMul" in refused_ops(nnapi(heads_split()))  # (and the Reshape alone: NNAPI drops such a partition)
    assert all_taken(nnapi(after))


def test_rank_4_activations_flatten_every_leading_dim() -> None:
    before = model([helper.make_node("MatMul", ["x", "w"], ["y"])], {"w": weight(16, 24)}, x=[2, 3, 5, 16], y=[2, 3, 5, 24])
    after, count = rewritten(PASS, before)
    assert count == 1
    shapes = {t.name: numpy_helper.to_array(t).tolist() for t in after.graph.initializer if t.name != "w"}
    assert sorted(shapes.values()) == [[2, 3, 5, 24], [30, 16]]
    x = {"x": RNG.standard_normal((2, 3, 5, 16)).astype(np.float32)}
    np.testing.assert_allclose(run(after, x)[0], run(before, x)[0], rtol=1e-5, atol=1e-5)


def test_matmuls_it_cannot_flatten_are_left_alone() -> None:
    dynamic = model([helper.make_node("MatMul", ["x", "w"], ["y"])], {"w": weight(16, 24)}, x=["batch", 5, 16], y=["batch", 5, 24])
    assert unchanged_by(PASS, dynamic)  # static shapes only
    variable_b = model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], {}, extra_inputs=[helper.make_tensor_value_info("w", F, [16, 24])]
    )
    assert unchanged_by(PASS, variable_b)  # NNAPI needs a constant B
    flat = model([helper.make_node("MatMul", ["x", "w"], ["y"])], {"w": weight(16, 24)}, x=[10, 16], y=[10, 24])
    assert unchanged_by(PASS, flat)  # already 2-D
    relu = model([helper.make_node("Relu", ["x"], ["y"])], {}, y=[2, 5, 16])
    assert unchanged_by(PASS, relu)


def test_large_weights_are_read_but_not_copied_for_shape_inference() -> None:
    big = model([helper.make_node("MatMul", ["x", "w"], ["y"])], {"w": weight(16, 2048)}, y=[2, 5, 2048])  # 128 KiB
    after, count = rewritten(PASS, big)
    assert count == 1
    x = feeds()
    np.testing.assert_allclose(run(after, x)[0], run(big, x)[0], rtol=1e-5, atol=1e-4)
