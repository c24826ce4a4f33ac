"""The quantize stage of a build (``--quantize int8|dynamic|fp16``), and of ``mobilegen convert``.

It runs after the fp32 models were written, converted and verified against the reference (that proves
the export), and before the coverage analysis, which then sees the models that ship:

1. per target, the recipe its providers take (:func:`mobilegen.quantize.recipe_for` on the target's
   provider chain, in order; no provider = the CPU); a :class:`~mobilegen.quantize.Refusal` keeps the
   fp32 model for that target and says why (a notice: report, READMEs, JSON);
2. targets of one fp32 model with the same recipe share one quantized model; the models land in
   ``model/`` when one model serves every target, else ``model/<target>/`` (as the fix stage's);
3. each quantized ``.onnx`` is converted to ``.ort``, and the accuracy gate compares both with the fp32
   model on the held-out (or ``--eval``) samples: below ``--min-cosine``/``--min-top1`` the build fails
   (exit 5, the table of outputs and worst layers) and nothing is written;
4. a quantized model's golden vectors are its own outputs (onnxruntime CPU, the ``.ort``) on the golden
   inputs, in ``golden/`` (or ``golden/<target>/`` next to an fp32 model of another target), with a
   tolerance wide enough for another CPU's integer kernels (the worst error the gate measured).

Everything is done in a private temp folder first; the package's model folders change only once every
quantized model passed its gate.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen.artifacts import (
    MODEL_ONNX_NAME,
    MODEL_OPS_CONFIG_NAME,
    MODEL_ORT_NAME,
    JSONValue,
    OnnxModel,
    OrtModel,
    ShippedModel,
    model_folder,
)
from mobilegen.errors import InternalError, VerificationError
from mobilegen.warnings import Notice

if TYPE_CHECKING:
    from mobilegen.coverage.target import EPTarget
    from mobilegen.options import BuildOptions
    from mobilegen.pipeline import Chosen
    from mobilegen.quantize import QuantizeMode, QuantizeOptions

GOLDEN_DIR = "golden"
GOLDEN_NPZ_NAME = "golden.npz"
GOLDEN_MGV_NAME = "golden.mgv"


# --- what the stage records ------------------------------------------------------------------------


@dataclass(frozen=True)
class AccuracyRow:
    """One output of the accuracy gate: the quantized model against the fp32 one."""

    artifact: str  # "ort" / "onnx"
    output: str
    cosine: float
    max_abs: float
    top1: float | None  # top-1 agreement; for an exact row, the fraction of elements equal to fp32's
    exact: bool = False  # an integer/bool output (class ids): cosine and max_abs are not gated nor widen atol

    def to_dict(self) -> dict[str, JSONValue]:
        out: dict[str, JSONValue] = {"artifact": self.artifact, "output": self.output, "cosine": _num(self.cosine), "max_abs": _num(self.max_abs), "top1": _num(self.top1)}
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
    calibration: dict[str, JSONValue] = field(default_factory=dict)  # source, count, trustworthy, method
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
        }


def _num(x: float | None) -> JSONValue:
    if x is None:
        return None
    return float(x) if math.isfinite(x) else str(x)


def options_record(q: QuantizeOptions | None) -> dict[str, JSONValue]:
    """The manifest's ``options.quantize`` (file names only, never paths)."""
    if q is None or q.mode is None:
        return {"mode": None}
    calibration = q.calibration if q.calibration in (None, "random") else Path(str(q.calibration)).name
    return {
        "mode": q.mode,
        "calibration": calibration,
        "calibration_method": q.method,
        "eval": None if q.eval is None else Path(q.eval).name,
        "min_cosine": q.min_cosine,
        "min_top1": q.min_top1,
        "seed": q.seed,
    }


def check_options(opts: BuildOptions) -> None:
    """``--quantize`` flags, before any heavy work (UsageError, exit 2)."""
    q = getattr(opts, "quantize", None)
    if q is not None:
        q.check()


