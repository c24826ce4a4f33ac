"""The numerical gate: run the reference (PyTorch, or the source ONNX) and every artifact on the same
seeded inputs, compare every output, collect every failure, then raise once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mobilegen.artifacts import LoadedModel, OnnxModel, VerificationReport, VerifyRow
from mobilegen.errors import UsageError, VerificationError, first_line
from mobilegen.export import example_arrays, quiet, torch_callable
from mobilegen.golden import GoldenCase, encode_mgv, write_npz
from mobilegen.spec import TensorSpec

DEFAULT_ATOL = 1e-4
DEFAULT_RTOL = 1e-3


@dataclass(frozen=True)
class VerifyOptions:
    atol: float = DEFAULT_ATOL
    rtol: float = DEFAULT_RTOL
    sample: Path | None = None  # --sample FILE.npz: one more case of real inputs

    def __post_init__(self) -> None:
        for flag, value in (("--atol", self.atol), ("--rtol", self.rtol)):
            if not math.isfinite(value) or value < 0:
                raise UsageError(f"{flag} {value} is not a tolerance", hint=f"give a finite number ≥ 0, e.g. {flag} 1e-4")


def compare(name: str, ref: np.ndarray, got: np.ndarray, atol: float, rtol: float) -> tuple[float, float, float, float | None, bool, str]:
    """max abs error, max relative error, cosine similarity, top-1 agreement (2-D), passed, note."""
    if ref.shape != got.shape:
        return math.inf, math.inf, 0.0, None, False, f"shape {got.shape} != expected {ref.shape}"
    if ref.dtype == bool or got.dtype == bool or not np.issubdtype(ref.dtype, np.number):
        same = bool(np.array_equal(ref, got))
        return (0.0 if same else 1.0), (0.0 if same else 1.0), (1.0 if same else 0.0), None, same, ""
    r = ref.astype(np.float64).ravel()
    g = got.astype(np.float64).ravel()
    if r.size == 0:
        return 0.0, 0.0, 1.0, None, True, "empty output"
    finite = np.isfinite(r) & np.isfinite(g)
    nonfinite_mismatch = bool(np.any(~finite & ~((np.isnan(r) & np.isnan(g)) | (r == g))))
    diff = np.abs(r - g)
    diff[~finite] = 0.0
    max_abs = float(diff.max())
    max_rel = float((diff / np.maximum(np.abs(r), 1e-12)).max())
    nr, ng = float(np.linalg.norm(r[finite])), float(np.linalg.norm(g[finite]))
    cosine = float(np.dot(r[finite], g[finite]) / (nr * ng)) if nr > 0 and ng > 0 else (1.0 if nr == ng else 0.0)
    top1 = None
    if ref.ndim == 2 and ref.shape[1] > 1:
        top1 = float(np.mean(np.argmax(ref, axis=1) == np.argmax(got, axis=1)))
    passed = (not nonfinite_mismatch) and bool(np.all(diff <= atol + rtol * np.abs(r)))
    return max_abs, max_rel, cosine, top1, passed, ("NaN/Inf differ" if nonfinite_mismatch else "")


def _case_label(arrays: Mapping[str, np.ndarray]) -> str:
    return ";".join(f"{k}:{'x'.join(map(str, v.shape))}" for k, v in arrays.items())


def verification_cases(specs: tuple[TensorSpec, ...], sizes: dict[str, int], sample: Path | None) -> list[dict[str, np.ndarray]]:
    """The example case; a second size when any dim is dynamic; the user's sample when given."""
    cases = [example_arrays(specs, sizes, seed=0)]
    dyn = {d for s in specs for d in s.dynamic_dims}
    if dyn:
        other = {d: (sizes.get(d, 1) + 1) for d in dyn}
        cases.append(example_arrays(specs, {**sizes, **other}, seed=1))
    if sample is not None:
        cases.append(load_sample(sample, specs))
    return cases


def load_sample(path: Path, specs: tuple[TensorSpec, ...]) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise UsageError(f"--sample {path} does not exist", hint="pass an .npz with one array per model input")
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except Exception as err:  # noqa: BLE001 — numpy raises several types for bad files
        raise UsageError(f"--sample {path} is not a readable .npz", hint="write it with numpy.savez(path, name=array, ...)") from err
    out = {}
    for s in specs:
        if s.name not in data:
            raise UsageError(f"--sample has no array {s.name!r}", hint=f"it has: {', '.join(data) or 'nothing'}")
        a = data[s.name]
        if len(a.shape) != len(s.shape) or any(isinstance(d, int) and d != n for d, n in zip(s.shape, a.shape, strict=True)):
            raise UsageError(f"--sample array {s.name!r} has shape {a.shape}, the model takes {s.shape_str()}", hint="fix the sample's shape")
        out[s.name] = a.astype(s.dtype)
    return out


