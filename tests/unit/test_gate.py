"""The verification gate's inputs (--range, --sample cases), its metrics at every scale, degenerate
references, and how a reference that raises is reported (issue 11)."""

from __future__ import annotations

import math
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from mobilegen.errors import ReferenceFailedError, UsageError
from mobilegen.export.exporter import example_arrays
from mobilegen.spec import TensorSpec
from mobilegen.verify.gate import (
    CONSTANT,
    NEAR_ZERO,
    NON_FINITE,
    Expected,
    VerifyOptions,
    compare,
    degenerate_hint,
    degenerate_outputs,
    reference_cause,
)
from mobilegen.verify.inputs import (
    case_labels,
    describe_inputs,
    parse_ranges,
    resolve_ranges,
    sample_cases,
    seeded_case,
    seeded_cases,
)

IDS = TensorSpec("ids", "int64", (1, 16))
X = TensorSpec("x", "float32", (1, 4))


# --- --range ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "needle"),
    [("ids", "is not NAME=LO:HI"), ("ids=5", "is not NAME=LO:HI"), ("=0:5", "is not NAME=LO:HI"), ("ids=a:5", "'a' is not a number"),
     ("ids=5:5", "LO must be below HI"), ("ids=9:2", "LO must be below HI"), ("x=0:inf", "not a finite number")],
)
def test_range_syntax_errors_name_the_flag(spec: str, needle: str) -> None:
    with pytest.raises(UsageError) as err:
        VerifyOptions(ranges=(spec,))
    assert err.value.message.startswith(f"--range {spec}") and needle in err.value.message


def test_range_given_twice() -> None:
    with pytest.raises(UsageError, match="--range ids is given more than once"):
        VerifyOptions(ranges=("ids=0:5", "ids=0:6"))


@pytest.mark.parametrize(
    ("spec", "input_", "needle"),
    [
        ("idz=0:5", IDS, "the model has no input 'idz'"),
        ("mask=0:2", TensorSpec("mask", "bool", (1, 4)), "is bool, which takes no value range"),
        ("ids=0.5:10", IDS, "LO and HI must be integers"),
        ("b=0:300", TensorSpec("b", "uint8", (4,)), "outside what uint8 holds (0..255)"),
        ("b=-1:10", TensorSpec("b", "uint8", (4,)), "outside what uint8 holds"),
        ("i=0:4294967296", TensorSpec("i", "int32", (4,)), "outside what int32 holds"),
        ("h=0:1e6", TensorSpec("h", "float16", (4,)), "outside what float16 holds"),
    ],
)
def test_range_checked_against_the_inputs(spec: str, input_: TensorSpec, needle: str) -> None:
    with pytest.raises(UsageError) as err:
        resolve_ranges(parse_ranges([spec]), [input_])
    assert err.value.message.startswith("--range ") and needle in err.value.message


def test_range_edges_of_a_dtype_are_accepted() -> None:
    resolve_ranges(parse_ranges(["b=0:256"]), [TensorSpec("b", "uint8", (4,))])  # [0, 256) is all of uint8
    resolve_ranges(parse_ranges(["i=-128:128"]), [TensorSpec("i", "int8", (4,))])


def test_seeded_values_come_from_the_range_and_other_inputs_keep_theirs() -> None:
    specs = (IDS, X)
    ranges = resolve_ranges(parse_ranges(["ids=30000:30522"]), specs)
    case = seeded_case(specs, {}, 0, ranges)
    assert case["ids"].dtype == np.int64 and case["ids"].min() >= 30000 and case["ids"].max() < 30522
    assert len(np.unique(case["ids"])) > 1
    np.testing.assert_array_equal(case["x"], example_arrays(specs, {}, seed=0)["x"])
    np.testing.assert_array_equal(case["ids"], seeded_case(specs, {}, 0, ranges)["ids"])  # seeded: reproducible


def test_float_range_is_half_open() -> None:
    spec = TensorSpec("h", "float16", (4096,))
    values = seeded_case((spec,), {}, 0, resolve_ranges(parse_ranges(["h=0.99:1"]), [spec]))["h"]
    assert values.dtype == np.float16 and values.min() >= np.float16(0.99) and values.max() < np.float16(1.0)


def test_seeded_cases_have_two_of_one_shape() -> None:
    static = seeded_cases((X,), {}, {})
    assert [c.origin for c in static] == ["seeded, seed 0", "seeded, seed 2"]
    assert static[0].arrays["x"].shape == static[1].arrays["x"].shape and not np.array_equal(static[0].arrays["x"], static[1].arrays["x"])
    dyn = seeded_cases((TensorSpec("x", "float32", (1, "seq")),), {"seq": 4}, {})
    assert [c.arrays["x"].shape for c in dyn] == [(1, 4), (1, 5), (1, 4)]
    assert case_labels(dyn) == ["x:1x4", "x:1x5", "x:1x4 #3"]