def golden_folder(model: ShippedModel) -> str:
    """Where a model's golden vectors are: ``golden`` (the reference's, or a quantized model's own when it
    is the package's only one), or ``golden/<target>`` for a quantized model next to another target's."""
    return getattr(model, "golden", GOLDEN_DIR) or GOLDEN_DIR


def tolerances_of(model: ShippedModel, atol: float, rtol: float) -> tuple[float, float]:
    """(atol, rtol) a model's golden vectors are checked with (package verify, device tests): the build's,
    widened for a quantized model to the worst error its gate measured against fp32 (another CPU's, or a
    phone's, integer kernels round differently from this machine's)."""
    record: QuantizationRecord | None = getattr(model, "quantization", None)
    if record is None or not record.quantized:
        return atol, rtol
    return max(atol, record.golden_atol), rtol


# --- the stage ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Group:
    """Targets of one fp32 model that get the same outcome (one recipe, or fp32)."""

    source: ShippedModel
    targets: tuple[str, ...]
    recipe: Any  # Recipe, or None for fp32
    refusal: Any = None  # Refusal (for the record), when fp32 because of it


def quantize_build(
    models: Sequence[ShippedModel], chosen: Sequence[Chosen], opts: BuildOptions, root: Path
) -> tuple[tuple[ShippedModel, ...], list[Notice]]:
    """The build's models after ``--quantize`` (unchanged without it), and the notices to say."""
    q = getattr(opts, "quantize", None)
    if q is None or q.mode is None:
        return tuple(models), []
    from mobilegen import progress

    progress.step("quantizing")
    groups, notices = _plan(models, chosen, q.mode)
    if not any(g.recipe is not None for g in groups):
        return tuple(_refused(g, q.mode) for g in groups), notices
    from mobilegen.outputs import temp_dir

    calib = samples_for(q, models[0].onnx.io)
    if not calib.trustworthy:
        notices.append(untrustworthy_notice(calib.source, calib.count))
    with temp_dir("quantize") as tmp:
        built = {i: _quantize_group(g, q, calib, tmp / str(i), opts.style) for i, g in enumerate(groups) if g.recipe is not None}
        shipped = _lay_out(groups, built, root, q.mode, opts.verify.atol)
    _write_golden(shipped, root)
    return shipped, notices


def samples_for(q: QuantizeOptions, io: Any) -> Any:
    """The calibration (``--calibration``) and the gate's samples. ``dynamic`` and ``fp16`` calibrate
    nothing: their gate runs on ``--eval``, else on every ``--calibration`` sample (seeded random inputs without
    it: no scales, no untrustworthy notice); ``count`` 0 and a ``source`` naming what the gate ran on say so."""
    from mobilegen.quantize import load_calibration

    if q.mode == "int8":
        return load_calibration(q, io)
    import numpy as np

    calib = load_calibration(q if q.calibration is not None else replace(q, calibration="random"), io)
    held = f"the samples of {calib.source}" if q.calibration not in (None, "random") else f"{calib.source} inputs"
    held = f"--eval {Path(str(q.eval)).name}" if q.eval is not None else held
    samples = calib.held_out if q.eval is not None else {k: np.concatenate([calib.samples[k], v]) for k, v in calib.held_out.items()}
    return replace(calib, held_out=samples, source=held, count=0, trustworthy=True)


def provider_chain(c: Chosen, io: Any) -> tuple[EPTarget, ...]:
    """A target's provider chain with its settings, in order (empty: the CPU alone)."""
    from mobilegen.targets import BuildContext

    return tuple(c.target.providers(c.opts, BuildContext(io=io, static=io.is_static, targets=(c.target.name,))))


