"""``softmax-mask``: the -inf mask and IsNaN guard the TorchScript exporter writes for attention with a
boolean mask become a finite mask and a row factor; the numbers stay, fully masked rows included."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from transformer_checks import coreml, nnapi, ops, refused_ops, rewritten, run, unchanged_by

from mobilegen.passes.softmax_mask import FINFO_MIN, PASS

F = TensorProto.FLOAT
S, D = 8, 16
RNG = np.random.default_rng(7)


def _init(name: str, value: np.ndarray | float) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, np.float32), name)


def attention(*, neg: float = -np.inf, score_log: bool = False, mask_also_output: bool = False, opset: int = 17) -> onnx.ModelProto:
    """x[1,S,D] -> q, k, v -> Softmax(q k^T / 4 + Where(mask, 0, neg)) -> Where(IsNaN(p), 0, p) -> @ v, with a
    boolean ``mask`` [1,S,S] input (the TorchScript exporter's SDPA with a bool attn_mask)."""
    inits = [_init(f"w{c}", RNG.standard_normal((1, D, D)) / 4) for c in "qkv"]
    inits += [_init("scale", 0.25), _init("zero", np.zeros(1)), _init("neg", np.full(1, neg)), _init("guard", 0.0)]
    nodes = [helper.make_node("MatMul", ["x", f"w{c}"], [c]) for c in "qkv"]
    nodes += [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["s0"]),
        helper.make_node("Mul", ["s0", "scale"], ["s1"]),
        helper.make_node("Log" if score_log else "Identity", ["s1"], ["s"]),
        helper.make_node("Where", ["mask", "zero", "neg"], ["m"]),
        helper.make_node("Add", ["s", "m"], ["a"]),
        helper.make_node("Softmax", ["a"], ["p"], axis=-1),
        helper.make_node("IsNaN", ["p"], ["nan"]),
        helper.make_node("Where", ["nan", "guard", "p"], ["g"]),
        helper.make_node("MatMul", ["g", "v"], ["y"]),
    ]
    outputs = [helper.make_tensor_value_info("y", F, [1, S, D])]
    if mask_also_output:
        outputs.append(helper.make_tensor_value_info("m", F, [1, S, S]))
    inputs = [helper.make_tensor_value_info("x", F, [1, S, D]), helper.make_tensor_value_info("mask", TensorProto.BOOL, [1, S, S])]
    graph = helper.make_graph(nodes, "attention", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def masks() -> dict[str, np.ndarray]:
    keep = RNG.random((1, S, S)) > 0.4
    some_rows_empty = keep.copy()
    some_rows_empty[0, [1, 5]] = False  # rows that attend to nothing: the guard's case
    return {
        "all": np.ones((1, S, S), bool),
        "random": keep,
        "empty rows": some_rows_empty,
        "none": np.zeros((1, S, S), bool),
    }


def test_the_guard_becomes_a_row_factor_with_the_same_numbers() -> None:
    before = attention()
    after, count = rewritten(PASS, before)
    assert count == 3  # the mask's Where, the IsNaN and the guard's Where
    assert "IsNaN" not in ops(after) and ops(after).count("Where") == 1
    assert {"ReduceMax", "Exp"} <= set(ops(after))
    (mask_where,) = [n for n in after.graph.node if n.op_type == "Where"]
    lowest = {i.name: numpy_helper.to_array(i) for i in after.graph.initializer}[mask_where.input[2]]
    assert lowest.reshape(-1).tolist() == [FINFO_MIN]
    x = (RNG.standard_normal((1, S, D)) * 3).astype(np.float32)
    for name, mask in masks().items():
        feeds = {"x": x, "mask": mask}
        expected, got = run(before, feeds)[0], run(after, feeds)[0]
        assert np.isfinite(expected).all(), name
        np.testing.assert_array_equal(got, expected, err_msg=name)
    assert not run(after, {"x": x, "mask": masks()["empty rows"]})[0][0, [1, 5]].any()


def test_coreml_keeps_only_the_boolean_mask_on_the_cpu() -> None:
    before, (after, _) = attention(), rewritten(PASS, attention())
    assert refused_ops(coreml(before)) == {"IsNaN", "Where"}
    assert len(coreml(before).partitions) == 2
    # the Where on the bool mask input is left for bool-mask (here a graph input: nothing to rewrite)
    assert refused_ops(coreml(after)) == {"Where"} and len(coreml(after).partitions) == 1
    assert coreml(after).total_nodes - coreml(after).supported_nodes == 1


def test_what_it_cannot_prove_stays() -> None:
    assert unchanged_by(PASS, attention(neg=FINFO_MIN))  # a finite mask: nan-guard's case
    assert unchanged_by(PASS, attention(score_log=True))  # Log may make -inf scores: not finite
    assert unchanged_by(PASS, attention(opset=12))  # Softmax over coerced 2-D before opset 13


def test_a_mask_read_elsewhere_is_kept_beside_the_finite_one() -> None:
    before = attention(mask_also_output=True)
    after, count = rewritten(PASS, before)
    assert count == 4 and ops(after).count("Where") == 2  # the Add reads the finite one
    x = (RNG.standard_normal((1, S, D)) * 3).astype(np.float32)
    for mask in masks().values():
        for got, expected in zip(run(after, {"x": x, "mask": mask}), run(before, {"x": x, "mask": mask}), strict=True):
            np.testing.assert_array_equal(got, expected)


def test_nnapi_gets_one_partition_too() -> None:
    """NNAPI has no IsNaN, Where or ReduceMax builder: the mask and its row maximum stay on the CPU, ahead
    of the attention block, instead of splitting it."""
    before, (after, _) = attention(), rewritten(PASS, attention())
    assert {"IsNaN", "Where"} <= refused_ops(nnapi(before)) and len(nnapi(before).partitions) == 2
    assert refused_ops(nnapi(after)) == {"Where", "ReduceMax"} and len(nnapi(after).partitions) == 1
