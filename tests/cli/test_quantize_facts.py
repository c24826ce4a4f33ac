"""What --quantize fp16/dynamic say: the calibration fact for modes that calibrate nothing, and what the gate ran on."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from cli_helpers import invoke
from onnx import TensorProto, helper, numpy_helper

from mobilegen.report.quantization import calibration_fact


def _matmul(path: Path) -> Path:
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x], [y], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


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
