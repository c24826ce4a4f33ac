"""The fix stage's machinery: the pass registry, the cheap undo, the judge, one target's passes and a
build's per-target plan and models — with small real passes (tests/fix_helpers.py), whatever passes
the library has."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from fix_helpers import (
    ALL,
    BOOM,
    DROPS_WEIGHTS,
    ERF_TANH,
    MUL2_SUM,
    RELU_MAX,
    SUM2_ADD,
    example_input,
    model,
    nnapi_with,
    registered,
    run,
)

from mobilegen import providers
from mobilegen.artifacts import OnnxModel
from mobilegen.coverage import CoverageReport, EPTarget, analyze, analyze_all
from mobilegen.errors import InternalError, UsageError
from mobilegen.passes import registry
from mobilegen.passes.base import GraphPass
from mobilegen.passes.stage import PassOptions, Snapshot, improve, judge, materialize, plan
from mobilegen.spec import IOSpec, TensorSpec

TEST_EP = "mgtestnnapi"


@pytest.fixture
def passes() -> Iterator[None]:
    with registered(*ALL):
        yield
    assert not [p.name for p in ALL if p.name in registry.names()]


@pytest.fixture
def test_nnapi(passes: None) -> Iterator[providers.ExecutionProvider]:
    """NNAPI's rules under another name, declaring the well-behaved test passes only."""
    provider = providers.register(nnapi_with(*(p.name for p in (SUM2_ADD, MUL2_SUM, RELU_MAX, ERF_TANH)), name=TEST_EP))
    try:
        yield provider
    finally:
        providers.unregister(TEST_EP)


def _bytes(m: onnx.ModelProto) -> bytes:
    return bytes(m.SerializeToString(deterministic=True))


def _ops(m: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in m.graph.node]


# --- the registry ---------------------------------------------------------------------------------------


def test_registry_offers_only_modules_that_exist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.BUILTIN, "not-written-yet", "mobilegen.passes.not_written_yet:PASS")
    assert "not-written-yet" not in registry.names()
    assert registry.find("not-written-yet") is None
    assert registry.is_known("not-written-yet")
    assert registry.candidates(["not-written-yet"]) == ()  # declared by a provider: skipped, nothing breaks
    with pytest.raises(UsageError, match="unknown graph pass 'not-written-yet'"):
        registry.get("not-written-yet")
    for name in registry.names():  # every offered built-in loads and is the pass it is listed as
        assert registry.get(name).name == name


def test_every_pass_a_provider_declares_is_known() -> None:
    for p in providers.all_providers():
        unknown = [f for f in p.fixes if not registry.is_known(f)]
        assert not unknown, (p.name, unknown)
    assert registry.FIXED_DIMS in providers.get("nnapi").fixes
    assert registry.FIXED_DIMS not in providers.get("coreml").fixes  # iOS alone keeps dynamic dims


def test_register_refuses_what_it_cannot_take(passes: None) -> None:
    apply = SUM2_ADD.apply
    for bad, needle in (
        (GraphPass("layernorm", "s", apply), "built in"),
        (GraphPass(registry.FIXED_DIMS, "s", apply), "built in"),
        (GraphPass("Not_Kebab", "s", apply), "kebab-case"),
        (GraphPass("test-approx", "s", apply, exact=False), "names no --approximate word"),
        (GraphPass(SUM2_ADD.name, "s", apply), "already registered"),
    ):
        with pytest.raises(UsageError, match=needle):
            registry.register(bad)
    with pytest.raises(UsageError, match="not a mobilegen.passes.base.GraphPass"):
        registry.register("layernorm")  # type: ignore[arg-type]


def test_approximate_words_and_candidates(passes: None) -> None:
    assert "erf-test" in registry.approximate_choices()
    assert registry.check_approximate([" Erf-Test", "erf-test"]) == ("erf-test",)
    assert registry.check_approximate([]) == ()
    with pytest.raises(UsageError, match="unknown --approximate 'gelu-ish'") as err:
        registry.check_approximate(["gelu-ish"])
    assert "erf-test" in (err.value.hint or "")
    declared = [ERF_TANH.name, SUM2_ADD.name, "not-a-pass"]
    assert registry.candidates(declared) == (SUM2_ADD,)  # registry order; approximate only when asked
    assert registry.candidates(declared, ["erf-test"]) == (SUM2_ADD, ERF_TANH)


