"""int8 on a vision transformer (NNAPI recipe): a small trained ViT keeps its accuracy and its single NNAPI
partition, and the activation rules' divisor rule (mobilegen.quantize.resolution.divisor_ops) is what keeps
a LayerNorm of a near-constant row (the CLS token's, initialised at std 0.02) from dividing by a variance
quantized to 0; on a hand-made graph its effect is checked against numpy's LayerNorm."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from quant_vit_fixture import ImageModel, vit_classifier  # noqa: F401

from mobilegen.artifacts import CoverageCounts
from mobilegen.coverage import EPTarget, analyze_all
from mobilegen.quantize import QuantizeOptions, Recipe, accuracy, quantize, recipe_for
from mobilegen.quantize.calibration import Calibration
from mobilegen.quantize.judged import judged_quantize, worse

NNAPI = EPTarget("nnapi")


def _nnapi(divisor: bool = True) -> Recipe:
    r = recipe_for("int8", ("nnapi",))
    assert isinstance(r, Recipe) and r.activations is not None and r.activations.divisor_spread > 0
    return r if divisor else replace(r, activations=replace(r.activations, divisor_spread=0.0))


def _labels_accuracy(path: Path, m: ImageModel) -> float:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = m.held_out["pixel_values"]
    return float(np.mean([int(np.argmax(sess.run(None, {"pixel_values": x[i]})[0])) == int(m.labels[i]) for i in range(len(x))]))


@pytest.mark.slow  # ~25 s of training, then three quantizations
def test_a_trained_vit_keeps_accuracy_and_its_nnapi_partition(vit_classifier: ImageModel, tmp_path: Path) -> None:  # noqa: F811
    m = vit_classifier
    assert m.torch_accuracy > 0.9  # chance is 0.125: the model learned colour and position
    calib = Calibration(m.calibration, m.held_out, "squares (test)", len(m.labels), True)
    opts = QuantizeOptions("int8", min_cosine=0.99, min_top1=0.98)

    def gate(path: Path) -> object:
        return accuracy(m.onnx_path, path, m.held_out, opts, worst=0)

    qm, j = judged_quantize(m.onnx_path, _nnapi(), calib, tmp_path / "q.onnx", NNAPI, gate=gate)  # type: ignore[arg-type]
    assert not j.refused and not j.accuracy_refused and qm.quantized_nodes >= 40
    report = accuracy(m.onnx_path, qm.path, m.held_out, opts, worst=0)
    (logits,) = report.outputs
    assert report.passed and logits.cosine >= 0.99 and logits.top1 is not None and logits.top1 >= 0.98, report.table()
    assert abs(_labels_accuracy(qm.path, m) - _labels_accuracy(m.onnx_path, m)) <= 0.02
    (before,) = analyze_all(None, [NNAPI], source=m.onnx_path)
    (after,) = analyze_all(None, [NNAPI], source=qm.path)
    assert before.partitions and len(after.partitions) <= len(before.partitions)
    assert not worse(CoverageCounts.of(before), CoverageCounts.of(after))
    # the first LayerNorm normalizes the CLS row (std ~0.03 against ~0.7 for the patch rows): its variance
    # chain stays float by the divisor rule, and nothing else had to (no accuracy narrowing)
    divisor = {f.node for f in qm.float_ops if f.rule == "divisor"}
    assert {"/blocks.0/ln1/Mul", "/blocks.0/ln1/Add"} <= divisor, divisor
    assert j.min_steps == 0 and all(f.rule != "coarse" for f in qm.float_ops)
    # without the divisor rule the recipe as it is fails the gate (the narrowing then floats far more)
    plain = quantize(m.onnx_path, _nnapi(divisor=False), calib, tmp_path / "plain.onnx")
    assert not accuracy(m.onnx_path, plain.path, m.held_out, opts, worst=0).passed


def _layernorm(path: Path) -> Path:
    """x [1, 8, 16] -> the fix stage's LayerNorm decomposition (ReduceMean, Sub, Mul, ReduceMean, Add eps,
    Sqrt, Div) -> * w + b -> y."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(np.array(1e-12, np.float32), "eps"),
        numpy_helper.from_array(rng.normal(1, 0.1, 16).astype(np.float32), "w"),
        numpy_helper.from_array(rng.normal(0, 0.1, 16).astype(np.float32), "b"),
    ]
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["mean"], name="ln/mean", axes=[-1]),
        helper.make_node("Sub", ["x", "mean"], ["dev"], name="ln/Sub"),
        helper.make_node("Mul", ["dev", "dev"], ["sq"], name="ln/Mul"),
        helper.make_node("ReduceMean", ["sq"], ["var"], name="ln/var", axes=[-1]),
        helper.make_node("Add", ["var", "eps"], ["var_eps"], name="ln/Add"),
        helper.make_node("Sqrt", ["var_eps"], ["std"], name="ln/Sqrt"),
        helper.make_node("Div", ["dev", "std"], ["norm"], name="ln/Div"),
        helper.make_node("Mul", ["norm", "w"], ["scaled"], name="ln/scale"),
        helper.make_node("Add", ["scaled", "b"], ["y"], name="ln/shift"),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16])], inits)  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def test_the_divisor_rule_keeps_a_small_rows_layernorm(tmp_path: Path) -> None:
    """Row 0 of x is 25x smaller than the others (a random-init CLS token): quantized, its variance is under
    one 8-bit step and becomes 0, so the Div returns dev / 1e-6; with the chain float, row 0 matches numpy."""
    rng = np.random.default_rng(1)
    x = rng.normal(0, 1, (12, 1, 8, 16)).astype(np.float32)
    x[:, :, 0] *= 0.04
    calib = Calibration({"x": x}, {"x": x}, "rows (test)", 12, True)
    src = _layernorm(tmp_path / "ln.onnx")
    w = numpy_helper.to_array(next(t for t in onnx.load(str(src)).graph.initializer if t.name == "w"))
    b = numpy_helper.to_array(next(t for t in onnx.load(str(src)).graph.initializer if t.name == "b"))
    dev = x - x.mean(-1, keepdims=True)
    want = dev / np.sqrt((dev * dev).mean(-1, keepdims=True) + 1e-12) * w + b  # numpy's LayerNorm

    def row0_error(path: Path) -> float:
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        got = np.stack([sess.run(None, {"x": x[i]})[0] for i in range(len(x))])
        return float(np.abs(got[:, :, 0] - want[:, :, 0]).max())

    with_rule = quantize(src, _nnapi(), calib, tmp_path / "rule.onnx")
    without = quantize(src, _nnapi(divisor=False), calib, tmp_path / "plain.onnx")
    assert {(f.node, f.rule) for f in with_rule.float_ops} >= {("ln/Mul", "divisor"), ("ln/Add", "divisor")}
    assert all("divisor" in f.reason and "std" in f.reason for f in with_rule.float_ops if f.rule == "divisor")
    assert not any(f.rule == "divisor" for f in without.float_ops)
    assert row0_error(without.path) > 1.0  # row 0 (unit scale once normalized) is lost: its quantized squares are 0
    assert row0_error(with_rule.path) < 0.1  # the normalized row is then quantized on its own ~[-3, 3] range
