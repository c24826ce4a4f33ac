"""The numerical gate: run the reference (PyTorch, or the source ONNX) and every artifact on the same
seeded inputs, compare every output, collect every failure, then raise once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mobilegen import backends
from mobilegen.artifacts import JSONValue, LoadedModel, OnnxModel, VerificationReport, VerifyRow
from mobilegen.errors import MobilegenError, ReferenceFailedError, UsageError, VerificationError, first_line
from mobilegen.export.errors import explain_gate_failure
from mobilegen.export.exporter import torch_callable
from mobilegen.infra import progress
from mobilegen.infra.memory import release_memory
from mobilegen.infra.nested import flatten_outputs
from mobilegen.infra.quiet import quiet
from mobilegen.infra.threads import ORT_NO_SPINNING
from mobilegen.spec import TensorSpec
from mobilegen.verify.golden import GoldenCase, encode_mgv, write_npz
from mobilegen.verify.inputs import (
    Case,
    ValueRange,
    case_labels,
    describe_inputs,
    parse_ranges,
    resolve_ranges,
    sample_cases,
    seeded_cases,
)

DEFAULT_ATOL = 1e-4
DEFAULT_RTOL = 1e-3


@dataclass(frozen=True)
class VerifyOptions:
    atol: float = DEFAULT_ATOL
    rtol: float = DEFAULT_RTOL
    sample: Path | None = None  # --sample FILE.npz: real inputs, one case or a leading cases axis
    ranges: tuple[str, ...] = ()  # raw --range NAME=LO:HI specs for the seeded cases
    sample_only: bool = False  # the sample's cases replace the seeded ones
    allow_degenerate: bool = False  # accept outputs whose reference makes the gate inconclusive

    def __post_init__(self) -> None:
        for flag, value in (("--atol", self.atol), ("--rtol", self.rtol)):
            if not math.isfinite(value) or value < 0:
                raise UsageError(f"{flag} {value} is not a tolerance", hint=f"give a finite number ≥ 0, e.g. {flag} 1e-4")
        self.value_ranges()  # syntax errors now, before any heavy work
        if self.sample_only and self.sample is None:
            raise UsageError("--sample-only needs --sample", hint="pass --sample FILE.npz with the inputs to verify on, or drop --sample-only")
        if self.sample_only and self.ranges:
            raise UsageError("--range has no effect with --sample-only", hint="the sample's cases replace the seeded ones: drop --range, or --sample-only")

    def value_ranges(self) -> dict[str, ValueRange]:
        return parse_ranges(self.ranges)

    def record(self) -> dict[str, JSONValue]:
        """What the gate ran with, for ``golden/tolerances.json`` and the manifest's options."""
        return {
            "atol": self.atol,
            "rtol": self.rtol,
            "ranges": {name: list(r.to_json()) for name, r in sorted(self.value_ranges().items())},
            "sample_only": self.sample_only,
            "allow_degenerate": self.allow_degenerate,
        }


def compare(name: str, ref: np.ndarray, got: np.ndarray, atol: float, rtol: float) -> tuple[float, float, float, float | None, bool, str]:
    """max abs error, max relative error, cosine similarity, top-1 agreement (2-D float outputs), passed, note.

    Relative error and cosine are taken at the output's own scale, so they mean the same for outputs
    around 1e-20 and around 1e+20: ``max_rel = max|got − expected| / max|expected|`` (the largest error
    relative to the largest expected magnitude: near-zero elements do not blow it up), and the cosine is
    computed on both tensors divided by their largest magnitude (no underflow or overflow of the squares).
    Non-finite elements are left out of both (they must match exactly). numpy's floating-point warnings
    are silenced: NaN/Inf are the gate's own findings, reported in its table, not on stderr."""
    with np.errstate(all="ignore"):
        return _compare(ref, got, atol, rtol)


