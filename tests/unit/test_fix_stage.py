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
from mobilegen.passes.snapshot import Snapshot
from mobilegen.passes.stage import PassOptions, improve, judge, materialize, plan
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
        ((5, 10, 1), (4, 12, 1), False, "worse for nnapi"),  # fewer nodes taken, more refused
        ((5, 10, 1), (5, 12, 1), False, "no provider gained"),  # more refused alone: not worse
        ((5, 10, 1), (4, 9, 1), False, "no provider gained"),  # fewer taken, as many refused: not worse
        ((5, 10, 2), (4, 7, 2), True, "nnapi"),  # fewer refused alone, though fewer taken
        ((5, 10, 2), (4, 6, 3), False, "worse for nnapi"),  # more partitions, whatever else
        # Swin for CoreML, pad: the Pads removed, then ORT merged Reshapes: fewer nodes of every kind
        ((624, 638, 13), (617, 619, 1), True, "nnapi: 624/638 nodes, 13 partitions → 617/619 nodes, 1 partition"),
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


def test_judge_in_the_app_chain_the_first_provider_that_moves_decides() -> None:
    # Android: NNAPI first, XNNPACK only sees what NNAPI leaves. MiniLM's case: NNAPI gains, XNNPACK
    # (judged on the whole graph) would form more partitions -> kept in the chain, not across platforms.
    before, after = [_report(170, 226, 31), _report(18, 214, 18)], [_report(356, 394, 19), _report(42, 342, 30)]
    keep, why = judge(before, after, in_order=True)
    assert keep and why.startswith("nnapi: 170/226"), why
    assert not judge(before, after)[0]
    # the first provider unchanged: the next one decides, both ways
    assert judge([_report(5, 10, 1), _report(5, 10, 2)], [_report(5, 10, 1), _report(6, 10, 1)], in_order=True)[0]
    assert not judge([_report(5, 10, 1), _report(5, 10, 1)], [_report(5, 10, 1), _report(5, 10, 2)], in_order=True)[0]
    # NNAPI worse: refused whatever XNNPACK gains
    assert not judge([_report(5, 10, 1), _report(5, 10, 2)], [_report(5, 10, 2), _report(9, 10, 1)], in_order=True)[0]
    keep, why = judge([_report(5, 10, 2)], [_report(9, 10, 1, optimized=False)], in_order=True)
    assert not keep and "cannot load" in why


def _ln_model() -> onnx.ModelProto:
    """x[8,16] -> MatMul -> LayerNormalization -> MatMul -> Relu: NNAPI refuses only the LayerNorm;
    XNNPACK takes the two 2-D MatMuls only."""
    rng = np.random.default_rng(3)
    inits = [
        onnx.numpy_helper.from_array(rng.standard_normal((16, 16)).astype(np.float32), "w"),
        onnx.numpy_helper.from_array(np.ones(16, np.float32), "gamma"),
        onnx.numpy_helper.from_array(np.zeros(16, np.float32), "beta"),
    ]
    nodes = [
        onnx.helper.make_node("MatMul", ["x", "w"], ["h"]),
        onnx.helper.make_node("LayerNormalization", ["h", "gamma", "beta"], ["n"], axis=-1),
        onnx.helper.make_node("MatMul", ["n", "w"], ["h2"]),
        onnx.helper.make_node("Relu", ["h2"], ["y"]),
    ]
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [8, 16])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [8, 16])
    return onnx.helper.make_model(onnx.helper.make_graph(nodes, "ln", [x], [y], inits), opset_imports=[onnx.helper.make_opsetid("", 17)], ir_version=9)


def test_layernorm_for_nnapi_is_no_loss_for_xnnpack_on_the_same_target() -> None:
    """The decomposed LayerNorm: NNAPI takes all of it; XNNPACK refuses its 9 ops (its CPU nodes grow)
    but keeps its partitions and the nodes it took. Refused nodes alone are no loss: the pass is kept."""
    from mobilegen.artifacts import CoverageCounts

    m = _ln_model()
    eps = [EPTarget("nnapi"), EPTarget("xnnpack")]
    outcome = improve(m, eps, [registry.get("layernorm")], target="android")
    assert [f.name for f in outcome.applied] == ["layernorm"], outcome.tried
    assert outcome.before is not None and outcome.after is not None
    (nb, xb), (na, xa) = (tuple(CoverageCounts.of(r) for r in rs) for rs in (outcome.before, outcome.after))
    assert (nb.cpu_nodes, nb.partitions, na.cpu_nodes, na.partitions) == (1, 2, 0, 1)
    assert xa.cpu_nodes > xb.cpu_nodes and (xa.supported_nodes, xa.partitions) == (xb.supported_nodes, xb.partitions) == (2, 2)
    assert outcome.tried[0].why == "nnapi: 3/4 nodes, 2 partitions → 12/12 nodes, 1 partition"


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