def _plan(models: Sequence[ShippedModel], chosen: Sequence[Chosen], mode: QuantizeMode) -> tuple[list[_Group], list[Notice]]:
    from mobilegen.quantize import Refusal, recipe_for

    groups: dict[tuple[str, str], _Group] = {}
    notices: list[Notice] = []
    for c in chosen:
        m = next((m for m in models if c.target.name in m.targets), None)
        if m is None:
            raise InternalError(f"no model for the {c.target.name} target")
        chain = provider_chain(c, m.onnx.io)
        arch = next((ep.str_value("qnn_htp_arch") for ep in chain if ep.ep == "qnn"), None)  # the chain's own setting
        decision = recipe_for(mode, [ep.ep for ep in chain], qnn_htp_arch=arch)
        if isinstance(decision, Refusal):
            key = (m.folder, "fp32")
            notices.append(refused_notice(mode, c.target.display_name, decision.reason, c.target.name))
            recipe, refusal = None, decision
        else:
            key = (m.folder, json.dumps(decision.record(), sort_keys=True, default=str))
            recipe, refusal = decision, None
        old = groups.get(key)
        groups[key] = _Group(m, (*old.targets, c.target.name) if old else (c.target.name,), recipe, refusal if old is None else old.refusal)
    return list(groups.values()), notices


def refused_notice(mode: str, display: str, reason: str, target: str) -> Notice:
    return Notice("quantize-refused", "warning", f"--quantize {mode}: the {display} model ships fp32 — {reason}", subject=target)


def untrustworthy_notice(source: str, count: int) -> Notice:
    return Notice(
        "quantize-untrustworthy",
        "severe",
        f"UNTRUSTWORTHY quantization: calibrated on {source} ({count} samples), not on real data — its scales and its "
        "accuracy numbers say nothing about real inputs; calibrate with --calibration FILE.npz or a folder of them",
    )


def _refused(g: _Group, mode: str) -> ShippedModel:
    reason = g.refusal.reason if g.refusal is not None else ""
    return replace(g.source, targets=g.targets, quantization=QuantizationRecord(mode, "fp32", reason))


@dataclass(frozen=True)
class _Built:
    """A quantized model in the temp folder, converted and past its gate."""

    folder: Path  # holds model.onnx, model.ort, required_operators.config
    onnx: OnnxModel
    ort: OrtModel
    record: QuantizationRecord


def _quantize_group(g: _Group, q: QuantizeOptions, calib: Any, work: Path, style: str) -> _Built:
    import onnx

    from mobilegen.convert import convert_to_ort
    from mobilegen.export import opset_of
    from mobilegen.quantize import accuracy, gate, quantize
    from mobilegen.stages import write_onnx

    work.mkdir(parents=True)
    src = g.source.onnx.path
    qm = quantize(src, g.recipe, calib, work / "quantized.onnx", method=q.method)
    proto = onnx.load(str(qm.path))
    model = write_onnx(replace(g.source.onnx, path=work / MODEL_ONNX_NAME, opset=opset_of(proto), proto=proto))
    _check_io(g.source.onnx, model)
    ort = convert_to_ort(model, work / MODEL_ORT_NAME, work / MODEL_OPS_CONFIG_NAME, style=style)
    data = calib.held_out  # --eval's samples when given, else those held out from calibration
    reports = {kind: accuracy(src, path, data, q, calib=calib) for kind, path in (("ort", ort.path), ("onnx", model.path))}
    # the noisiest layers come from the .onnx twin (qdq_loss_debug reads ONNX); the .ort's table shows them too
    reports["ort"] = replace(reports["ort"], worst_layers=reports["onnx"].worst_layers)
    for kind, report in reports.items():
        try:
            gate(report)  # VerificationError (exit 5) with the table; the temp folder goes, nothing is written
        except VerificationError as err:
            where = f"{' and '.join(g.targets)} " if g.targets else ""
            err.message = err.message.replace("the quantized model", f"the quantized {where}model (.{kind}, {g.recipe.mode} for {g.recipe.provider})", 1)
            raise
    before = g.source.converted()
    record = QuantizationRecord(
        mode=str(q.mode),
        shipped=str(q.mode),
        reason=str(getattr(g.recipe, "reason", "")),
        recipe=json.loads(json.dumps(g.recipe.record(), default=str)),
        calibration=_calibration_record(calib, q),
        ort_size_before=before.path.stat().st_size,
        ort_size_after=ort.path.stat().st_size,
        onnx_size_before=src.stat().st_size,
        onnx_size_after=model.path.stat().st_size,
        quantized_nodes=int(getattr(qm, "quantized_nodes", 0) or 0),
        accuracy=tuple(row for kind, report in reports.items() for row in _accuracy_rows(kind, report)),
        worst_layers=_worst_layers(reports["ort"]),
        samples=int(getattr(reports["ort"], "samples", 0) or 0),
        min_cosine=float(q.min_cosine),
        min_top1=float(q.min_top1),
        golden_atol=max(report.float_error for report in reports.values()),  # class ids widen no tolerance
    )
    return _Built(work, replace(model, path=work / MODEL_ONNX_NAME), ort, record)


