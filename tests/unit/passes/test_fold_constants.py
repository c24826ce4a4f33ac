"""``fold-constants``: nodes computing constants become initializers, bounded so no weight is copied."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from transformer_checks import all_taken, device_ops, nnapi, ops, refused_ops, rewritten, run, unchanged_by

from mobilegen.coverage import EPTarget, analyze
from mobilegen.passes.const_view import FOLD_MAX_BYTES
from mobilegen.passes.fold_constants import PASS

RNG = np.random.default_rng(8)
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def model(nodes: list[onnx.NodeProto], inits: dict[str, np.ndarray], outputs: list[onnx.ValueInfoProto],
          x: list[object] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, x or [2, 3, 4])],
        outputs,
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def flatten_model(x: list[object] | None = None) -> onnx.ModelProto:
    """y = x.reshape(x.shape[0], -1), the way TorchScript exports it: the target computed from Shape(x)."""
    return model(
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
            helper.make_node("Unsqueeze", ["b", "axes"], ["b1"]),
            helper.make_node("Concat", ["b1", "minus_one"], ["target"], axis=0),
            helper.make_node("Reshape", ["x", "target"], ["flat"]),
            helper.make_node("Relu", ["flat"], ["y"]),  # NNAPI drops a partition of a lone Reshape
        ],
        {"zero": np.array(0, np.int64), "axes": np.array([0], np.int64), "minus_one": np.array([-1], np.int64)},
        [helper.make_tensor_value_info("y", F, [x[0] if x else 2, 12])],
        x,
    )


def raw_nnapi(m: onnx.ModelProto) -> set[str]:
    """NNAPI's refusals on the graph as written (no onnxruntime optimization first)."""
    return refused_ops(analyze(m, EPTarget("nnapi"), optimize=False))


def test_shape_arithmetic_becomes_a_constant_target() -> None:
    before = flatten_model()
    after, count = rewritten(PASS, before)
    assert count == 4
    assert ops(after) == ["Reshape", "Relu"]
    target = next(t for t in after.graph.initializer if t.name == "target")
    assert numpy_helper.to_array(target).tolist() == [2, -1]
    x = {"x": RNG.standard_normal((2, 3, 4)).astype(np.float32)}
    np.testing.assert_array_equal(run(after, x)[0], run(before, x)[0])
    assert raw_nnapi(before) >= {"Shape", "Reshape"}  # Reshape: its shape is not a constant initializer
    assert raw_nnapi(after) == set()
    # onnxruntime's own Level1 ConstantFolding does the same before partitioning: the session's view agrees
    assert all_taken(nnapi(before)) and all_taken(nnapi(after))


