"""The Core AI stage: convert, gate on this host against the reference, optionally int8 through the same
accuracy gate. One frozen :class:`CoreAIBuild` comes out.

* fp32: the ``.aimodel`` runs on ``coreai-core``'s host runtime on every verification case the ORT
  artifacts run on (the same :class:`~mobilegen.verify.gate.Expected`: seeded cases, ``--sample`` cases, the
  golden vectors), judged by :func:`mobilegen.verify.gate.verify_runs` — the ORT gate's comparison,
  tolerances and degenerate-reference check.
* int8 (coreai-opt): the int8 ``.aimodel`` against the fp32 one on the held-out samples, judged by
  :func:`mobilegen.quantize.accuracy.accuracy_of_runs` with ``--min-cosine`` / ``--min-top1`` — the ORT int8
  gate's thresholds and formulas. A failing gate raises (exit 5), as for ORT.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mobilegen.artifacts import LoadedModel, OnnxModel, VerificationReport
from mobilegen.backends.coreai.convert import CoreAIArtifact, to_coreai, to_coreai_int8
from mobilegen.backends.coreai.host import run_cases
from mobilegen.quantize.accuracy import AccuracyReport, accuracy_of_runs, gate
from mobilegen.quantize.calibration import Calibration
from mobilegen.quantize.options import QuantizeOptions
from mobilegen.spec import IOSpec
from mobilegen.verify.gate import Expected, VerifyOptions, verify_runs

LABEL = "coreai"


@dataclass(frozen=True)
class CoreAIBuild:
    fp32: CoreAIArtifact
    verification: VerificationReport  # the fp32 .aimodel against the reference
    int8: CoreAIArtifact | None = None
    accuracy: AccuracyReport | None = None  # the int8 .aimodel against the fp32 one

    @property
    def shipped(self) -> CoreAIArtifact:
        return self.int8 if self.int8 is not None else self.fp32


def verify_coreai(
    artifact: CoreAIArtifact, expected: Expected, onnx_model: OnnxModel, options: VerifyOptions, golden_dir: Path | None = None, *, label: str = LABEL
) -> VerificationReport:
    """The fp32 gate: ``artifact`` on every case of ``expected``; raises VerificationError as the ORT gate does."""
    runs = run_cases(artifact.path, artifact.inputs, [o.name for o in onnx_model.io.outputs], list(expected.cases))
    return verify_runs(expected, {label: runs}, onnx_model, options, golden_dir)


def split_samples(data: Mapping[str, np.ndarray], io: IOSpec) -> list[dict[str, np.ndarray]]:
    """``{name: [N, *shape]}`` (or ``[N, *shape[1:]]`` for a batch dim of one) → one case per sample."""
    count = min((len(v) for v in data.values()), default=0)
    cases = []
    for i in range(count):
        case = {}
        for s in io.inputs:
            a = np.asarray(data[s.name][i])
            case[s.name] = a[None] if a.ndim == len(s.shape) - 1 else a
        cases.append(case)
    return cases


def int8_accuracy(
    fp32: CoreAIArtifact, int8: CoreAIArtifact, samples: Sequence[dict[str, np.ndarray]], io: IOSpec, opts: QuantizeOptions, calib: Calibration | None = None
) -> AccuracyReport:
    """Both ``.aimodel`` folders on every held-out sample, judged like the ORT int8 model (not raised here)."""
    names = [o.name for o in io.outputs]
    ref = run_cases(fp32.path, fp32.inputs, names, samples)
    got = run_cases(int8.path, int8.inputs, names, samples)
    for runs in (ref, got):
        for r in runs:
            if isinstance(r, Exception):
                raise r
    return accuracy_of_runs(names, ref, got, opts, calib=calib)  # type: ignore[arg-type]


def build_coreai(
    loaded: LoadedModel,
    onnx_model: OnnxModel,
    expected: Expected,
    out_dir: Path,
    options: VerifyOptions,
    *,
    name: str = "model",
    int8: str | None = None,
    quantize: QuantizeOptions | None = None,
    calibration: Calibration | None = None,
) -> CoreAIBuild:
    """Convert ``loaded`` into ``out_dir/NAME.aimodel``, gate it, and with ``int8`` ("w8", "w8a8") also
    ``NAME.int8.aimodel`` through the accuracy gate. The example for ``torch.export`` is the first
    verification case (the seeded inputs, in the declared dtypes and ranges)."""
    io = onnx_model.io
    example = expected.cases[0]
    fp32 = to_coreai(loaded, io, example, out_dir / f"{name}.aimodel")
    report = verify_coreai(fp32, expected, onnx_model, options)
    if int8 is None:
        return CoreAIBuild(fp32, report)
    calib = [] if calibration is None else split_samples(calibration.samples, io)
    held_out = list(expected.cases) if calibration is None else split_samples(calibration.held_out, io)
    q = to_coreai_int8(loaded, io, example, calib, out_dir / f"{name}.int8.aimodel", mode=int8)
    acc = int8_accuracy(fp32, q, held_out, io, quantize or QuantizeOptions(), calibration)
    gate(acc)
    return CoreAIBuild(fp32, report, q, acc)
