"""Quantizing keeps the accelerator's coverage: the NNAPI int8 build of the example MobileNet runs whole on
NNAPI in one partition (as its fp32 build does), and an XNNPACK int8 package takes at least the nodes its
fp32 package takes (the recipes quantize only the ops whose QDQ units the provider takes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from cli_helpers import invoke
from onnx import TensorProto, helper, numpy_helper

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mobilenet_tiny.pt"


def _json(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


@pytest.mark.slow
def test_mobilenet_int8_runs_whole_on_nnapi(tmp_path: Path) -> None:
    """Before: 88/91 nodes in 2 partitions (GlobalAveragePool's QDQ unit on the CPU)."""
    out = tmp_path / "out"
    doc = _json(invoke("android", EXAMPLE, "--input", "image:1x3x64x64", "--nnapi", "--quantize", "int8",
                       "--calibration", "random", "-o", out, "--json"))  # fmt: skip
    (cov,) = doc["coverage"]
    assert cov["ep"] == "nnapi" and cov["supported_nodes"] == cov["total_nodes"] and len(cov["partitions"]) == 1, cov["suggestions"]
    (entry,) = doc["models"]
    q = entry["quantization"]
    assert q["shipped"] == "int8" and q["quantized_nodes"] >= 10
    assert "GlobalAveragePool" not in q["recipe"]["op_types"] and "every other op stays float" in q["recipe"]["reason"]
    assert not list(tmp_path.glob("**/*.tmp"))


@pytest.mark.slow
def test_mobilenet_task_int8_with_softmax_runs_whole_on_nnapi(tmp_path: Path) -> None:
    """QA: with --softmax the recipe quantized Softmax, whose unit NNAPI refuses (its output must be at scale
    1/256, which calibration never gives): 90/95 nodes in 2 partitions, where fp32 has 1."""
    labels = tmp_path / "labels.txt"
    labels.write_text("".join(f"class {i}\n" for i in range(10)), encoding="utf-8")
    doc = _json(invoke("android", EXAMPLE, "--input", "image:1x3x64x64", "--nnapi", "--task", "image-classification",
                       "--labels", labels, "--softmax", "--top-k", "3", "--quantize", "int8", "--calibration", "random",
                       "--min-cosine", "0", "--min-top1", "0", "-o", tmp_path / "out", "--json"))  # fmt: skip
    (cov,) = doc["coverage"]
    assert len(cov["partitions"]) == 1, cov["suggestions"]
    assert "Softmax" not in doc["models"][0]["quantization"]["recipe"]["op_types"]


def _conv_gap_gemm(path: Path) -> Path:
    """x [1,3,16,16] → Conv → Relu → GlobalAveragePool → Flatten → Gemm → y [1,4]."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(np.zeros(8, np.float32), "b"),
        numpy_helper.from_array(rng.normal(0, 0.3, (4, 8)).astype(np.float32), "gw"),
        numpy_helper.from_array(np.zeros(4, np.float32), "gb"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["m"], name="flat"),
        helper.make_node("Gemm", ["m", "gw", "gb"], ["y"], name="fc", transB=1),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    model = helper.make_model(helper.make_graph(nodes, "toy", [x], [y], inits), opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    onnx.save(model, str(path))
    return path


@pytest.mark.slow
def test_xnnpack_int8_package_takes_at_least_the_fp32_nodes(tmp_path: Path) -> None:
    """Before: 5/18 (the quantized Gemm, the pool and their DQ/Q refused); fp32 takes 3/5."""
    model = _conv_gap_gemm(tmp_path / "toy.onnx")
    fp32 = _json(invoke("package", model, "--android", "--ios", "--xnnpack", "-o", tmp_path / "fp32", "--json"))
    int8 = _json(invoke("package", model, "--android", "--ios", "--xnnpack", "--quantize", "int8", "--calibration", "random",
                        "-o", tmp_path / "int8", "--json"))  # fmt: skip
    taken = {c["target"]: c["supported_nodes"] for c in fp32["coverage"]}
    assert set(taken) == {"android", "ios"}
    for cov in int8["coverage"]:
        assert cov["ep"] == "xnnpack" and cov["supported_nodes"] >= taken[cov["target"]], cov
        assert {"conv", "fc"} <= {name for part in cov["partitions"] for name in part}
    recipe = int8["models"][0]["quantization"]["recipe"]
    assert "Gemm" not in recipe["op_types"] and "Resize" not in recipe["op_types"]
