"""The verification gate's inputs: seeded cases (value ranges from ``--range``) and ``--sample`` cases.

Seeded cases: the example sizes with seed 0; with dynamic dims, one more size (every named dim + 1) with
seed 1; then the example sizes again with seed 2, so that every model has two cases of one shape and an
output that does not depend on its inputs shows (``mobilegen.verify.gate`` calls that degenerate).

``--sample FILE.npz`` holds one array per input name. An array of the input's rank is one case; an array
with one more (leading) axis than the input's rank holds one case per index of that axis. Every array of
the file must give the same number of cases.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mobilegen.errors import UsageError
from mobilegen.export.exporter import example_arrays
from mobilegen.infra.datafiles import DeclaredTooLarge, NotRegularFile, load_npz, samples_budget
from mobilegen.spec import TensorSpec

Number = int | float
_RANGE_HINT = "give NAME=LO:HI, e.g. --range input_ids=0:30522 (values are drawn uniformly from [LO, HI))"


@dataclass(frozen=True)
class ValueRange:
    """``--range NAME=LO:HI``: the seeded values of input ``name`` are drawn uniformly from [low, high)."""

    name: str
    low: Number
    high: Number
    given: str = ""  # the flag's text as written, for messages

    def text(self) -> str:
        return self.given or f"{self.name}={self.low}:{self.high}"

    def to_json(self) -> list[Number]:
        return [self.low, self.high]


@dataclass(frozen=True)
class Case:
    """One set of inputs the reference and every artifact run on, and where it came from."""

    arrays: dict[str, np.ndarray]
    origin: str  # "seeded, seed 0", "--sample inputs.npz, case 2 of 5"
    label: str = ""  # how the verification table names it; "" for a seeded case (named by its shapes)


def _number(text: str, spec: str) -> Number:
    t = text.strip()
    try:
        return int(t)
    except ValueError:
        pass
    try:
        value = float(t)
    except ValueError:
        raise UsageError(f"--range {spec}: {t!r} is not a number", hint=_RANGE_HINT) from None
    if not math.isfinite(value):
        raise UsageError(f"--range {spec}: {t} is not a finite number", hint=_RANGE_HINT)
    return value


def parse_range(spec: str) -> ValueRange:
    """``NAME=LO:HI`` (LO < HI; the name's dtype is checked later, by :func:`resolve_ranges`)."""
    name, eq, bounds = spec.rpartition("=")
    low_text, colon, high_text = bounds.partition(":")
    if not eq or not name.strip() or not colon or not low_text.strip() or not high_text.strip():
        raise UsageError(f"--range {spec} is not NAME=LO:HI", hint=_RANGE_HINT)
    low, high = _number(low_text, spec), _number(high_text, spec)
    if not low < high:
        raise UsageError(f"--range {spec}: LO must be below HI (the range is [LO, HI))", hint=_RANGE_HINT)
    return ValueRange(name.strip(), low, high, spec)


def parse_ranges(specs: Sequence[str]) -> dict[str, ValueRange]:
    out: dict[str, ValueRange] = {}
    for text in specs:
        r = parse_range(text)
        if r.name in out:
            raise UsageError(f"--range {r.name} is given more than once", hint="give each input's range once")
        out[r.name] = r
    return out


def _dtype_bounds(dtype: str) -> tuple[Number, Number, bool]:
    """The values a dtype holds (lowest, highest) and whether it is an integer type."""
    if dtype == "bfloat16":
        return -3.3895e38, 3.3895e38, False
    np_dtype = np.dtype(dtype)
    if np.issubdtype(np_dtype, np.integer):
        info = np.iinfo(np_dtype)
        return int(info.min), int(info.max), True
    finfo = np.finfo(np_dtype)
    return float(finfo.min), float(finfo.max), False


def check_range_names(ranges: Mapping[str, ValueRange], inputs: Sequence[str]) -> None:
    """Every ``--range`` names one of ``inputs`` (also checked before the export, on the inputs it will have)."""
    for r in ranges.values():
        if r.name not in inputs:
            raise UsageError(f"--range {r.text()}: the model has no input {r.name!r}", hint=f"its inputs are: {', '.join(inputs) or 'none'}")


def check_sample_names(path: Path, arrays: Sequence[str], inputs: Sequence[str]) -> None:
    """``--sample``'s file (array names ``arrays``) has an array for every input."""
    for name in inputs:
        if name not in arrays:
            raise UsageError(f"--sample {path} has no array {name!r}", hint=f"it has: {', '.join(arrays) or 'nothing'}")


def check_names_early(ranges: Mapping[str, ValueRange], sample: Path | None, inputs: Sequence[str]) -> None:
    """:func:`check_range_names`, and :func:`check_sample_names` on ``--sample``'s zip directory alone, before
    the export; a file that cannot be read that way is left to the full read after it."""
    from mobilegen.infra.datafiles import npz_member_names

    check_range_names(ranges, inputs)
    arrays = None if sample is None else npz_member_names(sample)
    if sample is not None and arrays is not None:
        check_sample_names(sample, arrays, inputs)


def resolve_ranges(ranges: Mapping[str, ValueRange], specs: Sequence[TensorSpec]) -> dict[str, ValueRange]:
    """The ranges checked against the model's inputs: a known name, a numeric dtype, integer bounds for
    an integer input, and a range inside what the dtype holds."""
    by_name = {s.name: s for s in specs}
    check_range_names(ranges, list(by_name))
    for r in ranges.values():
        spec = by_name[r.name]
        if spec.dtype in ("bool", "string") or spec.dtype not in _NUMERIC:
            raise UsageError(f"--range {r.text()}: input {r.name!r} is {spec.dtype}, which takes no value range", hint=f"drop --range {r.name}")
        lowest, highest, integer = _dtype_bounds(spec.dtype)
        if integer and not (isinstance(r.low, int) and isinstance(r.high, int)):
            raise UsageError(f"--range {r.text()}: input {r.name!r} is {spec.dtype}, so LO and HI must be integers", hint=_RANGE_HINT)
        top = r.high - 1 if integer else r.high
        if r.low < lowest or top > highest:
            span = f"{lowest}..{highest}" if integer else f"{lowest:g}..{highest:g}"
            raise UsageError(f"--range {r.text()} is outside what {spec.dtype} holds ({span})", hint=f"give a range inside {span} for input {r.name!r}")
    return dict(ranges)


_NUMERIC = {"float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}


def _draw(spec: TensorSpec, shape: tuple[int, ...], r: ValueRange, rng: np.random.Generator) -> np.ndarray:
    dtype = spec.dtype if spec.dtype != "bfloat16" else "float32"
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(int(r.low), int(r.high), size=shape, dtype=np.dtype(dtype))
    values = rng.uniform(float(r.low), float(r.high), size=shape).astype(dtype)
    # rounding to the dtype can land on HI itself; the range is half-open
    below = np.nextafter(np.asarray(r.high, dtype=dtype), np.asarray(-np.inf, dtype=dtype))
    clipped: np.ndarray = np.minimum(values, below)
    return clipped


def seeded_case(specs: Sequence[TensorSpec], sizes: dict[str, int], seed: int, ranges: Mapping[str, ValueRange]) -> dict[str, np.ndarray]:
    """``export.example_arrays`` (normal floats, 0/1 integers, random bools), with every ranged input
    drawn from its own range instead (its own generator: the other inputs keep their values)."""
    arrays = example_arrays(tuple(specs), sizes, seed=seed)
    for index, s in enumerate(specs):
        if s.name in ranges:
            arrays[s.name] = _draw(s, s.concrete_shape(sizes), ranges[s.name], np.random.default_rng([seed, index]))
    return arrays


def seeded_cases(specs: Sequence[TensorSpec], sizes: dict[str, int], ranges: Mapping[str, ValueRange]) -> list[Case]:
    cases = [Case(seeded_case(specs, sizes, 0, ranges), "seeded, seed 0")]
    dyn = {d for s in specs for d in s.dynamic_dims}
    if dyn:
        other = {**sizes, **{d: sizes.get(d, 1) + 1 for d in dyn}}
        cases.append(Case(seeded_case(specs, other, 1, ranges), "seeded, seed 1, every dynamic dim + 1"))
    cases.append(Case(seeded_case(specs, sizes, 2, ranges), "seeded, seed 2"))
    return cases


MAX_SAMPLE_CASES = 10_000  # --sample: the cases one file may hold (its arrays' budget, from their headers)


def _sample_arrays(path: Path, specs: Sequence[TensorSpec]) -> dict[str, np.ndarray]:
    """The file's arrays. Anything but a zip of ``.npy`` members is refused: ``np.load`` opens any zip (a
    torch ``.pt`` is one) and would hand back its entries' raw bytes, and a bare ``.npy`` as one array.
    A special file, or arrays declaring more than :data:`MAX_SAMPLE_CASES` cases' worth of bytes, are
    refused before anything is opened or allocated (:mod:`mobilegen.infra.datafiles`)."""
    if not path.exists():
        raise UsageError(f"--sample {path} does not exist", hint="pass an .npz with one array per model input")
    hint = "write it with numpy.savez(path, name=array, ...), one array per model input"
    try:
        return load_npz(path, f"--sample {path}", max_bytes=samples_budget(specs, MAX_SAMPLE_CASES), hint=hint)
    except (NotRegularFile, DeclaredTooLarge):
        raise
    except UsageError as err:
        raise UsageError(f"--sample {path} is not an .npz of arrays (np.savez)", hint=hint) from err


def _split_cases(path: Path, spec: TensorSpec, a: np.ndarray) -> list[np.ndarray]:
    """One array per case: the array itself (the input's rank) or its slices along a leading cases axis."""
    rank = len(spec.shape)
    one = f"{spec.shape_str() or 'a scalar'} (one case)"
    many = f"Nx{spec.shape_str()}" if rank else "N"
    if a.ndim not in (rank, rank + 1):
        raise UsageError(
            f"--sample {path}: array {spec.name!r} has shape {a.shape}, the model takes {one} or {many} (N cases)",
            hint="give the input's shape, or one more leading axis for several cases",
        )
    cases = [a] if a.ndim == rank else [a[i] for i in range(a.shape[0])]
    if not cases:
        raise UsageError(f"--sample {path}: array {spec.name!r} holds 0 cases", hint="give at least one case")
    for c in cases:
        if any(isinstance(d, int) and d != n for d, n in zip(spec.shape, c.shape, strict=True)):
            raise UsageError(
                f"--sample {path}: array {spec.name!r} has shape {a.shape}, the model takes {one} or {many} (N cases)",
                hint="fix the sample's shape",
            )
    return cases


def _as_input(path: Path, spec: TensorSpec, a: np.ndarray) -> np.ndarray:
    dtype = np.dtype(spec.dtype if spec.dtype != "bfloat16" else "float32")
    if not np.can_cast(a.dtype, dtype, casting="same_kind"):
        raise UsageError(
            f"--sample {path}: array {spec.name!r} is {a.dtype}, the input is {spec.dtype}",
            hint=f"save it as {spec.dtype} (a float array for an integer input would be truncated)",
        )
    return a.astype(dtype)


def sample_cases(path: Path, specs: Sequence[TensorSpec]) -> list[Case]:
    """Every case of ``--sample FILE.npz`` (see the module docstring for how cases are told apart)."""
    data = _sample_arrays(path, specs)
    check_sample_names(path, list(data), [s.name for s in specs])
    per_input: dict[str, list[np.ndarray]] = {}
    for s in specs:
        per_input[s.name] = [_as_input(path, s, c) for c in _split_cases(path, s, data[s.name])]
    counts = {name: len(cs) for name, cs in per_input.items()}
    if len(set(counts.values())) > 1:
        listed = ", ".join(f"{name!r} {n}" for name, n in counts.items())
        raise UsageError(
            f"--sample {path}: its arrays hold different numbers of cases ({listed})",
            hint="give every input the same leading cases axis, or none of them one (a single case)",
        )
    n = next(iter(counts.values()), 1)
    axis = any(len(data[s.name].shape) == len(s.shape) + 1 for s in specs)
    return [
        Case({name: cs[i] for name, cs in per_input.items()}, f"--sample {path.name}, case {i + 1} of {n}", f"{path.name}[{i}]" if axis else path.name)
        for i in range(n)
    ]


def describe_inputs(arrays: Mapping[str, np.ndarray]) -> str:
    """``ids:1x128:int64 in [0, 30519], mask:1x128:bool`` — shapes, dtypes and the values' range."""
    parts = []
    for name, a in arrays.items():
        shape = "x".join(map(str, a.shape)) or "scalar"
        text = f"{name}:{shape}:{a.dtype}"
        if a.size and a.dtype != bool and np.issubdtype(a.dtype, np.number):
            lo, hi = a.min(), a.max()
            text += f" in [{lo}, {hi}]" if np.issubdtype(a.dtype, np.integer) else f" in [{float(lo):.3g}, {float(hi):.3g}]"
        elif a.size and a.dtype == bool:
            text += " " + "{" + ", ".join(str(v) for v in sorted({bool(v) for v in np.unique(a)})) + "}"
        parts.append(text)
    return ", ".join(parts) or "no inputs"


def case_labels(cases: Sequence[Case]) -> list[str]:
    """``x:1x3x8x8`` per seeded case; a label that repeats gets its case number (``x:1x3x8x8 #3``). A
    ``--sample`` case is named by its origin: ``inputs.npz[0]`` (index on the file's cases axis), or
    ``inputs.npz`` for a file holding one case without that axis."""
    seen: set[str] = set()
    out = []
    for i, c in enumerate(cases, start=1):
        label = c.label or ";".join(f"{k}:{'x'.join(map(str, v.shape))}" for k, v in c.arrays.items())
        out.append(label if label not in seen else f"{label} #{i}")
        seen.add(label)
    return out

