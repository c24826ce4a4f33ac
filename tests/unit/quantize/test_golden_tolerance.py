"""A quantized model's golden tolerance covers kernel differences only, never so much that an all-zero
output passes (issue 26 item 2): :func:`mobilegen.quantize.golden.derive_tolerance`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mobilegen.artifacts import OnnxModel, ShippedModel
from mobilegen.quantize.golden import derive_tolerance, tolerances_of
from mobilegen.quantize.records import QuantizationRecord
from mobilegen.spec import IOSpec
from mobilegen.targets.tolerances import KERNEL_RTOL, MAX_FRACTION, OUTPUT_STEPS

BUILD_ATOL, BUILD_RTOL = 1e-4, 1e-3


def _passes(expected: np.ndarray, got: np.ndarray, atol: float, rtol: float) -> bool:
    return bool(np.all(np.abs(got - expected) <= atol + rtol * np.abs(expected)))


def test_a_dynamic_models_float_output_gets_a_relative_tolerance_not_the_gates_error() -> None:
    """The issue's build: largest golden value 0.164, atol was 0.213 (the gate's error vs fp32)."""
    rng = np.random.default_rng(0)
    cases = [{"logits": (rng.uniform(-0.164, 0.164, (1, 10))).astype(np.float32)} for _ in range(3)]
    cases[0]["logits"][0, 3] = 0.164
    tol = derive_tolerance(cases, {"logits": 0.0}, BUILD_ATOL, BUILD_RTOL)
    assert tol.atol == pytest.approx(KERNEL_RTOL * 0.164) and tol.rtol == BUILD_RTOL
    assert not tol.capped and "decided by output 'logits' (relative)" in tol.how()
    for case in cases:  # an all-zero output fails every case
        assert not _passes(case["logits"], np.zeros_like(case["logits"]), tol.atol, tol.rtol)


def test_a_qdq_output_gets_its_quantization_steps() -> None:
    y = np.linspace(-1.0, 1.0, 16, dtype=np.float32)
    tol = derive_tolerance([{"y": y}, {"y": -y}], {"y": 0.02}, BUILD_ATOL, BUILD_RTOL)
    assert tol.atol == pytest.approx(OUTPUT_STEPS * 0.02)
    (out,) = tol.outputs
    assert out.steps == pytest.approx(0.04) and out.relative == pytest.approx(KERNEL_RTOL) and "(output steps)" in tol.how()


def test_the_tolerance_never_exceeds_a_fraction_of_the_smallest_cases_golden_magnitude() -> None:
    """Two steps of a coarse output scale (or the build's atol, for tiny outputs) would let zeros pass:
    the cap wins and says so."""
    big, small = np.array([0.9, -0.5], np.float32), np.array([0.08, 0.01], np.float32)
    tol = derive_tolerance([{"y": big}, {"y": small}], {"y": 0.05}, BUILD_ATOL, BUILD_RTOL)
    assert tol.atol == pytest.approx(MAX_FRACTION * 0.08) and tol.capped and "capped by output 'y'" in tol.how()
    assert not _passes(small, np.zeros_like(small), tol.atol, tol.rtol)
    tiny = np.array([2e-4, -1e-4], np.float32)  # below the build's atol: the floor gives way too
    tol = derive_tolerance([{"y": tiny}], {}, BUILD_ATOL, BUILD_RTOL)
    assert tol.atol == pytest.approx(MAX_FRACTION * 2e-4) and tol.atol < BUILD_ATOL
    assert not _passes(tiny, np.zeros_like(tiny), tol.atol, tol.rtol)


def test_the_smallest_output_caps_the_models_single_atol() -> None:
    """One (atol, rtol) per model: a large output's steps may not make a small output unfailable."""
    cases = [{"big": np.array([10.0, -7.0], np.float32), "small": np.array([0.02, 0.01], np.float32)}]
    tol = derive_tolerance(cases, {"big": 0.1, "small": 0.0}, BUILD_ATOL, BUILD_RTOL)
    assert tol.atol == pytest.approx(MAX_FRACTION * 0.02)
    assert not _passes(cases[0]["small"], np.zeros(2, np.float32), tol.atol, tol.rtol)


def test_integer_outputs_take_no_part_and_are_listed_as_exact() -> None:
    cases = [{"y": np.array([0.5, -0.25], np.float32), "ids": np.array([1000, 3], np.int64), "ok": np.array([True])}]
    tol = derive_tolerance(cases, {}, BUILD_ATOL, BUILD_RTOL)
    assert tol.exact == ("ids", "ok") and [o.output for o in tol.outputs] == ["y"]
    assert tol.atol == pytest.approx(KERNEL_RTOL * 0.5)
    only_ints = derive_tolerance([{"ids": np.array([7], np.int64)}], {}, BUILD_ATOL, BUILD_RTOL)
    assert only_ints.atol == BUILD_ATOL and "compared exactly" in only_ints.how()


def test_random_outputs_never_let_zeros_pass() -> None:
    rng = np.random.default_rng(1)
    for _ in range(200):
        scale = 10.0 ** rng.uniform(-6, 3)
        cases = [{"y": (rng.standard_normal(8) * scale).astype(np.float32)} for _ in range(int(rng.integers(1, 4)))]
        tol = derive_tolerance(cases, {"y": float(rng.uniform(0, 2) * scale)}, BUILD_ATOL, BUILD_RTOL)
        for case in cases:
            assert not _passes(case["y"], np.zeros_like(case["y"]), tol.atol, tol.rtol), (scale, tol)


def _model(record: QuantizationRecord) -> ShippedModel:
    onnx_model = OnnxModel(path=Path("model.onnx"), io=IOSpec((), ()), opset=17, exporter="passthrough", fallback_reason=None, example_sizes={})
    return ShippedModel(("android",), "model", onnx_model, quantization=record)


def test_a_derived_tolerance_is_the_one_verify_and_the_device_tests_use_even_below_the_builds() -> None:
    derived = derive_tolerance([{"y": np.array([2e-4], np.float32)}], {}, BUILD_ATOL, BUILD_RTOL)
    record = QuantizationRecord("int8", "int8", golden_atol=derived.atol, golden_tolerance=derived.to_dict())
    assert tolerances_of(_model(record), BUILD_ATOL, BUILD_RTOL) == (derived.atol, BUILD_RTOL)
    assert tolerances_of(_model(QuantizationRecord("int8", "fp32")), BUILD_ATOL, BUILD_RTOL) == (BUILD_ATOL, BUILD_RTOL)
