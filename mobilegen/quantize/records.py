"""What ``--quantize`` records: per shipped model a :class:`QuantizationRecord` (recipe, calibration,
sizes, the accuracy gate's rows and worst layers), and the manifest's ``options.quantize``. Plain data,
JSON-able; the stage (:mod:`mobilegen.quantize.stage`) fills them in, the manifest, the report and the
CLI's JSON read them.

``calibration.method`` is the calibration method only for a mode that calibrates (``int8``); ``dynamic``
and ``fp16`` calibrate nothing, so theirs is null, and so is ``options.quantize.calibration_method``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen.infra.json_types import JSONValue

if TYPE_CHECKING:
    from mobilegen.quantize.options import QuantizeOptions

CALIBRATED_MODES = ("int8",)  # the modes whose activation ranges come from calibration samples


@dataclass(frozen=True)
class AccuracyRow:
    """One output of the accuracy gate: the quantized model against the fp32 one."""

    artifact: str  # "ort" / "onnx"
    output: str
    cosine: float
    max_abs: float
    # top-1 agreement; for an exact row, the fraction of elements equal to fp32's; None for outputs that are
    # not classifier-shaped or are already sorted (--top-k's scores: their argmax is always the first)
    top1: float | None
    exact: bool = False  # an integer/bool output (class ids): cosine and max_abs are not gated nor widen atol
    all_ranks: float | None = None  # --top-k's indices: agreement of every rank (top1 is rank 1's, gated)

    def to_dict(self) -> dict[str, JSONValue]:
        # an integer output (class ids): no cosine or max abs worth reading, null as the tables' "-"
        cosine, max_abs = (None, None) if self.exact else (_num(self.cosine), _num(self.max_abs))
        out: dict[str, JSONValue] = {"artifact": self.artifact, "output": self.output, "cosine": cosine, "max_abs": max_abs, "top1": _num(self.top1)}
        if self.all_ranks is not None:
            out["all_ranks"] = _num(self.all_ranks)
        return out | {"exact": True} if self.exact else out


@dataclass(frozen=True)
class LayerNoise:
    """A tensor of the quantized model and its signal-to-quantization-noise ratio (dB; lower is worse)."""

    tensor: str
    sqnr_db: float

    def to_dict(self) -> dict[str, JSONValue]:
        return {"tensor": self.tensor, "sqnr_db": _num(self.sqnr_db)}


@dataclass(frozen=True)
class QuantizationRecord:
    """What ``--quantize`` did to one shipped model: its recipe, calibration and accuracy, or (``shipped``
    "fp32") why its targets' providers refused the mode."""

    mode: str  # what was asked: "int8", "dynamic", "fp16"
    shipped: str  # what ships: the mode, or "fp32" when refused
    reason: str = ""  # the refusal's reason, or the recipe's
    recipe: dict[str, JSONValue] = field(default_factory=dict)
    calibration: dict[str, JSONValue] = field(default_factory=dict)  # source, count, trustworthy, method (None: nothing calibrated)
    ort_size_before: int = 0
    ort_size_after: int = 0
    onnx_size_before: int = 0
    onnx_size_after: int = 0
    quantized_nodes: int = 0
    accuracy: tuple[AccuracyRow, ...] = ()
    worst_layers: tuple[LayerNoise, ...] = ()
    samples: int = 0
    min_cosine: float = 0.0
    min_top1: float = 0.0
    golden_atol: float = 0.0  # what the golden re-run and the device tests allow (0: the build's atol)
    output_step: float = 0.0  # the largest DequantizeLinear scale producing an output (golden_atol covers two)
    # how golden_atol was derived from the model's own golden outputs (mobilegen.quantize.golden.derive_tolerance)
    golden_tolerance: dict[str, JSONValue] = field(default_factory=dict)
    # int8 judged on the target's first provider (mobilegen.quantize.judged.Judgement.record): provider, fp32 /
    # recipe / quantized coverage counts, left_float, rounds, refused; {} when not judged (no provider, convert)
    coverage: dict[str, JSONValue] = field(default_factory=dict)

    @property
    def quantized(self) -> bool:
        return self.shipped != "fp32"

    @property
    def trustworthy(self) -> bool:
        return bool(self.calibration.get("trustworthy", True))

    @property
    def ratio(self) -> float:
        return self.ort_size_after / self.ort_size_before if self.ort_size_before else 0.0

    def to_dict(self) -> dict[str, JSONValue]:
        out: dict[str, JSONValue] = {"mode": self.mode, "shipped": self.shipped, "reason": self.reason}
        if self.coverage:
            out["coverage"] = self.coverage
        if not self.quantized:
            return out
        return out | {
            "recipe": self.recipe,
            "calibration": self.calibration,
            "size": {
                "ort_before": self.ort_size_before,
                "ort_after": self.ort_size_after,
                "onnx_before": self.onnx_size_before,
                "onnx_after": self.onnx_size_after,
                "ratio": round(self.ratio, 4),
            },
            "quantized_nodes": self.quantized_nodes,
            "accuracy": {
                "samples": self.samples,
                "min_cosine": self.min_cosine,
                "min_top1": self.min_top1,
                "outputs": [r.to_dict() for r in self.accuracy],
                "worst_layers": [w.to_dict() for w in self.worst_layers],
            },
            "golden_tolerance": self.golden_tolerance,
        }


