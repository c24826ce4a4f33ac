"""`mobilegen check`: exit codes and one-line messages for bad input, gates, and the JSON contract."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
from cli_helpers import assert_fails, invoke
from onnx import TensorProto, helper

F = TensorProto.FLOAT


@pytest.fixture
def model(tmp_path: Path) -> Path:
    """Relu -> Erf -> Relu: NNAPI has no Erf builder (2 partitions, 67%), CoreML MLProgram takes all."""
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="r1"),
        helper.make_node("Erf", ["a"], ["b"], name="erf"),
        helper.make_node("Relu", ["b"], ["y"], name="r2"),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [1, 4])], [helper.make_tensor_value_info("y", F, [1, 4])])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_unknown_ep(model: Path) -> None:
    assert_fails(invoke("check", model, "--ep", "tpu"), 2, "unknown --ep 'tpu'", "nnapi, coreml, xnnpack")


def test_unknown_coreml_format(model: Path) -> None:
    assert_fails(invoke("check", model, "--ep", "coreml", "--coreml-format", "mlmodel"), 2, "unknown --coreml-format")


@pytest.mark.parametrize("api", [26, 37])
def test_android_api_out_of_range(model: Path, api: int) -> None:
    assert_fails(invoke("check", model, "--ep", "nnapi", "--android-api", api), 2, f"--android-api {api} is outside 27..36")


@pytest.mark.parametrize("pct", ["-1", "101"])
def test_fail_under_out_of_range(model: Path, pct: str) -> None:
    assert_fails(invoke("check", model, "--ep", "nnapi", "--fail-under", pct), 2, "--fail-under", "outside 0..100")


def test_max_partitions_zero(model: Path) -> None:
    assert_fails(invoke("check", model, "--ep", "nnapi", "--max-partitions", 0), 2, "--max-partitions 0")


def test_missing_model(tmp_path: Path) -> None:
    assert_fails(invoke("check", tmp_path / "nope.onnx", "--ep", "nnapi"), 2, "no such file")


def test_broken_onnx(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a protobuf at all")
    assert_fails(invoke("check", bad, "--ep", "nnapi"), 3, "not a model mobilegen can read")


def test_json_contract(model: Path) -> None:
    result = invoke("check", model, "--ep", "nnapi", "--ep", "coreml", "--json")
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    labels = [(r["ep"], r["format"]) for r in payload["reports"]]
    assert labels == [("nnapi", None), ("coreml", "mlprogram"), ("coreml", "neuralnetwork")]
    nn = payload["reports"][0]
    assert {"ep", "format", "total_nodes", "supported_nodes", "partitions", "verdict", "nodes"} <= set(nn)
    assert nn["total_nodes"] == 3 and nn["supported_nodes"] == 2
    assert nn["partitions"] == [["r1"], ["r2"]]
    assert nn["verdict"] == "no"
    erf = next(n for n in nn["nodes"] if n["name"] == "erf")
    assert erf == {
        "name": "erf",
        "op_type": "Erf",
        "domain": "",
        "supported": False,
        "reasons": ["op Erf has no NNAPI builder"],
        "refusals": [{"rule": "nnapi.registered", "category": "op", "text": "op Erf has no NNAPI builder", "min_api": None}],
    }
    assert payload["reports"][1]["verdict"] == "yes"


def test_human_table(model: Path) -> None:
    result = invoke("check", model, "--ep", "nnapi")
    assert result.exit_code == 0
    assert "nnapi: 2/3 nodes" in result.stderr
    assert "op Erf has no NNAPI builder" in result.stderr
    assert "replace Erf" in result.stderr


def test_fail_under_gate_prints_then_exits_7(model: Path) -> None:
    result = invoke("check", model, "--ep", "nnapi", "--fail-under", 80, "--json")
    assert result.exit_code == 7
    assert json.loads(result.stdout)["reports"][0]["supported_nodes"] == 2  # results printed first
    assert_fails(result, 7, "coverage gate failed")
    assert "below --fail-under 80" in result.stderr


def test_max_partitions_gate(model: Path) -> None:
    assert invoke("check", model, "--ep", "nnapi", "--max-partitions", 2).exit_code == 0
    result = invoke("check", model, "--ep", "nnapi", "--max-partitions", 1)
    assert_fails(result, 7, "coverage gate failed")
    assert "2 partitions, above --max-partitions 1" in result.stderr


def test_gate_passes_for_coreml(model: Path) -> None:
    result = invoke("check", model, "--ep", "coreml", "--coreml-format", "mlprogram", "--fail-under", 100, "--max-partitions", 1)
    assert result.exit_code == 0, result.stderr


def test_cli_api_range_matches_the_analysis(model: Path) -> None:
    from mobilegen import providers
    from mobilegen.coverage import EPTarget

    setting = providers.get("nnapi").setting("android_api")
    assert setting is not None and setting.minimum is not None and setting.maximum is not None
    for api in (setting.minimum, setting.maximum):
        assert EPTarget("nnapi", android_api=api).int_value("android_api") == api
        assert invoke("check", model, "--ep", "nnapi", "--android-api", api, "--json").exit_code == 0
    assert_fails(invoke("check", model, "--ep", "nnapi", "--android-api", setting.maximum + 1), 2, f"outside {setting.range_text}")
