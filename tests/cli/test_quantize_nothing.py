"""A recipe that finds none of its ops in the model says so: XNNPACK's int8 recipe quantizes Conv, MaxPool and
ConvTranspose only, so a MatMul model would get nothing quantized: it ships its fp32 model, with the reason,
like a provider's refusal — not a model labelled int8 with nothing quantized (QA)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from cli_helpers import invoke
from onnx import TensorProto, helper, numpy_helper


def _matmul_model(path: Path) -> Path:
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        [w],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def test_int8_that_quantizes_nothing_ships_fp32_with_the_reason(tmp_path: Path) -> None:
    model = _matmul_model(tmp_path / "mm.onnx")
    result = invoke("android", model, "--xnnpack", "--quantize", "int8", "--calibration", "random", "-o", tmp_path / "a", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    (line,) = [w for w in doc["warnings"] if "none of the ops" in w]
    assert line.startswith("--quantize int8: the Android model ships fp32") and "xnnpack recipe quantizes (Conv" in line
    q = doc["models"][0]["quantization"]
    assert q["shipped"] == "fp32" and "none of the ops" in q["reason"]
    plain = invoke("android", model, "--xnnpack", "-o", tmp_path / "b")
    assert plain.exit_code == 0, plain.output
    assert (tmp_path / "a/model/model.ort").read_bytes() == (tmp_path / "b/model/model.ort").read_bytes()
    assert "int8-quantized" not in (tmp_path / "a/android/README.md").read_text()
    conv = invoke("android", model, "--nnapi", "--quantize", "int8", "--calibration", "random", "-o", tmp_path / "c", "--json")
    assert conv.exit_code == 0, conv.output  # NNAPI's recipe quantizes MatMul
    assert json.loads(conv.stdout)["models"][0]["quantization"]["shipped"] == "int8"
