"""The stage order, and nothing else. This docstring is where the order is stated (docs/architecture.md
points here)::

    check flags → load → export → task wrap (--task) → prepare (fixed dims, for every target) → reference
    → other runtimes' conversion (--runtime litert: from the PyTorch module) → fix (graph passes, per target) → write (one model, or one per target) → convert → verify
    → quantize (per target, gated on accuracy) → task files (--task) → check runtimes → analyse
    → exporter advice → render (per target) → package (→ zip)

Each stage is a function from one frozen artifact (``mobilegen.artifacts``) to the next, in the stage's
folder (``mobilegen.<stage>.stage``); the model is parsed once, by the export, and handed on in memory.
A stage that has something to say returns ``(artifact, notices)``; :class:`~mobilegen.notices.Notices`
collects them in order. Everything is written into a staging folder beside the output
(``mobilegen.infra.outputs``) and renamed into place at the end, so a failure at any stage leaves no
partial output. What varies by platform lives in ``mobilegen.targets``, what varies by execution
provider in ``mobilegen.providers``.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen import artifacts, package
from mobilegen import notices as build_notices
from mobilegen.artifacts import (
    BuildResult,
    LoadedModel,
    ModelLink,
    OnnxModel,
    ShippedModel,
    VerificationReport,
)
from mobilegen.backends import stage as runtimes_stage
from mobilegen.convert import stage as convert_stage
from mobilegen.coverage import stage as coverage_stage
from mobilegen.errors import ConversionError
from mobilegen.export import advice as exporter_advice
from mobilegen.export import early_checks
from mobilegen.export.stage import load_and_export
from mobilegen.infra import progress
from mobilegen.infra.memory import frozen_heap
from mobilegen.infra.outputs import staged_output
from mobilegen.notices import Notices
from mobilegen.options import BuildOptions, ModelOptions
from mobilegen.package.options import options_record
from mobilegen.package.zip_writer import stage_zip
from mobilegen.passes import stage as fix_stage
from mobilegen.quantize import calibration
from mobilegen.quantize import stage as quantize_stage
from mobilegen.render import stage as render_stage
from mobilegen.targets.chosen import Chosen, check_io, check_runtimes, choose_targets
from mobilegen.tasks import stage as task_stage
from mobilegen.tasks.spec import check_output_names
from mobilegen.verify import inputs as verify_inputs
from mobilegen.verify import stage as verify_stage

if TYPE_CHECKING:
    from collections.abc import Callable

    from mobilegen.backends.stage import BackendModel
    from mobilegen.coverage.model import CoverageReport
    from mobilegen.export.advice import Advice
    from mobilegen.export.exporter import ExportOptions
    from mobilegen.notices import Notice
    from mobilegen.passes.stage import FixPlan
    from mobilegen.spec import IOSpec
    from mobilegen.tasks.stage import TaskFiles, TextGate
    from mobilegen.verify.gate import Expected

__all__ = ["BuildOptions", "ModelOptions", "build", "load_and_export"]


def check(opts: BuildOptions) -> list[Chosen]:
    """Every flag error a build can know before any heavy work; the chosen targets."""
    chosen = choose_targets(opts)
    opts.model_opts.export_options()
    fix_stage.check_fix_options(opts)
    quantize_stage.check_options(opts)  # --quantize flags (calibration, thresholds)
    runtimes_stage.check_options(opts)  # --runtime: optional dependency installed, fixed shapes, flags it honours
    check_output_names(opts.task, opts.model_opts.output_names)  # --output-name with --top-k: the task names the outputs
    package.source_date_epoch()  # a malformed SOURCE_DATE_EPOCH fails now, not after the whole build
    opts.check_output()  # -o names the folder, not the zip
    return chosen


def export_notices(loaded: LoadedModel, exported: OnnxModel, opts: BuildOptions) -> list[Notice]:
    """:func:`mobilegen.notices.export_notices` for a build's options."""
    named_by_task = opts.task is not None and bool(opts.task.output_names)
    return build_notices.export_notices(
        loaded, exported, output_names_given=bool(opts.model_opts.output_names), task_names_outputs=named_by_task
    )


