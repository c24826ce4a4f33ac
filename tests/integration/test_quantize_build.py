"""``--quantize`` through the whole build (issue 13), on a CNN trained in the fixture (tests/quant_fixtures.py):

- ``android --nnapi --quantize int8 --calibration calib.npz`` ships a uint8 QDQ model, its own golden
  vectors, the recipe, sizes and accuracy in the manifest, the report and the JSON; ``verify`` passes;
- ``package --android --nnapi --ios --coreml --quantize int8``: Android quantized, iOS fp32 (CoreML takes no
  Q/DQ), each in ``model/<target>/`` with its own golden vectors; ``verify`` passes on the zip;
- ``ios --coreml --quantize int8`` ships fp32 with the reason in the report and the JSON;
- ``ios --coreml --quantize fp16`` ships a float16 model and keeps the fp32 model's CoreML coverage;
- calibration on constant data fails the gate (exit 5, the table with outputs and worst layers), and
  nothing is left behind;
- ``--calibration random`` builds, and says UNTRUSTWORTHY wherever the result is described;
- ``convert --quantize fp16|int8`` writes the quantized .ort (CPU recipe) with its record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from cli_helpers import assert_fails, error_details, invoke
from quant_fixtures import TrainedModel, cnn_classifier  # noqa: F401 — the session fixture

from mobilegen.package import verify_package

pytestmark = pytest.mark.slow

QDQ = {"QuantizeLinear", "DequantizeLinear"}


@pytest.fixture
def cnn(cnn_classifier: TrainedModel, tmp_path: Path) -> dict[str, Path]:  # noqa: F811
    """The trained CNN and its calibration/eval files in this test's folder."""
    calib, held = tmp_path / "calib.npz", tmp_path / "eval.npz"
    np.savez(calib, **cnn_classifier.calibration)
    np.savez(held, **{k: v[:48] for k, v in cnn_classifier.held_out.items()})
    return {"model": cnn_classifier.onnx_path, "calib": calib, "eval": held}