def _compare(ref: np.ndarray, got: np.ndarray, atol: float, rtol: float) -> tuple[float, float, float, float | None, bool, str]:
    if ref.shape != got.shape:
        return math.inf, math.inf, 0.0, None, False, f"shape {got.shape} != expected {ref.shape}"
    if ref.dtype == bool or got.dtype == bool or not np.issubdtype(ref.dtype, np.number):
        same = bool(np.array_equal(ref, got))
        return (0.0 if same else 1.0), (0.0 if same else 1.0), (1.0 if same else 0.0), None, same, ""
    if np.issubdtype(ref.dtype, np.integer) and np.issubdtype(got.dtype, np.integer):
        return _compare_integers(ref, got)
    r = ref.astype(np.float64).ravel()
    g = got.astype(np.float64).ravel()
    if r.size == 0:
        return 0.0, 0.0, 1.0, None, True, "empty output"
    finite = np.isfinite(r) & np.isfinite(g)
    nonfinite_mismatch = bool(np.any(~finite & ~((np.isnan(r) & np.isnan(g)) | (r == g))))
    diff = np.abs(r - g)
    diff[~finite] = 0.0
    max_abs = float(diff.max())
    max_rel, cosine = relative_error(r[finite], g[finite], max_abs), cosine_similarity(r[finite], g[finite])
    top1 = None
    if ref.ndim == 2 and ref.shape[1] > 1 and np.issubdtype(ref.dtype, np.inexact):  # scores; the argmax of ids says nothing
        top1 = float(np.mean(np.argmax(ref, axis=1) == np.argmax(got, axis=1)))
    # the tolerance is for finite elements: NaN in atol + rtol·|NaN| failed a NaN matched by NaN
    passed = (not nonfinite_mismatch) and bool(np.all(diff[finite] <= atol + rtol * np.abs(r[finite])))
    return max_abs, max_rel, cosine, top1, passed, ("NaN/Inf differ" if nonfinite_mismatch else "")


def _compare_integers(ref: np.ndarray, got: np.ndarray) -> tuple[float, float, float, float | None, bool, str]:
    """Integer outputs (ids, indices, counts) pass only when equal: no tolerance, and no float64 on the way
    (it cannot hold every int64, so 2**53 + 1 would equal 2**53)."""
    same = bool(np.array_equal(ref, got))
    if ref.size == 0:
        return 0.0, 0.0, 1.0, None, True, "empty output"
    wide = np.abs(ref.astype(object) - got.astype(object)).ravel()  # Python ints: no overflow for uint64 vs int64
    max_abs = float(max(wide))
    r, g = ref.astype(np.float64).ravel(), got.astype(np.float64).ravel()
    return max_abs, relative_error(r, g, max_abs), cosine_similarity(r, g), None, same, ("" if same else "integers compared exactly")


def relative_error(r: np.ndarray, g: np.ndarray, max_abs: float) -> float:
    """The largest absolute error over the largest expected magnitude (0 when both are 0)."""
    scale = float(np.abs(r).max()) if r.size else 0.0
    if scale == 0.0:
        return 0.0 if max_abs == 0.0 else math.inf
    return max_abs / scale


def cosine_similarity(r: np.ndarray, g: np.ndarray) -> float:
    """Cosine of the two tensors after dividing both by their common largest magnitude: 1 when both are
    all zeros, 0 when only one is."""
    scale = max(float(np.abs(r).max()) if r.size else 0.0, float(np.abs(g).max()) if g.size else 0.0)
    if scale == 0.0:
        return 1.0
    rs, gs = r / scale, g / scale
    nr, ng = float(np.linalg.norm(rs)), float(np.linalg.norm(gs))
    if nr == 0.0 or ng == 0.0:
        return 1.0 if nr == ng else 0.0
    return float(np.clip(np.dot(rs, gs) / (nr * ng), -1.0, 1.0))


def verification_cases(specs: tuple[TensorSpec, ...], sizes: dict[str, int], options: VerifyOptions) -> list[Case]:
    """The seeded cases (``mobilegen.verify.inputs``) and the user's sample cases after them; with
    ``--sample-only``, the sample's cases alone."""
    sample = sample_cases(options.sample, specs) if options.sample is not None else []
    if options.sample_only:
        return sample
    return seeded_cases(specs, sizes, resolve_ranges(options.value_ranges(), specs)) + sample


