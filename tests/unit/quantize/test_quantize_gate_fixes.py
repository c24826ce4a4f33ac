"""The quantizer and the accuracy gate on tiny hand-built graphs: scalar weights, integer outputs (class
ids), fp16 graphs in topological order, and cosines printed with the digits that tell them apart."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mobilegen.errors import VerificationError
from mobilegen.quantize import QuantizeOptions, Recipe, accuracy, gate, load_calibration, quantize, recipe_for
from mobilegen.quantize.accuracy import AccuracyReport, OutputAccuracy, cosine_text
from mobilegen.quantize.engine import sort_graph
from mobilegen.spec import IOSpec, TensorSpec

IO = IOSpec((TensorSpec("x", "float32", (1, 8)),), (TensorSpec("y", "float32", (1, 4)),))


def _save(path: Path, nodes: list[onnx.NodeProto], outputs: list[onnx.ValueInfoProto], inits: list[onnx.TensorProto]) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    graph = helper.make_graph(nodes, "g", [x], outputs, inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def _scaled_matmul(path: Path) -> Path:
    """``(x * 0.5) @ w``: the 0.5 is a 0-d initializer."""
    w = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "half"], ["h"]), helper.make_node("MatMul", ["h", "w"], ["y"])]
    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "half"), numpy_helper.from_array(w, "w")]
    return _save(path, nodes, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits)


def _recipe(mode: str) -> Recipe:
    r = recipe_for(mode, ())  # type: ignore[arg-type]
    assert isinstance(r, Recipe)
    return r


def test_int8_gate_takes_a_graph_with_a_scalar_weight(tmp_path: Path) -> None:
    src = _scaled_matmul(tmp_path / "m.onnx")
    opts = QuantizeOptions(mode="int8", calibration="random")
    calib = load_calibration(opts, IO)
    q = quantize(src, _recipe("int8"), calib, tmp_path / "q.onnx")
    report = accuracy(src, q.path, calib.held_out, opts, calib=calib)  # raised ValueError on the 0-d weight
    assert report.passed, report.failures
    layers = {w.tensor: w.sqnr_db for w in report.worst_layers}
    assert report.worst_layers and all(np.isfinite(v) for v in layers.values()), layers


def _top1_model(path: Path, nudge: float) -> Path:
    """scores = x + c (c[1] = nudge), then TopK(1): ``scores`` float32 [1, 1], ``indices`` int64 [1, 1]."""
    c = np.zeros(8, np.float32)
    c[1] = nudge
    nodes = [helper.make_node("Add", ["x", "c"], ["s"]), helper.make_node("TopK", ["s", "k"], ["scores", "indices"], axis=-1)]
    inits = [numpy_helper.from_array(c, "c"), numpy_helper.from_array(np.array([1], np.int64), "k")]
    outputs = [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 1]), helper.make_tensor_value_info("indices", TensorProto.INT64, [1, 1])]
    return _save(path, nodes, outputs, inits)


def _near_tie_samples() -> dict[str, np.ndarray]:
    """10 samples whose class 0 wins; in one of them class 1 trails by 1e-4 (a nudge of 1e-3 flips it)."""
    x = np.full((10, 1, 8), 0.1, np.float32)
    x[:, 0, 0] = 5.0
    x[3, 0, 1] = 5.0 - 1e-4
    return {"x": x}


def test_integer_outputs_are_compared_by_exact_agreement(tmp_path: Path) -> None:
    fp32, nudged = _top1_model(tmp_path / "fp32.onnx", 0.0), _top1_model(tmp_path / "q.onnx", 1e-3)
    data = _near_tie_samples()
    report = accuracy(fp32, nudged, data, QuantizeOptions(mode="int8", calibration="random", min_top1=0.85))
    by_name = {o.name: o for o in report.outputs}
    # the ids are 0 in every fp32 sample: a cosine of them was 0 and failed a build whose scores agree
    assert by_name["indices"].exact and by_name["indices"].top1 == pytest.approx(0.9)
    assert not by_name["scores"].exact and by_name["scores"].cosine > 0.9999
    assert report.passed, report.failures
    table = report.table()
    assert "0.900 equal" in table and "cosine" not in report.failures
    assert report.record()["outputs"][1] == {"name": "indices", "cosine": None, "max_abs": None, "top1": 0.9, "exact": True}
    # the --min-top1 threshold applies to the fraction of equal values
    strict = accuracy(fp32, nudged, data, QuantizeOptions(mode="int8", calibration="random", min_top1=0.95))
    assert strict.failures == ("indices: values equal to fp32's 0.900 < 0.95",)
    # class ids do not widen the golden vectors' tolerance: the scores' error does
    assert report.float_error == pytest.approx(by_name["scores"].max_abs)
    assert by_name["scores"].max_abs < 0.01 < by_name["indices"].max_abs


def test_fp16_model_is_topologically_sorted(tmp_path: Path) -> None:
    src = _scaled_matmul(tmp_path / "m.onnx")
    opts = QuantizeOptions(mode="fp16")
    calib = load_calibration(QuantizeOptions(mode="fp16", calibration="random"), IO)
    q = quantize(src, _recipe("fp16"), calib, tmp_path / "q.onnx")
    model = onnx.load(str(q.path))
    onnx.checker.check_model(model, full_check=True)  # "Nodes in a graph must be topologically sorted"
    assert [i.type.tensor_type.elem_type for i in model.graph.input] == [TensorProto.FLOAT]
    assert accuracy(src, q.path, calib.held_out, opts).passed


def test_sort_graph_keeps_sorted_order_and_sorts_subgraph_readers() -> None:
    then = helper.make_graph([helper.make_node("Identity", ["b"], ["t"])], "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [1])])
    nodes = [
        helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=then, name="if"),  # reads b in its branches
        helper.make_node("Neg", ["a"], ["b"], name="neg"),
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
        helper.make_node("Greater", ["x", "x"], ["cond"], name="gt"),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    sort_graph(g)
    assert [n.name for n in g.node] == ["relu", "neg", "gt", "if"]  # each producer right before its first reader
    onnx.checker.check_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    before = [n.name for n in g.node]
    sort_graph(g)
    assert [n.name for n in g.node] == before


def test_a_cosine_below_the_threshold_is_printed_with_the_digits_that_show_it() -> None:
    assert cosine_text(0.99999995, 0.99999999) == "0.9999999"  # not "1.0000 < 0.99999999"
    assert cosine_text(0.912345, 0.99) == "0.9123"
    assert cosine_text(0.99989, 0.9999) == "0.99989"  # not "0.9999 < 0.9999"
    report = AccuracyReport((OutputAccuracy("y", 0.99999995, 1e-6, None),), (), 4, 0.99999999, 0.98, False, ("y: cosine 0.9999999 < 0.99999999",))
    with pytest.raises(VerificationError) as info:
        gate(report)
    assert info.value.details[1].split()[:2] == ["y", "0.9999999"]  # the table's row


def test_gate_failure_names_the_cosine_with_enough_digits(tmp_path: Path) -> None:
    src = _scaled_matmul(tmp_path / "m.onnx")
    calib = load_calibration(QuantizeOptions(mode="fp16", calibration="random"), IO)
    q = quantize(src, _recipe("fp16"), calib, tmp_path / "q.onnx")
    report = accuracy(src, q.path, calib.held_out, QuantizeOptions(mode="fp16", min_cosine=1.0))
    cos = report.outputs[0].cosine
    assert cos < 1.0 and not report.passed
    assert report.failures == (f"y: cosine {cosine_text(cos, 1.0)} < 1.0",) and "1.0000 <" not in report.failures[0]


def test_a_zero_bias_is_no_worst_layer(tmp_path: Path) -> None:
    """A zero bias (random-init transformers layers have them) is reproduced exactly; onnxruntime's SQNR
    epsilons made it 0 dB, listed first among the worst layers of ViT and ConvNeXt builds."""
    w = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"])]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.zeros(4, np.float32), "b")]
    src = _save(tmp_path / "m.onnx", nodes, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits)
    opts = QuantizeOptions(mode="int8", calibration="random")
    calib = load_calibration(opts, IO)
    q = quantize(src, _recipe("int8"), calib, tmp_path / "q.onnx")
    report = accuracy(src, q.path, calib.held_out, opts, calib=calib)
    layers = {w.tensor: w.sqnr_db for w in report.worst_layers}
    assert report.worst_layers and "b" not in layers and all(np.isfinite(v) and v > 0 for v in layers.values()), layers