# --- --sample -----------------------------------------------------------------------------------


def _npz(tmp_path: Path, **arrays: np.ndarray) -> Path:
    path = tmp_path / "sample.npz"
    np.savez(path, **arrays)  # type: ignore[arg-type]
    return path


def test_sample_one_case_and_a_cases_axis(tmp_path: Path) -> None:
    one = sample_cases(_npz(tmp_path, x=np.ones((1, 4))), (X,))
    assert len(one) == 1 and one[0].arrays["x"].dtype == np.float32 and one[0].origin == "--sample sample.npz, case 1 of 1"
    assert one[0].label == "sample.npz"
    many = sample_cases(_npz(tmp_path, x=np.arange(12, dtype=np.float32).reshape(3, 1, 4), ids=np.zeros((3, 1, 16), np.int64)), (X, IDS))
    assert len(many) == 3 and many[2].arrays["x"].tolist() == [[8.0, 9.0, 10.0, 11.0]] and many[1].origin.endswith("case 2 of 3")
    scalar = sample_cases(_npz(tmp_path, n=np.array([3, 4], np.int64)), (TensorSpec("n", "int64", ()),))
    assert [int(c.arrays["n"]) for c in scalar] == [3, 4]


def test_sample_cases_are_labelled_by_their_origin(tmp_path: Path) -> None:
    # seeded and sample cases of one shape used to read alike: `x:1x4 #3` was the sample's first case
    sample = sample_cases(_npz(tmp_path, x=np.zeros((2, 1, 4), np.float32)), (X,))
    assert case_labels([*seeded_cases((X,), {}, {}), *sample]) == ["x:1x4", "x:1x4 #2", "sample.npz[0]", "sample.npz[1]"]


