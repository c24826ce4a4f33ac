"""`mobilegen check` suggestions: each says what to do (an API level, a named replacement, a limit), only
ones that reduce the partitions or raise the verdict are shown, and a missed gate's hint reads the same
on a terminal and in the JSON document (no "see above")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from cli_helpers import assert_fails, invoke, private_tmpdir
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
N = helper.make_node


@pytest.fixture(autouse=True)
def _tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # the analysis stages the model in TMPDIR; nothing is left there (.ses: onnxruntime's telemetry file)
    yield from private_tmpdir(tmp_path, monkeypatch, ignore=frozenset({".ses"}))


def _model(path: Path, nodes: list[onnx.NodeProto], inits: tuple[onnx.TensorProto, ...] = ()) -> Path:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", F, [1, 4])], [helper.make_tensor_value_info("y", F, [1, 4])], list(inits)
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def _suggestions(model: Path, *flags: str) -> list[str]:
    result = invoke("check", model, "--ep", "nnapi", *flags, "--json")
    assert result.exit_code == 0, result.stderr
    return list(json.loads(result.stdout)["reports"][0]["suggestions"])


def test_a_node_refused_only_for_the_api_level_says_the_level_and_is_not_told_to_be_replaced(tmp_path: Path) -> None:
    model = _model(tmp_path / "abs.onnx", [N("Relu", ["x"], ["a"], name="r1"), N("Abs", ["a"], ["b"], name="abs"), N("Relu", ["b"], ["y"], name="r2")])
    result = invoke("check", model, "--ep", "nnapi", "--android-api", "27")
    assert result.exit_code == 0, result.stderr
    assert "needs Android API 29, target is 27" in result.stderr
    suggestions = _suggestions(model, "--android-api", "27")
    assert suggestions == ["target Android API 29+ (--android-api 29): 2 partitions → 1, 67% → 100% of nodes, verdict no → yes"]
    payload = json.loads(invoke("check", model, "--ep", "nnapi", "--android-api", "27", "--json").stdout)
    abs_node = next(n for n in payload["reports"][0]["nodes"] if n["name"] == "abs")
    assert [(r["category"], r["min_api"]) for r in abs_node["refusals"]] == [("api", 29)]
    assert _suggestions(model) == []  # at the default API level (31) NNAPI takes it: nothing to suggest


def test_replace_names_with_what(tmp_path: Path) -> None:
    model = _model(tmp_path / "sum.onnx", [N("Relu", ["x"], ["a"], name="r1"), N("Sum", ["a", "x"], ["b"], name="s"), N("Relu", ["b"], ["y"], name="r2")])
    suggestions = _suggestions(model)
    assert suggestions == ["replace Sum (1 node) with a chain of Add (one per extra input): 2 partitions → 1, 67% → 100% of nodes, verdict no → yes"]


def test_a_registered_op_refused_for_a_limit_names_the_limit(tmp_path: Path) -> None:
    lo, hi = numpy_helper.from_array(np.array(0.0, np.float32), "lo"), numpy_helper.from_array(np.array(3.0, np.float32), "hi")
    nodes = [N("Relu", ["x"], ["a"], name="r1"), N("Clip", ["a", "lo", "hi"], ["b"], name="clip"), N("Relu", ["b"], ["y"], name="r2")]
    (suggestion,) = _suggestions(_model(tmp_path / "clip.onnx", nodes, (lo, hi)))
    assert suggestion.startswith("change Clip (1 node) to meet NNAPI's limits (Clip range [0, 3]: NNAPI supports only [0,6] and [-1,1])")
    assert "replace" not in suggestion


def test_an_op_without_a_known_rewrite_is_not_told_to_be_replaced(tmp_path: Path) -> None:
    model = _model(tmp_path / "round.onnx", [N("Relu", ["x"], ["a"], name="r1"), N("Round", ["a"], ["b"], name="rd"), N("Relu", ["b"], ["y"], name="r2")])
    (suggestion,) = _suggestions(model)
    assert suggestion.startswith("rewrite Round (1 node) by hand with ops NNAPI takes")
    assert "mobilegen knows no standard rewrite" in suggestion


def test_a_suggestion_that_does_not_reduce_partitions_is_not_shown(tmp_path: Path) -> None:
    """Relu Erf Relu Erf Relu Sum: taking the Sum only grows the last of 3 partitions (verdict still no)."""
    nodes = [
        N("Relu", ["x"], ["a"], name="r1"), N("Erf", ["a"], ["b"], name="e1"), N("Relu", ["b"], ["c"], name="r2"),
        N("Erf", ["c"], ["d"], name="e2"), N("Relu", ["d"], ["e"], name="r3"), N("Sum", ["e", "x"], ["y"], name="s"),
    ]
    suggestions = _suggestions(_model(tmp_path / "tail.onnx", nodes))
    assert len(suggestions) == 1 and suggestions[0].startswith("replace Erf (2 nodes) with "), suggestions
    assert "3 partitions → 1" in suggestions[0]
    assert not any("Sum" in s for s in suggestions)


def test_gate_hint_never_points_above(tmp_path: Path) -> None:
    helped = _model(tmp_path / "sum.onnx", [N("Relu", ["x"], ["a"], name="r1"), N("Sum", ["a", "x"], ["b"], name="s"), N("Relu", ["b"], ["y"], name="r2")])
    # four Relus then a Round: 1 partition, verdict yes; taking the Round changes neither, so no suggestion
    tail = [N("Relu", [src], [dst], name=dst) for src, dst in (("x", "a"), ("a", "b"), ("b", "c"), ("c", "d"))]
    stuck = _model(tmp_path / "round_tail.onnx", [*tail, N("Round", ["d"], ["y"], name="rd")])
    assert _suggestions(stuck) == []
    for model, expected in ((helped, "each report's suggestions (nnapi) say"), (stuck, "no suggestion would improve a report")):
        human = invoke("check", model, "--ep", "nnapi", "--fail-under", "100")
        line = assert_fails(human, 7, "coverage gate failed for 1 check(s)", expected)
        assert "above" not in line
        doc = invoke("check", model, "--ep", "nnapi", "--fail-under", "100", "--json")
        assert doc.exit_code == 7
        payload = json.loads(doc.stdout)
        assert payload["error"] and expected in payload["hint"] and "above" not in payload["hint"]
        assert payload["hint"] in line  # the same words on the terminal


def test_check_points_at_what_the_builds_ship(tmp_path: Path) -> None:
    # check analyses the model as given; the builds rewrite it first (LayerNormalization -> ops NNAPI
    # takes): both the human output and the gate's hint name `mobilegen fix`, which shows that coverage.
    inits = (numpy_helper.from_array(np.ones(4, np.float32), "g"), numpy_helper.from_array(np.zeros(4, np.float32), "b"))
    model = _model(tmp_path / "ln.onnx", [N("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)], inits)
    human = invoke("check", model, "--ep", "nnapi")
    assert human.exit_code == 0, human.stderr
    assert "mobilegen fix MODEL --ep EP -o fixed.onnx" in " ".join(human.stderr.split())
    gate = invoke("check", model, "--ep", "nnapi", "--fail-under", "100", "--json")
    assert gate.exit_code == 7
    assert "mobilegen fix MODEL --ep nnapi -o fixed.onnx" in json.loads(gate.stdout)["hint"]
    fixed = invoke("fix", model, "--ep", "nnapi", "-o", tmp_path / "fixed.onnx")
    assert fixed.exit_code == 0, fixed.stderr
    assert invoke("check", tmp_path / "fixed.onnx", "--ep", "nnapi", "--fail-under", "100").exit_code == 0
