"""``--quantize int8`` judged on the target's first provider (issue 27): the quantized model places no worse
on NNAPI than the fp32 one — a recipe that would split the partition is narrowed (the JSON and the report
say which nodes stay float, and the coverage before and after), and one that narrowing empties ships fp32
with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from cli_helpers import invoke
from onnx import TensorProto, helper, numpy_helper

SHAPE = [1, 4, 8, 8]


def _save(path: Path, nodes: list[onnx.NodeProto], inputs: list[str], inits: list[onnx.TensorProto]) -> Path:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(i, TensorProto.FLOAT, SHAPE) for i in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)], inits,
    )  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def _build(model: Path, out: Path) -> dict[str, object]:
    result = invoke("android", model, "--nnapi", "--quantize", "int8", "--calibration", "random", "-o", out, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


def _conv_attention(path: Path) -> Path:
    """x → Conv 1x1 → c; MatMul(c, c) (attention's Q·Kᵀ: no quantized batch MatMul on NNAPI) → Add → y."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.normal(0, 0.5, (4, 4, 1, 1)).astype(np.float32), "w"),
        numpy_helper.from_array(rng.normal(0, 0.1, (4,)).astype(np.float32), "b"),
        numpy_helper.from_array(rng.normal(0, 0.1, SHAPE).astype(np.float32), "bias"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv"),
        helper.make_node("MatMul", ["c", "c"], ["m"], name="mm"),
        helper.make_node("Add", ["m", "bias"], ["y"], name="add"),
    ]
    return _save(path, nodes, ["x"], inits)


def test_a_recipe_that_would_split_nnapi_is_narrowed_and_reported(tmp_path: Path) -> None:
    doc = _build(_conv_attention(tmp_path / "m.onnx"), tmp_path / "a")
    q = doc["models"][0]["quantization"]  # type: ignore[index]
    assert q["shipped"] == "int8"
    cov = q["coverage"]
    assert cov["provider"] == "nnapi" and "mm" in cov["left_float"] and cov["refused"] is None
    assert cov["fp32"]["partitions"] == 1 and cov["recipe"]["partitions"] > 1 and cov["quantized"]["partitions"] == 1
    (nnapi,) = [r for r in doc["coverage"] if r["ep"] == "nnapi"]  # type: ignore[union-attr]
    assert len(nnapi["partitions"]) == 1 and nnapi["supported_nodes"] == nnapi["total_nodes"] == cov["quantized"]["total_nodes"]
    report = (tmp_path / "a/report/report.md").read_text()
    assert "placement" in report and "nnapi: fp32 3/3 nodes, 1 partition → int8" in report and "left float" in report


def test_narrowing_that_leaves_nothing_quantized_ships_fp32_with_the_reason(tmp_path: Path) -> None:
    model = _save(tmp_path / "b.onnx", [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], ["a", "b"], [])
    doc = _build(model, tmp_path / "a")
    q = doc["models"][0]["quantization"]  # type: ignore[index]
    assert q["shipped"] == "fp32" and "left float: mm" in q["reason"] and "placement of the fp32 model" in q["reason"]
    assert q["coverage"]["left_float"] == ["mm"] and q["coverage"]["recipe"]["partitions"] > 1
    (line,) = [w for w in doc["warnings"] if "left float" in w]  # type: ignore[union-attr]
    assert line.startswith("--quantize int8: the Android model ships fp32")
    plain = invoke("android", model, "--nnapi", "-o", tmp_path / "b")
    assert plain.exit_code == 0, plain.output
    assert (tmp_path / "a/model/model.ort").read_bytes() == (tmp_path / "b/model/model.ort").read_bytes()
    assert "left float" in (tmp_path / "a/report/report.md").read_text()


def test_a_worse_recipe_narrowing_cannot_fix_ships_fp32_with_the_coverage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When no refused node can be left float (the analysis blames nodes the quantized model does not name:
    here, simulated), the recipe is refused: fp32 ships, the reason gives both coverages."""
    import mobilegen.quantize.judged as judged

    monkeypatch.setattr(judged, "offenders", lambda *args, **kwargs: [])
    doc = _build(_conv_attention(tmp_path / "m.onnx"), tmp_path / "a")
    q = doc["models"][0]["quantization"]  # type: ignore[index]
    assert q["shipped"] == "fp32" and q["coverage"]["refused"] == q["reason"]
    assert "makes nnapi placement worse than the fp32 model's (3/3 nodes, 1 partition → " in q["reason"]
    assert "still refused: " in q["reason"] and "mm" in q["reason"]
    assert any("ships fp32" in w and "placement worse" in w for w in doc["warnings"])  # type: ignore[union-attr]
    (nnapi,) = [r for r in doc["coverage"] if r["ep"] == "nnapi"]  # type: ignore[union-attr]
    assert len(nnapi["partitions"]) == 1 and nnapi["total_nodes"] == 3  # the fp32 model's placement ships