# --- undo ------------------------------------------------------------------------------------------------


def test_snapshot_undo_is_byte_exact_and_copies_no_weights() -> None:
    m = model(erf=True)
    original = _bytes(m)
    snap = Snapshot(m)
    assert ERF_TANH.apply(m) == 1 and RELU_MAX.apply(m) == 1
    m.opset_import[0].version = 18
    m.graph.value_info.append(onnx.helper.make_tensor_value_info("r", onnx.TensorProto.FLOAT, [1, 4, 8]))
    assert _bytes(m) != original
    snap.restore(m)
    assert _bytes(m) == original
    assert not hasattr(snap, "_graph") or len(snap._graph.initializer) == 0  # noqa: SLF001 — weights are never copied


def test_a_pass_that_removes_an_initializer_is_a_bug(test_nnapi: providers.ExecutionProvider) -> None:
    m = model()
    with pytest.raises(InternalError, match="graph pass 'test-drops-weights' removed or replaced an initializer"):
        improve(m, [EPTarget(TEST_EP)], [DROPS_WEIGHTS])


# --- the judge -------------------------------------------------------------------------------------------


def _report(supported: int, total: int, partitions: int, *, optimized: bool = True) -> CoverageReport:
    parts = tuple((f"n{i}",) for i in range(partitions))
    return CoverageReport("nnapi", None, total, supported, parts, "no", (), settings={"optimized": optimized})


@pytest.mark.parametrize(
    ("before", "after", "keep", "why"),
    [
        ((5, 10, 3), (9, 14, 1), True, "nnapi: 5/10 nodes, 3 partitions → 9/14 nodes, 1 partition"),
        ((5, 10, 2), (5, 10, 1), True, "nnapi"),  # fewer partitions alone
        ((5, 10, 2), (6, 10, 2), True, "nnapi"),  # more nodes taken alone
        ((0, 10, 0), (4, 10, 1), True, "nnapi"),  # from nothing: a partition is a gain
        ((5, 10, 1), (9, 14, 2), False, "worse for nnapi"),  # more partitions
        ((5, 10, 1), (4, 12, 1), False, "worse for nnapi"),  # fewer nodes taken
        ((5, 10, 1), (5, 12, 1), False, "no provider gained"),
    ],
)
def test_judge(before: tuple[int, int, int], after: tuple[int, int, int], keep: bool, why: str) -> None:
    got_keep, got_why = judge([_report(*before)], [_report(*after)])
    assert (got_keep, why in got_why) == (keep, True), got_why


def test_judge_refuses_a_graph_onnxruntime_cannot_load() -> None:
    keep, why = judge([_report(5, 10, 2)], [_report(9, 10, 1, optimized=False)])
    assert not keep and "onnxruntime cannot load the rewritten graph" in why


def test_judge_needs_every_provider_no_worse() -> None:
    keep, why = judge([_report(5, 10, 2), _report(5, 10, 1)], [_report(9, 10, 1), _report(5, 10, 2)])
    assert not keep and why.startswith("worse for")


# --- one target ----------------------------------------------------------------------------------------------