def _num(x: float | None) -> JSONValue:
    if x is None:
        return None
    return float(x) if math.isfinite(x) else str(x)


def calibration_method(q: QuantizeOptions) -> str | None:
    """The calibration method a mode used: ``--calibration-method`` for ``int8``, None for the modes that
    calibrate nothing (their option keeps its default, which means nothing there)."""
    return q.method if q.mode in CALIBRATED_MODES else None


def options_record(q: QuantizeOptions | None) -> dict[str, JSONValue]:
    """The manifest's ``options.quantize`` (file names only, never paths)."""
    if q is None or q.mode is None:
        return {"mode": None}
    calibration = q.calibration if q.calibration in (None, "random") else Path(str(q.calibration)).name
    return {
        "mode": q.mode,
        "calibration": calibration,
        "calibration_method": calibration_method(q),
        "eval": None if q.eval is None else Path(q.eval).name,
        "min_cosine": q.min_cosine,
        "min_top1": q.min_top1,
        "seed": q.seed,
    }


def calibration_record(calib: Any, q: QuantizeOptions) -> dict[str, JSONValue]:
    return {
        "source": str(calib.source),  # file and folder names only (mobilegen.quantize.calibration)
        "count": int(calib.count),
        "trustworthy": bool(calib.trustworthy),
        "method": calibration_method(q),
        "eval": "--eval " + Path(q.eval).name if q.eval is not None else "held out from calibration" if calib.count else str(calib.source),
    }


def _field(row: Any, name: str, index: int) -> Any:
    return getattr(row, name) if hasattr(row, name) else row[index]


def accuracy_rows(kind: str, report: Any) -> tuple[AccuracyRow, ...]:
    """The gate's :class:`~mobilegen.quantize.AccuracyReport` outputs as the record's rows."""
    rows = []
    for row in report.outputs:
        top1 = _field(row, "top1", 3)
        exact = bool(getattr(row, "exact", False))
        ranks = getattr(row, "all_ranks", None)
        rows.append(
            AccuracyRow(
                kind, str(_field(row, "name", 0)), float(_field(row, "cosine", 1)), float(_field(row, "max_abs", 2)),
                None if top1 is None else float(top1), exact, None if ranks is None else float(ranks),
            )
        )  # fmt: skip
    return tuple(rows)


def worst_layers(report: Any) -> tuple[LayerNoise, ...]:
    return tuple(LayerNoise(str(_field(w, "tensor", 0)), float(_field(w, "sqnr_db", 1))) for w in getattr(report, "worst_layers", ()) or ())
