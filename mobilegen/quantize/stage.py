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
4. a quantized model's golden vectors are its own outputs (onnxruntime CPU, the ``.ort``) on every golden
   case's inputs, in ``golden/`` (or ``golden/<target>/`` next to an fp32 model of another target), with a
   tolerance for another CPU's kernels only (not the quantization error: the golden values are its own),
   derived from those outputs and written beside them as that folder's ``tolerances.json``
   (:mod:`mobilegen.quantize.golden`).

The records the stage fills in are in :mod:`mobilegen.quantize.records`.

Everything is done in a private temp folder first; the package's model folders change only once every
quantized model passed its gate.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen.artifacts import (
    MODEL_ONNX_NAME,
    MODEL_OPS_CONFIG_NAME,
    MODEL_ORT_NAME,
    OnnxModel,
    OrtModel,
    ShippedModel,
    model_folder,
)
from mobilegen.convert.stage import write_onnx
from mobilegen.convert.to_ort import convert_to_ort
from mobilegen.errors import InternalError, VerificationError
from mobilegen.export.exporter import opset_of
from mobilegen.infra import progress
from mobilegen.infra.outputs import temp_dir
from mobilegen.notices import Notice
from mobilegen.quantize import Refusal, accuracy, gate, quantize, recipe_for
from mobilegen.quantize.calibration import load_calibration, load_gate_samples
from mobilegen.quantize.golden import (
    GOLDEN_DIR,
    golden_folder,
    output_step,
    tolerances_of,
    write_golden,
)
from mobilegen.quantize.judged import judged_quantize
from mobilegen.quantize.records import (
    AccuracyRow,
    LayerNoise,
    QuantizationRecord,
    accuracy_rows,
    calibration_record,
    options_record,
    worst_layers,
)
from mobilegen.spec import onnx_io_spec
from mobilegen.targets import BuildContext
from mobilegen.targets import get as target
from mobilegen.tasks.spec import INDICES_OUTPUT, SCORES_OUTPUT

if TYPE_CHECKING:
    from mobilegen.coverage.target import EPTarget
    from mobilegen.options import BuildOptions
    from mobilegen.quantize import QuantizeMode, QuantizeOptions
    from mobilegen.quantize.accuracy import AccuracyReport
    from mobilegen.targets.chosen import Chosen
    from mobilegen.tasks.spec import TaskSpec

# the records and the golden-vector helpers live in their own modules; these names are imported from here too
__all__ = [
    "AccuracyRow",
    "ConvertQuantized",
    "LayerNoise",
    "QuantizationRecord",
    "check_options",
    "golden_folder",
    "options_record",
    "quantize_build",
    "quantize_convert",
    "quantizes",
    "tolerances_of",
]


def check_options(opts: BuildOptions) -> None:
    """``--quantize`` flags, before any heavy work (UsageError, exit 2)."""
    q = getattr(opts, "quantize", None)
    if q is not None:
        q.check()


# --- the stage ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Group:
    """Targets of one fp32 model that get the same outcome (one recipe, or fp32)."""

    source: ShippedModel
    targets: tuple[str, ...]
    recipe: Any  # Recipe, or None for fp32
    refusal: Any = None  # Refusal (for the record), when fp32 because of it
    judged_on: EPTarget | None = None  # the first provider of the targets' chain: the recipe is judged on it


def quantizes(opts: BuildOptions) -> bool:
    """Whether the build's ``--quantize`` asks for a quantized model (:func:`quantize_build` changes the models)."""
    q = getattr(opts, "quantize", None)
    return q is not None and q.mode is not None


def quantize_build(
    models: Sequence[ShippedModel], chosen: Sequence[Chosen], opts: BuildOptions, root: Path, golden_cases: Sequence[Path] = ()
) -> tuple[tuple[ShippedModel, ...], list[Notice]]:
    """The build's models after ``--quantize`` (unchanged without it), and the notices to say. ``golden_cases``:
    the verification's case files (``golden.npz`` first); a quantized model gets its own of each."""
    q = getattr(opts, "quantize", None)
    if q is None or q.mode is None:
        return tuple(models), []

    progress.step("quantizing")
    groups, notices = _plan(models, chosen, q.mode)
    if not any(g.recipe is not None for g in groups):
        return tuple(_refused(g, q.mode) for g in groups), notices

    calib = samples_for(q, models[0].onnx.io)
    if not calib.trustworthy:
        notices.append(untrustworthy_notice(calib.source, calib.count))
    with temp_dir("quantize") as tmp:
        ranked = sorted_outputs(getattr(opts, "task", None))
        built = {i: _quantize_group(g, q, calib, tmp / str(i), opts.style, ranked) for i, g in enumerate(groups) if g.recipe is not None}
        groups, built = _unquantized_ship_fp32(groups, built, q.mode, notices)
        if not built:
            return tuple(_refused(g, q.mode) for g in groups), notices
        shipped = _lay_out(groups, built, root, q.mode)
    return write_golden(shipped, root, opts.verify, golden_cases), notices


