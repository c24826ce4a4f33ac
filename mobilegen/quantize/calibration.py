"""Calibration and accuracy samples: ``--calibration FILE.npz``, a folder of them, or ``random``.

An .npz holds one array per model input with a leading samples axis. Two layouts are accepted:
``[N, *input_shape]`` (a samples axis in front of the whole input) and, for an input whose first dim is 1
or dynamic, ``[N, *input_shape[1:]]`` (the samples axis stands in for the batch dim of one). Either way a
:class:`Calibration` holds ``[N, *input_shape]`` arrays: ``array[i]`` is one feed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen.errors import UsageError
from mobilegen.quantize.options import RANDOM, QuantizeOptions
from mobilegen.spec import IOSpec, TensorSpec

if TYPE_CHECKING:
    import numpy as np

RANDOM_SAMPLES = 20
HELD_OUT_FRACTION = 0.2
MIN_HELD_OUT = 2  # the gate's least samples split off a calibration set: one sample says nothing about a model
# Integer arrays whose every value a float32 holds exactly: taken for a float input (microphone PCM is int16).
_EXACT_IN_FLOAT = ("int8", "uint8", "int16", "uint16")
_HINT = "save one array per model input with numpy.savez(path, **{input_name: array}); leading axis = samples"
# What one run may read: at most MAX_SAMPLES samples of the model's inputs (mobilegen.infra.datafiles.
# samples_budget), checked from the .npy headers before any array is allocated.
MAX_SAMPLES = 10_000
# Files a calibration folder may hold that are refused rather than skipped: images are never decoded
# (a decompression bomb would take minutes and gigabytes) and are no samples of the model's inputs.
_IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff", ".ppm", ".pgm", ".heic", ".avif"})


@dataclass(frozen=True)
class Calibration:
    samples: Mapping[str, np.ndarray]  # input name -> [N, *input shape]
    held_out: Mapping[str, np.ndarray]  # accuracy samples (from --eval, or split off the calibration set)
    source: str  # "calib.npz", "folder calib/ (12 files)", "random (seed 0)"
    count: int  # calibration samples (after the held-out split)
    trustworthy: bool  # False for random data

    @property
    def held_out_count(self) -> int:
        return _count(self.held_out)


def load_calibration(opts: QuantizeOptions, io: IOSpec) -> Calibration:
    """Read, check and split the calibration (and ``--eval``) samples for a model with inputs ``io``."""
    import numpy as np

    if opts.calibration is None:
        raise UsageError("no calibration data was given", hint="give --calibration FILE.npz, a folder of them, or random")
    rng = np.random.default_rng(opts.seed)
    data, source, trustworthy = _read_calibration(opts.calibration, io, rng, opts.seed)
    total = _count(data)
    held = _read_eval(opts, io)
    if held is not None:
        if total < 1:
            raise UsageError(f"{source} holds no samples", hint="give at least one calibration sample")
        return Calibration(data, held, source, total, trustworthy)
    needed = min_samples()
    if total < needed:
        n_held = _held_out(total)
        raise UsageError(
            f"--calibration {source} holds {total} sample{'' if total == 1 else 's'}: too few to calibrate and to check accuracy "
            f"(the {round(HELD_OUT_FRACTION * 100)}% held out for the accuracy gate would be {n_held} sample{'' if n_held == 1 else 's'})",
            hint=f"give at least {needed} samples (the gate needs {MIN_HELD_OUT} held out), or the gate's samples with --eval FILE.npz",
        )
    n_held = _held_out(total)
    order = rng.permutation(total)
    held_idx, cal_idx = np.sort(order[:n_held]), np.sort(order[n_held:])
    cal = {k: v[cal_idx] for k, v in data.items()}
    held = {k: v[held_idx] for k, v in data.items()}
    return Calibration(cal, held, source, total - n_held, trustworthy)


def load_gate_samples(opts: QuantizeOptions, io: IOSpec) -> Calibration:
    """The accuracy gate's samples for a mode that calibrates nothing (``dynamic``, ``fp16``): ``--eval``'s
    when given, else every sample of ``--calibration`` (no split: nothing is calibrated, so no minimum for
    one), else seeded random inputs. ``samples`` holds what ``--calibration`` gave (checked like any), and
    ``count`` is the number of its samples."""
    import numpy as np

    data, source, trustworthy = _read_calibration(opts.calibration or RANDOM, io, np.random.default_rng(opts.seed), opts.seed)
    held = _read_eval(opts, io)
    if held is None:
        if _count(data) < 1:
            raise UsageError(f"{source} holds no samples", hint="give at least one sample for the accuracy gate, or the gate's samples with --eval FILE.npz")
        held = data
    return Calibration(data, held, source, _count(data), trustworthy)


def _read_calibration(calibration: str, io: IOSpec, rng: np.random.Generator, seed: int) -> tuple[dict[str, np.ndarray], str, bool]:
    """``--calibration``'s samples, a source label, and whether they are real data (not random; drawn
    from ``rng``, seeded with ``seed``)."""
    if calibration == RANDOM:
        return _random(io, rng), f"random (seed {seed})", False
    data, source = _read_source(Path(calibration), io)
    return data, source, True


def _read_eval(opts: QuantizeOptions, io: IOSpec) -> dict[str, np.ndarray] | None:
    """``--eval``'s samples (None without it): at least ``MIN_HELD_OUT`` of them, or the gate would pass on
    nothing (two empty outputs compare as equal)."""
    if opts.eval is None:
        return None
    held = _read_npz(Path(opts.eval), io, flag="--eval")
    n = _count(held)
    if n < MIN_HELD_OUT:
        raise UsageError(
            f"--eval {Path(opts.eval).name} holds {n} sample{'' if n == 1 else 's'}: too few to check accuracy",
            hint=f"give at least {MIN_HELD_OUT} samples in --eval (leading samples axis), or drop --eval to check accuracy on samples of --calibration",
        )
    return held


def _held_out(total: int) -> int:
    """How many of ``total`` samples the accuracy gate gets (at least one stays for calibration)."""
    return max(0, min(total - 1, max(1, round(total * HELD_OUT_FRACTION))))


def min_samples() -> int:
    """The fewest samples whose split leaves ``MIN_HELD_OUT`` for the gate (8 for 20% and 2)."""
    return next(n for n in range(MIN_HELD_OUT + 1, 10_000) if _held_out(n) >= MIN_HELD_OUT)


def _count(data: Mapping[str, np.ndarray]) -> int:
    return int(next(iter(data.values())).shape[0]) if data else 0


def byte_budget(io: IOSpec) -> int:
    """The most bytes of samples one run reads for a model with inputs ``io``."""
    from mobilegen.infra.datafiles import samples_budget

    return samples_budget(io.inputs, MAX_SAMPLES)


def _read_source(where: Path, io: IOSpec) -> tuple[dict[str, np.ndarray], str]:
    import numpy as np

    if where.is_dir():
        images = sorted(p.name for p in where.iterdir() if p.suffix.lower() in _IMAGE_SUFFIXES)
        if images:
            raise UsageError(
                f"--calibration {where / images[0]}: an image; a calibration folder holds .npz files of the model's inputs "
                "(images are never decoded)",
                hint="save the samples as arrays, e.g. uint8 [N, H, W, 3] crops for --task image: numpy.savez(path, image=array)",
            )
        files = sorted(where.glob("*.npz"))
        if not files:
            raise UsageError(f"--calibration {where}/ holds no .npz files", hint=_HINT)
        budget = byte_budget(io)
        parts = []
        for f in files:
            parts.append(_read_npz(f, io, flag="--calibration", budget=budget))
            budget -= sum(a.nbytes for a in parts[-1].values())
        merged: dict[str, np.ndarray] = {}
        for spec in io.inputs:
            first = parts[0][spec.name].shape[1:]
            for f, p in zip(files, parts, strict=True):
                if p[spec.name].shape[1:] != first:
                    raise UsageError(
                        f"--calibration {f}: input '{spec.name}' has shape {_shape(p[spec.name].shape[1:])} per sample, "
                        f"but {_shape(first)} in {files[0].name}",
                        hint="samples of one input must share a shape across the folder's files",
                    )
            merged[spec.name] = np.concatenate([p[spec.name] for p in parts], axis=0)
        return merged, f"folder {where.name}/ ({len(files)} file{'' if len(files) == 1 else 's'})"
    if not where.exists():  # a FIFO or device exists: refused by the reader without being opened
        raise UsageError(f"--calibration {where}: no such file or folder", hint=_HINT)
    return _read_npz(where, io, flag="--calibration"), where.name


def _shape(shape: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in shape) if shape else "scalar"


def _read_npz(path: Path, io: IOSpec, *, flag: str, budget: int | None = None) -> dict[str, np.ndarray]:
    """The file's arrays, checked against the model's inputs; ``budget``: the most bytes they may hold
    (default: :func:`byte_budget`), known from the .npy headers before anything is allocated."""
    from mobilegen.infra.datafiles import load_npz

    arrays = load_npz(path, f"{flag} {path}", max_bytes=byte_budget(io) if budget is None else budget, hint=_HINT)
    check_array_names(flag, path, list(arrays), [t.name for t in io.inputs])
    out = {spec.name: _checked(arrays[spec.name], spec, path, flag) for spec in io.inputs}
    counts = {v.shape[0] for v in out.values()}
    if len(counts) > 1:
        raise UsageError(
            f"{flag} {path}: the arrays hold different numbers of samples ({', '.join(f'{k}: {v.shape[0]}' for k, v in out.items())})",
            hint="every input needs one entry per sample",
        )
    return out


def check_array_names(flag: str, path: Path, arrays: list[str], inputs: list[str]) -> None:
    """A calibration or ``--eval`` file (array names ``arrays``) holds exactly one array per input."""
    extra = [k for k in arrays if k not in inputs]
    if extra:
        raise UsageError(
            f"{flag} {path}: array '{extra[0]}' is not a model input (inputs: {', '.join(inputs)})",
            hint="name each array after the model input it feeds",
        )
    missing = [n for n in inputs if n not in arrays]
    if missing:
        raise UsageError(f"{flag} {path}: no array for input '{missing[0]}'", hint=_HINT)


def check_names_early(opts: QuantizeOptions, inputs: list[str]) -> None:
    """:func:`check_array_names` on ``--calibration`` (a file, or each ``.npz`` of a folder) and ``--eval``
    from their zip directories alone, before the export; what cannot be read that way is left to the
    full read after it."""
    from mobilegen.infra.datafiles import npz_member_names

    files: list[tuple[str, Path]] = []
    if opts.calibration is not None and opts.calibration != RANDOM:
        where = Path(opts.calibration)
        files += [("--calibration", f) for f in sorted(where.glob("*.npz"))] if where.is_dir() else [("--calibration", where)]
    if opts.eval is not None:
        files.append(("--eval", Path(opts.eval)))
    for flag, path in files:
        arrays = npz_member_names(path)
        if arrays is not None:
            check_array_names(flag, path, arrays, inputs)


def _checked(arr: np.ndarray, spec: TensorSpec, path: Path, flag: str) -> np.ndarray:
    import numpy as np

    if spec.dtype in ("float32", "float64") and str(arr.dtype) in _EXACT_IN_FLOAT:
        arr = arr.astype(spec.dtype)  # e.g. int16 PCM for --task audio's float32 input: every value is exact
    if str(arr.dtype) != spec.dtype:
        raise UsageError(
            f"{flag} {path}: input '{spec.name}' is {arr.dtype}, the model takes {spec.dtype}",
            hint=f"save it with array.astype('{spec.dtype}')",
        )
    if arr.dtype.kind in "fc" and not bool(np.all(np.isfinite(arr))):
        bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
        raise UsageError(
            f"{flag} {path}: input '{spec.name}' holds {bad} NaN/Inf value{'' if bad == 1 else 's'}",
            hint="calibration and accuracy samples must be finite: fix or drop those samples",
        )
    rank = len(spec.shape)
    if arr.ndim == rank + 1 and _fits(arr.shape[1:], spec):
        return arr
    if arr.ndim == rank and rank > 0 and (spec.shape[0] == 1 or isinstance(spec.shape[0], str)) and _fits(arr.shape[1:], spec, skip=1):
        return arr.reshape((arr.shape[0], 1) + arr.shape[1:])
    want = spec.shape_str()
    raise UsageError(
        f"{flag} {path}: input '{spec.name}' has shape {_shape(arr.shape)}, the model takes {want} "
        "(plus a leading samples axis)",
        hint=f"give [samples, {', '.join(str(d) for d in spec.shape)}]" + (" (dynamic dims take any size)" if spec.dynamic_dims else ""),
    )


def _fits(shape: tuple[int, ...], spec: TensorSpec, skip: int = 0) -> bool:
    want = spec.shape[skip:]
    return len(shape) == len(want) and all(isinstance(w, str) or w <= 0 or w == s for s, w in zip(shape, want, strict=True))


def _random(io: IOSpec, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Seeded samples in [0, 1) for float inputs, 0/1 for integer and bool inputs; dynamic dims of 1."""

    out: dict[str, np.ndarray] = {}
    for spec in io.inputs:
        shape = (RANDOM_SAMPLES,) + tuple(d if isinstance(d, int) and d > 0 else 1 for d in spec.shape)
        if spec.dtype.startswith("float"):
            out[spec.name] = rng.random(shape).astype(spec.dtype)
        elif spec.dtype == "bool":
            out[spec.name] = rng.integers(0, 2, shape).astype(bool)
        elif spec.dtype == "string":
            raise UsageError(f"input '{spec.name}' is a string tensor: random data cannot calibrate it", hint=_HINT)
        else:
            out[spec.name] = rng.integers(0, 2, shape).astype(spec.dtype)
    return out
