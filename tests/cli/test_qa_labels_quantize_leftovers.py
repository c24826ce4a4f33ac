"""QA findings: labels files (trailing blank lines, duplicates), the --labels-without---task hint, what
fp16/dynamic say their gate ran on, and no parent folder of -o left behind by a failed run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from cli_helpers import assert_fails, invoke
from model_files import mean_matmul_classifier
from onnx import TensorProto, helper, numpy_helper

from mobilegen.errors import UsageError
from mobilegen.infra.outputs import staged_files
from mobilegen.report.quantization import calibration_fact
from mobilegen.tasks.spec import duplicate_labels, read_labels


def _classifier(path: Path, classes: int = 3) -> Path:
    return mean_matmul_classifier(path, classes)


def _matmul(path: Path) -> Path:
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x], [y], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


# ----------------------------------------------------------------------------- labels files


@pytest.mark.parametrize("data", [b"cat\ndog\n\n", b"cat\r\ndog\r\n\r\n\r\n", b"\xef\xbb\xbfcat\ndog\n \n\t\n", b"cat\ndog"])
def test_trailing_blank_lines_end_the_labels(tmp_path: Path, data: bytes) -> None:
    f = tmp_path / "labels.txt"
    f.write_bytes(data)
    assert read_labels(f) == ("cat", "dog")


def test_a_blank_line_before_the_last_label_stays_an_error(tmp_path: Path) -> None:
    f = tmp_path / "labels.txt"
    f.write_bytes(b"cat\n\ndog\n\n")
    with pytest.raises(UsageError, match="line 2 is empty"):
        read_labels(f)


def test_duplicate_labels_are_found_with_their_lines() -> None:
    assert duplicate_labels(("crane", "dog", "crane", "dog", "cat")) == {"crane": [1, 3], "dog": [2, 4]}
    assert duplicate_labels(("a", "b")) == {}


def test_duplicate_labels_build_with_a_warning_and_trailing_blank_lines_ship_trimmed(tmp_path: Path) -> None:
    model = _classifier(tmp_path / "cls.onnx")
    labels = tmp_path / "labels.txt"
    labels.write_bytes(b"crane\ndog\ncrane\n\n\n")
    out = tmp_path / "out"
    r = invoke("android", model, "-o", out, "--task", "image-classification", "--labels", labels)
    assert r.exit_code == 0, r.stderr
    said = "--labels names 1 label more than once ('crane' on lines 1, 3)"
    assert said in r.stdout + r.stderr
    assert any(said in w for w in json.loads((out / "manifest.json").read_text(encoding="utf-8"))["warnings"])
    assert (out / "model/labels.txt").read_bytes() == b"crane\ndog\ncrane\n"


def test_labels_without_task_names_the_tasks_that_take_them(tmp_path: Path) -> None:
    """image-classification, and since issue 26 audio (an audio classifier); never --task image."""
    model = _classifier(tmp_path / "cls.onnx")
    labels = tmp_path / "labels.txt"
    labels.write_text("a\nb\nc\n", encoding="utf-8")
    r = invoke("android", model, "-o", tmp_path / "out", "--labels", labels)
    assert_fails(r, 2, "--labels needs --task")
    assert "add --task image-classification" in r.stderr and "--task image or" not in r.stderr and "--task audio" in r.stderr
    assert_fails(invoke("android", model, "-o", tmp_path / "out", "--crop", "8x8"), 2, "--crop needs --task")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cls.onnx", "labels.txt"]


# ----------------------------------------------------------------------------- fp16 / dynamic: what the gate ran on


def test_calibration_fact_for_modes_that_calibrate_nothing() -> None:
    assert calibration_fact({"source": "random (seed 0) inputs", "count": 0}, "fp16") == (
        "accuracy measured on",
        "random (seed 0) inputs (--quantize fp16 calibrates nothing)",
    )
    assert calibration_fact({"source": "calib.npz", "count": 26, "method": "minmax"}, "int8", method=True) == ("calibration", "26 samples from calib.npz, method minmax")


@pytest.mark.parametrize(
    ("mode", "calibration", "measured", "samples"),
    [("fp16", "random", "accuracy measured on random (seed 0) inputs (--quantize fp16 calibrates nothing)", None),
     ("dynamic", "calib.npz", "accuracy measured on the samples of calib.npz (--quantize dynamic calibrates nothing)", 32)],
)  # fmt: skip
def test_fp16_and_dynamic_say_what_the_gate_ran_on(tmp_path: Path, mode: str, calibration: str, measured: str, samples: int | None) -> None:
    model = _matmul(tmp_path / "mm.onnx")
    np.savez(tmp_path / "calib.npz", x=np.random.default_rng(0).random((32, 1, 4), dtype=np.float32))
    calib = tmp_path / calibration if calibration.endswith(".npz") else calibration
    r = invoke("convert", model, "--quantize", mode, "--calibration", calib, "-o", tmp_path / "t.ort")
    assert r.exit_code == 0, r.stderr
    text = r.stdout + r.stderr
    assert measured in text, text
    assert "calibrated on" not in text and "UNTRUSTWORTHY" not in text and "calibration calib.npz" not in text and "calibration random" not in text
    r = invoke("convert", model, "--quantize", mode, "--calibration", calib, "-o", tmp_path / "j.ort", "--json")
    assert r.exit_code == 0, r.stderr
    q = json.loads(r.stdout)["quantization"]
    assert q["calibration"]["count"] == 0 and q["calibration"]["trustworthy"] is True
    if samples is not None:  # nothing calibrated: the gate runs on every sample, none held out
        assert q["accuracy"]["samples"] == samples


# ----------------------------------------------------------------------------- no parent of -o left behind


def test_failed_folder_output_removes_the_parents_it_made(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"garbage\n")
    assert_fails(invoke("android", bad, "-o", tmp_path / "out8" / "deep" / "p"), 3, "bad.pt is not a model")
    (tmp_path / "keep").mkdir()
    assert_fails(invoke("android", bad, "-o", tmp_path / "keep" / "new" / "p", "--zip"), 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.pt", "keep"]
    assert list((tmp_path / "keep").iterdir()) == []  # a folder that was there stays


def test_failed_file_output_removes_the_parents_it_made(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"garbage\n")
    assert_fails(invoke("export", bad, "-o", tmp_path / "q7" / "a" / "c.onnx"), 3)
    assert_fails(invoke("convert", bad, "-o", tmp_path / "q8" / "c.ort"), 3)
    (tmp_path / "keep").mkdir()
    assert_fails(invoke("export", bad, "-o", tmp_path / "keep" / "c.onnx"), 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.pt", "keep"]
    assert list((tmp_path / "keep").iterdir()) == []


def test_staged_files_keep_the_parents_they_made_on_success_only(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), staged_files([tmp_path / "a" / "b" / "f.txt"], force=False) as (staged,):
        staged.path.write_text("x")
        raise RuntimeError("the run failed")
    assert list(tmp_path.iterdir()) == []
    with staged_files([tmp_path / "a" / "b" / "f.txt"], force=False) as (staged,):
        staged.path.write_text("x")
    assert (tmp_path / "a" / "b" / "f.txt").read_text() == "x"
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["f.txt"]