def samples_for(q: QuantizeOptions, io: Any) -> Any:
    """The calibration (``--calibration``) and the gate's samples. ``dynamic`` and ``fp16`` calibrate
    nothing: their gate runs on ``--eval``, else on every ``--calibration`` sample (seeded random inputs without
    it: no scales, no untrustworthy notice), with no calibration/held-out split and so no minimum for one
    (a single sample is enough); ``count`` 0 and a ``source`` naming what the gate ran on say so."""
    if q.mode == "int8":
        return load_calibration(q, io)
    calib = load_gate_samples(q, io)
    held = f"the samples of {calib.source}" if q.calibration not in (None, "random") else f"{calib.source} inputs"
    held = f"--eval {Path(str(q.eval)).name}" if q.eval is not None else held
    return replace(calib, source=held, count=0, trustworthy=True)


def provider_chain(c: Chosen, io: Any) -> tuple[EPTarget, ...]:
    """A target's provider chain with its settings, in order (empty: the CPU alone)."""
    return tuple(c.target.providers(c.opts, BuildContext(io=io, static=io.is_static, targets=(c.target.name,))))


def _plan(models: Sequence[ShippedModel], chosen: Sequence[Chosen], mode: QuantizeMode) -> tuple[list[_Group], list[Notice]]:
    groups: dict[tuple[str, str], _Group] = {}
    notices: list[Notice] = []
    for c in chosen:
        m = next((m for m in models if c.target.name in m.targets), None)
        if m is None:
            raise InternalError(f"no model for the {c.target.name} target")
        chain = provider_chain(c, m.onnx.io)
        decision = recipe_for(mode, chain)  # the first provider's recipe, with its settings
        if isinstance(decision, Refusal):
            key = (m.folder, "fp32")
            notices.append(refused_notice(mode, c.target.display_name, decision.reason, c.target.name))
            recipe, refusal = None, decision
        else:
            key = (m.folder, json.dumps(decision.record(), sort_keys=True, default=str))
            recipe, refusal = decision, None
        old = groups.get(key)
        first = chain[0] if chain and recipe is not None and recipe.mode == "int8" else None  # judged (mobilegen.quantize.judged)
        groups[key] = _Group(
            m, (*old.targets, c.target.name) if old else (c.target.name,), recipe, refusal if old is None else old.refusal,
            first if old is None else old.judged_on,
        )  # fmt: skip
    return list(groups.values()), notices


def refused_notice(mode: str, display: str, reason: str, target: str) -> Notice:
    return Notice("quantize-refused", "warning", f"--quantize {mode}: the {display} model ships fp32 — {reason}", subject=target)


