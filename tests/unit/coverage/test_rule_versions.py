"""Provider rules keyed by ONNX Runtime release: a table as one release has it, and the setting that picks it."""

from __future__ import annotations

import pytest

from mobilegen.coverage.rules import EPTable, OpSpec, Rule, in_ort_range, ops_by_key, rules_by_id
from mobilegen.coverage.target import EPTarget
from mobilegen.errors import UsageError
from mobilegen.runtimes import PLATFORM_CHANNEL, default_release


def _table() -> EPTable:
    old = Rule("toy.r", "old form", "a.cc", lambda ctx: "old", until_ort="1.25.0", ort_source="PR #1")
    new = Rule("toy.r", "new form", "a.cc", lambda ctx: "new", since_ort="1.25.0", ort_source="PR #1")
    gone = Rule("toy.gone", "removed", "b.cc", lambda ctx: "gone", until_ort="1.26.0")
    ops = ops_by_key(
        OpSpec("Relu", "relu.cc", rules=("toy.r", "toy.gone")),
        OpSpec("Sin", "sin.cc", since_ort="1.27.0", ort_source="PR #2"),
    )
    return EPTable("toy", ops, rules_by_id(old, gone), (), 24, (1,), versioned=(new,))


@pytest.mark.parametrize(
    ("version", "since", "until", "holds"),
    [
        ("1.24.2", "", "", True),
        ("1.24.2", "1.25.0", "", False),
        ("1.25.0", "1.25.0", "", True),
        ("1.25.0", "", "1.25.0", False),
        ("1.24.3", "", "1.25.0", True),
        ("1.27.0", "1.24.0", "1.27.0", False),
    ],
)
def test_release_ranges_are_half_open(version: str, since: str, until: str, holds: bool) -> None:
    assert in_ort_range(version, since, until) is holds


def test_a_table_as_each_release_has_it() -> None:
    table = _table()
    old = table.for_version("1.24.2")
    assert old.rules["toy.r"].summary == "old form"
    assert "toy.gone" in old.rules and old.ops[("", "Relu")].rules == ("toy.r", "toy.gone")
    assert ("", "Sin") not in old.ops  # the builder came later
    new = table.for_version("1.27.0")
    assert new.rules["toy.r"].summary == "new form"
    assert "toy.gone" not in new.rules and new.ops[("", "Relu")].rules == ("toy.r",)
    assert ("", "Sin") in new.ops
    assert table.for_version("1.27.0") is new  # one filtered table per release


def test_every_provider_records_the_release_whose_rules_applied() -> None:
    for ep, platform in (("nnapi", "android"), ("xnnpack", "android"), ("coreml", "ios")):
        assert EPTarget(ep).str_value("ort_version") == default_release(PLATFORM_CHANNEL[platform]).version
    assert EPTarget("coreml", ort_version="1.27.0").settings()["ort_version"] == "1.27.0"


def test_an_unknown_release_is_refused() -> None:
    with pytest.raises(UsageError, match="--ort-version 9.9.9 is not an ONNX Runtime release"):
        EPTarget("nnapi", ort_version="9.9.9")


def test_a_missing_builder_says_which_release_has_it() -> None:
    import onnx
    from onnx import TensorProto, helper

    from mobilegen.coverage import analyze

    graph = helper.make_graph(
        [helper.make_node("HardSigmoid", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    model: onnx.ModelProto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    old = analyze(model, EPTarget("coreml", coreml_format="mlprogram", ort_version="1.24.2"), optimize=False)
    assert old.nodes[0].reasons == ("op HardSigmoid has no CoreML builder in ONNX Runtime 1.24.2 (releases from 1.27.0 have one)",)
    new = analyze(model, EPTarget("coreml", coreml_format="mlprogram", ort_version="1.27.0"), optimize=False)
    assert new.nodes[0].supported