def _check_io(fp32: OnnxModel, quantized: OnnxModel) -> None:
    """Quantization stays inside the graph: the wrappers' inputs and outputs keep their names and dtypes."""
    from mobilegen.load import onnx_io_spec

    if quantized.proto is not None:
        io = onnx_io_spec(quantized.proto)
        want = [(t.name, t.dtype) for t in (*fp32.io.inputs, *fp32.io.outputs)]
        got = [(t.name, t.dtype) for t in (*io.inputs, *io.outputs)]
        if want != got:
            raise InternalError(f"quantization changed the model's inputs/outputs: {want} -> {got}", hint="this is a bug in mobilegen.quantize")


def _calibration_record(calib: Any, q: QuantizeOptions) -> dict[str, JSONValue]:
    return {
        "source": str(calib.source),  # file and folder names only (mobilegen.quantize.calibration)
        "count": int(calib.count),
        "trustworthy": bool(calib.trustworthy),
        "method": q.method,
        "eval": "--eval " + Path(q.eval).name if q.eval is not None else "held out from calibration" if calib.count else str(calib.source),
    }


def _field(row: Any, name: str, index: int) -> Any:
    return getattr(row, name) if hasattr(row, name) else row[index]


def _accuracy_rows(kind: str, report: Any) -> tuple[AccuracyRow, ...]:
    rows = []
    for row in report.outputs:
        top1 = _field(row, "top1", 3)
        exact = bool(getattr(row, "exact", False))
        rows.append(AccuracyRow(kind, str(_field(row, "name", 0)), float(_field(row, "cosine", 1)), float(_field(row, "max_abs", 2)), None if top1 is None else float(top1), exact))
    return tuple(rows)


def _worst_layers(report: Any) -> tuple[LayerNoise, ...]:
    return tuple(LayerNoise(str(_field(w, "tensor", 0)), float(_field(w, "sqnr_db", 1))) for w in getattr(report, "worst_layers", ()) or ())


def _lay_out(groups: Sequence[_Group], built: dict[int, _Built], root: Path, mode: str, atol: float) -> tuple[ShippedModel, ...]:
    """Put every model in its package folder: ``model/`` when one model serves every target, else
    ``model/<first target>/``; fp32 models move there when their folder changes."""
    single = len(groups) == 1
    moves: list[tuple[ShippedModel, str]] = []
    for g in groups:
        folder = model_folder(None if single else g.targets[0])
        moves.append((g.source, folder))
    staged = _park_sources(groups, root)  # the fp32 files leave their folders before anything lands
    shipped: list[ShippedModel] = []
    for i, (g, (_src, folder)) in enumerate(zip(groups, moves, strict=True)):
        dest = root / folder
        dest.mkdir(parents=True, exist_ok=True)
        if g.recipe is None:
            shipped.append(_place_fp32(g, staged[g.source.folder], dest, folder, mode, root))
        else:
            b = built[i]
            for name in (MODEL_ONNX_NAME, MODEL_ORT_NAME, MODEL_OPS_CONFIG_NAME):
                shutil.copyfile(b.folder / name, dest / name)
            ort = replace(b.ort, path=dest / MODEL_ORT_NAME, config_path=dest / MODEL_OPS_CONFIG_NAME)
            golden = GOLDEN_DIR if single else f"{GOLDEN_DIR}/{g.targets[0]}"
            record = replace(b.record, golden_atol=max(atol, b.record.golden_atol))
            shipped.append(
                replace(g.source, targets=g.targets, folder=folder, onnx=replace(b.onnx, path=dest / MODEL_ONNX_NAME), ort=ort, quantization=record, golden=golden)
            )
    for parked in staged.values():
        shutil.rmtree(parked, ignore_errors=True)
    return tuple(shipped)


