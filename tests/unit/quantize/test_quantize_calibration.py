"""load_calibration: .npz files, folders, random data, and one-line errors naming the file and input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mobilegen.errors import UsageError
from mobilegen.quantize import QuantizeOptions, load_calibration
from mobilegen.spec import IOSpec, TensorSpec

IO = IOSpec((TensorSpec("x", "float32", (1, 3, 8, 8)), TensorSpec("mask", "int64", ("batch", "seq"))))


def _save(path: Path, n: int = 10, **over: np.ndarray) -> Path:
    rng = np.random.default_rng(1)
    arrays = {"x": rng.random((n, 3, 8, 8), dtype=np.float32), "mask": np.ones((n, 1, 5), dtype=np.int64)}
    arrays.update(over)
    np.savez(path, **arrays)
    return path


def _opts(cal: Path | str, **kw: object) -> QuantizeOptions:
    return QuantizeOptions(mode="int8", calibration=str(cal), **kw)  # type: ignore[arg-type]


def _error(opts: QuantizeOptions) -> UsageError:
    with pytest.raises(UsageError) as info:
        load_calibration(opts, IO)
    assert info.value.exit_code == 2 and "\n" not in info.value.one_line()
    return info.value


def test_file_split_is_seeded_and_normalized(tmp_path: Path) -> None:
    path = _save(tmp_path / "calib.npz", n=10)
    a = load_calibration(_opts(path), IO)
    b = load_calibration(_opts(path), IO)
    assert (a.count, a.held_out_count, a.source, a.trustworthy) == (8, 2, "calib.npz", True)
    # [N, 3, 8, 8] for an input [1, 3, 8, 8]: the samples axis stands in for the batch of one.
    assert a.samples["x"].shape == (8, 1, 3, 8, 8) and a.held_out["x"].shape == (2, 1, 3, 8, 8)
    assert a.samples["mask"].shape == (8, 1, 5)  # dynamic dims take any size; rank + 1 is kept as is
    assert np.array_equal(a.held_out["x"], b.held_out["x"])
    other = load_calibration(_opts(path, seed=3), IO)
    assert not np.array_equal(a.held_out["x"], other.held_out["x"])
    together = np.concatenate([a.samples["x"], a.held_out["x"]])
    assert len({arr.tobytes() for arr in together}) == 10  # a split: nothing lost, nothing repeated


def test_eval_file_gives_the_held_out_samples(tmp_path: Path) -> None:
    cal = _save(tmp_path / "calib.npz", n=1)
    ev = _save(tmp_path / "eval.npz", n=4)
    c = load_calibration(_opts(cal, eval=ev), IO)
    assert (c.count, c.held_out_count) == (1, 4)


def test_folder_of_npz_files(tmp_path: Path) -> None:
    folder = tmp_path / "calib"
    folder.mkdir()
    for i in range(3):
        _save(folder / f"part{i}.npz", n=4)
    (folder / "notes.txt").write_text("ignored")
    c = load_calibration(_opts(folder), IO)
    assert c.source == "folder calib/ (3 files)" and c.count + c.held_out_count == 12


def test_folder_with_mismatched_shapes(tmp_path: Path) -> None:
    folder = tmp_path / "calib"
    folder.mkdir()
    _save(folder / "a.npz", n=2)
    _save(folder / "b.npz", n=2, mask=np.ones((2, 1, 7), dtype=np.int64))
    err = _error(_opts(folder))
    assert "b.npz" in err.message and "'mask'" in err.message and "1x7" in err.message


def test_random_is_marked_untrustworthy() -> None:
    c = load_calibration(_opts("random"), IO)
    assert c.trustworthy is False and c.source == "random (seed 0)"
    assert c.samples["x"].dtype == np.float32 and c.samples["mask"].dtype == np.int64
    assert c.samples["x"].shape[1:] == (1, 3, 8, 8) and c.samples["mask"].shape[1:] == (1, 1)


def test_wrong_input_name(tmp_path: Path) -> None:
    path = tmp_path / "calib.npz"
    np.savez(path, x=np.zeros((4, 3, 8, 8), np.float32), mask=np.ones((4, 1, 5), np.int64), pixels=np.zeros(4))
    err = _error(_opts(path))
    assert err.message == f"--calibration {path}: array 'pixels' is not a model input (inputs: x, mask)"


def test_missing_input(tmp_path: Path) -> None:
    path = tmp_path / "calib.npz"
    np.savez(path, x=np.zeros((4, 3, 8, 8), np.float32))
    assert _error(_opts(path)).message == f"--calibration {path}: no array for input 'mask'"


def test_wrong_shape(tmp_path: Path) -> None:
    path = _save(tmp_path / "calib.npz", x=np.zeros((10, 3, 9, 8), np.float32))
    err = _error(_opts(path))
    assert err.message == f"--calibration {path}: input 'x' has shape 10x3x9x8, the model takes 1x3x8x8 (plus a leading samples axis)"


def test_wrong_dtype(tmp_path: Path) -> None:
    path = _save(tmp_path / "calib.npz", x=np.zeros((10, 3, 8, 8), np.float64))
    err = _error(_opts(path))
    assert "input 'x' is float64, the model takes float32" in err.message and "astype('float32')" in (err.hint or "")


def test_missing_file(tmp_path: Path) -> None:
    err = _error(_opts(tmp_path / "nope.npz"))
    assert "no such file" in err.message and "nope.npz" in err.message


def test_not_an_npz(tmp_path: Path) -> None:
    path = tmp_path / "calib.npz"
    path.write_bytes(b"not a zip")
    assert "is not a readable .npz file" in _error(_opts(path)).message


def test_too_few_samples(tmp_path: Path) -> None:
    path = _save(tmp_path / "calib.npz", n=1)
    err = _error(_opts(path))
    assert err.message == "--calibration calib.npz holds 1 sample: too few to calibrate and to check accuracy (the 20% held out for the accuracy gate would be 0 samples)"
    assert "--eval" in (err.hint or "")


@pytest.mark.parametrize("n", [2, 5, 7])
def test_a_split_that_leaves_the_gate_one_sample_is_refused(tmp_path: Path, n: int) -> None:
    path = _save(tmp_path / "calib.npz", n=n)
    err = _error(_opts(path))
    assert err.message == f"--calibration calib.npz holds {n} samples: too few to calibrate and to check accuracy (the 20% held out for the accuracy gate would be 1 sample)"
    assert err.hint == "give at least 8 samples (the gate needs 2 held out), or the gate's samples with --eval FILE.npz"
    c = load_calibration(_opts(_save(tmp_path / "eight.npz", n=8)), IO)
    assert (c.count, c.held_out_count) == (6, 2)
    # with --eval the gate has its own samples: a small calibration set is taken whole
    c = load_calibration(_opts(path, eval=_save(tmp_path / "eval.npz", n=3)), IO)
    assert (c.count, c.held_out_count) == (n, 3)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("flag", ["--calibration", "--eval"])
def test_nan_or_inf_samples_are_refused_naming_the_file_and_input(tmp_path: Path, bad: float, flag: str) -> None:
    x = np.random.default_rng(2).random((10, 3, 8, 8), dtype=np.float32)
    x[4, 1, 2, 3] = x[7, 0, 0, 0] = bad
    bad_file = _save(tmp_path / "bad.npz", x=x)
    good = _save(tmp_path / "good.npz")
    opts = _opts(bad_file) if flag == "--calibration" else _opts(good, eval=bad_file)
    err = _error(opts)
    assert err.message == f"{flag} {bad_file}: input 'x' holds 2 NaN/Inf values"
    assert "finite" in (err.hint or "")


def test_different_sample_counts(tmp_path: Path) -> None:
    path = _save(tmp_path / "calib.npz", mask=np.ones((3, 1, 5), np.int64))
    assert "different numbers of samples (x: 10, mask: 3)" in _error(_opts(path)).message


def test_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "calib").mkdir()
    assert "holds no .npz files" in _error(_opts(tmp_path / "calib")).message


def test_int16_pcm_is_taken_for_a_float_input(tmp_path: Path) -> None:
    # QA: microphone samples are int16 and --task audio's input is float32; every int16 value is exact in float32
    pcm = np.arange(-5, 5, dtype=np.int16).reshape(10, 1) * np.ones((1, 3 * 8 * 8), np.int16)
    path = _save(tmp_path / "calib.npz", x=pcm.reshape(10, 3, 8, 8))
    calib = load_calibration(_opts(path), IO)
    both = np.concatenate([calib.samples["x"], calib.held_out["x"]])
    assert both.dtype == np.float32 and sorted(both[:, 0, 0, 0, 0].tolist()) == list(range(-5, 5))
    wide = _save(tmp_path / "wide.npz", x=np.zeros((10, 3, 8, 8), np.int32))  # int32 is not exact in float32
    assert "is int32, the model takes float32" in _error(_opts(wide)).message
