"""Graph passes inside If/Loop/Scan bodies (``mobilegen.passes.bodies``): a pass written against
``model.graph`` rewrites a Loop body and the branches of an If inside it, reads the enclosing graph's
constants as constants, never shadows an outer name, and the fix stage runs passes there."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from transformer_checks import run

from mobilegen.coverage import EPTarget
from mobilegen.passes.bodies import apply_everywhere
from mobilegen.passes.fold_if import PASS as FOLD_IF
from mobilegen.passes.stage import improve
from mobilegen.passes.sum_add import PASS as SUM_ADD

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
K = np.array([0.5, -1.0, 2.0], np.float32)


def loop_model(*, inner_if: bool = False) -> onnx.ModelProto:
    """A Loop whose body sums its carried value, the input ``x`` and the outer constant ``k`` (three
    inputs: sum-add makes a partial sum with a fresh name). ``inner_if``: the body's result goes through
    an If on input ``c`` whose then-branch sums again. The main graph has a tensor named like that
    fresh name would be, so a body that took it would shadow it."""
    body_nodes = [helper.make_node("Sum", ["acc_in", "x", "k"], ["s"], name="sum")]
    if inner_if:
        then_b = helper.make_graph(
            [helper.make_node("Sum", ["s", "x", "k"], ["t"], name="sum2")], "then", [], [helper.make_tensor_value_info("t", F, [3])]
        )
        else_b = helper.make_graph(
            [helper.make_node("Neg", ["s"], ["e"], name="neg")], "else", [], [helper.make_tensor_value_info("e", F, [3])]
        )
        body_nodes.append(helper.make_node("If", ["c"], ["acc_out"], name="pick", then_branch=then_b, else_branch=else_b))
    else:
        body_nodes.append(helper.make_node("Identity", ["s"], ["acc_out"], name="out"))
    body_nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"))
    body = helper.make_graph(
        body_nodes,
        "body",
        [
            helper.make_tensor_value_info("i", I64, []),
            helper.make_tensor_value_info("cond_in", B, []),
            helper.make_tensor_value_info("acc_in", F, [3]),
        ],
        [helper.make_tensor_value_info("cond_out", B, []), helper.make_tensor_value_info("acc_out", F, [3])],
    )
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["s/sum_add/partial"], name="clash"),
            helper.make_node("Loop", ["trips", "", "s/sum_add/partial"], ["y"], name="loop", body=body),
        ],
        "g",
        [helper.make_tensor_value_info("x", F, [3]), helper.make_tensor_value_info("c", B, [])],
        [helper.make_tensor_value_info("y", F, [3])],
        [numpy_helper.from_array(np.array(3, np.int64), "trips"), numpy_helper.from_array(K, "k")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def feeds(c: bool) -> dict[str, np.ndarray]:
    return {"x": np.array([1.0, -2.0, 3.0], np.float32), "c": np.array(c)}


def _body(model: onnx.ModelProto) -> onnx.GraphProto:
    body: onnx.GraphProto = next(n for n in model.graph.node if n.op_type == "Loop").attribute[0].g
    return body


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    return onnx.ModelProto.FromString(model.SerializeToString())


def test_a_pass_rewrites_a_loop_body_and_keeps_outer_names_outside() -> None:
    before = loop_model()
    after = _copy(before)
    assert SUM_ADD.apply(after) == 0  # the pass alone sees no Sum in the main graph
    assert apply_everywhere(SUM_ADD, after) == 1
    onnx.checker.check_model(after, full_check=True)
    body = _body(after)
    assert [n.op_type for n in body.node] == ["Add", "Add", "Identity", "Identity"]
    assert body.node[0].output[0] == "s/sum_add/partial_1"  # not the main graph's tensor of that name
    assert not body.initializer and "k" in body.node[1].input  # the outer constant is read, not copied
    assert [i.name for i in body.input] == ["i", "cond_in", "acc_in"]  # the body's inputs as they were
    np.testing.assert_array_equal(run(after, feeds(True))[0], run(before, feeds(True))[0])


def test_an_if_inside_a_loop_body_is_rewritten_too() -> None:
    before = loop_model(inner_if=True)
    after = _copy(before)
    assert apply_everywhere(SUM_ADD, after) == 2
    onnx.checker.check_model(after, full_check=True)
    pick = next(n for n in _body(after).node if n.op_type == "If")
    then_ops = [n.op_type for a in pick.attribute if a.name == "then_branch" for n in a.g.node]
    assert then_ops == ["Add", "Add"]
    for c in (True, False):
        np.testing.assert_allclose(run(after, feeds(c))[0], run(before, feeds(c))[0], rtol=1e-6)


def test_fold_if_walks_the_bodies_itself() -> None:
    assert not FOLD_IF.in_bodies and SUM_ADD.in_bodies


def test_the_fix_stage_runs_passes_in_bodies_judges_them_and_undoes_them_there() -> None:
    """conv1d-2d rewrites the Conv1d of a Loop body (XNNPACK judges body nodes: it takes the Conv1d as it
    is, so the rewrite gains nothing): tried with its count, not kept, and the body restored exactly."""
    from mobilegen.passes.conv1d_2d import PASS as CONV1D

    w = np.random.default_rng(3).standard_normal((4, 4, 3)).astype(np.float32)
    body = helper.make_graph(
        [
            helper.make_node("Conv", ["acc_in", "w"], ["conv"], name="conv", pads=[1, 1]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", I64, []),
            helper.make_tensor_value_info("cond_in", B, []),
            helper.make_tensor_value_info("acc_in", F, [1, 4, 16]),
        ],
        [helper.make_tensor_value_info("cond_out", B, []), helper.make_tensor_value_info("conv", F, [1, 4, 16])],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "", "x"], ["y"], name="loop", body=body)],
        "g",
        [helper.make_tensor_value_info("x", F, [1, 4, 16])],
        [helper.make_tensor_value_info("y", F, [1, 4, 16])],
        [numpy_helper.from_array(np.array(2, np.int64), "trips"), numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    original = model.SerializeToString(deterministic=True)
    rewritten = _copy(model)
    assert apply_everywhere(CONV1D, rewritten) == 1
    assert [n.op_type for n in _body(rewritten).node].count("Conv") == 1 and "Squeeze" in [n.op_type for n in _body(rewritten).node]
    x = {"x": np.random.default_rng(4).standard_normal((1, 4, 16)).astype(np.float32)}
    np.testing.assert_allclose(run(rewritten, x)[0], run(model, x)[0], rtol=1e-5, atol=1e-5)

    outcome = improve(model, [EPTarget("xnnpack")], [CONV1D])
    assert [(t.name, t.nodes, t.kept, t.why) for t in outcome.tried] == [("conv1d-2d", 1, False, "no provider gained")]
    assert outcome.before is not None and outcome.before[0].partitions == (("loop/body/conv",),)
    assert model.SerializeToString(deterministic=True) == original
