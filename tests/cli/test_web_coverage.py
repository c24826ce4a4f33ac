"""A Web package's report says what runs on WebGPU (what the package tries first), without letting WebGPU decide
what the build fixes or quantizes: WASM runs every operator, so an int8 build still ships int8."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from cli_helpers import invoke
from onnx import TensorProto, helper, numpy_helper


def _conv(path: Path) -> Path:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w]), opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _conv(tmp_path_factory.mktemp("webcov") / "conv.onnx")


def _manifest(out: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def test_the_web_report_shows_webgpu_coverage(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "w"
    r = invoke("web", model, "-o", out)
    assert r.exit_code == 0, r.stderr
    (cov,) = _manifest(out)["coverage"]
    assert (cov["ep"], cov["target"], cov["supported_nodes"], cov["total_nodes"], cov["partitions"]) == ("webgpu", "web", 2, 2, 1)
    assert cov["settings"]["ort_version"] == "1.30.0"  # the onnxruntime-web the package pins
    assert "webgpu" in (out / "report" / "report.md").read_text(encoding="utf-8")


def test_int8_web_ships_int8_and_reports_what_stays_off_the_gpu(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "w8"
    r = invoke("web", model, "--quantize", "int8", "--calibration", "random", "-o", out)
    assert r.exit_code == 0, r.stderr
    doc = _manifest(out)
    assert doc["models"][0]["quantization"]["shipped"] == "int8"
    (cov,) = doc["coverage"]
    assert cov["ep"] == "webgpu" and cov["supported_nodes"] < cov["total_nodes"]
    assert any(op["op"] == "QuantizeLinear" for op in cov["refused_ops"])  # JSEP has no QuantizeLinear kernel
