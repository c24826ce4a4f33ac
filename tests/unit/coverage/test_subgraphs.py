"""Nodes inside If/Loop/Scan bodies: counted, reported with the body they are in, and judged by each
provider's own rule for subgraphs (ONNX Runtime calls GetCapability on every subgraph: NNAPI, CoreML and
QNN return nothing for one, XNNPACK checks a body's nodes like the main graph's)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mobilegen.coverage import EPTarget, analyze
from mobilegen.passes.fold_if import PASS as FOLD_IF

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
RNG = np.random.default_rng(5)
W = RNG.standard_normal((8, 4, 3, 3)).astype(np.float32)


def _body(nodes: list[onnx.NodeProto], out: str, shape: list[int] | None = None) -> onnx.GraphProto:
    return helper.make_graph(nodes, "body", [], [helper.make_tensor_value_info(out, F, shape)])


def vad_like(*, sr_bound: bool) -> onnx.ModelProto:
    """``If(sr == 16000)`` around a Conv + Relu (else a Conv): silero-vad's shape, small."""
    then_b = _body(
        [
            helper.make_node("Conv", ["x", "w"], ["c16"], name="conv16", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c16"], ["r16"], name="relu16"),
        ],
        "r16",
        [1, 8, 8, 8],
    )
    else_b = _body([helper.make_node("Conv", ["x", "w"], ["c8"], name="conv8", pads=[1, 1, 1, 1])], "c8", [1, 8, 8, 8])
    nodes = [
        helper.make_node("Equal", ["sr", "k"], ["is16k"], name="eq"),
        helper.make_node("If", ["is16k"], ["y"], name="If_0", then_branch=then_b, else_branch=else_b),
    ]
    inits = [numpy_helper.from_array(W, "w"), numpy_helper.from_array(np.array(16000, np.int64), "k")]
    inputs = [helper.make_tensor_value_info("x", F, [1, 4, 8, 8])]
    if sr_bound:
        inits.append(numpy_helper.from_array(np.array(16000, np.int64), "sr"))
    else:
        inputs.append(helper.make_tensor_value_info("sr", I64, []))
    graph = helper.make_graph(nodes, "vad", inputs, [helper.make_tensor_value_info("y", F, [1, 8, 8, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize(("ep", "rule"), [("nnapi", "nnapi.subgraph"), ("coreml", "coreml.subgraph")])
def test_body_nodes_are_counted_and_refused_by_providers_that_take_no_subgraph(ep: str, rule: str) -> None:
    report = analyze(vad_like(sr_bound=False), EPTarget(ep))
    assert report.total_nodes == 5  # Equal, If, and the bodies' Conv, Relu and Conv
    assert report.supported_nodes == 0 and not report.partitions
    body = [n for n in report.nodes if n.to_dict().get("graph")]
    assert [n.name for n in body] == ["If_0/then_branch/conv16", "If_0/then_branch/relu16", "If_0/else_branch/conv8"]
    for n in body:
        assert [r.rule for r in n.refusals] == [rule]
        assert "takes no node of a subgraph" in n.reasons[0] and "execution_provider.cc" in n.reasons[0]
    assert "graph" not in report.nodes[0].to_dict()  # main-graph nodes as before
    notes = " ".join(str(x) for x in report.settings["notes"])  # type: ignore[attr-defined]
    assert "3 node(s) are inside If/Loop/Scan bodies (If_0/then_branch, If_0/else_branch)" in notes


def test_xnnpack_takes_body_nodes_each_body_partitioned_on_its_own() -> None:
    report = analyze(vad_like(sr_bound=False), EPTarget("xnnpack"))
    by = {n.name: n for n in report.nodes}
    assert not by["If_0"].supported
    assert by["If_0/then_branch/conv16"].supported and by["If_0/then_branch/relu16"].supported
    assert by["If_0/else_branch/conv8"].supported
    assert report.partitions == (
        ("If_0/then_branch/conv16", "If_0/then_branch/relu16"),
        ("If_0/else_branch/conv8",),
    )
    assert (report.supported_nodes, report.total_nodes) == (3, 5)


def test_after_fold_if_the_real_coverage_shows() -> None:
    model = vad_like(sr_bound=True)
    before = analyze(model, EPTarget("nnapi"), optimize=False)  # as written: the If and its bodies
    assert (before.supported_nodes, before.total_nodes) == (0, 5)
    assert FOLD_IF.apply(model) == 2  # the If and the Equal
    after = analyze(model, EPTarget("nnapi"))
    assert (after.supported_nodes, after.total_nodes, len(after.partitions)) == (2, 2, 1)
    assert "notes" not in after.settings


def test_a_nested_body_is_named_by_its_path_and_a_loop_body_by_its_inputs() -> None:
    inner_then = _body([helper.make_node("Relu", ["acc"], ["r"], name="relu")], "r", [3])
    inner_else = _body([helper.make_node("Neg", ["acc"], ["n"], name="neg")], "n", [3])
    body = helper.make_graph(
        [
            helper.make_node("Add", ["acc_in", "x"], ["acc"], name="add"),
            helper.make_node("If", ["c"], ["acc_out"], name="inner", then_branch=inner_then, else_branch=inner_else),
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", I64, []),
            helper.make_tensor_value_info("cond_in", B, []),
            helper.make_tensor_value_info("acc_in", F, [3]),
        ],
        [helper.make_tensor_value_info("cond_out", B, []), helper.make_tensor_value_info("acc_out", F, [3])],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "", "x"], ["y"], name="loop", body=body)],
        "g",
        [helper.make_tensor_value_info("x", F, [3]), helper.make_tensor_value_info("c", B, [])],
        [helper.make_tensor_value_info("y", F, [3])],
        [numpy_helper.from_array(np.array(2, np.int64), "trips")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    report = analyze(model, EPTarget("nnapi"))
    names = [n.name for n in report.nodes]
    assert names[:4] == ["loop", "loop/body/add", "loop/body/inner", "loop/body/keep"]
    # the inner If's bodies after its parent's (in the attribute order onnxruntime writes)
    assert sorted(names[4:]) == ["loop/body/inner/else_branch/neg", "loop/body/inner/then_branch/relu"]
    assert report.total_nodes == 6 and report.supported_nodes == 0
    assert report.nodes[0].reasons[0].startswith("Loop has no NNAPI builder; its 5 body node(s) stay on CPU")


def test_suggestions_count_the_body_nodes_like_the_report() -> None:
    """A Sum next to an If: "replace Sum" would join NNAPI's two partitions, and its percentages are of
    every node, the bodies' included (2 -> 3 of 6: the If and its 2 body nodes stay refused), as the
    report's are; of the main graph alone they would read 50% -> 75%."""
    then_b = _body([helper.make_node("Relu", ["x"], ["t"], name="relu")], "t", [1, 4])
    else_b = _body([helper.make_node("Neg", ["x"], ["e"], name="neg")], "e", [1, 4])
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="pre"),
        helper.make_node("Sum", ["r", "x"], ["s"], name="sum"),
        helper.make_node("Relu", ["s"], ["y"], name="post"),
        helper.make_node("If", ["c"], ["z"], name="branch", then_branch=then_b, else_branch=else_b),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, [1, 4]), helper.make_tensor_value_info("c", B, [])],
        [helper.make_tensor_value_info("y", F, [1, 4]), helper.make_tensor_value_info("z", F, [1, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    report = analyze(model, EPTarget("nnapi"), optimize=False)
    assert (report.supported_nodes, report.total_nodes, len(report.partitions)) == (2, 6, 2)
    sum_hint = next(s for s in report.suggestions if s.startswith("replace Sum"))
    assert sum_hint.endswith("2 partitions → 1, 33% → 50% of nodes")


def test_a_nested_body_knows_the_main_graphs_tensors_it_reads() -> None:
    """XNNPACK checks a Conv's input dims and constant weight: inside an If inside an If, reading the main
    graph's input and weight (the outer body reads neither), it is still taken."""
    inner_then = _body([helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1])], "c", [1, 8, 8, 8])
    inner_else = _body([helper.make_node("Conv", ["x", "w"], ["d"], name="conv2", pads=[1, 1, 1, 1])], "d", [1, 8, 8, 8])
    outer_then = _body(
        [helper.make_node("If", ["c2"], ["o"], name="inner", then_branch=inner_then, else_branch=inner_else)], "o", [1, 8, 8, 8]
    )
    outer_else = _body([helper.make_node("Conv", ["x", "w"], ["e"], name="conv3", pads=[1, 1, 1, 1])], "e", [1, 8, 8, 8])
    graph = helper.make_graph(
        [helper.make_node("If", ["c1"], ["y"], name="outer", then_branch=outer_then, else_branch=outer_else)],
        "g",
        [
            helper.make_tensor_value_info("x", F, [1, 4, 8, 8]),
            helper.make_tensor_value_info("c1", B, []),
            helper.make_tensor_value_info("c2", B, []),
        ],
        [helper.make_tensor_value_info("y", F, [1, 8, 8, 8])],
        [numpy_helper.from_array(W, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    report = analyze(model, EPTarget("xnnpack"))
    by = {n.name: n for n in report.nodes}
    assert by["outer/then_branch/inner/then_branch/conv"].supported, by["outer/then_branch/inner/then_branch/conv"].reasons
    assert by["outer/else_branch/conv3"].supported
    assert (report.supported_nodes, report.total_nodes) == (3, 5)


def test_an_if_inside_a_body_is_probed_before_onnxruntime_saves_the_optimized_model() -> None:
    """onnxruntime crashes instead of raising when it cannot inline a nested If while saving the optimized
    model (silero-vad with fixed dims, tests/unit/passes/test_fold_if.py): such models are loaded once
    without saving first."""
    from mobilegen.coverage.analyze import _nested_if

    flat = vad_like(sr_bound=False)
    assert not _nested_if(flat.graph)
    inner = helper.make_node("If", ["c2"], ["o"], then_branch=_body([helper.make_node("Relu", ["x"], ["a"])], "a"),
                             else_branch=_body([helper.make_node("Neg", ["x"], ["b"])], "b"))
    nested = vad_like(sr_bound=False)
    branch = next(a for a in nested.graph.node[1].attribute if a.name == "then_branch").g
    branch.node.append(inner)
    assert _nested_if(nested.graph)
