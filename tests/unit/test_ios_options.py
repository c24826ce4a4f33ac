"""iOS options, element-type checks, runtime pin and the render context (no rendering to disk)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ios_specs import make_specs

from mobilegen.errors import UsageError
from mobilegen.providers.coreml import ios as coreml_ios
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.targets.ios import project as ios


def test_defaults_are_valid() -> None:
    opts = ios.IosOptions()
    assert ios.validate_ios_options(opts) is opts
    assert (opts.coreml, opts.coreml_format, opts.compute_units) == (False, "mlprogram", "all")


@pytest.mark.parametrize("units", ["all", "cpu-and-ne", "cpu-and-gpu", "cpu-only"])
def test_compute_units_accepted(units: str) -> None:
    ios.validate_ios_options(ios.IosOptions(compute_units=units))


def test_compute_unit_strings_are_the_runtime_ones() -> None:
    assert {k: v for k, (v, _) in coreml_ios.COMPUTE_UNITS.items()} == {
        "all": "ALL",
        "cpu-and-ne": "CPUAndNeuralEngine",
        "cpu-and-gpu": "CPUAndGPU",
        "cpu-only": "CPUOnly",
    }


@pytest.mark.parametrize(
    ("opts", "needle"),
    [
        (ios.IosOptions(coreml_format="mlmodel"), "--coreml-format"),
        (ios.IosOptions(compute_units="All"), "--compute-units"),
        (ios.IosOptions(compute_units="gpu"), "--compute-units"),
        (ios.IosOptions(class_name="my_model"), "--name"),
        (ios.IosOptions(class_name="1Model"), "--name"),
        (ios.IosOptions(class_name="String"), "--name"),
    ],
)
def test_bad_options_are_usage_errors(opts: ios.IosOptions, needle: str) -> None:
    with pytest.raises(UsageError) as info:
        ios.validate_ios_options(opts)
    assert info.value.exit_code == 2
    assert needle in info.value.message
    assert info.value.hint


def test_all_bad_options_reported_at_once() -> None:
    with pytest.raises(UsageError) as info:
        ios.validate_ios_options(ios.IosOptions(coreml_format="x", compute_units="y", class_name="z"))
    assert len(info.value.details) == 3


def test_ios_runtime_uses_swiftpm_channel() -> None:
    rel = ios.ios_runtime(ios.IosOptions())
    assert "swiftpm" in rel.channels
    with pytest.raises(UsageError):
        ios.ios_runtime(ios.IosOptions(ort_version="0.0.1"))


@pytest.mark.parametrize("dtype", ["float32", "int8", "uint8", "int32", "uint32", "int64", "uint64"])
def test_supported_element_types(dtype: str) -> None:
    ios.check_ios_io(IOSpec((TensorSpec("x", dtype, (1,)),), (TensorSpec("y", dtype, (1,)),)))


def test_unsupported_element_types_are_all_named() -> None:
    io = IOSpec(
        (TensorSpec("half_in", "float16", (1, 4)), TensorSpec("ok", "float32", (1,))),
        (TensorSpec("flags", "bool", (4,)), TensorSpec("dbl", "float64", (1,)), TensorSpec("s", "string", (1,))),
    )
    with pytest.raises(UsageError) as info:
        ios.check_ios_io(io)
    err = info.value
    assert err.exit_code == 2
    for name in ("'half_in' is float16", "'flags' is bool", "'dbl' is float64", "'s' is string"):
        assert name in err.message
    assert "'ok'" not in err.message
    assert err.hint and "uint8" in err.hint and "float32" in err.hint
    assert len(err.details) == 4


def test_context_identifiers_are_unique_and_names_escaped(tmp_path: Path) -> None:
    spec, _ = make_specs(tmp_path)["ios_two_input"]
    hostile = IOSpec(
        (TensorSpec('a")\nfatalError()//', "float32", (1,)), TensorSpec("a_fatal_error", "float32", (1,))),
        (TensorSpec("aFatalErrorShape", "float32", (1,)), TensorSpec("prediction", "int64", ("n",))),
    )
    from dataclasses import replace

    ctx = ios.ios_context(replace(spec, io=hostile), ios.IosOptions(), model_sha256="0" * 64)
    tensors = ctx["inputs"] + ctx["outputs"]
    names = [t["ident"] for t in tensors] + [t["shape_ident"] for t in tensors]
    assert len(set(names)) == len(names)
    assert tensors[0]["literal"] == '"a\\")\\nfatalError()//"'
    assert tensors[3]["ident"] == "prediction_"
    assert tensors[3]["dims"] == "[-1]" and not tensors[3]["is_static"]
    assert ctx["class_name"] == "TextClassifier"
    assert ctx["require_static"] == "true"


# --- accelerated (CoreML) tolerances -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("opts", "expected"),
    [
        (ios.IosOptions(coreml=True, compute_units="all"), (1e-2, 1e-2)),
        (ios.IosOptions(coreml=True, compute_units="cpu-and-gpu"), (1e-2, 1e-2)),
        (ios.IosOptions(coreml=True, compute_units="cpu-and-ne", coreml_format="neuralnetwork"), (1e-2, 1e-2)),
        (ios.IosOptions(coreml=True, compute_units="cpu-only"), (1e-4, 1e-3)),
        # CoreML off by default: the sample app can still switch it on with these compute units.
        (ios.IosOptions(coreml=False, compute_units="cpu-and-gpu"), (1e-2, 1e-2)),
        (ios.IosOptions(coreml=False, compute_units="cpu-only"), (1e-4, 1e-3)),
    ],
)
def test_accelerated_tolerances(opts: ios.IosOptions, expected: tuple[float, float], tmp_path: Path) -> None:
    from dataclasses import replace

    spec, _ = make_specs(tmp_path)["ios_cnn"]
    spec = replace(spec, atol=1e-4, rtol=1e-3)
    assert ios.accelerated_tolerances(spec, opts) == expected
    assert ios.accelerated_tolerances(replace(spec, atol=0.5), opts)[0] == 0.5  # never tighter than build time
    assert ios.accelerated_tolerances(replace(spec, accel_atol=0.25, accel_rtol=0.125), opts) == (0.25, 0.125)


def test_context_carries_both_tolerances(tmp_path: Path) -> None:
    spec, _ = make_specs(tmp_path)["ios_cnn"]
    ctx = ios.ios_context(spec, ios.IosOptions(coreml=True), model_sha256="0" * 64)
    assert (ctx["atol"], ctx["rtol"]) == ("0.0001", "0.001")
    assert (ctx["accel_atol"], ctx["accel_rtol"]) == ("0.01", "0.01")
    assert "float16" in ctx["accel_tolerance_reason"]
    cpu = ios.ios_context(spec, ios.IosOptions(coreml=True, compute_units="cpu-only"), model_sha256="0" * 64)
    assert (cpu["accel_atol"], cpu["accel_rtol"]) == ("0.0001", "0.001")
