"""Issue 18: the analysis sees the graph the providers see before partitioning, not the CPU session's
result (no InsertedPrecisionFreeCast_* casts; function ops a provider has a builder for kept whole)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from mobilegen.coverage import EPTarget
from mobilegen.coverage.analyze import analyze, prepare, rules_for
from mobilegen.coverage.provider_view import claimed_by


def _model(nodes: list[onnx.NodeProto], x: onnx.ValueInfoProto, inits: list[onnx.TensorProto], opset: int) -> onnx.ModelProto:
    y = helper.make_tensor_value_info("y", x.type.tensor_type.elem_type, None)
    graph = helper.make_graph(nodes, "g", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def fp16_model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT16, (1, 3, 8, 8))
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float16), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Softmax", ["r"], ["y"], name="softmax", axis=-1),
    ]
    return _model(nodes, x, [w], 17)


def groupnorm_model(op: str = "GroupNormalization") -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 4, 8, 8))
    inits = [numpy_helper.from_array(np.ones(4, np.float32), "s"), numpy_helper.from_array(np.zeros(4, np.float32), "b")]
    nodes = [
        helper.make_node(op, ["x", "s", "b"], ["g"], name="gn", num_groups=2),
        helper.make_node("Relu", ["g"], ["y"], name="relu"),
    ]
    return _model(nodes, x, inits, 21)


def test_fp16_nodes_are_seen_in_float16_without_the_cpu_casts() -> None:
    prepared = prepare(fp16_model())
    assert prepared.optimized
    graph = prepared.for_ops(frozenset({"Softmax"})).graph  # the CPU had no fp16 Softmax and inlined it
    assert [(n.op_type, n.name) for n in graph.nodes] == [("Conv", "conv"), ("Relu", "relu"), ("Softmax", "softmax")]
    assert not any("InsertedPrecisionFreeCast" in t for n in graph.nodes for t in (*n.inputs, *n.outputs))
    assert all(graph.info(n.inputs[0]).elem_type == TensorProto.FLOAT16 for n in graph.nodes)  # type: ignore[union-attr]


def test_fp16_verdicts_follow_the_providers_types() -> None:
    coreml = analyze(fp16_model(), EPTarget("coreml", coreml_format="mlprogram"))
    assert coreml.total_nodes == 3 and coreml.supported_nodes == 3
    nnapi = analyze(fp16_model(), EPTarget("nnapi"))
    assert nnapi.supported_nodes == 0
    assert all(any("float16" in r for r in n.reasons) for n in nnapi.nodes)


def test_a_function_op_a_provider_claims_is_kept_whole() -> None:
    coreml = EPTarget("coreml", coreml_format="mlprogram")
    prepared = prepare(groupnorm_model())
    assert prepared.optimized and "GroupNormalization" not in [n.op_type for n in prepared.graph.nodes]  # inlined
    graph = prepared.for_ops(claimed_by(rules_for(coreml))).graph  # CoreML has a builder: taken back whole
    assert [(n.op_type, n.name) for n in graph.nodes] == [("GroupNormalization", "gn"), ("Relu", "relu")]
    assert graph.info("g") is not None and graph.info("g").shape == (1, 4, 8, 8)  # type: ignore[union-attr]
    report = analyze(groupnorm_model(), coreml)
    assert report.total_nodes == 2 and report.supported_nodes == 2 and len(report.partitions) == 1


def test_a_function_op_the_provider_has_no_builder_for_stays_inlined() -> None:
    # NNAPI has no GroupNormalization builder: ORT inlines it for an NNAPI session too, and NNAPI may take
    # parts of the body.
    report = analyze(groupnorm_model(), EPTarget("nnapi"))
    ops = [n.op_type for n in report.nodes]
    assert "GroupNormalization" not in ops and "ReduceMean" in ops


def test_the_unoptimized_path_reads_the_original_from_its_file(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "gn.onnx"
    onnx.save_model(groupnorm_model(), str(path))
    prepared = prepare(None, source=path)
    assert prepared.optimized
    graph = prepared.for_ops(frozenset({"GroupNormalization"})).graph
    assert [n.op_type for n in graph.nodes] == ["GroupNormalization", "Relu"]


def test_an_fp32_model_is_left_as_the_session_saved_it() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 3, 8, 8))
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    model = _model([helper.make_node("Conv", ["x", "w"], ["c"], name="conv"), helper.make_node("Relu", ["c"], ["y"], name="relu")], x, [w], 17)
    assert [n.op_type for n in prepare(model).graph.nodes] == ["Conv", "Relu"]
