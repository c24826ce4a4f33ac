"""The execution-provider registry: a provider registered from this file alone (one op, one rule) is an
``--ep`` choice of ``mobilegen check``, is analysed, and shows in the JSON and in the report; no mobilegen
module knows its name. Also: the registry's refusals (duplicate, built-in, malformed names, plug-ins)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import onnx
import pytest
from cli_helpers import invoke
from onnx import TensorProto, helper
from package_fixtures import make_build

from mobilegen import providers
from mobilegen.coverage import EPTarget, analyze
from mobilegen.coverage.rules import F32, EPTable, NodeContext, OpSpec, Rule
from mobilegen.errors import UsageError
from mobilegen.providers import ExecutionProvider, Setting
from mobilegen.report import coverage_json, render_html, render_markdown
from mobilegen.runtimes import default_release

NAME = "toynpu"
SOURCE = "https://example.invalid/toynpu/relu.cc"


def _rank(ctx: NodeContext) -> str | None:
    rank, most = ctx.rank(0), ctx.target.int_value("max_rank")
    return None if rank is not None and rank <= most else f"Relu input has rank {rank}: ToyNPU takes rank <= {most}"


TABLE = EPTable(
    ep=NAME,
    ops={("", "Relu"): OpSpec("Relu", SOURCE, rules=("toynpu.rank",))},
    rules={"toynpu.rank": Rule("toynpu.rank", "Relu input rank <= max_rank", SOURCE, _rank)},
    general=(),
    default_since_max=100,
    default_input0_dtypes=(F32,),
)


class ToyNpu(ExecutionProvider):
    def rule_table(self) -> EPTable:
        return TABLE


TOY = ToyNpu(
    name=NAME,
    display_name="ToyNPU",
    platform="android",
    settings=(Setting("max_rank", 2, "highest input rank ToyNPU takes", minimum=1, maximum=4),),
)


@pytest.fixture
def toy() -> Iterator[ExecutionProvider]:
    assert NAME not in providers.names()
    providers.register(TOY)
    try:
        yield TOY
    finally:
        providers.unregister(NAME)
    assert NAME not in providers.names()


def _model(path: Path) -> Path:
    """Relu on a rank-2 input (taken), Relu on a rank-4 input (refused by the rule), Sigmoid (no builder)."""
    nodes = [
        helper.make_node("Relu", ["x"], ["y"], name="small"),
        helper.make_node("Relu", ["z"], ["r"], name="big"),
        helper.make_node("Sigmoid", ["r"], ["w"], name="sig"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4]), helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 2, 2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4]), helper.make_tensor_value_info("w", TensorProto.FLOAT, [1, 2, 2, 4])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_registered_provider_is_a_check_choice(toy: ExecutionProvider, tmp_path: Path) -> None:
    help_text = " ".join(invoke("check", "--help", env={"COLUMNS": "200"}).output.split())  # as read, whatever the wrapping
    assert f"Execution provider: nnapi, coreml, xnnpack, qnn, webgpu, {NAME}." in help_text
    wrong = invoke("check", _model(tmp_path / "m.onnx"), "--ep", "npu")
    assert wrong.exit_code == 2
    assert f"unknown --ep 'npu' — use one of: nnapi, coreml, xnnpack, qnn, webgpu, {NAME}" in wrong.stderr


def test_registered_provider_in_check_json(toy: ExecutionProvider, tmp_path: Path) -> None:
    result = invoke("check", _model(tmp_path / "m.onnx"), "--ep", NAME, "--ep", "nnapi", "--json")
    assert result.exit_code == 0, result.stderr
    toy_report, nnapi_report = json.loads(result.stdout)["reports"]
    assert nnapi_report["ep"] == "nnapi"
    assert (toy_report["ep"], toy_report["format"], toy_report["total_nodes"], toy_report["supported_nodes"]) == (NAME, None, 3, 1)
    assert toy_report["partitions"] == [["small"]]
    # every provider, plug-ins too, records the ONNX Runtime release whose rules applied (its platform's pin)
    assert toy_report["settings"] == {"max_rank": 2, "ort_version": default_release("maven").version, "optimized": True}
    nodes = {n["name"]: n for n in toy_report["nodes"]}
    assert "refusals" not in nodes["small"]
    assert nodes["big"]["refusals"] == [
        {"rule": "toynpu.rank", "category": "other", "text": "Relu input has rank 4: ToyNPU takes rank <= 2", "min_api": None}
    ]
    assert nodes["sig"]["refusals"] == [
        {"rule": "toynpu.registered", "category": "op", "text": "op Sigmoid has no ToyNPU builder", "min_api": None}
    ]


def test_registered_provider_in_the_report(toy: ExecutionProvider, tmp_path: Path) -> None:
    report = analyze(onnx.load(str(_model(tmp_path / "m.onnx"))), EPTarget(NAME, max_rank=4), optimize=False)
    assert report.settings == {"max_rank": 4, "ort_version": default_release("maven").version, "optimized": False}
    assert [n.name for n in report.nodes if not n.supported] == ["sig"]
    result = replace(make_build(tmp_path / "build"), coverage=(report,))
    assert json.loads(coverage_json(result))["reports"][0]["ep"] == NAME
    md = render_markdown(result, sizes={})
    assert f"### {NAME}" in md and "op Sigmoid has no ToyNPU builder" in md
    page = render_html(result, sizes={})
    assert f"<h3>{NAME}</h3>" in page and "op Sigmoid has no ToyNPU builder" in page


def test_settings_are_checked_against_the_provider(toy: ExecutionProvider) -> None:
    with pytest.raises(UsageError, match=r"max_rank 9 is outside 1\.\.4"):
        EPTarget(NAME, max_rank=9)
    with pytest.raises(UsageError, match="'android_api' is not a setting of the toynpu execution provider"):
        EPTarget(NAME, android_api=29)
    assert EPTarget(NAME).label == NAME and EPTarget("coreml").label == "coreml/mlprogram"


def test_registry_refusals(toy: ExecutionProvider) -> None:
    assert providers.register(TOY) is TOY  # the same object again: no-op
    with pytest.raises(UsageError, match="already registered"):
        providers.register(replace(TOY, display_name="Other"))
    with pytest.raises(UsageError, match="is built in"):
        providers.register(replace(TOY, name="nnapi"))
    with pytest.raises(UsageError, match="not a lowercase identifier"):
        providers.register(replace(TOY, name="Toy NPU"))
    with pytest.raises(UsageError, match="unknown execution provider 'npu'") as err:
        EPTarget("npu")
    assert err.value.hint == f"use one of: nnapi, coreml, xnnpack, qnn, webgpu, {NAME}"


PLUGIN = ToyNpu(name="toyplug", display_name="ToyPlug", platform="ios")


def test_entry_point_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(providers, "_loaded", {})
    monkeypatch.setattr(providers, "_plugin_refs", lambda: {"toyplug": f"{__name__}:PLUGIN"})
    assert providers.names()[-1] == "toyplug"
    assert providers.get("toyplug") is PLUGIN
    assert [p.name for p in providers.on_platform("ios")] == ["coreml", "xnnpack", "toyplug"]  # XNNPACK runs on both
    refs = {"broken": f"{__name__}:NOPE", "liar": f"{__name__}:TOY"}
    monkeypatch.setattr(providers, "_plugin_refs", lambda: refs)
    with pytest.raises(UsageError, match="plug-in 'broken' .* could not be loaded"):
        providers.get("broken")
    with pytest.raises(UsageError, match="plug-in 'liar' .* is 'toynpu'"):
        providers.get("liar")
