"""What a quantized build writes about itself: no calibration method for ``fp16``/``dynamic`` (manifest,
report, CLI JSON), no top-1 figure for ``--top-k``'s sorted ``scores``, and each golden folder's
``tolerances.json`` holding the tolerances of the model whose vectors it sits beside."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import invoke
from model_files import mean_matmul_classifier

from mobilegen.package import verify_package

BUILD_ATOL = 1e-4  # the default --atol


def _classifier(path: Path, classes: int = 4) -> Path:
    return mean_matmul_classifier(path, classes)


def _json(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _read(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


def test_fp16_top_k_package_records_no_method_no_sorted_top1_and_its_own_tolerances(tmp_path: Path) -> None:
    model = _classifier(tmp_path / "cls.onnx")
    labels = tmp_path / "labels.txt"
    labels.write_text("a\nb\nc\nd\n", encoding="utf-8")
    out = tmp_path / "out"
    doc = _json(invoke("package", model, "--android", "--ios", "-o", out, "--task", "image-classification", "--labels", labels,
                       "--top-k", "2", "--quantize", "fp16", "--json"))  # fmt: skip
    manifest = _read(out / "manifest.json")
    (entry,) = manifest["models"]
    (cli_entry,) = doc["models"]
    for q in (entry["quantization"], cli_entry["quantization"]):
        assert q["shipped"] == "fp16"
        assert q["calibration"]["method"] is None  # fp16 calibrates nothing
        rows = {(o["artifact"], o["output"]): o for o in q["accuracy"]["outputs"]}
        assert rows[("ort", "scores")]["top1"] is None and rows[("onnx", "scores")]["top1"] is None  # sorted: argmax is always column 0
        assert rows[("ort", "indices")]["exact"] is True and rows[("ort", "indices")]["top1"] == 1.0
    assert manifest["options"]["quantize"]["calibration_method"] is None
    report = (out / "report/report.md").read_text(encoding="utf-8")
    assert "method minmax" not in report
    assert re.search(r"^\| ort \| scores \| [0-9.]+ \| [0-9.]+ \| – \| pass \|$", report, re.M), report
    # the one quantized model's golden vectors are golden/: so are its tolerances
    golden = entry["golden"]
    assert golden["npz"] == "golden/golden.npz" and golden["atol"] > BUILD_ATOL  # fp16 rounds more than fp32's atol
    tol = _read(out / "golden/tolerances.json")
    assert (tol["atol"], tol["rtol"]) == (golden["atol"], golden["rtol"])
    assert tol["model"] == "model/model.ort" and tol["quantization"] == "fp16" and "ranges" in tol
    kotlin = next((out / "android").rglob("Cls.kt")).read_text(encoding="utf-8")
    assert f"const val ATOL: Double = {golden['atol']!r}" in kotlin  # what the device tests assert
    assert not verify_package(out).problems


@pytest.mark.parametrize(("mode", "calibration", "method"), [("dynamic", None, None), ("int8", "random", "entropy")])
def test_convert_json_records_a_method_only_when_it_calibrated(tmp_path: Path, mode: str, calibration: str | None, method: str | None) -> None:
    model = _classifier(tmp_path / "cls.onnx")
    flags = ["--calibration", calibration, "--calibration-method", method] if calibration and method else []
    gate = ["--min-cosine", "0", "--min-top1", "0"]  # a 3x4 MatMul on random inputs: the gate is not the point here
    q = _json(invoke("convert", model, "--quantize", mode, *flags, *gate, "-o", tmp_path / "m.ort", "--json"))["quantization"]
    assert q["shipped"] == mode and q["calibration"]["method"] == method


def test_per_target_golden_folders_carry_their_own_tolerances(tmp_path: Path) -> None:
    """NNAPI refuses fp16 (Android ships fp32, golden/), CoreML takes it (golden/ios/)."""
    model = _classifier(tmp_path / "cls.onnx")
    out = tmp_path / "out"
    r = invoke("package", model, "--android", "--nnapi", "--ios", "--coreml", "-o", out, "--quantize", "fp16", "--zip")
    assert r.exit_code == 0, r.stderr
    entries = {tuple(m["targets"]): m for m in _read(out / "manifest.json")["models"]}
    ios, android = entries[("ios",)], entries[("android",)]
    assert ios["quantization"]["shipped"] == "fp16" and android["quantization"]["shipped"] == "fp32"
    assert ios["golden"]["npz"] == "golden/ios/golden.npz" and ios["golden"]["atol"] > BUILD_ATOL
    own = _read(out / "golden/ios/tolerances.json")
    assert (own["atol"], own["rtol"]) == (ios["golden"]["atol"], ios["golden"]["rtol"]) and own["model"] == "model/ios/model.ort"
    shared = _read(out / "golden/tolerances.json")  # the fp32 Android model's, as before
    assert (shared["atol"], shared["rtol"]) == (android["golden"]["atol"], android["golden"]["rtol"]) == (BUILD_ATOL, 1e-3)
    assert "model" not in shared
    assert "golden/ios/tolerances.json" in (out / "report/report.md").read_text(encoding="utf-8")  # listed with the sizes
    assert not verify_package(Path(str(out) + ".zip")).problems