def _torch_like_zip(path: Path) -> Path:
    """What torch.save writes: a zip whose entries are a pickle and raw storages, no .npy."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
        z.writestr("archive/data/0", b"\x00" * 16)
        z.writestr("archive/version", b"3\n")
    return path


@pytest.mark.parametrize("kind", ["torch-zip", "npy", "text", "pickled-object-array", "npz-plus-other-member"])
def test_sample_that_is_not_an_npz_of_arrays(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "tok.pt"
    if kind == "torch-zip":
        _torch_like_zip(path)
    elif kind == "npy":
        with path.open("wb") as f:
            np.save(f, np.ones((1, 4), np.float32))
    elif kind == "text":
        path.write_text("x = [1, 2, 3, 4]\n")
    elif kind == "pickled-object-array":
        with path.open("wb") as f:
            np.savez(f, x=np.array([{"a": 1}], dtype=object))
    else:
        with path.open("wb") as f:
            np.savez(f, x=np.ones((1, 4), np.float32))
        with zipfile.ZipFile(path, "a") as z:
            z.writestr("notes.txt", b"hello")
    with pytest.raises(UsageError) as err:
        sample_cases(path, (X,))
    assert err.value.message == f"--sample {path} is not an .npz of arrays (np.savez)"
    assert "numpy.savez" in str(err.value.hint)


@pytest.mark.parametrize(
    ("arrays", "needle"),
    [
        ({"x": np.ones((3, 1, 4), np.float32), "ids": np.zeros((2, 1, 16), np.int64)}, "hold different numbers of cases ('x' 3, 'ids' 2)"),
        ({"x": np.ones((3, 1, 4), np.float32), "ids": np.zeros((1, 16), np.int64)}, "hold different numbers of cases ('x' 3, 'ids' 1)"),
        ({"x": np.ones((2, 2, 1, 4), np.float32), "ids": np.zeros((1, 16), np.int64)}, "array 'x' has shape (2, 2, 1, 4)"),
        ({"x": np.ones((3, 1, 5), np.float32), "ids": np.zeros((1, 16), np.int64)}, "array 'x' has shape (3, 1, 5), the model takes 1x4 (one case) or Nx1x4"),
        ({"x": np.ones((0, 1, 4), np.float32), "ids": np.zeros((1, 16), np.int64)}, "array 'x' holds 0 cases"),
        ({"x": np.ones((1, 4), np.float32), "ids": np.full((1, 16), 0.5)}, "array 'ids' is float64, the input is int64"),
        ({"x": np.ones((1, 4), np.float32)}, "has no array 'ids'"),
    ],
)
def test_sample_errors_name_the_file_and_array(tmp_path: Path, arrays: dict[str, np.ndarray], needle: str) -> None:
    path = _npz(tmp_path, **arrays)
    with pytest.raises(UsageError) as err:
        sample_cases(path, (X, IDS))
    assert err.value.message.startswith(f"--sample {path}") and needle in err.value.message


def test_sample_only_needs_a_sample_and_takes_no_range(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--sample-only needs --sample"):
        VerifyOptions(sample_only=True)
    with pytest.raises(UsageError, match="--range has no effect with --sample-only"):
        VerifyOptions(sample=tmp_path / "s.npz", sample_only=True, ranges=("x=0:1",))


def test_record_holds_the_ranges() -> None:
    rec = VerifyOptions(ranges=("ids=0:30522", "x=-1.5:2")).record()
    assert rec == {"atol": 1e-4, "rtol": 1e-3, "ranges": {"ids": [0, 30522], "x": [-1.5, 2]}, "sample_only": False, "allow_degenerate": False}


def test_describe_inputs() -> None:
    text = describe_inputs({"ids": np.array([[3, 30519]]), "m": np.array([True, False]), "x": np.array([-1.25, 2.5], np.float32)})
    assert text == "ids:1x2:int64 in [3, 30519], m:2:bool {False, True}, x:2:float32 in [-1.25, 2.5]"


# --- metrics at every scale -----------------------------------------------------------------------


@pytest.mark.parametrize("scale", [1e-30, 1e-12, 1.0, 1e12, 1e200])
def test_relative_error_and_cosine_do_not_depend_on_the_scale(scale: float) -> None:
    rng = np.random.default_rng(0)
    ref = rng.standard_normal(64)
    got = ref + 1e-3 * rng.standard_normal(64)
    ma, mr, cos, _top1, _ok, _note = compare("y", ref * scale, got * scale, 0.0, 0.0)
    _, mr1, cos1, *_ = compare("y", ref, got, 0.0, 0.0)
    assert ma == pytest.approx(float(np.abs(ref - got).max()) * scale)
    assert mr == pytest.approx(mr1) and mr1 == pytest.approx(float(np.abs(ref - got).max() / np.abs(ref).max()))
    assert cos == pytest.approx(cos1) and 0.999 < cos < 1.0


def test_relative_error_is_not_blown_up_by_a_near_zero_element() -> None:
    # the old max_rel divided each error by max(|expected|, 1e-12): 1e-9 / 1e-12 = 1000 here
    _, mr, *_ = compare("y", np.array([1.0, 1e-12]), np.array([1.0, 1e-12 + 1e-9]), 1e-4, 1e-3)
    assert mr == pytest.approx(1e-9)


def test_metrics_of_zero_outputs() -> None:
    assert compare("y", np.zeros(4), np.zeros(4), 0, 0)[1:3] == (0.0, 1.0)
    _, mr, cos, *_ = compare("y", np.zeros(4), np.ones(4), 0, 0)
    assert mr == math.inf and cos == 0.0


# --- degenerate references ------------------------------------------------------------------------


def _expected(*outputs: list[np.ndarray], cases: list[dict[str, np.ndarray]] | None = None) -> Expected:
    cases = cases if cases is not None else [{"x": np.full((1, 4), float(i), np.float32)} for i in range(len(outputs))]
    return Expected(tuple(cases), tuple(list(o) for o in outputs), "PyTorch")


def test_random_init_batchnorm_scale_outputs_are_degenerate() -> None:
    tiny = [np.array([[3e-22, -1e-22]], np.float32)], [np.array([[2e-22, 5e-23]], np.float32)]
    (d,) = degenerate_outputs(_expected(*tiny), ["y"], 1e-4, 1e-3)
    assert d.output == "y" and "within atol=0.0001 of zero" in d.reason and "returns zeros would pass" in d.consequence


def test_constant_output_is_degenerate() -> None:
    same = [np.array([[0.5, 1.5]], np.float32)], [np.array([[0.5, 1.5]], np.float32)]
    (d,) = degenerate_outputs(_expected(*same), ["y"], 1e-4, 1e-3)
    assert "same in all 2 cases" in d.reason and "ignores its inputs" in d.consequence and d.kind == CONSTANT


def test_output_within_tolerance_across_cases_says_it_varies() -> None:
    # cases that differ, but by less than the tolerance, are not "the same": the reason says what is true
    close = (
        [np.array([[0.5, 1.5]], np.float64)],
        [np.array([[0.5 + 2e-5, 1.5]], np.float64)],
        [np.array([[0.5, 1.5 - 1e-5]], np.float64)],
    )
    (d,) = degenerate_outputs(_expected(*close), ["y"], 1e-4, 1e-3)
    assert "same in all" not in d.reason and d.kind == CONSTANT
    assert d.reason.startswith("its reference varies across the 3 cases by at most 2e-05, within the tolerance (atol=0.0001, rtol=0.001)")


def test_non_finite_output_is_degenerate() -> None:
    nan = [np.array([[np.nan, 1.0]], np.float32)], [np.array([[2.0, 1.0]], np.float32)]
    (d,) = degenerate_outputs(_expected(*nan), ["y"], 1e-4, 1e-3)
    assert "1 of its 4 reference values are NaN or Inf" in d.reason and d.kind == NON_FINITE


def test_each_degenerate_reason_gets_its_own_hint() -> None:
    tiny = degenerate_outputs(_expected([np.array([1e-22], np.float32)], [np.array([2e-22], np.float32)]), ["y"], 1e-4, 1e-3)
    same = degenerate_outputs(_expected([np.array([0.5], np.float32)], [np.array([0.5], np.float32)]), ["y"], 1e-4, 1e-3)
    nan = degenerate_outputs(_expected([np.array([np.nan], np.float32)], [np.array([1.0], np.float32)]), ["y"], 1e-4, 1e-3)
    assert [d.kind for d in (*tiny, *same, *nan)] == [NEAR_ZERO, CONSTANT, NON_FINITE]
    near_zero, constant, non_finite = degenerate_hint(tiny), degenerate_hint(same), degenerate_hint(nan)
    assert "BatchNorm" in near_zero and "1e-22" in near_zero
    assert "BatchNorm" not in constant and "ignores the model's inputs, or saturates" in constant and "--sample" in constant
    assert "BatchNorm" not in non_finite and "NaN/Inf" in non_finite and "broken" in non_finite
    for hint in (near_zero, constant, non_finite):
        assert hint.endswith("pass --allow-degenerate to accept it knowingly")
    both = degenerate_hint([*nan, *tiny, *nan])  # each kind's advice once, in the order found
    assert both.index("NaN/Inf") < both.index("BatchNorm") and both.count("broken") == 1


def test_comparing_nan_and_inf_says_nothing_on_stderr() -> None:
    # inf - inf warned "invalid value encountered in subtract" on stderr; the gate reports NaN/Inf itself
    ref = np.array([np.inf, -np.inf, np.nan, 1.0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compare("y", ref, ref.copy(), 1e-4, 1e-3)[4] is True
        assert compare("y", ref, np.array([-np.inf, np.inf, 0.0, 1.0], np.float32), 1e-4, 1e-3)[5] == "NaN/Inf differ"
        assert compare("y", np.full((2, 3), np.inf), np.full((2, 3), np.inf), 1e-4, 1e-3)[4] is True  # top-1 of a 2-D output too


def test_healthy_integer_and_input_free_outputs_are_not_degenerate() -> None:
    rng = np.random.default_rng(0)
    healthy = [rng.standard_normal((1, 3)).astype(np.float32)], [rng.standard_normal((1, 3)).astype(np.float32)]
    assert degenerate_outputs(_expected(*healthy), ["y"], 1e-4, 1e-3) == []
    # equal class indices in two cases happen by chance: integer outputs are not judged
    argmax = [np.array([2])], [np.array([2])]
    assert degenerate_outputs(_expected(*argmax), ["cls"], 1e-4, 1e-3) == []
    # a model without inputs gives the same output in every case: nothing to compare it with
    no_inputs = _expected([np.array([0.5, 1.0])], [np.array([0.5, 1.0])], cases=[{}, {}])
    assert degenerate_outputs(no_inputs, ["y"], 1e-4, 1e-3) == []


# --- a reference that raises ----------------------------------------------------------------------


def test_reference_cause_keeps_the_models_own_error() -> None:
    ts = RuntimeError(
        "The following operation failed in the TorchScript interpreter.\nTraceback of TorchScript (most recent call last):\n"
        '  File "m.py", line 6, in forward\n        return s.e(x)\n               ~~~ <--- HERE\nRuntimeError: index out of range in self\n'
    )
    assert reference_cause(ts) == "RuntimeError: index out of range in self"
    assert reference_cause(ValueError("Supported sampling rates: [8000, 16000]")) == "ValueError: Supported sampling rates: [8000, 16000]"
    long = "x" * 200 + " because " + "the real cause is at the end " * 20
    assert reference_cause(RuntimeError(long)) == f"RuntimeError: {long.strip()}"  # not cut at 300 characters


def test_reference_failure_has_its_own_exit_code() -> None:
    assert ReferenceFailedError("m").exit_code == 10 and ReferenceFailedError("m").kind == "reference"