def torch_reference(loaded: LoadedModel) -> Callable[[dict[str, np.ndarray]], list[np.ndarray]]:
    import torch

    fn = torch_callable(loaded)

    def run(arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        with torch.no_grad(), quiet():
            out = fn(*[torch.from_numpy(np.asarray(a).copy(order="C")) for a in arrays.values()])
        return [t.detach().cpu().numpy() for t in _flatten(out)]

    return run


def _flatten(out: Any) -> list[Any]:
    if isinstance(out, dict):
        return [t for v in out.values() for t in _flatten(v)]
    if isinstance(out, (list, tuple)):
        return [t for v in out for t in _flatten(v)]
    if hasattr(out, "to_tuple"):  # transformers ModelOutput
        return _flatten(out.to_tuple())
    return [out]


def ort_runner(path: Path, *, basic_only: bool = False) -> Callable[[dict[str, np.ndarray]], list[np.ndarray]]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    if basic_only:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])

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


def reference_outputs(
    reference: Callable[[dict[str, np.ndarray]], list[np.ndarray]], onnx_model: OnnxModel, options: VerifyOptions, *, reference_label: str = "pytorch"
) -> Expected:
    """Run the reference on every case (VerificationError when it fails or disagrees on the output count)."""
    cases = verification_cases(onnx_model.io.inputs, onnx_model.example_sizes, options.sample)
    out_names = [o.name for o in onnx_model.io.outputs]
    outputs = []
    for arrays in cases:
        try:
            expected = reference(arrays)
        except Exception as err:  # noqa: BLE001
            raise VerificationError(f"the {reference_label} reference failed on inputs {_case_label(arrays)}: {first_line(err)}", hint="check the input shapes (--input/--dynamic)") from err
        if len(expected) != len(out_names):
            raise VerificationError(
                f"the {reference_label} reference returned {len(expected)} outputs, the ONNX model declares {len(out_names)}",
                hint="return tensors only (no None or Python numbers) from forward, or name the outputs with --output-name",
            )
        outputs.append(expected)
    return Expected(tuple(cases), tuple(outputs), reference_label)


def verify(
    reference: Callable[[dict[str, np.ndarray]], list[np.ndarray]] | Expected,
    artifacts: Mapping[str, Path],
    onnx_model: OnnxModel,
    options: VerifyOptions,
    golden_dir: Path | None = None,
    *,
    reference_label: str = "pytorch",
) -> VerificationReport:
    """Compare every artifact with the reference (a callable, or its outputs already computed) on every
    case; raise VerificationError listing every failure."""
    out_names = [o.name for o in onnx_model.io.outputs]
    rows: list[VerifyRow] = []
    runners: dict[str, Callable[[dict[str, np.ndarray]], list[np.ndarray]]] = {}
    for label, path in artifacts.items():
        try:
            runners[label] = ort_runner(path)
        except Exception as err:  # noqa: BLE001 — ORT load failures are plain exceptions
            raise VerificationError(f"onnxruntime cannot load the {label} artifact: {first_line(err)}", hint="rerun with --debug") from err
    if not isinstance(reference, Expected):
        reference = reference_outputs(reference, onnx_model, options, reference_label=reference_label)
    reference_label = reference.label
    golden: list[GoldenCase] = []
    for arrays, expected in zip(reference.cases, reference.outputs, strict=True):
        golden.append(GoldenCase(dict(arrays), dict(zip(out_names, expected, strict=True))))
        for label, run in runners.items():
            try:
                got = run(arrays)
            except Exception as err:  # noqa: BLE001
                rows.append(VerifyRow(label, _case_label(arrays), "*", math.inf, math.inf, 0.0, None, False, f"run failed: {first_line(err, 200)}"))
                continue
            if len(got) != len(expected):
                rows.append(VerifyRow(label, _case_label(arrays), "*", math.inf, math.inf, 0.0, None, False, f"{len(got)} outputs, expected {len(expected)}"))
                continue
            for name, e, g in zip(out_names, expected, got, strict=True):
                ma, mr, cos, top1, ok, note = compare(name, e, g, options.atol, options.rtol)
                rows.append(VerifyRow(label, _case_label(arrays), name, ma, mr, cos, top1, ok, note))
    npz = mgv = None
    if golden_dir is not None:
        golden_dir.mkdir(parents=True, exist_ok=True)
        npz = golden_dir / "golden.npz"
        mgv = golden_dir / "golden.mgv"
        write_npz(npz, golden[0])
        mgv.write_bytes(encode_mgv(golden[0]))
        for i, case in enumerate(golden[1:], start=1):
            write_npz(golden_dir / f"golden_case{i}.npz", case)
    report = VerificationReport(rows=tuple(rows), atol=options.atol, rtol=options.rtol, golden_npz=npz, golden_mgv=mgv)
    failing = [r for r in rows if not r.passed]
    if failing:
        failure = VerificationError(
            f"{len(failing)} of {len(rows)} output checks differ from {reference_label} beyond atol={options.atol:g} rtol={options.rtol:g}",
            hint="inspect the table; loosen --atol/--rtol only if the error is expected (e.g. fp16)"
            + ("" if onnx_model.exporter == "passthrough" else ", or try another --opset"),
            details=[
                f"{r.artifact:5} {r.case:24} {r.output:20} max_abs={r.max_abs:.3g} max_rel={r.max_rel:.3g} cos={r.cosine:.6f}"
                + (f" top1={r.top1:.2f}" if r.top1 is not None else "")
                + (f" ({r.note})" if r.note else "")
                for r in failing
            ],
        )
        failure.report = report  # type: ignore[attr-defined]
        raise failure
    return report
