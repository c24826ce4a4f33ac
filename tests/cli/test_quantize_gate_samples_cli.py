"""The quantization gate's samples and tolerances through the CLI: an empty ``--eval`` is a usage error
(it passed any model), ``fp16``/``dynamic`` build from a calibration file too small to split, an int8
model's golden atol covers two steps of its quantized output wherever it is written (tolerances.json,
manifest, Kotlin constants) and the README says why, and the build's verification table shows no top-1
for ``--top-k``'s sorted scores."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from cli_helpers import assert_fails, invoke, private_tmpdir
from model_files import mean_matmul_classifier
from onnx import numpy_helper

BUILD_ATOL = 1e-4  # the default --atol


@pytest.fixture(autouse=True)
def _tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from private_tmpdir(tmp_path, monkeypatch)  # no temp folder left behind, failed or not


def _classifier(path: Path, classes: int = 4) -> Path:
    return mean_matmul_classifier(path, classes)


def _samples(path: Path, n: int) -> Path:
    np.savez(path, x=np.random.default_rng(1).random((n, 1, 3, 8, 8), dtype=np.float32))
    return path


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != "TMPDIR")


@pytest.mark.parametrize(("command", "mode"), [("android", "int8"), ("convert", "fp16")])
def test_an_empty_eval_file_is_a_usage_error(tmp_path: Path, command: str, mode: str) -> None:
    model = _classifier(tmp_path / "cls.onnx")
    calib, empty = _samples(tmp_path / "calib.npz", 16), _samples(tmp_path / "empty.npz", 0)
    out = tmp_path / ("out.ort" if command == "convert" else "out")
    r = invoke(command, model, "-o", out, "--quantize", mode, "--calibration", calib, "--eval", empty)
    assert_fails(r, 2, "--eval empty.npz holds 0 samples: too few to check accuracy")  # built and "passed" the gate
    assert "— give at least 2 samples in --eval" in r.stderr
    assert _files(tmp_path) == ["calib.npz", "cls.onnx", "empty.npz"]


@pytest.mark.parametrize("mode", ["fp16", "dynamic"])
def test_modes_that_calibrate_nothing_gate_on_a_small_calibration_file(tmp_path: Path, mode: str) -> None:
    model, calib = _classifier(tmp_path / "cls.onnx"), _samples(tmp_path / "calib.npz", 5)
    gate = ("--min-cosine", "0.5", "--min-top1", "0")  # this tiny model loses accuracy when dynamic: not what is tested
    r = invoke("convert", model, "-o", tmp_path / "out.ort", "--quantize", mode, "--calibration", calib, *gate, "--json")
    assert r.exit_code == 0, r.stderr  # was "calib.npz holds 5 samples: too few to calibrate and to check accuracy"
    q = json.loads(r.stdout)["quantization"]
    assert q["accuracy"]["samples"] == 5 and q["calibration"]["eval"] == "the samples of calib.npz"


def _read(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


def _last_dequantize_scale(model: Path, output: str) -> float:
    graph = onnx.load(str(model)).graph
    (dq,) = [n for n in graph.node if output in n.output]
    assert dq.op_type == "DequantizeLinear"
    (scale,) = [numpy_helper.to_array(t) for t in graph.initializer if t.name == dq.input[1]]
    return float(scale.max())


def test_int8_golden_atol_covers_two_output_steps_everywhere_and_says_why(tmp_path: Path) -> None:
    model = _classifier(tmp_path / "cls.onnx")
    out = tmp_path / "out"
    r = invoke("android", model, "--nnapi", "-o", out, "--quantize", "int8", "--calibration", "random")
    assert r.exit_code == 0, r.stderr
    step = _last_dequantize_scale(out / "model/model.onnx", "y")
    (entry,) = _read(out / "manifest.json")["models"]
    gate_error = max(o["max_abs"] for o in entry["quantization"]["accuracy"]["outputs"])
    assert gate_error < 2 * step  # so the gate's error alone (the old atol) was below two steps
    atol = entry["golden"]["atol"]
    # the golden values are the model's own outputs: two steps, or 1% of the largest |golden value|, at most a
    # quarter of the smallest case's largest |golden value| (issue 26)
    peaks = [float(np.abs(np.load(p)["output:y"]).max()) for p in sorted((out / "golden").glob("golden*.npz"))]
    assert len(peaks) > 1  # every case is the quantized model's own
    assert atol == pytest.approx(min(max(2 * step, 0.01 * max(peaks), 1e-4), 0.25 * min(peaks)))
    tolerances = _read(out / "golden/tolerances.json")
    assert tolerances["atol"] == atol and tolerances["output_step"] == pytest.approx(step)
    assert tolerances["derivation"] == entry["quantization"]["golden_tolerance"] and tolerances["derivation"]["atol"] == atol
    kotlin = next((out / "android").rglob("Cls.kt")).read_text(encoding="utf-8")
    constants = dict(re.findall(r"const val (ATOL|ACCELERATED_ATOL): Double = ([0-9.e-]+)", kotlin))
    assert float(constants["ATOL"]) == float(constants["ACCELERATED_ATOL"]) == atol
    readme = (out / "android/README.md").read_text(encoding="utf-8")
    accelerated = next(line for line in readme.splitlines() if line.startswith("| accelerated"))
    assert "float32, like the CPU provider" not in accelerated and "int8-quantized" in accelerated


def test_the_verification_table_shows_no_top1_for_sorted_top_k_scores(tmp_path: Path) -> None:
    model = _classifier(tmp_path / "cls.onnx")
    labels = tmp_path / "labels.txt"
    labels.write_text("a\nb\nc\nd\n", encoding="utf-8")
    r = invoke("android", model, "-o", tmp_path / "out", "--task", "image-classification", "--labels", labels, "--top-k", "2", "--json")
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)["verification"]["rows"]
    assert {row["output"] for row in rows} == {"scores", "indices"}
    assert all(row["top1"] is None for row in rows), rows  # scores: always 1 (sorted); indices: the argmax of class ids