def test_a_pass_that_helps_is_kept_exact_and_flips_the_verdict(test_nnapi: providers.ExecutionProvider) -> None:
    """Before/after graph, numbers equal under onnxruntime, NNAPI's refusal of Sum gone."""
    m = model()
    x = example_input()
    expected = run(m, x)
    target = EPTarget(TEST_EP)
    before = analyze(m, target)
    assert [n.reasons for n in before.nodes if n.name == "sum"] == [("op Sum has no NNAPI builder",)]
    outcome = improve(m, [target], [SUM2_ADD])
    assert _ops(m) == ["Mul", "Relu", "Add"]
    np.testing.assert_array_equal(run(m, x), expected)
    assert [(f.name, f.nodes) for f in outcome.applied] == [("test-sum2-add", 1)]
    assert outcome.before is not None and outcome.after is not None
    (b,), (a,) = outcome.before, outcome.after
    assert (b.supported_nodes, len(b.partitions), b.verdict) == (2, 1, "maybe")
    assert (a.supported_nodes, a.total_nodes, len(a.partitions), a.verdict) == (3, 3, 1, "yes")
    assert analyze(m, target).supported_nodes == 3


@pytest.mark.parametrize("graph_pass", [MUL2_SUM, RELU_MAX], ids=["worse", "neutral"])
def test_a_pass_that_does_not_help_is_undone(test_nnapi: providers.ExecutionProvider, graph_pass: GraphPass) -> None:
    m = model()
    original = _bytes(m)
    outcome = improve(m, [EPTarget(TEST_EP)], [graph_pass])
    assert _bytes(m) == original
    assert outcome.applied == ()
    (tried,) = outcome.tried
    assert (tried.name, tried.nodes, tried.kept) == (graph_pass.name, 1, False)
    assert tried.why.startswith("worse for mgtestnnapi" if graph_pass is MUL2_SUM else "no provider gained"), tried.why


def test_nothing_rewritten_means_nothing_analysed(test_nnapi: providers.ExecutionProvider) -> None:
    m = model()
    calls: list[int] = []

    def counting(proto: onnx.ModelProto, eps: object) -> list[CoverageReport]:
        calls.append(1)
        return list(analyze_all(proto, eps))  # type: ignore[arg-type]

    outcome = improve(m, [EPTarget(TEST_EP)], [ERF_TANH], analyse=counting)  # no Erf in the graph
    assert (outcome.applied, outcome.tried, outcome.before, calls) == ((), (), None, [])


def test_a_failing_pass_is_skipped_with_a_notice(test_nnapi: providers.ExecutionProvider) -> None:
    m = model()
    original = _bytes(m)
    outcome = improve(m, [EPTarget(TEST_EP)], [BOOM, SUM2_ADD], target="android")
    assert [f.name for f in outcome.applied] == ["test-sum2-add"]
    assert outcome.tried[0].kept is False and outcome.tried[0].why.startswith("failed: boom")
    (notice,) = outcome.notices
    assert notice.code == "fix-failed"
    assert notice.text == "graph pass test-boom failed on the android model and was skipped: boom: this pass cannot handle the graph"
    assert _ops(m) == ["Mul", "Relu", "Add"] and _bytes(m) != original


def test_an_approximate_pass_runs_only_when_asked(test_nnapi: providers.ExecutionProvider) -> None:
    target = [EPTarget(TEST_EP)]
    declared = providers.get(TEST_EP).fixes
    m = model(erf=True)
    improve(m, target, registry.candidates(declared))
    assert "Erf" in _ops(m)
    m = model(erf=True)
    x = example_input()
    expected = run(m, x)
    outcome = improve(m, target, registry.candidates(declared, ["erf-test"]))
    assert [(f.name, f.exact, f.approximate_as) for f in outcome.applied] == [
        ("test-sum2-add", True, ""),
        ("test-erf-tanh", False, "erf-test"),
    ]
    assert "Erf" not in _ops(m)
    assert 0 < float(np.abs(run(m, x) - expected).max()) < 0.1  # approximate: close, not equal


# --- a build: one plan, one model per distinct graph ----------------------------------------------------------


def _base(m: onnx.ModelProto, tmp_path: Path) -> OnnxModel:
    io = IOSpec((TensorSpec("x", "float32", (1, 4, 8)),), (TensorSpec("y", "float32", (1, 4, 8)),))
    return OnnxModel(path=tmp_path / "model" / "model.onnx", io=io, opset=17, exporter="passthrough", proto=m)