def torch_reference(loaded: LoadedModel) -> Callable[[dict[str, np.ndarray]], list[np.ndarray]]:
    import torch

    fn = torch_callable(loaded)

    def run(arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        with torch.no_grad(), quiet():
            out = fn(*[torch.from_numpy(np.asarray(a).copy(order="C")) for a in arrays.values()])
        return [t.detach().cpu().numpy() for t in flatten_outputs(out)]

    return run


def ort_runner(path: Path, *, basic_only: bool = False) -> Callable[[dict[str, np.ndarray]], list[np.ndarray]]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 4  # failures are reported by mobilegen, with their message; no log line of its own
    if basic_only:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    # A few runs per session: no memory arena. The CPU arena's memory outlives the session in this process
    # (it is reused, never returned: a large model's reference kept ~1x its weights through the rest of
    # the build); without it, what a run allocates is freed with it. Same kernels, same results.
    so.enable_cpu_mem_arena = False
    so.add_session_config_entry(*ORT_NO_SPINNING)  # idle threads sleep (mobilegen.infra.threads); same results
    return session_runner(ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"]))


def session_runner(session: Any) -> Callable[[dict[str, np.ndarray]], list[np.ndarray]]:
    """A runner over an onnxruntime session made elsewhere (the converting session of a model's ``.onnx``,
    :func:`mobilegen.convert.to_ort.convert_to_ort`): every output, as arrays."""

    def run(arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(x) for x in session.run(None, dict(arrays))]

    return run


@dataclass(frozen=True)
class Expected:
    """The reference's outputs on every verification case, computed once (so the reference model can be
    let go before the heavy stages that follow)."""

    cases: tuple[dict[str, np.ndarray], ...]
    outputs: tuple[list[np.ndarray], ...]
    label: str  # what the reference is ("PyTorch", "the source ONNX model ...")
    origins: tuple[str, ...] = ()  # where each case came from ("seeded, seed 0", "--sample x.npz, case 2 of 5")
    labels: tuple[str, ...] = ()  # how the verification table names each case ("x:1x4", "x.npz[1]")


def reference_subject(label: str) -> str:
    """``PyTorch`` → "the PyTorch model"; a label that already reads as a noun phrase stays as it is."""
    return label if label.lower().startswith("the ") else f"the {label} model"


_TORCHSCRIPT_TRACE = "The following operation failed in the TorchScript interpreter"


def reference_cause(err: BaseException) -> str:
    """The model's own error, whole: ``IndexError: index out of range in self``. The TorchScript
    interpreter puts its traceback first and the error last: that last line is taken."""
    text = str(err)
    if _TORCHSCRIPT_TRACE in text:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        return lines[-1].removeprefix("builtins.")
    line = first_line(err, limit=2000)
    kind = type(err).__name__
    return line if line.startswith(kind) else f"{kind}: {line}"


def reference_outputs(
    reference: Callable[[dict[str, np.ndarray]], list[np.ndarray]], onnx_model: OnnxModel, options: VerifyOptions, *, reference_label: str = "PyTorch"
) -> Expected:
    """Run the reference on every case: ReferenceFailedError when it raises, VerificationError when it
    disagrees with the ONNX model on the number of outputs."""
    cases = verification_cases(onnx_model.io.inputs, onnx_model.example_sizes, options)
    out_names = [o.name for o in onnx_model.io.outputs]
    outputs = []
    for k, case in enumerate(cases, 1):
        progress.count("running the reference", k, len(cases))
        try:
            expected = reference(case.arrays)
        except Exception as err:  # noqa: BLE001 — the model's own code raises anything
            raise ReferenceFailedError(
                f"{reference_subject(reference_label)} failed on the verification inputs "
                f"{describe_inputs(case.arrays)} ({case.origin}): {reference_cause(err)}",
                hint="this is the model's own error, not the export's: give inputs it accepts (--input shapes and dtypes, "
                "--range for token ids, class indices and lengths, --sample for real inputs); --debug shows its traceback",
            ) from err
        if len(expected) != len(out_names):
            raise VerificationError(
                f"{reference_subject(reference_label)} returned {_count(len(expected), 'output')}, the ONNX model declares {len(out_names)}",
                hint="return tensors only (no None or Python numbers) from forward, or name the outputs with --output-name",
            )
        outputs.append(expected)
    return Expected(tuple(c.arrays for c in cases), tuple(outputs), reference_label, tuple(c.origin for c in cases), tuple(case_labels(cases)))


NEAR_ZERO, CONSTANT, NON_FINITE = "near-zero", "constant", "non-finite"

# What to do about each kind of degenerate reference (the error's hint says the ones found).
_ADVICE = {
    NEAR_ZERO: "outputs this close to zero are what an untrained, random-init model gives (e.g. BatchNorm with untrained "
    "running statistics: outputs around 1e-22): verify the trained weights",
    CONSTANT: "the output ignores the model's inputs, or saturates on these ones: verify on real data (--sample FILE.npz) "
    "or on values that exercise the model (--range NAME=LO:HI)",
    NON_FINITE: "the reference itself computes NaN/Inf: the model or its inputs are broken (check the weights, and give "
    "inputs in their real range with --range or --sample)",
}


@dataclass(frozen=True)
class Degenerate:
    """An output whose reference values make the gate unable to fail: ``reason`` says why, ``short`` is
    the same for a table's note column, ``kind`` which of the three it is (its hint)."""

    output: str
    reason: str  # what is degenerate about it
    consequence: str  # why that matters
    short: str
    kind: str  # NEAR_ZERO, CONSTANT or NON_FINITE


def degenerate_outputs(expected: Expected, out_names: list[str], atol: float, rtol: float) -> list[Degenerate]:
    """Floating-point outputs whose reference is non-finite, within ``atol`` of zero everywhere, or the
    same in every case although the inputs differ. (Integer and bool outputs are compared exactly and
    not judged: equal class indices or flags in a few cases happen by chance.)"""
    out = []
    for j, name in enumerate(out_names):
        values = [np.asarray(o[j]) for o in expected.outputs]
        if not values or not all(np.issubdtype(v.dtype, np.floating) for v in values) or sum(v.size for v in values) == 0:
            continue
        found = _why_degenerate(values, expected.cases, atol, rtol)
        if found is not None:
            out.append(Degenerate(name, *found))
    return out


def _why_degenerate(values: list[np.ndarray], cases: tuple[dict[str, np.ndarray], ...], atol: float, rtol: float) -> tuple[str, str, str, str] | None:
    n = len(values)
    bad = sum(int(np.count_nonzero(~np.isfinite(v))) for v in values)
    if bad:
        total = sum(v.size for v in values)
        return (
            f"{bad} of its {total} reference values are NaN or Inf",
            "the gate can only match those values, not measure an error on them",
            "NaN/Inf",
            NON_FINITE,
        )
    largest = max(float(np.abs(v).max()) for v in values if v.size)
    if largest <= atol:
        return (
            f"every reference value is within atol={atol:g} of zero (largest |value| {largest:.3g} over {_count(n, 'case')})",
            "an export that returns zeros would pass as well",
            "all |values| ≤ atol",
            NEAR_ZERO,
        )
    pairs = [
        (i, k) for i in range(n) for k in range(i) if values[i].shape == values[k].shape and not _same_inputs(cases[i], cases[k])
    ]
    if pairs and all(bool(np.all(np.abs(values[i] - values[k]) <= atol + rtol * np.abs(values[k]))) for i, k in pairs):
        spread = max(float(np.abs(values[i] - values[k]).max(initial=0.0)) for i, k in pairs)
        what = (
            f"its reference is the same in all {n} cases"
            if spread == 0.0
            else f"its reference varies across the {n} cases by at most {spread:.3g}, within the tolerance (atol={atol:g}, rtol={rtol:g}),"
        )
        return (
            f"{what} although their inputs differ",
            "an export that ignores its inputs would pass as well",
            "same in every case" if spread == 0.0 else "within tolerance in every case",
            CONSTANT,
        )
    return None


def _same_inputs(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(a[k].shape == b[k].shape and np.array_equal(a[k], b[k]) for k in a)


def degenerate_hint(degenerate: list[Degenerate]) -> str:
    """What to do about the degenerate references found: the advice for each kind among them, once."""
    kinds = dict.fromkeys(d.kind for d in degenerate)
    return "; ".join(_ADVICE[k] for k in kinds) + "; pass --allow-degenerate to accept it knowingly"


def degenerate_notice(d: Degenerate) -> str:
    """What a build with ``--allow-degenerate`` says about an accepted output (report, README, JSON)."""
    return f"output {d.output!r} was not verified: {d.reason}, so {d.consequence}; accepted with --allow-degenerate — check it with real inputs"


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def verify(
    reference: Callable[[dict[str, np.ndarray]], list[np.ndarray]] | Expected,
    artifacts: Mapping[str, Path],
    onnx_model: OnnxModel,
    options: VerifyOptions,
    golden_dir: Path | None = None,
    *,
    reference_label: str = "PyTorch",
    sorted_outputs: Collection[str] = (),
) -> VerificationReport:
    """Compare every artifact with the reference (a callable, or its outputs already computed) on every
    case; raise VerificationError listing every failure (outputs that differ, and outputs whose
    reference is degenerate unless ``options.allow_degenerate``). ``sorted_outputs``: outputs the graph
    sorts (``--top-k``'s ``scores``): their argmax is the first column in every run, so the table shows no
    top-1 agreement for them (it would always be 1)."""
    if not isinstance(reference, Expected):
        reference = reference_outputs(reference, onnx_model, options, reference_label=reference_label)
    runs = artifact_runs(reference, artifacts)
    return verify_runs(reference, runs, onnx_model, options, golden_dir, sorted_outputs=sorted_outputs)


def verify_runs(
    reference: Expected,
    runs: Mapping[str, list[Run]],
    onnx_model: OnnxModel,
    options: VerifyOptions,
    golden_dir: Path | None = None,
    *,
    sorted_outputs: Collection[str] = (),
) -> VerificationReport:
    """The gate on outputs already computed: ``runs`` holds every artifact's outputs (or what it raised) on
    every case of ``reference``, in its order. :func:`verify` runs ONNX Runtime artifacts and calls this;
    a backend with a runtime of its own (Core AI's host runtime, ``mobilegen.backends.coreai``) computes its
    runs and calls it directly, so every runtime is judged by the same comparison, degenerate-reference
    check and golden vectors."""
    out_names = [o.name for o in onnx_model.io.outputs]
    degenerate = degenerate_outputs(reference, out_names, options.atol, options.rtol)
    accepted = {d.output: f"degenerate reference ({d.short}), accepted with --allow-degenerate" for d in degenerate if options.allow_degenerate}
    rows = _rows(reference, runs, out_names, options, accepted, sorted_outputs)
    golden = [GoldenCase(dict(arrays), dict(zip(out_names, expected, strict=True))) for arrays, expected in zip(reference.cases, reference.outputs, strict=True)]
    npz = mgv = None
    cases: list[Path] = []
    if golden_dir is not None and golden:
        golden_dir.mkdir(parents=True, exist_ok=True)
        npz = golden_dir / "golden.npz"
        mgv = golden_dir / "golden.mgv"
        mgv.write_bytes(encode_mgv(golden[0]))
        cases = [npz, *(golden_dir / f"golden_case{i}.npz" for i in range(1, len(golden)))]
        for path, case in zip(cases, golden, strict=True):
            write_npz(path, case)
    notices = tuple(degenerate_notice(d) for d in degenerate) if options.allow_degenerate else ()
    report = VerificationReport(
        rows=tuple(rows), atol=options.atol, rtol=options.rtol, golden_npz=npz, golden_mgv=mgv, notices=notices, golden_cases=tuple(cases)
    )
    failure = _failure(rows, [] if options.allow_degenerate else degenerate, reference.label, options, passthrough=onnx_model.exporter == "passthrough")
    if failure is not None:
        failure.report = report  # type: ignore[attr-defined]
        explain_gate_failure(failure, onnx_model, report)  # a TorchScript fallback is the likely cause: say so
        raise failure
    return report


Run = list[np.ndarray] | Exception  # an artifact's outputs on one case, or what it raised


def artifact_runs(reference: Expected, artifacts: Mapping[str, Path]) -> dict[str, list[Run]]:
    """Every artifact's outputs on every case, one onnxruntime session at a time: each session (and its
    copy of the weights) is let go before the next one loads, so a large model's verification holds one
    model in memory, not one per artifact. Safe to call from several threads at once (one per model)."""
    runs: dict[str, list[Run]] = {}
    total = len(reference.cases) * len(artifacts)
    for i, (label, path) in enumerate(artifacts.items()):
        runtime = backends.by_suffix(path.suffix)
        try:
            run = ort_runner(path) if runtime is None or runtime.name == backends.DEFAULT else backends.host_runner(path)
        except MobilegenError:
            raise
        except Exception as err:  # noqa: BLE001 — ORT (and the other runtimes') load failures are plain exceptions
            who = "onnxruntime" if runtime is None or runtime.name == backends.DEFAULT else f"{runtime.display_name}'s host runtime"
            raise VerificationError(f"{who} cannot load the {label} artifact: {first_line(err)}", hint="rerun with --debug") from err
        runs[label] = case_runs(reference, run, done=i * len(reference.cases), total=total)
        del run  # the session goes now, before the next artifact's loads
        release_memory(collect=False)  # freed when its last reference went (the closure holds no cycle)
    return runs


def case_runs(reference: Expected, run: Callable[[dict[str, np.ndarray]], list[np.ndarray]], *, done: int = 0, total: int = 0) -> list[Run]:
    """One artifact's outputs on every case of ``reference``, in order; a case that raises gives its error
    (the gate reports it), never an exception here. ``done``/``total``: the "verifying" progress count."""
    got: list[Run] = []
    for k, arrays in enumerate(reference.cases, 1):
        progress.count("verifying", done + k, total or len(reference.cases))
        try:
            got.append(run(arrays))
        except Exception as err:  # noqa: BLE001 — onnxruntime's run failures are plain exceptions
            got.append(err)
    return got


def _rows(
    reference: Expected,
    runs: Mapping[str, list[Run]],
    out_names: list[str],
    options: VerifyOptions,
    accepted: Mapping[str, str],
    sorted_outputs: Collection[str] = (),
) -> list[VerifyRow]:
    rows: list[VerifyRow] = []
    labels = list(reference.labels) or case_labels([Case(arrays, "") for arrays in reference.cases])
    for k, (case, expected) in enumerate(zip(labels, reference.outputs, strict=True)):
        for label, artifact_runs in runs.items():
            got = artifact_runs[k]
            if isinstance(got, Exception):
                rows.append(VerifyRow(label, case, "*", math.inf, math.inf, 0.0, None, False, f"run failed: {first_line(got, 200)}"))
                continue
            if len(got) != len(expected):
                rows.append(VerifyRow(label, case, "*", math.inf, math.inf, 0.0, None, False, f"{_count(len(got), 'output')}, expected {len(expected)}"))
                continue
            for name, e, g in zip(out_names, expected, got, strict=True):
                ma, mr, cos, top1, ok, note = compare(name, e, g, options.atol, options.rtol)
                top1 = None if name in sorted_outputs else top1
                note = "; ".join(n for n in (note, accepted.get(name, "")) if n)
                rows.append(VerifyRow(label, case, name, ma, mr, cos, top1, ok, note, unverified=name in accepted))
    return rows


def _failure(rows: list[VerifyRow], degenerate: list[Degenerate], reference_label: str, options: VerifyOptions, *, passthrough: bool) -> VerificationError | None:
    """One error for everything that failed: outputs that differ first, then degenerate references."""
    failing = [r for r in rows if not r.passed]
    lines = [
        f"{r.artifact:5} {r.case:24} {r.output:20} max_abs={r.max_abs:.3g} max_rel={r.max_rel:.3g} cos={r.cosine:.6f}"
        + (f" top1={r.top1:.2f}" if r.top1 is not None else "")
        + (f" ({r.note})" if r.note else "")
        for r in failing
    ] + [f"{d.output}: degenerate reference — {d.reason}, so {d.consequence}" for d in degenerate]
    subject = reference_subject(reference_label)
    if failing:
        return VerificationError(
            f"{len(failing)} of {len(rows)} output checks differ from {reference_label} beyond atol={options.atol:g} rtol={options.rtol:g}"
            + (f"; {len(degenerate)} output(s) of {subject} are degenerate" if degenerate else ""),
            hint="inspect the table; loosen --atol/--rtol only if the error is expected (e.g. fp16)" + ("" if passthrough else ", or try another --opset"),
            details=lines,
        )
    if degenerate:
        first = degenerate[0]
        more = f" (and {len(degenerate) - 1} more output(s), listed below)" if len(degenerate) > 1 else ""
        return VerificationError(
            f"verification is inconclusive: output {first.output!r} of {subject} is degenerate — {first.reason}, so {first.consequence}{more}",
            hint=degenerate_hint(degenerate),
            details=lines if len(degenerate) > 1 else [],
        )
    return None