def _unquantized_ship_fp32(groups: list[_Group], built: dict[int, _Built], mode: QuantizeMode, notices: list[Notice]) -> tuple[list[_Group], dict[int, _Built]]:
    """A recipe that found none of its ops in the model (a provider whose int8 units are Conv/MaxPool/ConvTranspose
    only: a transformer keeps every MatMul float) quantized nothing, and one whose quantized model places
    worse on the target's first provider than the fp32 model even after narrowing (``_Built.refused``,
    :mod:`mobilegen.quantize.judged`) would slow the app down: that group ships its fp32 model, with the
    reason, like a provider's refusal. Returns the groups (fp32 groups of one model merged) and what stays built."""
    out: list[_Group] = []
    kept: dict[int, _Built] = {}
    for i, g in enumerate(groups):
        b = built.get(i)
        if b is not None and (b.refused or not b.record.quantized_nodes):
            provider = str(getattr(g.recipe, "provider", "?"))
            ops = ", ".join(getattr(g.recipe, "op_types", ()) or ()) or "its default set"
            reason = b.refused or (
                f"the model has none of the ops the {provider} recipe quantizes ({ops}), so nothing in it would be "
                "quantized; choose another --quantize mode (dynamic suits transformer MatMuls) or drop --quantize"
            )
            left = b.record.coverage.get("left_float")
            if not b.refused and isinstance(left, list) and left:  # narrowing left every quantized op float
                reason = (
                    f"every op the {provider} recipe quantized had to be left float to keep the "
                    f"{b.record.coverage.get('provider')} placement of the fp32 model "
                    f"(left float: {', '.join(str(x) for x in left)[:300]}), so nothing would be quantized"
                )
            for t in g.targets:
                notices.append(refused_notice(mode, target(t).display_name, reason, t))
            coverage = b.record.coverage
            g, b = replace(g, recipe=None, refusal=Refusal(mode, provider, reason, coverage)), None
        same = next((k for k, o in enumerate(out) if g.recipe is None and o.recipe is None and o.source.folder == g.source.folder), None)
        if same is not None:  # one fp32 model for every target that ships it
            out[same] = replace(out[same], targets=(*out[same].targets, *g.targets))
            continue
        if b is not None:
            kept[len(out)] = b
        out.append(g)
    return out, kept


def untrustworthy_notice(source: str, count: int) -> Notice:
    return Notice(
        "quantize-untrustworthy",
        "severe",
        f"UNTRUSTWORTHY quantization: calibrated on {source} ({count} samples), not on real data — its scales and its "
        "accuracy numbers say nothing about real inputs; calibrate with --calibration FILE.npz or a folder of them",
    )


def _refused(g: _Group, mode: str) -> ShippedModel:
    reason = g.refusal.reason if g.refusal is not None else ""
    coverage = dict(getattr(g.refusal, "coverage", None) or {})
    return replace(g.source, targets=g.targets, quantization=QuantizationRecord(mode, "fp32", reason, coverage=coverage))


@dataclass(frozen=True)
class _Built:
    """A quantized model in the temp folder, converted and past its gate."""

    folder: Path  # holds model.onnx, model.ort, required_operators.config
    onnx: OnnxModel
    ort: OrtModel
    record: QuantizationRecord
    refused: str = ""  # the judged recipe still places worse than fp32: ship fp32, for this reason


def sorted_outputs(task: TaskSpec | None) -> tuple[str, ...]:
    """Outputs the task's post-processing ranks (``--top-k``'s ``scores`` and ``indices``): the gate computes
    no top-1 agreement for the scores (their first column is the argmax in every model), and holds the
    indices' first column (the top-1 class) to ``--min-top1``; ranks 2..K are near-ties that any
    quantization may swap, so their agreement is shown, not gated."""
    return (SCORES_OUTPUT, INDICES_OUTPUT) if task is not None and task.top_k is not None else ()