# --- --approximate gelu: the approximate pass in place of the exact one ------------------------------------


def _gelu_model() -> onnx.ModelProto:
    """x -> Div(sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5: the GELU TorchScript exports."""
    consts = [onnx.numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("s2", 2**0.5), ("one", 1.0), ("half", 0.5))]
    nodes = [
        onnx.helper.make_node("Div", ["x", "s2"], ["d"]),
        onnx.helper.make_node("Erf", ["d"], ["e"]),
        onnx.helper.make_node("Add", ["e", "one"], ["a"]),
        onnx.helper.make_node("Mul", ["x", "a"], ["m"]),
        onnx.helper.make_node("Mul", ["m", "half"], ["y"]),
    ]
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 16])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 16])
    return onnx.helper.make_model(onnx.helper.make_graph(nodes, "gelu", [x], [y], consts), opset_imports=[onnx.helper.make_opsetid("", 17)], ir_version=9)


def test_approximate_gelu_runs_in_place_of_the_exact_pass() -> None:
    declared = providers.get("nnapi").fixes
    exact = [p.name for p in registry.candidates(declared)]
    asked = [p.name for p in registry.candidates(declared, ["gelu"])]
    assert "gelu-tanh" not in exact
    assert asked == [*exact[: exact.index("gelu")], "gelu-tanh", *exact[exact.index("gelu") :]]
    target = [EPTarget("nnapi")]
    x = np.linspace(-4, 4, 32, dtype=np.float32).reshape(2, 16)
    m = _gelu_model()
    expected = run_model(m, x)
    outcome = improve(m, target, registry.candidates(declared, ["gelu"]))
    assert [(f.name, f.nodes, f.exact) for f in outcome.applied] == [("gelu-tanh", 5, False)]
    assert [t.name for t in outcome.tried] == ["gelu-tanh"]  # the exact gelu found nothing left
    assert "Erf" not in _ops(m) and len(m.graph.node) == 6  # the tanh form (6 ops), not the exact one (31)
    assert 0 < float(np.abs(run_model(m, x) - expected).max()) < 1e-3
    m = _gelu_model()
    outcome = improve(m, target, registry.candidates(declared))
    assert [f.name for f in outcome.applied] == ["gelu"] and len(m.graph.node) == 31


def run_model(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {"x": x})[0])


# --- the weights a pass left behind are not shipped ---------------------------------------------------------


def _conv1d_model() -> onnx.ModelProto:
    rng = np.random.default_rng(5)
    inits = [
        onnx.numpy_helper.from_array(rng.standard_normal((8, 4, 3)).astype(np.float32), "w"),
        onnx.numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b"),
    ]
    nodes = [onnx.helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1]), onnx.helper.make_node("Relu", ["c"], ["y"])]
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4, 16])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 8, 16])
    return onnx.helper.make_model(onnx.helper.make_graph(nodes, "conv1d", [x], [y], inits), opset_imports=[onnx.helper.make_opsetid("", 17)], ir_version=9)


def _conv_io() -> IOSpec:
    return IOSpec((TensorSpec("x", "float32", (1, 4, 16)),), (TensorSpec("y", "float32", (1, 8, 16)),))


