"""Quantizing models that learned something (tests/quant_fixtures.py), and the accuracy gate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from quant_fixtures import TrainedModel, cnn_classifier, onnx_accuracy, transformer_classifier  # noqa: F401

from mobilegen.artifacts import OnnxModel
from mobilegen.errors import ConversionError, VerificationError
from mobilegen.quantize import (
    QuantizeOptions,
    Recipe,
    accuracy,
    gate,
    load_calibration,
    quantize,
    recipe_for,
)
from mobilegen.spec import IOSpec, TensorSpec

pytestmark = pytest.mark.slow


def _io(shape: tuple[int, ...]) -> IOSpec:
    return IOSpec((TensorSpec("x", "float32", shape),), (TensorSpec("logits", "float32", (1, 4)),))


def _calibrate(model: TrainedModel, tmp_path: Path, shape: tuple[int, ...]) -> tuple[QuantizeOptions, object]:
    cal, ev = tmp_path / "calib.npz", tmp_path / "eval.npz"
    np.savez(cal, **model.calibration)
    np.savez(ev, **model.held_out)
    opts = QuantizeOptions(mode="int8", calibration=str(cal), eval=ev)
    opts.check()
    return opts, load_calibration(opts, _io(shape))


def _recipe(mode: str, chain: tuple[str, ...]) -> Recipe:
    r = recipe_for(mode, chain)  # type: ignore[arg-type]
    assert isinstance(r, Recipe)
    return r


def _ort_size(onnx_path: Path, tmp_path: Path, io: IOSpec) -> int:
    from mobilegen.convert.to_ort import config_path_for, convert_to_ort

    out = tmp_path / (onnx_path.stem + ".ort")
    convert_to_ort(OnnxModel(onnx_path, io, 17, "torchscript"), out, config_path_for(out))
    return out.stat().st_size


def test_cnn_int8_for_nnapi_keeps_accuracy_and_shrinks(cnn_classifier: TrainedModel, tmp_path: Path) -> None:  # noqa: F811
    m = cnn_classifier
    opts, calib = _calibrate(m, tmp_path, (1, 1, 16, 16))
    dest = tmp_path / "cnn.int8.onnx"
    q = quantize(m.onnx_path, _recipe("int8", ("nnapi", "xnnpack")), calib, dest)  # type: ignore[arg-type]
    assert q.path == dest and q.quantized_nodes >= 5 and not list(tmp_path.glob("*.tmp"))
    fp32_acc, int8_acc = onnx_accuracy(m.onnx_path, m.held_out, m.labels), onnx_accuracy(dest, m.held_out, m.labels)
    assert fp32_acc > 0.6  # chance is 0.25
    assert abs(fp32_acc - int8_acc) <= 0.02, (fp32_acc, int8_acc)
    io = _io((1, 1, 16, 16))
    ratio = _ort_size(dest, tmp_path, io) / _ort_size(m.onnx_path, tmp_path, io)
    assert ratio <= 0.3, ratio
    report = accuracy(m.onnx_path, dest, calib.held_out, opts, calib=calib)  # type: ignore[attr-defined]
    assert report.passed and report.samples == len(m.labels) and report.outputs[0].top1 is not None
    assert report.worst_layers and all(np.isfinite(w.sqnr_db) for w in report.worst_layers)
    gate(report)  # passes quietly
    # the QDQ CNN runs whole on NNAPI: every node (its units and the float MaxPool between DQ and Q,
    # the model being at opset 22 where ORT forms no MaxPool unit) in one partition
    import onnx

    from mobilegen.coverage import EPTarget, analyze

    nnapi = analyze(onnx.load(str(dest)), EPTarget("nnapi", android_api=29))
    assert (nnapi.supported_nodes, len(nnapi.partitions)) == (nnapi.total_nodes, 1), [
        (n.name, n.reasons) for n in nnapi.nodes if n.reasons
    ]
    assert any(n.op_type == "QuantizeLinear" for n in nnapi.nodes) and any(n.op_type == "MaxPool" for n in nnapi.nodes)


def test_cnn_int8_for_xnnpack_is_gated_on_its_own_semantics(cnn_classifier: TrainedModel, tmp_path: Path) -> None:  # noqa: F811
    """Per-channel s8 weights: the gate runs the QDQ model unfused (what the phone's integer kernels
    compute); fused on an x86 host without VNNI the same model measures cosine ~0.93 (16-bit saturation)."""
    m = cnn_classifier
    opts, calib = _calibrate(m, tmp_path, (1, 1, 16, 16))
    dest = tmp_path / "cnn.xnn.onnx"
    quantize(m.onnx_path, _recipe("int8", ("xnnpack",)), calib, dest)  # type: ignore[arg-type]
    report = accuracy(m.onnx_path, dest, calib.held_out, opts)  # type: ignore[attr-defined]
    assert report.passed and report.outputs[0].cosine > 0.995, report.table()
    fp32_acc = onnx_accuracy(m.onnx_path, m.held_out, m.labels)
    assert abs(fp32_acc - onnx_accuracy(dest, m.held_out, m.labels, optimized=False)) <= 0.02


def test_transformer_int8_for_cpu_keeps_accuracy(transformer_classifier: TrainedModel, tmp_path: Path) -> None:  # noqa: F811
    """The CPU recipe (onnxruntime.quantization's default op set): XNNPACK's quantizes no MatMul/Gemm."""
    m = transformer_classifier
    opts, calib = _calibrate(m, tmp_path, (1, 12, 16))
    dest = tmp_path / "enc.int8.onnx"
    q = quantize(m.onnx_path, _recipe("int8", ()), calib, dest, method="percentile")  # type: ignore[arg-type]
    assert q.quantized_nodes >= 6
    fp32_acc, int8_acc = onnx_accuracy(m.onnx_path, m.held_out, m.labels), onnx_accuracy(dest, m.held_out, m.labels)
    assert fp32_acc > 0.6
    assert abs(fp32_acc - int8_acc) <= 0.02, (fp32_acc, int8_acc)
    report = accuracy(m.onnx_path, dest, calib.held_out, opts)  # type: ignore[attr-defined]
    assert report.passed, report.table()


def test_dynamic_and_fp16_on_the_transformer(transformer_classifier: TrainedModel, tmp_path: Path) -> None:  # noqa: F811
    import onnx

    m = transformer_classifier
    opts, calib = _calibrate(m, tmp_path, (1, 12, 16))
    for mode, ops in (("dynamic", {"MatMulInteger", "DynamicQuantizeLinear"}), ("fp16", {"Cast"})):
        dest = tmp_path / f"enc.{mode}.onnx"
        q = quantize(m.onnx_path, _recipe(mode, ()), calib, dest)  # type: ignore[arg-type]
        graph = onnx.load_model(str(dest)).graph
        assert ops <= {n.op_type for n in graph.node}
        assert [i.type.tensor_type.elem_type for i in graph.input] == [onnx.TensorProto.FLOAT]  # IO stays float32
        assert q.size_after < q.size_before
        report = accuracy(m.onnx_path, dest, calib.held_out, opts)  # type: ignore[attr-defined]
        assert report.passed and report.worst_layers == (), report.table()
        assert abs(onnx_accuracy(dest, m.held_out, m.labels) - onnx_accuracy(m.onnx_path, m.held_out, m.labels)) <= 0.02


def test_constant_calibration_fails_the_gate(cnn_classifier: TrainedModel, tmp_path: Path) -> None:  # noqa: F811
    m = cnn_classifier
    cal = tmp_path / "const.npz"
    np.savez(cal, x=np.zeros_like(m.calibration["x"][:16]))
    ev = tmp_path / "eval.npz"
    np.savez(ev, **m.held_out)
    opts = QuantizeOptions(mode="int8", calibration=str(cal), eval=ev)
    calib = load_calibration(opts, _io((1, 1, 16, 16)))
    dest = tmp_path / "bad.onnx"
    quantize(m.onnx_path, _recipe("int8", ("nnapi",)), calib, dest)
    report = accuracy(m.onnx_path, dest, calib.held_out, opts, calib=calib)
    assert not report.passed
    assert any(f.startswith("logits: cosine ") and f.endswith(" < 0.99") for f in report.failures)
    assert any(f.startswith("logits: top-1 agreement ") for f in report.failures)
    assert report.record()["passed"] is False
    with pytest.raises(VerificationError) as info:
        gate(report)
    err = info.value
    assert err.exit_code == 5 and err.message.startswith("the quantized model lost too much accuracy: logits: cosine")
    assert err.details[0].split() == ["output", "cosine", "max", "abs", "top-1"]
    assert err.details[1].startswith("logits") and err.details[1].endswith("FAIL")
    assert "lowest signal-to-quantization-noise:" in err.details


def test_a_model_that_cannot_be_quantized_leaves_nothing(tmp_path: Path) -> None:
    src = tmp_path / "broken.onnx"
    src.write_bytes(b"not onnx")
    calib_opts = QuantizeOptions(mode="int8", calibration="random")
    calib = load_calibration(calib_opts, _io((1, 1, 16, 16)))
    dest = tmp_path / "out.onnx"
    with pytest.raises(ConversionError) as info:
        quantize(src, _recipe("int8", ("nnapi",)), calib, dest)
    assert info.value.exit_code == 6 and info.value.message.startswith("onnxruntime could not quantize the model (int8, nnapi): ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.onnx"]


def test_each_calibration_method_sets_its_own_ranges(cnn_classifier: TrainedModel, tmp_path: Path) -> None:  # noqa: F811
    """Entropy through quantize_static's defaults (128 bins) would equal min-max: its ranges are computed apart."""
    import onnx
    from onnx import numpy_helper

    m = cnn_classifier
    opts, calib = _calibrate(m, tmp_path, (1, 1, 16, 16))
    scales = {}
    for method in ("minmax", "entropy", "percentile"):
        dest = tmp_path / f"cnn.{method}.onnx"
        quantize(m.onnx_path, _recipe("int8", ("nnapi",)), calib, dest, method=method)  # type: ignore[arg-type]
        inits = onnx.load_model(str(dest)).graph.initializer
        scales[method] = {t.name: float(numpy_helper.to_array(t).ravel()[0]) for t in inits if t.name.endswith("output_0_scale")}
        if method != "entropy":  # KL thresholds clip this model's sparse ReLU outputs hard: the gate's business
            assert accuracy(m.onnx_path, dest, calib.held_out, opts).passed  # type: ignore[attr-defined]
    assert scales["minmax"].keys() == scales["entropy"].keys() == scales["percentile"].keys()
    assert scales["entropy"] != scales["minmax"] and scales["percentile"] != scales["minmax"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["calib.npz", "eval.npz"] + [f"cnn.{k}.onnx" for k in scales])


def test_qnn_int8_uses_uint8_qdq(cnn_classifier: TrainedModel, tmp_path: Path) -> None:  # noqa: F811
    """get_qnn_qdq_config after qnn_preprocess_model (which fails on metadata_props in onnxruntime 1.31)."""
    import onnx

    m = cnn_classifier
    opts, calib = _calibrate(m, tmp_path, (1, 1, 16, 16))
    dest = tmp_path / "cnn.qnn.onnx"
    q = quantize(m.onnx_path, _recipe("int8", ("qnn", "nnapi")), calib, dest)  # type: ignore[arg-type]
    graph = onnx.load_model(str(dest)).graph
    inits = {t.name: t.data_type for t in graph.initializer}
    zero_points = [inits[n.input[2]] for n in graph.node if n.op_type in ("QuantizeLinear", "DequantizeLinear") and len(n.input) > 2 and n.input[2] in inits]
    assert set(zero_points) - {onnx.TensorProto.INT32} == {onnx.TensorProto.UINT8}  # int32: biases
    assert q.quantized_nodes >= 5
    assert accuracy(m.onnx_path, dest, calib.held_out, opts).passed  # type: ignore[attr-defined]