def _park_sources(groups: Sequence[_Group], root: Path) -> dict[str, Path]:
    """Move each fp32 model's three files into a parking folder inside the staging root (renames, no copy)."""
    parked: dict[str, Path] = {}
    for g in groups:
        m = g.source
        if m.folder in parked:
            continue
        park = root / f".fp32-{len(parked)}"
        park.mkdir()
        for rel in m.files():
            (root / rel).rename(park / Path(rel).name)
        parked[m.folder] = park
    return parked


def _place_fp32(g: _Group, park: Path, dest: Path, folder: str, mode: str, root: Path) -> ShippedModel:
    for name in (MODEL_ONNX_NAME, MODEL_ORT_NAME, MODEL_OPS_CONFIG_NAME):
        shutil.copyfile(park / name, dest / name)  # copy: two groups may share one fp32 source
    m = g.source
    ort = m.converted()
    reason = g.refusal.reason if g.refusal is not None else ""
    return replace(
        m,
        targets=g.targets,
        folder=folder,
        onnx=replace(m.onnx, path=dest / MODEL_ONNX_NAME),
        ort=replace(ort, path=dest / MODEL_ORT_NAME, config_path=dest / MODEL_OPS_CONFIG_NAME),
        quantization=QuantizationRecord(mode, "fp32", reason),
    )


def _write_golden(models: Sequence[ShippedModel], root: Path) -> None:
    """Each quantized model's own outputs (onnxruntime CPU, its ``.ort``) on the golden inputs."""
    from mobilegen.golden import GoldenCase, encode_mgv, read_npz, write_npz
    from mobilegen.verify import ort_runner

    ref = read_npz(root / GOLDEN_DIR / GOLDEN_NPZ_NAME)  # the first case's inputs and the reference's outputs
    for m in models:
        record = getattr(m, "quantization", None)
        if record is None or not record.quantized:
            continue
        got = ort_runner(m.converted().path)(dict(ref.inputs))
        case = GoldenCase(dict(ref.inputs), dict(zip(ref.outputs, got, strict=True)))
        folder = root / golden_folder(m)
        folder.mkdir(parents=True, exist_ok=True)
        write_npz(folder / GOLDEN_NPZ_NAME, case)
        (folder / GOLDEN_MGV_NAME).write_bytes(encode_mgv(case))


# --- mobilegen convert --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvertQuantized:
    """``convert --quantize``: the quantized model (in ``work``) and what the stage recorded."""

    onnx: OnnxModel
    ort: OrtModel
    record: QuantizationRecord
    notes: tuple[str, ...]


def quantize_convert(onnx_model: OnnxModel, ort_model: OrtModel, q: QuantizeOptions, work: Path, style: str) -> ConvertQuantized | None:
    """The CPU recipe (``convert`` has no target) applied to a verified fp32 model, converted and gated;
    None without ``--quantize``."""
    if q.mode is None:
        return None
    from mobilegen import progress
    from mobilegen.quantize import Refusal, recipe_for

    progress.step("quantizing")
    decision = recipe_for(q.mode, ())
    if isinstance(decision, Refusal):
        raise InternalError(f"no CPU recipe for --quantize {q.mode}: {decision.reason}")
    source = ShippedModel((), "", onnx_model, ort_model)
    calib = samples_for(q, onnx_model.io)
    built = _quantize_group(_Group(source, (), decision), q, calib, work, style)
    notes = () if calib.trustworthy else (untrustworthy_notice(calib.source, calib.count).text,)
    return ConvertQuantized(built.onnx, built.ort, built.record, notes)