def _write(model_: OnnxModel) -> OnnxModel:
    from dataclasses import replace

    assert model_.proto is not None
    model_.path.write_bytes(model_.proto.SerializeToString())
    return replace(model_, proto=None)


def test_each_target_gets_only_the_passes_its_providers_need(
    test_nnapi: providers.ExecutionProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(providers._loaded, "coreml", replace(providers.get("coreml"), fixes=()))  # noqa: SLF001 — whatever the library has
    m = model()
    original = _bytes(m)
    targets = [("android", [EPTarget(TEST_EP)]), ("ios", [EPTarget("coreml")])]
    fix_plan = plan(_base(m, tmp_path), targets, PassOptions())
    assert _bytes(m) == original  # deciding leaves the base as it was
    android, ios = fix_plan.targets
    assert [f.name for f in android.applied] == ["test-sum2-add"] and ios.applied == ()
    models = materialize(_base(m, tmp_path), fix_plan, tmp_path, _write)
    assert [(s.targets, s.folder, [f.name for f in s.fixes]) for s in models] == [
        (("android",), "model/android", ["test-sum2-add"]),
        (("ios",), "model/ios", []),
    ]
    assert _ops(onnx.load(str(tmp_path / "model/android/model.onnx"))) == ["Mul", "Relu", "Add"]
    assert onnx.load(str(tmp_path / "model/ios/model.onnx")).SerializeToString() == original
    final = [
        *analyze_all(onnx.load(str(tmp_path / "model/android/model.onnx")), [EPTarget(TEST_EP)]),
        *analyze_all(onnx.load(str(tmp_path / "model/ios/model.onnx")), [EPTarget("coreml")]),
    ]
    records = fix_plan.provider_fixes(final)
    assert [(r.label, r.target, r.before.to_dict(), [f.name for f in r.fixes]) for r in records] == [
        (TEST_EP, "android", {"supported_nodes": 2, "total_nodes": 3, "partitions": 1}, ["test-sum2-add"]),
        ("coreml/mlprogram", "ios", {"supported_nodes": final[1].supported_nodes, "total_nodes": 3, "partitions": len(final[1].partitions)}, []),
    ]
    assert final[0].supported_nodes == 3


def test_targets_that_agree_share_one_model(test_nnapi: providers.ExecutionProvider, tmp_path: Path) -> None:
    m = model()
    targets = [("android", [EPTarget(TEST_EP)]), ("other", [EPTarget(TEST_EP)])]
    fix_plan = plan(_base(m, tmp_path), targets, PassOptions())
    (shipped,) = materialize(_base(m, tmp_path), fix_plan, tmp_path, _write)
    assert (shipped.targets, shipped.folder) == (("android", "other"), "model")
    assert sorted(p.name for p in (tmp_path / "model").iterdir()) == ["model.onnx"]


def test_no_fix_decides_nothing(test_nnapi: providers.ExecutionProvider, tmp_path: Path) -> None:
    fix_plan = plan(_base(model(), tmp_path), [("android", [EPTarget(TEST_EP)])], PassOptions(enabled=False))
    assert [(t.applied, t.tried, t.before) for t in fix_plan.targets] == [((), (), None)]


def test_a_graph_the_analysis_cannot_read_is_not_kept(test_nnapi: providers.ExecutionProvider) -> None:
    m = model()
    original = _bytes(m)
    calls: list[int] = []

    def analysis_fails_on_rewritten(proto: onnx.ModelProto, eps: object) -> list[CoverageReport]:
        calls.append(1)
        if len(calls) > 1:
            raise ValueError("graph has a cycle")
        return list(analyze_all(proto, eps))  # type: ignore[arg-type]

    outcome = improve(m, [EPTarget(TEST_EP)], [SUM2_ADD], target="android", analyse=analysis_fails_on_rewritten)
    assert _bytes(m) == original and outcome.applied == ()
    assert outcome.tried[0].why == "failed: the rewritten graph cannot be analysed (graph has a cycle)"
    assert [n.code for n in outcome.notices] == ["fix-failed"]
