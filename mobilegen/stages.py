"""The stages of a build between export and package, each a function from artifacts to the next one.

``pipeline.build`` calls them in order; nothing here knows which targets or providers there are: it asks
``mobilegen.targets`` and ``mobilegen.providers``. From the fix stage on, a build carries one model per
distinct graph (``ShippedModel``: one for every target, or one per target), each written, converted,
verified and analysed on its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mobilegen import __version__, artifacts
from mobilegen.artifacts import (
    JSONValue,
    LoadedModel,
    OnnxModel,
    ProjectSpec,
    ShippedModel,
    VerificationReport,
)
from mobilegen.errors import (
    InternalError,
    LoadError,
    MobilegenError,
    UsageError,
    VerificationError,
    first_line,
)
from mobilegen.memory import release_memory
from mobilegen.targets import BuildContext
from mobilegen.verify import Expected, VerifyOptions, ort_runner, torch_reference
from mobilegen.warnings import Notice

if TYPE_CHECKING:
    from mobilegen.coverage.model import CoverageReport
    from mobilegen.coverage.target import EPTarget
    from mobilegen.options import BuildOptions
    from mobilegen.passes.stage import FixPlan
    from mobilegen.pipeline import Chosen
    from mobilegen.tasks.stage import TaskFiles

Runner = Callable[[dict[str, np.ndarray]], list[np.ndarray]]


def export_notices(loaded: LoadedModel, exported: OnnxModel, opts: BuildOptions) -> list[Notice]:
    from mobilegen import warnings

    named_by_task = opts.task is not None and bool(opts.task.output_names)
    return warnings.export_notices(loaded, exported, output_names_given=bool(opts.model_opts.output_names), task_names_outputs=named_by_task)


def check_fix_options(opts: BuildOptions) -> None:
    """``--approximate`` names approximate passes, and is not given with ``--no-fix`` (before heavy work)."""
    from mobilegen.passes import registry

    if opts.approximate and not opts.fix:
        raise UsageError("--approximate has no effect with --no-fix", hint="drop one of them")
    registry.check_approximate(opts.approximate)


def prepare(exported: OnnxModel, chosen: Sequence[Chosen], *, keep_dynamic: bool) -> tuple[OnnxModel, list[Notice]]:
    """What every target's model gets, in memory: the providers' notices, and ``fixed-dims`` when a
    target's provider declares it (unless ``keep_dynamic``) — for the whole build, as the inputs change.
    (The CoreML cache key is stamped when a model is written: it hashes the bytes written.)"""
    from mobilegen import passes, providers, warnings

    notices: list[Notice] = []
    model = exported
    ctx = _context(model, chosen)
    for c in chosen:
        notices.extend(c.target.notices(c.opts))
        for ep in c.target.providers(c.opts, ctx):
            # about the target that chose the provider: its README lists it, the other target's does not
            notices.extend(replace(n, subject=n.subject or c.target.name) for n in providers.get(ep.ep).notices)
        if _wants_fixed_dims(c, ctx) and not model.io.is_static and not keep_dynamic:
            model, fixed = passes.fix_dynamic_dims(model)
            if fixed:
                also = [o.target.display_name for o in chosen if o is not c and not _wants_fixed_dims(o, ctx)]
                notices.append(warnings.dims_fixed(warnings.dims_fixed_text(fixed), shipped_by=also))
    return model, notices


def _wants_fixed_dims(c: Chosen, ctx: BuildContext) -> bool:
    from mobilegen.passes.registry import wants_fixed_dims

    return wants_fixed_dims(ep.ep for ep in c.target.providers(c.opts, ctx))


def fix(base: OnnxModel, chosen: Sequence[Chosen], opts: BuildOptions) -> FixPlan:
    """Per target, the graph passes that help its providers (decided on ``base``, which is unchanged)."""
    from mobilegen.passes.stage import PassOptions, plan

    ctx = _context(base, chosen)
    per_target = [(c.target.name, c.target.providers(c.opts, ctx)) for c in chosen]
    return plan(base, per_target, PassOptions(enabled=opts.fix, approximate=opts.approximate))


def write_models(base: OnnxModel, fix_plan: FixPlan, root: Path) -> tuple[ShippedModel, ...]:
    """Each distinct model once (``model/``, or ``model/<target>/`` when the targets' graphs differ)."""
    from mobilegen.passes.stage import materialize

    return materialize(base, fix_plan, root, write_onnx)


def write_onnx(model: OnnxModel) -> OnnxModel:
    """The one write of the build's ``model.onnx``, with the CoreML cache key stamped in (one
    serialization). The in-memory model is let go: from here on the file is the model."""
    from mobilegen import passes
    from mobilegen.outputs import write_bytes_atomic

    write_bytes_atomic(model.path, *passes.serialized_with_cache_key(model))
    return replace(model, proto=None)


def convert(models: Sequence[ShippedModel], root: Path, style: str) -> tuple[ShippedModel, ...]:
    """Each model's ``.ort`` and ``required_operators.config`` beside its ``.onnx``."""
    from mobilegen.convert import convert_to_ort

    release_memory()  # the in-memory model is gone by now: the conversion's peak must not count it

    return tuple(
        replace(m, ort=convert_to_ort(m.onnx, root / m.ort_file, root / m.ops_config_file, style=style)) for m in models
    )


def reference_for(loaded: LoadedModel, exported: OnnxModel) -> tuple[Runner, str]:
    """PyTorch; for an ONNX input, the source model under onnxruntime with optimizations off — or, when
    this onnxruntime cannot load the source as written (a newer IR version), mobilegen's normalized copy
    (from ``exported.path``, or from memory when it is not written yet)."""
    if loaded.kind != "onnx":
        return torch_reference(loaded), "PyTorch"
    if loaded.onnx_path is None:
        raise InternalError("an ONNX source without its path")
    from mobilegen.consts import with_const_feeds

    label = "the normalized source ONNX model (no PyTorch model given)"
    try:
        # fed the --const values the shipped model has baked in
        return with_const_feeds(ort_runner(loaded.onnx_path, basic_only=True), loaded), "the source ONNX model (no PyTorch model given)"
    except Exception as err:  # noqa: BLE001 — onnxruntime raises its own Fail/InvalidGraph types
        first_err: BaseException = err
    from mobilegen.export import save_onnx
    from mobilegen.outputs import temp_dir

    try:
        if exported.path.is_file() or exported.proto is None:
            return ort_runner(exported.path, basic_only=True), label
        with temp_dir("reference") as tmp:  # onnxruntime reads the file when the session is made
            save_onnx(exported.proto, tmp / "model.onnx")
            return ort_runner(tmp / "model.onnx", basic_only=True), label
    except MobilegenError:
        raise
    except Exception as err:  # noqa: BLE001 — neither the source nor the normalized copy runs
        raise LoadError(
            f"onnxruntime cannot run {loaded.source.name}: {first_line(first_err)}",
            hint="mobilegen verifies every model on onnxruntime's CPU provider: replace custom or unsupported ops "
            "(a custom-domain op needs its own kernel in the app too)",
        ) from err


def reference(loaded: LoadedModel, onnx_model: OnnxModel, opts: VerifyOptions) -> tuple[Expected, LoadedModel]:
    """The reference's outputs on every verification case, computed now; returns them and the loaded
    model without its PyTorch module, so the module's memory can be freed before the conversion."""
    from mobilegen.verify import reference_outputs

    runner, label = reference_for(loaded, onnx_model)
    expected = reference_outputs(runner, onnx_model, opts, reference_label=label)
    del runner  # an ONNX reference's session (its weights, its arena) goes now
    release_memory()
    return expected, replace(loaded, module=None)  # the caller lets go of the module; convert frees it


def artifact_label(model: ShippedModel, kind: str, models: Sequence[ShippedModel]) -> str:
    """How the verification table names an artifact: ``onnx``/``ort``, or ``android/ort`` per target."""
    return kind if len(models) == 1 else f"{'+'.join(model.targets)}/{kind}"


def verify(expected: Expected, models: Sequence[ShippedModel], opts: VerifyOptions, root: Path, sorted_outputs: Sequence[str] = ()) -> VerificationReport:
    """The gate: the reference's outputs against every model's .onnx and .ort (one table, every failure
    listed); golden vectors and tolerances. ``sorted_outputs`` (``--top-k``'s scores) get no top-1 figure."""
    from mobilegen.verify import verify as run_gate

    paths = {}
    for m in models:
        paths[artifact_label(m, "onnx", models)] = m.onnx.path
        paths[artifact_label(m, "ort", models)] = m.converted().path
    try:
        report = run_gate(expected, paths, models[0].onnx, opts, root / "golden", sorted_outputs=sorted_outputs)
    except VerificationError as err:
        if any(m.fixes for m in models):
            err.hint = (err.hint or "") + "; or pass --no-fix to ship the exported graph as it is (see the report's graph passes)"
        raise
    # atol/rtol, and the --range value ranges the seeded golden inputs were drawn from
    (root / artifacts.GOLDEN_TOLERANCES).write_text(json.dumps(opts.record(), indent=2) + "\n", encoding="utf-8")
    return report


def check_runtimes(chosen: Sequence[Chosen], models: Sequence[ShippedModel]) -> None:
    """Every target's pinned mobile runtime can load its .ort (format version, opset)."""
    from mobilegen.runtimes import check_loadable

    for c in chosen:
        ort = _model_of(models, c).converted()
        check_loadable(c.runtime, max_opset=ort.max_opset, ort_format_version=ort.ort_format_version, channel=c.channel)


def analyse(models: Sequence[ShippedModel], chosen: Sequence[Chosen]) -> list[CoverageReport]:
    """Coverage of every provider the targets chose, each on its target's model (ORT reads the written
    file), in target order."""
    from mobilegen.coverage import analyze_all

    ctx = _context(models[0].onnx, chosen)
    per_target: dict[str, list[CoverageReport]] = {}
    for m in models:
        eps_of = [(c.target.name, c.target.providers(c.opts, ctx)) for c in chosen if c.target.name in m.targets]
        eps: list[EPTarget] = [ep for _name, target_eps in eps_of for ep in target_eps]
        reports = iter(analyze_all(m.onnx.proto, eps, source=m.onnx.path) if eps else ())
        for name, target_eps in eps_of:
            per_target[name] = [replace(next(reports), target=name) for _ep in target_eps]
    out = [r for c in chosen for r in per_target.get(c.target.name, [])]
    shared = {r.label for r in out if sum(o.label == r.label for o in out) > 1}
    return [replace(r, title=f"{r.label} ({r.target})") if r.label in shared else r for r in out]


def fix_notices(fix_plan: FixPlan, models: Sequence[ShippedModel], verification: VerificationReport) -> list[Notice]:
    """An approximate pass applied (``--approximate``): which, where, and its measured effect on the outputs."""
    out: list[Notice] = []
    for m in models:
        approx = [f for f in m.fixes if not f.exact]
        if not approx:
            continue
        labels = {artifact_label(m, kind, models) for kind in ("onnx", "ort")}
        worst = max((r.max_abs for r in verification.rows if r.artifact in labels), default=0.0)
        names = ", ".join(f"{f.name} ({f.nodes} node{'s' if f.nodes != 1 else ''}, --approximate {f.approximate_as})" for f in approx)
        where = " and ".join(m.targets)
        text = f"approximate graph pass{'es' if len(approx) > 1 else ''} {names} applied to the {where} model: its outputs differ from the reference by up to {worst:.2e} (max abs, see the verification table)"
        out.append(Notice("fix-approximate", "warning", text, subject=where))
    return out


def verification_notices(verification: VerificationReport) -> list[Notice]:
    """Outputs the gate could not verify and ``--allow-degenerate`` accepted (the report, READMEs, JSON)."""
    return [Notice("degenerate-reference", "warning", text) for text in verification.notices]


def finish_notices(notices: list[Notice], onnx_model: OnnxModel, coverage: Sequence[CoverageReport], loaded: LoadedModel) -> tuple[Notice, ...]:
    from mobilegen import warnings

    return warnings.collect([*notices, *warnings.coverage_notices(coverage)], onnx_model, coverage, source_kind=loaded.kind)


def render(
    chosen: Sequence[Chosen],
    root: Path,
    opts: BuildOptions,
    models: Sequence[ShippedModel],
    coverage: Sequence[CoverageReport],
    warnings: Sequence[Notice],
    task_files: TaskFiles | None = None,
) -> dict[str, tuple[float, float]]:
    """Render every target's project with its own model; returns what each one's accelerated device tests assert."""
    from mobilegen.quantize.stage import tolerances_of
    from mobilegen.warnings import build_notices, texts

    tolerances: dict[str, tuple[float, float]] = {}
    for c in chosen:
        model = _model_of(models, c)
        atol, rtol = tolerances_of(model, opts.verify.atol, opts.verify.rtol)  # a quantized model's own golden vectors
        spec = ProjectSpec(
            model_name=opts.model.stem,
            io=model.onnx.io,
            model_file=model.converted().path,
            golden_mgv=root / model.golden_mgv,
            atol=atol,
            rtol=rtol,
            coverage=tuple(r for r in coverage if r.target == c.target.name),
            ort_version=c.runtime.version,
            mobilegen_version=__version__,
            notes=tuple(texts(notices_for(c.target.name, build_notices(warnings), coverage, {x.target.name for x in chosen}))),
            task=opts.task,  # resolved against the model by the pipeline (crop filled in)
            labels_file=task_files.labels if task_files else None,
            task_golden=task_files.golden.get(c.target.name) if task_files else None,
            quantization=model.quantization.shipped if model.quantization is not None and model.quantization.quantized else "",
        )
        c.target.render(spec, c.opts, root / c.target.folder)
        tolerances[c.target.tolerance_key] = c.target.device_tolerances(spec, c.opts)
    return tolerances


def notices_for(target: str, notices: Sequence[Notice], coverage: Sequence[CoverageReport], targets: set[str]) -> list[Notice]:
    """The notices a target's README lists: those about no target in particular, or about ``target``.
    A subject names targets ("ios", "android and ios") or a coverage label, whose report says its target
    ("xnnpack (ios)", "nnapi"); the package README keeps every notice."""
    owners: dict[str, set[str]] = {}
    for r in coverage:
        if r.target:
            owners.setdefault(r.shown, set()).add(r.target)

    def concerns(n: Notice) -> bool:
        named = {t.strip() for t in n.subject.replace(",", " and ").split(" and ")} - {""}
        about = named if named and named <= targets else owners.get(n.subject)
        return not about or target in about

    return [n for n in notices if concerns(n)]


def options_record(
    opts: BuildOptions, chosen: Sequence[Chosen], models: Sequence[ShippedModel], tolerances: dict[str, tuple[float, float]]
) -> dict[str, JSONValue]:
    """The manifest's ``options``: what was asked and what it became."""
    from mobilegen.quantize.stage import options_record as options_record_quantize

    onnx_model, ort_model = models[0].onnx, models[0].converted()
    rec: dict[str, JSONValue] = {
        "inputs": list(opts.model_opts.inputs),
        "dynamic": list(opts.model_opts.dynamic),
        "const": {c.name: c.value for c in opts.model_opts.consts},  # inputs baked into the model (--const)
        "opset": onnx_model.opset,
        "exporter": onnx_model.exporter,
        "optimization_style": ort_model.optimization_style,
        "optimization_level": ort_model.optimization_level,
        "atol": opts.verify.atol,
        "rtol": opts.verify.rtol,
        "ranges": opts.verify.record()["ranges"],
        "sample_only": opts.verify.sample_only,
        "allow_degenerate": opts.verify.allow_degenerate,
        "keep_dynamic": opts.keep_dynamic,
        "fix": opts.fix,
        "approximate": list(opts.approximate),
        "quantize": options_record_quantize(opts.quantize),
    }
    for c in chosen:
        rec[c.target.name] = dict(c.target.options_record(c.opts))
    # what the generated device tests assert for accelerated runs (fp16 paths are wider)
    rec["device_tolerances"] = {k: {"atol": a, "rtol": r} for k, (a, r) in tolerances.items()}
    return rec


def _context(model: OnnxModel, chosen: Sequence[Chosen]) -> BuildContext:
    return BuildContext(io=model.io, static=model.io.is_static, targets=tuple(c.target.name for c in chosen))


def _model_of(models: Sequence[ShippedModel], c: Chosen) -> ShippedModel:
    for m in models:
        if c.target.name in m.targets:
            return m
    raise InternalError(f"no model for the {c.target.name} target")


__all__ = [
    "analyse",
    "artifact_label",
    "check_fix_options",
    "check_runtimes",
    "convert",
    "export_notices",
    "finish_notices",
    "fix",
    "fix_notices",
    "options_record",
    "prepare",
    "reference_for",
    "render",
    "reference",
    "verification_notices",
    "verify",
    "write_models",
    "write_onnx",
]
