"""Partitioning like GetCapability: grouping, NNAPI group drops, stop ops, verdicts, suggestions."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from mobilegen.coverage import EPTarget, analyze, verdict
from mobilegen.coverage.analyze import prepare
from mobilegen.coverage.partition import group_nodes

F = TensorProto.FLOAT


def chain(ops: list[tuple[str, list[str], dict]], shape=(1, 4), inits=None, extra_inputs=None, opset=17) -> onnx.ModelProto:
    nodes = []
    prev = "x"
    for i, (op, extra, attrs) in enumerate(ops):
        out = f"t{i}"
        nodes.append(helper.make_node(op, [prev, *extra], [out], name=f"n{i}_{op}", **attrs))
        prev = out
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, shape), *(extra_inputs or [])],
        [helper.make_tensor_value_info(prev, F, None)],
        initializer=[numpy_helper.from_array(np.asarray(v, dtype=np.float32 if k != "shape" else np.int64), k) for k, v in (inits or {}).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def test_group_defers_unsupported_border_node() -> None:
    # a -> b(unsupported) -> c ; a -> d : d joins a's group, c starts the next group
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="a"),
        helper.make_node("Erf", ["a"], ["b"], name="b"),
        helper.make_node("Relu", ["b"], ["c"], name="c"),
        helper.make_node("Relu", ["a"], ["d"], name="d"),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, (1, 4))],
                              [helper.make_tensor_value_info("c", F, None), helper.make_tensor_value_info("d", F, None)])
    info = prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), optimize=False).graph
    names = [n.name for n in info.nodes]
    groups = group_nodes(info, lambda i: info.nodes[i].op_type != "Erf")
    assert [[names[i] for i in g] for g in groups] == [["a", "d"], ["c"]]


def test_lone_reshape_partition_dropped_on_nnapi_not_coreml() -> None:
    model = chain([("Erf", [], {}), ("Reshape", ["shape"], {}), ("Erf", [], {})], inits={"shape": [4, 1]})
    nn = analyze(model, EPTarget("nnapi"), optimize=False)
    assert nn.partitions == ()
    reshape = next(n for n in nn.nodes if n.op_type == "Reshape")
    assert not reshape.supported and any("lone Reshape" in r for r in reshape.reasons)
    cm = analyze(model, EPTarget("coreml", coreml_format="neuralnetwork"), optimize=False)
    assert cm.partitions == (("n1_Reshape",),)


def test_constant_fed_partition_dropped_on_nnapi() -> None:
    nodes = [
        helper.make_node("Relu", ["c"], ["r"], name="const_relu"),
        helper.make_node("Add", ["x", "r"], ["y"], name="add"),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, (1, 4))],
                              [helper.make_tensor_value_info("y", F, None)],
                              initializer=[numpy_helper.from_array(np.ones((1, 4), np.float32), "c")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    # Make Add unsupported (rank 5 is refused), so the constant-only Relu sits alone in its own partition.
    model.graph.input[0].CopyFrom(helper.make_tensor_value_info("x", F, (1, 1, 1, 1, 4)))
    report = analyze(model, EPTarget("nnapi"), optimize=False)
    relu = next(n for n in report.nodes if n.name == "const_relu")
    assert not relu.supported and any("only by constants" in r for r in relu.reasons)
    assert report.partitions == ()


def test_stop_op_excludes_downstream_nodes() -> None:
    nodes = [
        helper.make_node("Relu", ["boxes"], ["b"], name="pre"),
        helper.make_node("NonMaxSuppression", ["b", "scores"], ["sel"], name="nms"),
        helper.make_node("Cast", ["sel"], ["self"], name="after", to=F),
        helper.make_node("Relu", ["self"], ["out"], name="after2"),
    ]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("boxes", F, (1, 10, 4)), helper.make_tensor_value_info("scores", F, (1, 1, 10))],
        [helper.make_tensor_value_info("out", F, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    report = analyze(model, EPTarget("nnapi"), optimize=False)
    by = {n.name: n for n in report.nodes}
    assert by["pre"].supported
    assert not by["after2"].supported
    assert any("downstream of NonMaxSuppression 'nms'" in r for r in by["after2"].reasons)
    assert any("stop op" in r for r in by["nms"].reasons)
    assert report.partitions == (("pre",),)


def test_control_flow_body_stays_on_cpu() -> None:
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [helper.make_tensor_value_info("t", F, None)])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [helper.make_tensor_value_info("e", F, None)])
    nodes = [helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_g, else_branch=else_g)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("cond", TensorProto.BOOL, ()),
                                           helper.make_tensor_value_info("x", F, (1, 4))],
                              [helper.make_tensor_value_info("y", F, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    for target in (EPTarget("nnapi"), EPTarget("coreml")):
        report = analyze(model, target, optimize=False)
        node = report.nodes[0]
        assert not node.supported and "2 body node(s) stay on CPU" in node.reasons[0]
        assert report.total_nodes == 3 and report.supported_nodes == 0  # the If and its two body nodes
    # XNNPACK judges body nodes like any other (tests/unit/coverage/test_subgraphs.py)
    node = analyze(model, EPTarget("xnnpack"), optimize=False).nodes[0]
    assert not node.supported and "2 body node(s) are judged on their own" in node.reasons[0]


def test_custom_domain_is_refused_not_crashing() -> None:
    nodes = [helper.make_node("Frobnicate", ["x"], ["y"], name="custom", domain="my.ops")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, (1, 4))], [helper.make_tensor_value_info("y", F, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my.ops", 1)])
    report = analyze(model, EPTarget("nnapi"))  # optimize=True: ORT cannot load it, we still report
    assert report.nodes[0].reasons == ("op my.ops:Frobnicate is from custom domain 'my.ops': no NNAPI builder",)
    assert "could not load" in str(report.settings["notes"])


def test_contrib_gelu_has_no_nnapi_builder() -> None:
    nodes = [helper.make_node("Gelu", ["x"], ["y"], name="g", domain="com.microsoft")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, (1, 4))], [helper.make_tensor_value_info("y", F, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    report = analyze(model, EPTarget("nnapi"), optimize=False)
    assert report.nodes[0].reasons == ("op com.microsoft:Gelu has no NNAPI builder",)


def test_verdict_thresholds_match_ort_checker() -> None:
    assert verdict(1, 76, 100) == "yes"
    assert verdict(1, 75, 100) == "maybe"
    assert verdict(1, 51, 100) == "maybe"
    assert verdict(1, 50, 100) == "no"
    assert verdict(2, 76, 100) == "maybe"
    assert verdict(2, 75, 100) == "no"
    assert verdict(3, 100, 100) == "no"
    assert verdict(0, 0, 0) == "no"


def test_dynamic_dims_suggestion_and_coreml_accepts_dynamic() -> None:
    model = chain([("Relu", [], {}), ("Erf", [], {}), ("Relu", [], {}), ("Erf", [], {}), ("Relu", [], {})], shape=("batch", 4))
    nn = analyze(model, EPTarget("nnapi"), optimize=False)
    assert nn.supported_nodes == 0
    assert any("dim 'batch' of input 'x' is symbolic" in r for r in nn.nodes[0].reasons)
    assert any(s.startswith("fix the dynamic dims") and "0 partitions → 3" in s for s in nn.suggestions)
    ml = analyze(model, EPTarget("coreml"), optimize=False)
    assert ml.supported_nodes == 5  # MLProgram has Erf; dynamic dims are fine unless required static
    strict = analyze(model, EPTarget("coreml", require_static_shapes=True), optimize=False)
    assert strict.supported_nodes == 0


def test_replace_op_suggestion() -> None:
    model = chain([("Relu", [], {}), ("Erf", [], {}), ("Relu", [], {}), ("Erf", [], {}), ("Relu", [], {})])
    report = analyze(model, EPTarget("nnapi"), optimize=False)
    assert len(report.partitions) == 3 and report.verdict == "no"
    assert report.suggestions == (
        "replace Erf (2 nodes) with the tanh approximation of the GELU it belongs to (Mul, Add, Tanh): "
        "3 partitions → 1, 60% → 100% of nodes, verdict no → yes",
    )


def test_api_level_refusal_and_suggestion() -> None:
    model = chain([("Relu", [], {}), ("Sqrt", [], {}), ("Relu", [], {})])
    report = analyze(model, EPTarget("nnapi", android_api=27), optimize=False)
    sqrt = report.nodes[1]
    assert sqrt.reasons == ("needs Android API 29, target is 27",)
    assert [(r.rule, r.category, r.min_api) for r in sqrt.refusals] == [("nnapi.min_api", "api", 29)]
    assert any(s.startswith("target Android API 29+") for s in report.suggestions)
    assert not any("replace" in s for s in report.suggestions)  # refused only for the API level


def test_uint8_op_only_inside_an_nnapi_partition() -> None:
    """A uint8 Transpose is taken when its input comes from the same partition, refused when it comes in."""
    scale = numpy_helper.from_array(np.asarray(0.5, np.float32), "s")
    zero = numpy_helper.from_array(np.asarray(0, np.uint8), "z")
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quant"),
        helper.make_node("Transpose", ["q"], ["inside"], name="inside", perm=[1, 0]),
        helper.make_node("Transpose", ["u"], ["outside"], name="outside", perm=[1, 0]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, (2, 4)), helper.make_tensor_value_info("u", TensorProto.UINT8, (2, 4))],
        [helper.make_tensor_value_info(o, TensorProto.UINT8, None) for o in ("inside", "outside")],
        initializer=[scale, zero],
    )
    report = analyze(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), EPTarget("nnapi"), optimize=False)
    nodes_by_name = {n.name: n for n in report.nodes}
    assert nodes_by_name["inside"].supported and report.partitions == (("quant", "inside"),)
    (refusal,) = nodes_by_name["outside"].refusals
    assert (refusal.rule, refusal.category) == ("nnapi.uint8_internal", "partition")
    assert refusal.text == "uint8 Transpose input 'u' is not produced inside the NNAPI partition"


def test_basic_optimization_inlines_hardswish() -> None:
    model = chain([("HardSwish", [], {})], opset=17)
    report = analyze(model, EPTarget("coreml"))
    ops = [n.op_type for n in report.nodes]
    assert "HardSwish" not in ops and "HardSigmoid" in ops
    assert report.settings["optimized"] is True


def test_json_contract_keys() -> None:
    report = analyze(chain([("Relu", [], {})]), EPTarget("xnnpack"), optimize=False)
    d = report.to_dict()
    assert list(d) == ["ep", "format", "total_nodes", "supported_nodes", "partitions", "verdict", "suggestions", "settings", "nodes"]
    node = d["nodes"][0]  # a lone Relu: XNNPACK takes it only fused into a producer
    assert set(node) == {"name", "op_type", "domain", "supported", "reasons", "refusals"}
    assert node["refusals"] == [
        {"rule": "xnnpack.fusion", "category": "other", "text": node["reasons"][0], "min_api": None}
    ]
    nn = analyze(chain([("Relu", [], {})]), EPTarget("nnapi"), optimize=False).to_dict()
    assert set(nn["nodes"][0]) == {"name", "op_type", "domain", "supported", "reasons"}  # taken: no refusals