def build(opts: BuildOptions) -> BuildResult:
    chosen = check(opts)
    out, zip_path = opts.output_paths()
    with staged_output(out, force=opts.force, zip_path=zip_path, protect=(opts.model,)) as root, frozen_heap(_libraries(opts.model)):
        notes = Notices()
        (root / "model").mkdir()
        progress.step("exporting")
        early = partial(_before_export, opts, [c.target.check_io for c in chosen])
        loaded, exported = load_and_export(opts.model, opts.model_opts, root / artifacts.MODEL_ONNX, write=False, before_export=early)
        notes.add(export_notices(loaded, exported, opts))
        as_exported = replace(exported, proto=None)  # its input shapes: the exporter advice gives them to the other exporter's
        onnx_model, opts = notes.take(task_stage.wrap_build(exported, opts))  # --task: pre/post-processing nodes from here on
        check_io(chosen, onnx_model)
        dynamic = not onnx_model.io.is_static
        onnx_model = notes.take(fix_stage.prepare(onnx_model, chosen, keep_dynamic=opts.keep_dynamic))
        dims_fixed = dynamic and onnx_model.io.is_static  # for a provider that takes no symbolic dims
        opts, text_gate = notes.take(task_stage.text_gate_build(opts, onnx_model))  # text tasks: the tokenizer parity gate (exit 5)
        reference = partial(_reference, opts=opts, text_gate=text_gate, root=root)
        early_reference = loaded.kind == "onnx"  # its fallback reference reads the unfixed graph: before the fix stage
        if early_reference:
            expected, loaded, runtime_models = reference(loaded, exported, onnx_model)
        exported = replace(exported, proto=None)  # the unwrapped model's proto is not needed any more
        progress.step("fixing")
        fix_plan = notes.take(fix_stage.fix(onnx_model, chosen, opts))  # per target: the passes that help its providers
        written = convert_stage.write_models(onnx_model, fix_plan, root)  # from here on the files are the models
        onnx_model = replace(onnx_model, proto=None)  # the in-memory weights go before the conversion
        if not early_reference:  # PyTorch runs beside the last model's write (which lets go of Python's lock)
            expected, loaded, runtime_models = written.meanwhile(partial(reference, loaded, exported, onnx_model))
        progress.step("converting")
        # each model's .onnx runs the verification cases in its converting session, its .ort once it exists (beside the next conversion)
        try:
            converted = convert_stage.convert(written, root, opts.style, verify_stage.onnx_runs(expected), verify_stage.model_runs(expected))
        except ConversionError as err:
            if dims_fixed:
                err.hint = FIXED_DIMS_HINT
            raise
        models = converted.models
        quantizing = quantize_stage.quantizes(opts)
        # the fp32 models' coverage, beside the last .ort's verification: the build's own coverage without
        # --quantize; with it, what the exporter advice compares (when it may apply), else not needed
        fp32 = None
        if not quantizing or exporter_advice.may_apply(loaded, as_exported):
            fp32 = converted.meanwhile(partial(coverage_stage.analyse, models, chosen))
        verification = verify_stage.verify(expected, models, converted.results(), opts.verify, root, quantize_stage.sorted_outputs(opts.task), runtimes_stage.artifacts(runtime_models))
        runtime_models = runtimes_stage.finish(runtime_models)  # --quantize int8: the runtime's int8 model is shipped
        models = notes.take(quantize_stage.quantize_build(models, chosen, opts, root, verification.golden_cases))  # per target
        task_files = task_stage.build_files(root, opts, onnx_model, models, text_gate)
        check_runtimes(chosen, models)
        progress.step("analysing")
        coverage = coverage_stage.analyse(models, chosen) if quantizing or fp32 is None else fp32
        advice = exporter_advice.advise(opts, loaded, as_exported, fp32 or coverage, chosen, fix_plan)  # the other exporter, on fp32 models
        notes.add(exporter_advice.notices(advice))
        notes.add(verify_stage.notices(fix_plan, models, verification))
        warnings = notes.finish(models[0].onnx, coverage, loaded)
        progress.step("rendering")
        tolerances, links = render_stage.render(chosen, root, opts, models, coverage, warnings, task_files, runtime_models)
        result = _result(root, opts, chosen, loaded, models, verification, coverage, warnings, fix_plan, advice, task_files, tolerances, links)
        result = runtimes_stage.record(result, runtime_models, root)
        progress.step("packaging")
        package.finalize_package(root, result)
        if zip_path is not None:
            stage_zip(root, zip_path)
    return relocate(result, root, out, zip_path)


def _reference(
    loaded: LoadedModel, unwrapped: OnnxModel, prepared: OnnxModel, *, opts: BuildOptions, text_gate: TextGate | None, root: Path
) -> tuple[Expected, LoadedModel, tuple[BackendModel, ...]]:
    """The reference's outputs on the verification cases (PyTorch runs now), the loaded model without its
    module, and ``--runtime litert``'s models (converted from the module after it ran; then it is let go)."""
    module = loaded.module
    expected, loaded = task_stage.build_reference(loaded, unwrapped, prepared, opts, text_gate)
    return expected, loaded, runtimes_stage.convert(module, opts.model, prepared, expected, opts, root)