def test_nothing_large_is_read_or_written() -> None:
    big = RNG.standard_normal((FOLD_MAX_BYTES // 4 + 1,)).astype(np.float32)  # just over 1 MiB
    small = RNG.standard_normal((4, 8)).astype(np.float32)
    before = model(
        [
            helper.make_node("Transpose", ["small"], ["small_t"], perm=[1, 0]),
            helper.make_node("MatMul", ["x", "small_t"], ["y"]),
            helper.make_node("Neg", ["big"], ["big_neg"]),  # reads more than 1 MiB
            helper.make_node("ReduceSum", ["big_neg"], ["z"]),
            helper.make_node("ConstantOfShape", ["huge_shape"], ["huge"], value=numpy_helper.from_array(np.ones(1, np.float32))),
            helper.make_node("ReduceMax", ["huge"], ["w"]),  # its input would be 4 MiB
        ],
        {"small": small, "big": big, "huge_shape": np.array([1024, 1024], np.int64)},
        [helper.make_tensor_value_info(n, F, s) for n, s in (("y", [2, 3, 4]), ("z", [1]), ("w", [1, 1]))],
        x=[2, 3, 8],
    )
    after, count = rewritten(PASS, before)
    assert count == 1  # the small Transpose only
    assert ops(after) == ["MatMul", "Neg", "ReduceSum", "ConstantOfShape", "ReduceMax"]
    old = {t.name: t.SerializeToString() for t in before.graph.initializer}
    assert {t.name: t.SerializeToString() for t in after.graph.initializer if t.name in old} == old
    assert [t.name for t in after.graph.initializer if t.name not in old] == ["small_t"]
    x = {"x": RNG.standard_normal((2, 3, 8)).astype(np.float32)}
    for got, want in zip(run(after, x), run(before, x), strict=True):
        np.testing.assert_array_equal(got, want)


def test_the_shipped_graph_keeps_the_folded_form(tmp_path: Path) -> None:
    after, _ = rewritten(PASS, flatten_model())
    assert device_ops(after, tmp_path) == (["Reshape", "Relu"], ["Reshape", "Relu"])


def test_what_is_not_a_foldable_constant_is_left_alone() -> None:
    assert unchanged_by(PASS, flatten_model(x=["n", 3, 4]))  # a symbolic dim: the Shape is not constant
    out = model(
        [helper.make_node("Neg", ["c"], ["c_neg"]), helper.make_node("Relu", ["x"], ["y"])],
        {"c": np.ones(3, np.float32)},
        [helper.make_tensor_value_info("y", F, [2, 3, 4]), helper.make_tensor_value_info("c_neg", F, [3])],
    )
    assert unchanged_by(PASS, out)  # a graph output keeps its node
    random = model(
        [helper.make_node("RandomNormalLike", ["c"], ["r"]), helper.make_node("Add", ["x", "r"], ["y"])],
        {"c": np.ones((2, 3, 4), np.float32)},
        [helper.make_tensor_value_info("y", F, [2, 3, 4])],
    )
    assert unchanged_by(PASS, random)
    relu = model([helper.make_node("Relu", ["x"], ["y"])], {}, [helper.make_tensor_value_info("y", F, [2, 3, 4])])
    assert unchanged_by(PASS, relu)


FAST_CASES: list[tuple[str, dict[str, object], list[np.ndarray], int]] = [
    ("Unsqueeze", {"axes": [0, -1]}, [np.arange(6).reshape(2, 3)], 11),
    ("Unsqueeze", {}, [np.arange(6).reshape(2, 3), np.array([-1, 1])], 13),
    ("Squeeze", {}, [np.arange(6).reshape(1, 2, 1, 3)], 13),
    ("Squeeze", {}, [np.arange(6).reshape(1, 2, 1, 3), np.array([-2])], 13),
    ("Cast", {"to": TensorProto.INT64}, [np.array([-2.7, 2.7, 0.5], np.float32)], 17),
    ("Cast", {"to": TensorProto.BOOL}, [np.array([0, 3, -1])], 17),
    ("Reshape", {}, [np.arange(24).reshape(2, 3, 4), np.array([0, -1, 2])], 17),
    ("Reshape", {"allowzero": 1}, [np.arange(24).reshape(2, 3, 4), np.array([4, -1])], 17),
    ("Concat", {"axis": -1}, [np.arange(4).reshape(2, 2), np.arange(6).reshape(2, 3)], 17),
    ("Gather", {"axis": 1}, [np.arange(12).reshape(3, 4), np.array([[-1, 0], [2, 1]])], 17),
    ("Add", {}, [np.array([1, 2, 3]), np.array([[10], [20]])], 17),
    ("Sub", {}, [np.array([1, 2, 3]), np.array(5)], 17),
    ("Mul", {}, [np.array([1, -2, 3], np.int32), np.array([4, 5, 6], np.int32)], 17),
    ("Equal", {}, [np.array([1, 2, 3]), np.array([1, 0, 3])], 17),
]


@pytest.mark.parametrize("op, attrs, values, opset", FAST_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(FAST_CASES)])
def test_the_numpy_shortcuts_agree_with_the_reference_evaluator(op: str, attrs: dict[str, object], values: list[np.ndarray], opset: int) -> None:
    from onnx.reference import ReferenceEvaluator

    from mobilegen.passes.const_view import _FAST

    names = [f"i{k}" for k in range(len(values))]
    node = helper.make_node(op, names, ["out"], **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in names],
        [helper.make_tensor_value_info("out", TensorProto.UNDEFINED, None)],
    )
    want = ReferenceEvaluator(graph, opsets={"": opset}).run(None, dict(zip(names, values, strict=True)))[0]
    got = _FAST[op](node, list(values), opset)
    assert got is not None
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
