"""Issue 18: the same model analysed for two pinned runtimes gives the two verdicts the ORT history documents
(iOS pins 1.24.2, Android 1.27.0; mobilegen/providers/*/releases and the versioned rules in the tables)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from cov_helpers import K, T, node_model

from mobilegen.coverage import EPTarget
from mobilegen.coverage.analyze import analyze
from mobilegen.providers.coreml.table import TABLE as COREML
from mobilegen.providers.nnapi.table import TABLE as NNAPI

X4 = T((1, 3, 8, 8))


def _only_node(model: onnx.ModelProto, target: EPTarget) -> tuple[bool, tuple[str, ...]]:
    report = analyze(model, target, optimize=False)
    node = next(n for n in report.nodes if n.name == "target")
    assert report.settings["ort_version"] == target.str_value("ort_version")  # the report says which rules
    return node.supported, node.reasons


def _coreml(version: str, fmt: str = "mlprogram") -> EPTarget:
    return EPTarget("coreml", coreml_format=fmt, ort_version=version)


# (model, CoreML format, verdict on iOS's 1.24.2, verdict on 1.27.0, a word the 1.24.2 refusal says)
SWITCHES: dict[str, tuple[Any, str, str]] = {
    # PR #28182: HardSigmoid builder (both formats); none in 1.24.x
    "hardsigmoid": (lambda: node_model("HardSigmoid", [X4]), "neuralnetwork", "builder"),
    # PR #28073: Pad gets an ML Program path (reflect on the last two dims)
    "pad-mlprogram": (
        lambda: node_model("Pad", [X4, K([0, 0, 1, 1, 0, 0, 1, 1], np.int64)], {"mode": "reflect"}),
        "mlprogram",
        "ML Program",
    ),
    # PR #28278: Gather with scalar indices on static data
    "gather-scalar": (lambda: node_model("Gather", [T((1, 6, 4)), K(2, np.int64)], {"axis": 1}), "mlprogram", "scalar"),
    # PR #28270: Split before opset 13 (sizes as an attribute)
    "split-11": (lambda: node_model("Split", [T((4, 6))], {"axis": 1, "split": [2, 4]}, n_out=2, opset=11), "mlprogram", "opset 13"),
    # PR #28293: Identity/Ceil/Tile builders (after a Relu: the same PR drops a partition of trivial ops only)
    "tile": (
        lambda: node_model(
            "Tile", ["r", K([1, 2, 1, 1], np.int64)], pre=[onnx.helper.make_node("Relu", ["x"], ["r"], name="relu")],
            pre_inputs=[onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, (1, 3, 8, 8))],
        ),
        "mlprogram",
        "builder",
    ),
}


@pytest.mark.parametrize("case", sorted(SWITCHES))
def test_coreml_verdict_switches_between_the_pinned_runtimes(case: str) -> None:
    factory, fmt, word = SWITCHES[case]
    old_ok, old_reasons = _only_node(factory(), _coreml("1.24.2", fmt))
    new_ok, new_reasons = _only_node(factory(), _coreml("1.27.0", fmt))
    assert not old_ok and any(word in r for r in old_reasons), old_reasons
    assert new_ok, new_reasons


def test_ios_default_is_its_pinned_runtime() -> None:
    # No --ort-version: CoreML applies iOS's pinned 1.24.2, where HardSigmoid has no builder.
    ok, _ = _only_node(node_model("HardSigmoid", [X4]), EPTarget("coreml"))
    assert not ok


def test_pad_in_mlprogram_keeps_its_limits_after_the_switch() -> None:
    # Reflect padding on the channel dim is still refused in 1.27.0 (only the last two dims).
    model = node_model("Pad", [X4, K([0, 1, 0, 0, 0, 1, 0, 0], np.int64)], {"mode": "reflect"})
    ok, reasons = _only_node(model, _coreml("1.27.0"))
    assert not ok and any("last two" in r for r in reasons)
    ok, _ = _only_node(node_model("Pad", [X4, K([0, 1, 0, 0, 0, 1, 0, 0], np.int64)]), _coreml("1.27.0"))
    assert ok  # constant padding on any dim in ML Program


def test_split_11_sizes_must_sum_to_the_dim() -> None:
    model = node_model("Split", [T((4, 6))], {"axis": 1, "split": [2, 3]}, n_out=2, opset=11)
    ok, reasons = _only_node(model, _coreml("1.27.0"))
    assert not ok and any("summing" in r for r in reasons)


def test_scalar_gather_needs_static_data() -> None:
    model = node_model("Gather", [T(("b", 6, 4)), K(2, np.int64)], {"axis": 1})
    ok, reasons = _only_node(model, _coreml("1.27.0"))
    assert not ok and any("static" in r for r in reasons)


def test_sin_waits_for_the_release_surely_holding_it() -> None:
    # PR #28596 opened while main was 1.27-dev; its merge date was not read, so 1.28.0 is the first release.
    assert not _only_node(node_model("Sin", [X4]), _coreml("1.27.0"))[0]
    assert _only_node(node_model("Sin", [X4]), _coreml("1.28.0"))[0]


@pytest.mark.parametrize("table", [COREML, NNAPI], ids=["coreml", "nnapi"])
def test_opset_cap_moved_past_24_in_1_24(table: Any) -> None:
    """Commit de398c412 (#26579, main 1.24-dev) moved both caps from 24 to 25."""
    caps = {v: [r.summary for r in table.for_version(v).general if r.id.endswith(".opset")] for v in ("1.23.2", "1.24.2")}
    assert caps["1.23.2"] == ["node since_version within the builder's range (cap 24)"]
    assert caps["1.24.2"] == ["node since_version within the builder's range (cap 25)"]
    target = _coreml("1.24.2") if table is COREML else EPTarget("nnapi", ort_version="1.24.2")
    ok, reasons = _only_node(node_model("Transpose", [X4], {"perm": [0, 1, 3, 2]}, opset=25), target)
    assert ok, reasons  # Transpose-25
    # Cast-28: above every cap dated to a release (26/27 on main are not dated; 28 is an open PR)
    ok, reasons = _only_node(node_model("Cast", [X4], {"to": 1}, opset=28), target)
    assert not ok and any("opset 28" in r for r in reasons), reasons


def _gemm(c: Any) -> onnx.ModelProto:
    inputs = [T((2, 4)), K(np.ones((4, 5)))] + ([] if c is None else [c])
    return node_model("Gemm", inputs)


@pytest.mark.parametrize(
    ("c", "on_127", "on_128"),
    [(None, False, True), (K(1.0), False, False), (K(np.ones(5)), True, True)],
    ids=["no-C", "scalar-C", "vector-C"],
)
def test_xnnpack_gemm_c_by_release(c: Any, on_127: bool, on_128: bool) -> None:
    """PR #28546: before it a missing or scalar C crashed the capability check; after it only scalar C is refused."""
    assert _only_node(_gemm(c), EPTarget("xnnpack", ort_version="1.27.0"))[0] is on_127
    assert _only_node(_gemm(c), EPTarget("xnnpack", ort_version="1.28.0"))[0] is on_128


def test_every_versioned_rule_names_its_change() -> None:
    from mobilegen import providers

    for name in ("nnapi", "coreml", "xnnpack"):
        table = providers.get(name).rule_table()
        for rule in [*table.all_rules(), *table.versioned]:
            if rule.since_ort or rule.until_ort:
                assert rule.ort_source, rule.id
        for spec in table.ops.values():
            if spec.since_ort or spec.until_ort:
                assert "#" in spec.ort_source, spec.op_type