def _quantize_group(g: _Group, q: QuantizeOptions, calib: Any, work: Path, style: str, ranked: Sequence[str] = ()) -> _Built:
    import onnx

    work.mkdir(parents=True)
    src = g.source.onnx.path
    judgement = None
    if g.judged_on is not None:  # narrowed until it places no worse than fp32 on the first provider, or refused

        def judge_gate(path: Path) -> AccuracyReport:  # the verdict only: the per-layer noise is for the final table
            return accuracy(src, path, calib.held_out, q, calib=calib, sorted_outputs=ranked, worst=0)

        qm, judgement = judged_quantize(src, g.recipe, calib, work / "quantized.onnx", g.judged_on, method=q.method, gate=judge_gate)
        if judgement.refused or not qm.quantized_nodes:  # ships fp32: no conversion nor gate for a model not shipped
            record = QuantizationRecord(str(q.mode), str(q.mode), quantized_nodes=int(qm.quantized_nodes), coverage=judgement.record())
            return _Built(work, g.source.onnx, g.source.converted(), record, judgement.refused)
    else:
        qm = quantize(src, g.recipe, calib, work / "quantized.onnx", method=q.method)
    proto = onnx.load(str(qm.path))
    model = write_onnx(replace(g.source.onnx, path=work / MODEL_ONNX_NAME, opset=opset_of(proto), proto=proto))
    _check_io(g.source.onnx, model)
    ort = convert_to_ort(model, work / MODEL_ORT_NAME, work / MODEL_OPS_CONFIG_NAME, style=style)
    data = calib.held_out  # --eval's samples when given, else those held out from calibration
    reports = {kind: accuracy(src, path, data, q, calib=calib, sorted_outputs=ranked) for kind, path in (("ort", ort.path), ("onnx", model.path))}
    # the noisiest layers come from the .onnx twin (qdq_loss_debug reads ONNX); the .ort's table shows them too
    reports["ort"] = replace(reports["ort"], worst_layers=reports["onnx"].worst_layers)
    for kind, report in reports.items():
        try:
            gate(report)  # VerificationError (exit 5) with the table; the temp folder goes, nothing is written
        except VerificationError as err:
            where = f"{' and '.join(g.targets)} " if g.targets else ""
            err.message = err.message.replace("the quantized model", f"the quantized {where}model (.{kind}, {g.recipe.mode} for {g.recipe.provider})", 1)
            if judgement is not None and judgement.accuracy_refused:
                err.details.append(f"accuracy narrowing: {judgement.accuracy_refused}")
                err.data["coverage"] = judgement.record()
            raise
    before = g.source.converted()
    step = output_step(proto)
    record = QuantizationRecord(
        mode=str(q.mode),
        shipped=str(q.mode),
        reason=str(getattr(g.recipe, "reason", "")),
        recipe=json.loads(json.dumps(g.recipe.record(), default=str)),
        calibration=calibration_record(calib, q),
        ort_size_before=before.path.stat().st_size,
        ort_size_after=ort.path.stat().st_size,
        onnx_size_before=src.stat().st_size,
        onnx_size_after=model.path.stat().st_size,
        quantized_nodes=int(getattr(qm, "quantized_nodes", 0) or 0),
        accuracy=tuple(row for kind, report in reports.items() for row in accuracy_rows(kind, report)),
        worst_layers=worst_layers(reports["ort"]),
        samples=int(getattr(reports["ort"], "samples", 0) or 0),
        min_cosine=float(q.min_cosine),
        min_top1=float(q.min_top1),
        output_step=step,  # golden_atol is derived from the model's own golden outputs (write_golden)
        coverage=judgement.record() if judgement is not None else {},
    )
    return _Built(work, replace(model, path=work / MODEL_ONNX_NAME), ort, record)


def _check_io(fp32: OnnxModel, quantized: OnnxModel) -> None:
    """Quantization stays inside the graph: the wrappers' inputs and outputs keep their names and dtypes."""
    if quantized.proto is not None:
        io = onnx_io_spec(quantized.proto)
        want = [(t.name, t.dtype) for t in (*fp32.io.inputs, *fp32.io.outputs)]
        got = [(t.name, t.dtype) for t in (*io.inputs, *io.outputs)]
        if want != got:
            raise InternalError(f"quantization changed the model's inputs/outputs: {want} -> {got}", hint="this is a bug in mobilegen.quantize")


def _lay_out(groups: Sequence[_Group], built: dict[int, _Built], root: Path, mode: str) -> tuple[ShippedModel, ...]:
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
            shipped.append(
                replace(g.source, targets=g.targets, folder=folder, onnx=replace(b.onnx, path=dest / MODEL_ONNX_NAME), ort=ort, quantization=b.record, golden=golden)
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
    coverage = dict(getattr(g.refusal, "coverage", None) or {})
    return replace(
        m,
        targets=g.targets,
        folder=folder,
        onnx=replace(m.onnx, path=dest / MODEL_ONNX_NAME),
        ort=replace(ort, path=dest / MODEL_ORT_NAME, config_path=dest / MODEL_OPS_CONFIG_NAME),
        quantization=QuantizationRecord(mode, "fp32", reason, coverage=coverage),
    )


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
    progress.step("quantizing")
    decision = recipe_for(q.mode, ())
    if isinstance(decision, Refusal):
        raise InternalError(f"no CPU recipe for --quantize {q.mode}: {decision.reason}")
    source = ShippedModel((), "", onnx_model, ort_model)
    calib = samples_for(q, onnx_model.io)
    built = _quantize_group(_Group(source, (), decision), q, calib, work, style)
    notes = () if calib.trustworthy else (untrustworthy_notice(calib.source, calib.count).text,)
    return ConvertQuantized(built.onnx, built.ort, built.record, notes)