def _json(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _ops(path: Path) -> set[str]:
    return {n.op_type for n in onnx.load(str(path)).graph.node}


def _manifest(out: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((out / "manifest.json").read_text())
    return doc


def test_android_nnapi_int8_ships_uint8_qdq_with_its_own_golden_vectors(cnn: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    doc = _json(invoke("android", cnn["model"], "--nnapi", "--quantize", "int8", "--calibration", cnn["calib"], "-o", out, "--json"))
    (model,) = doc["models"]
    q = model["quantization"]
    assert q["shipped"] == "int8" and q["recipe"]["provider"] == "nnapi"
    assert (q["recipe"]["activation_type"], q["recipe"]["weight_type"], q["recipe"]["per_channel"]) == ("uint8", "uint8", False)
    assert q["calibration"]["source"] == "calib.npz" and q["calibration"]["trustworthy"] is True and q["calibration"]["count"] > 0
    assert q["size"]["ort_after"] < q["size"]["ort_before"]
    assert all(o["cosine"] >= 0.99 for o in q["accuracy"]["outputs"]) and q["accuracy"]["worst_layers"]
    # the shipped Android model is a QDQ graph, with uint8 zero points (NNAPI's quantized type)
    shipped = onnx.load(str(out / "model/model.onnx"))
    assert QDQ <= {n.op_type for n in shipped.graph.node}
    zero_points = {i.name: i.data_type for i in shipped.graph.initializer if i.name.endswith("_zero_point")}
    assert zero_points and set(zero_points.values()) - {onnx.TensorProto.INT32} == {onnx.TensorProto.UINT8}  # biases are int32
    # its golden vectors are its own outputs (onnxruntime CPU, the .ort), on the reference's inputs
    import onnxruntime as ort

    golden = np.load(out / "golden/golden.npz")
    got = ort.InferenceSession(str(out / "model/model.ort"), providers=["CPUExecutionProvider"]).run(None, {"x": golden["input:x"]})[0]
    np.testing.assert_array_equal(golden["output:logits"], got)
    manifest = _manifest(out)
    assert manifest["schema_version"] == 4 and manifest["options"]["quantize"]["mode"] == "int8"
    record = manifest["models"][0]
    assert record["quantization"]["shipped"] == "int8" and record["golden"]["npz"] == "golden/golden.npz"
    assert record["golden"]["atol"] >= manifest["tolerances"]["atol"]
    assert manifest["options"]["device_tolerances"]["android_accelerated"]["atol"] == record["golden"]["atol"]
    report = (out / "report/report.md").read_text()
    assert "## Quantization" in report and "uint8 activations, uint8 weights, per-tensor, ops Conv, Gemm" in report
    assert "Relu, Clip (for nnapi)" in report and "GlobalAveragePool" not in q["recipe"]["op_types"]  # NNAPI's unit ops only
    assert "Worst layers" in report and "samples from calib.npz, method minmax" in report and "→" in report
    assert 'id="quantization"' in (out / "report/report.html").read_text()
    assert "## Quantization" in (out / "README.md").read_text()
    assert verify_package(out).passed


def test_package_ships_quantized_android_and_fp32_ios_each_with_its_golden_vectors(cnn: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    args = ("package", cnn["model"], "--android", "--nnapi", "--ios", "--coreml", "--quantize", "int8", "--calibration", cnn["calib"])
    doc = _json(invoke(*args, "-o", out, "--zip", "--json"))
    by_target = {tuple(m["targets"]): m["quantization"] for m in doc["models"]}
    assert by_target[("android",)]["shipped"] == "int8" and by_target[("ios",)]["shipped"] == "fp32"
    assert QDQ <= _ops(out / "model/android/model.onnx") and not QDQ & _ops(out / "model/ios/model.onnx")
    assert not (out / "model/model.onnx").exists() and not list(out.glob(".fp32-*"))
    goldens = {tuple(m["targets"]): m["golden"]["npz"] for m in _manifest(out)["models"]}
    assert goldens == {("android",): "golden/android/golden.npz", ("ios",): "golden/golden.npz"}
    # each project replays its own model's golden vectors
    android_mgv = next((out / "android").rglob("androidTest/assets/*/golden.mgv")).read_bytes()
    ios_mgv = next((out / "ios").rglob("golden.mgv")).read_bytes()
    assert android_mgv == (out / "golden/android/golden.mgv").read_bytes() != ios_mgv == (out / "golden/golden.mgv").read_bytes()
    checked = verify_package(tmp_path / "pkg.zip")
    assert checked.passed and set(checked.models) == {"model/android/model.ort", "model/ios/model.ort"}


def test_ios_coreml_int8_ships_fp32_and_says_why(cnn: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "ios"
    doc = _json(invoke("ios", cnn["model"], "--coreml", "--quantize", "int8", "--calibration", cnn["calib"], "-o", out, "--json"))
    (model,) = doc["models"]
    assert model["quantization"]["shipped"] == "fp32" and "QuantizeLinear/DequantizeLinear" in model["quantization"]["reason"]
    assert not QDQ & _ops(out / "model/model.onnx")
    said = [w for w in doc["warnings"] if w.startswith("--quantize int8: the iOS model ships fp32")]
    assert said and "no QuantizeLinear/DequantizeLinear builders" in said[0]
    assert "no QuantizeLinear/DequantizeLinear builders" in (out / "report/report.md").read_text()
    assert "ships fp32" in (out / "ios/README.md").read_text()
    assert verify_package(out).passed


def _coreml(doc: dict[str, Any]) -> dict[str, Any]:
    (report,) = [r for r in doc["coverage"] if r["ep"] == "coreml"]
    return report


def test_ios_fp16_ships_float16_and_keeps_coreml_coverage(cnn: dict[str, Path], tmp_path: Path) -> None:
    fp32 = _coreml(_json(invoke("ios", cnn["model"], "--coreml", "-o", tmp_path / "fp32", "--json")))
    doc = _json(invoke("ios", cnn["model"], "--coreml", "--quantize", "fp16", "-o", tmp_path / "fp16", "--json"))
    assert doc["models"][0]["quantization"]["shipped"] == "fp16"
    shipped = onnx.load(str(tmp_path / "fp16/model/model.onnx"))
    floats = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16}
    assert {i.data_type for i in shipped.graph.initializer if i.dims and i.data_type in floats} == {onnx.TensorProto.FLOAT16}
    assert [i.type.tensor_type.elem_type for i in shipped.graph.input] == [onnx.TensorProto.FLOAT]  # wrappers unchanged
    fp16 = _coreml(doc)
    # the same nodes are refused and the partitions stay; the model gains the casts of its float32 IO,
    # which CoreML takes (ORT's optimizer drops the input's into the first op)
    casts = fp16["total_nodes"] - fp32["total_nodes"]
    assert 0 <= casts <= 2
    assert fp16["supported_nodes"] - fp32["supported_nodes"] == casts
    assert len(fp16["partitions"]) == len(fp32["partitions"])
    assert _refused(tmp_path / "fp16") == _refused(tmp_path / "fp32") == []  # Flatten became a Reshape (flatten-reshape)
    assert verify_package(tmp_path / "fp16").passed


def _refused(out: Path) -> list[tuple[str, str]]:
    (report,) = json.loads((out / "report/coverage.json").read_text())["reports"]
    return [(n["op_type"], n["name"]) for n in report["nodes"] if not n["supported"]]


def test_constant_calibration_fails_the_gate_with_the_table_and_leaves_nothing(cnn: dict[str, Path], tmp_path: Path) -> None:
    const = tmp_path / "const.npz"
    np.savez(const, x=np.full((20, 1, 1, 16, 16), 0.01, np.float32))
    out = tmp_path / "out"
    result = invoke("android", cnn["model"], "--nnapi", "--quantize", "int8", "--calibration", const, "--eval", cnn["eval"], "-o", out)
    assert_fails(result, 5, "the quantized android model (.ort, int8 for nnapi) lost too much accuracy", "logits: cosine")
    details = error_details(result)
    assert details[0].split() == ["output", "cosine", "max", "abs", "top-1"]
    assert any(d.startswith("logits") and d.endswith("FAIL") for d in details)
    assert "lowest signal-to-quantization-noise:" in details and any(d.endswith(" dB") for d in details)
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["calib.npz", "const.npz", "eval.npz"]
    # --json: the same table as data (QA: the details were only the text lines)
    doc = json.loads(invoke("android", cnn["model"], "--nnapi", "--quantize", "int8", "--calibration", const, "--eval", cnn["eval"], "-o", out, "--json").stdout)
    assert doc["exit_code"] == 5 and doc["accuracy"]["passed"] is False
    (logits,) = [o for o in doc["accuracy"]["outputs"] if o["name"] == "logits"]
    assert logits["cosine"] < doc["accuracy"]["min_cosine"] and doc["accuracy"]["worst_layers"]
    assert not out.exists()


def test_random_calibration_builds_and_says_untrustworthy(cnn: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    doc = _json(invoke("android", cnn["model"], "--nnapi", "--quantize", "int8", "--calibration", "random", "-o", out, "--json"))
    calibration = doc["models"][0]["quantization"]["calibration"]
    assert calibration["trustworthy"] is False and calibration["source"].startswith("random")
    assert any(w.startswith("UNTRUSTWORTHY quantization: calibrated on random") for w in doc["warnings"])
    for page in ("report/report.md", "report/report.html", "README.md", "android/README.md"):
        assert "UNTRUSTWORTHY" in (out / page).read_text(), page
    assert _manifest(out)["models"][0]["quantization"]["calibration"]["trustworthy"] is False
    assert verify_package(out).passed


@pytest.mark.parametrize("mode", ["fp16", "int8"])
def test_convert_quantize_writes_the_quantized_ort(cnn: dict[str, Path], tmp_path: Path, mode: str) -> None:
    out = tmp_path / "m.ort"
    calibration = ("--calibration", cnn["calib"]) if mode == "int8" else ()
    doc = _json(invoke("convert", cnn["model"], "-o", out, "--quantize", mode, *calibration, "--json"))
    q = doc["quantization"]
    assert q["shipped"] == mode and q["recipe"]["provider"] == "cpu" and q["size"]["ort_after"] < q["size"]["ort_before"]
    assert out.stat().st_size == q["size"]["ort_after"]
    assert "# - m.ort" in (tmp_path / "m.required_operators.config").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calib.npz", "eval.npz", "m.ort", "m.required_operators.config"]
