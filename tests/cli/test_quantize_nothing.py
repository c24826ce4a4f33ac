"""A recipe that finds none of its ops in the model says so: XNNPACK's int8 recipe quantizes Conv, MaxPool and
ConvTranspose only, so a MatMul model ships as float32 under --quantize int8 — with a warning, not silently."""

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


def test_int8_that_quantizes_nothing_warns(tmp_path: Path) -> None:
    model = _matmul_model(tmp_path / "mm.onnx")
    result = invoke("android", model, "--xnnpack", "--quantize", "int8", "--calibration", "random", "-o", tmp_path / "a", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    (line,) = [w for w in doc["warnings"] if "nothing in it is quantized" in w]
    assert "the android model has none of the ops the xnnpack recipe quantizes (Conv" in line
    assert doc["models"][0]["quantization"]["quantized_nodes"] == 0
    conv = invoke("android", model, "--nnapi", "--quantize", "int8", "--calibration", "random", "-o", tmp_path / "b", "--json")
    assert conv.exit_code == 0, conv.output  # NNAPI's recipe quantizes MatMul: no such warning
    assert not [w for w in json.loads(conv.stdout)["warnings"] if "nothing in it is quantized" in w]