@pytest.mark.parametrize("order", ["android-first", "ios-first"])
def test_unused_weights_are_dropped_from_the_written_model_only(tmp_path: Path, order: str) -> None:
    """conv1d-2d adds a 4-D kernel and leaves the 3-D one unread: the Android model ships without it;
    iOS (no pass) keeps its weights, in whichever order the groups are written."""
    m = _conv1d_model()
    x = np.random.default_rng(6).standard_normal((1, 4, 16)).astype(np.float32)
    expected = run_model(m, x)
    original = _bytes(m)
    base = OnnxModel(path=tmp_path / "model" / "model.onnx", io=_conv_io(), opset=17, exporter="passthrough", proto=m)
    targets = [("android", [EPTarget("nnapi")]), ("ios", [EPTarget("coreml")])]
    fix_plan = plan(base, targets if order == "android-first" else targets[::-1], PassOptions())
    assert _bytes(m) == original
    models = materialize(base, fix_plan, tmp_path, _write)
    assert {s.folder: [f.name for f in s.fixes] for s in models} == {"model/android": ["conv1d-2d"], "model/ios": []}
    android = onnx.load(str(tmp_path / "model/android/model.onnx"))
    ios = onnx.load(str(tmp_path / "model/ios/model.onnx"))
    assert {len(i.dims) for i in android.graph.initializer} == {1, 4} and "w" not in {i.name for i in android.graph.initializer}
    assert [(i.name, len(i.dims)) for i in ios.graph.initializer] == [("w", 3), ("b", 1)]
    assert _ops(ios) == ["Conv", "Relu"]
    np.testing.assert_allclose(run_model(android, x), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(run_model(ios, x), expected)


def test_drop_unused_initializers_keeps_what_anything_reads() -> None:
    from mobilegen.passes.stage import drop_unused_initializers, put_back

    f = onnx.TensorProto.FLOAT
    body = onnx.helper.make_graph(
        [onnx.helper.make_node("Add", ["x", "in_branch"], ["t"])], "then", [], [onnx.helper.make_tensor_value_info("t", f, [2])]
    )
    nodes = [
        onnx.helper.make_node("Greater", ["x", "read"], ["c"]),
        onnx.helper.make_node("If", ["cond_in"], ["y"], then_branch=body, else_branch=body),
    ]
    names = ["unused0", "read", "in_branch", "as_input", "as_output", "unused1", "cond_in"]
    inits = [onnx.numpy_helper.from_array(np.zeros([] if n == "cond_in" else [2], bool if n == "cond_in" else np.float32), n) for n in names]
    g = onnx.helper.make_graph(
        nodes,
        "g",
        [onnx.helper.make_tensor_value_info("x", f, [2]), onnx.helper.make_tensor_value_info("as_input", f, [2])],
        [onnx.helper.make_tensor_value_info("y", f, [2]), onnx.helper.make_tensor_value_info("as_output", f, [2])],
        inits,
    )
    m = onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", 17)])
    original = _bytes(m)
    dropped = drop_unused_initializers(m)
    assert [(i, t.name) for i, t in dropped] == [(0, "unused0"), (5, "unused1")]
    assert [t.name for t in m.graph.initializer] == ["read", "in_branch", "as_input", "as_output", "cond_in"]
    put_back(m, dropped)
    assert _bytes(m) == original


def test_a_provider_that_takes_every_node_gains_nothing_from_a_bigger_graph() -> None:
    # benchmarks/accelerators.py: QNN v73 took Swin whole (299/299, 1 partition); NNAPI's LayerNorm/Gelu
    # decompositions made it 643/643 — more "supported" nodes, no gain — and were kept for NNAPI behind it
    assert not judge([_report(299, 299, 1)], [_report(643, 643, 1)])[0]
    assert judge([_report(299, 299, 2)], [_report(643, 643, 1)])[0]  # fewer partitions still count
    qnn_first = ([_report(299, 299, 1), _report(251, 299, 31)], [_report(643, 643, 1), _report(643, 643, 1)])
    keep, why = judge(*qnn_first, in_order=True)
    assert not keep and "the same coverage in more nodes" in why
    # QNN whole either way, with as many nodes: NNAPI's gain behind it is moot
    keep, why = judge([_report(299, 299, 1), _report(251, 299, 31)], [_report(299, 299, 1), _report(299, 299, 1)], in_order=True)
    assert not keep and "takes every node already" in why and "the providers after it get none" in why
    # QNN leaves 6 nodes either way, in as many partitions: a decomposition only inflates its graph
    keep, why = judge([_report(220, 226, 7), _report(170, 226, 31)], [_report(400, 406, 7), _report(400, 406, 20)], in_order=True)
    assert not keep and "the same coverage in more nodes" in why
    # a provider that leaves nodes: the next one still decides (NNAPI first, XNNPACK after)
    assert judge([_report(5, 10, 1), _report(5, 10, 2)], [_report(5, 10, 1), _report(6, 10, 1)], in_order=True)[0]