# A conversion that fails after the dynamic dims were fixed: the sizes, not the opset, are the likely cause
# (silero-vad without --const sr: its If branches' shape inference fails on the fixed input).
FIXED_DIMS_HINT = (
    "the model's dynamic dims were fixed to the example sizes for a provider that takes no symbolic dims: if an input decides "
    "its control flow or shapes, bind it with --const NAME=VALUE, choose the sizes with --input NAME:SHAPE, or keep the dims "
    "dynamic with --keep-dynamic"
)


def _before_export(opts: BuildOptions, check_io: list[Callable[[IOSpec], None]], loaded: LoadedModel, export_opts: ExportOptions) -> None:
    """What a build can check once the model is loaded, before its export: the IO checks
    (:func:`mobilegen.export.early_checks.before_export`), then, without ``--task`` (whose wrapper changes
    the inputs), the input names that ``--range``, ``--sample``, ``--calibration`` and ``--eval`` give
    (their shapes and values are checked after the export, on the exported model)."""
    early_checks.before_export(loaded, export_opts, task=opts.task, check_io=check_io)
    if opts.task is not None:
        return
    names = early_checks.predicted_input_names(loaded, export_opts)
    if names is None:
        return
    verify_inputs.check_names_early(opts.verify.value_ranges(), opts.verify.sample, names)
    if opts.quantize is not None:
        calibration.check_names_early(opts.quantize, names)


def _libraries(model: Path) -> tuple[str, ...]:
    """The libraries every build of ``model`` imports (imported before the heap is frozen): onnx and
    onnxruntime; torch for a PyTorch model; onnxscript, torch.export's ONNX exporter, for a ``.pt2``."""
    suffix = model.suffix.lower()
    libs = ("onnx", "onnxruntime")
    if suffix == ".onnx":
        return libs
    return (*libs, "torch", "onnxscript") if suffix == ".pt2" else (*libs, "torch")


def _result(
    root: Path,
    opts: BuildOptions,
    chosen: list[Chosen],
    loaded: LoadedModel,
    models: tuple[ShippedModel, ...],
    verification: VerificationReport,
    coverage: list[CoverageReport],
    warnings: tuple[Notice, ...],
    fix_plan: FixPlan,
    advice: Advice | None,
    task_files: TaskFiles | None,
    tolerances: dict[str, tuple[float, float]],
    links: tuple[tuple[str, str, ModelLink], ...],
) -> BuildResult:
    options = options_record(opts, chosen, models, tolerances) | {"task": task_stage.record(opts.task, task_files, root)}
    return BuildResult(
        out_dir=root,
        model_name=opts.model.stem,
        loaded=loaded,
        onnx=models[0].onnx,
        verification=verification,
        ort=models[0].converted(),
        coverage=tuple(coverage),
        targets=tuple(c.target.name for c in chosen),
        options=options | exporter_advice.record(advice),
        runtimes={c.channel: c.runtime.version for c in chosen},
        channels={c.target.name: c.channel for c in chosen},
        warnings=warnings,
        models=models,
        fixes=fix_plan.provider_fixes(coverage),
        model_links=links,
    )


def relocate(result: BuildResult, old: Path, new: Path, zip_path: Path | None) -> BuildResult:
    """Point every path of the result at the final folder (after the staging rename)."""

    def mv(p: Path) -> Path:
        try:
            return new / p.relative_to(old)
        except ValueError:
            return p

    def mv_opt(p: Path | None) -> Path | None:
        return None if p is None else mv(p)

    def mv_model(m: ShippedModel) -> ShippedModel:
        ort = m.ort if m.ort is None else replace(m.ort, path=mv(m.ort.path), config_path=mv(m.ort.config_path))
        return replace(m, onnx=replace(m.onnx, path=mv(m.onnx.path)), ort=ort)

    models = tuple(mv_model(m) for m in result.shipped)
    v = result.verification
    ver: VerificationReport = replace(v, golden_npz=mv_opt(v.golden_npz), golden_mgv=mv_opt(v.golden_mgv), golden_cases=tuple(mv(p) for p in v.golden_cases))
    return replace(result, out_dir=new, onnx=models[0].onnx, ort=models[0].converted(), models=models, verification=ver, zip_path=zip_path)
