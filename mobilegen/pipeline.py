"""The stage order, and nothing else.

    load → export → prepare (fixed dims, for every target) → reference → fix (graph passes, per target)
    → write (one model, or one per target) → convert → verify → quantize (per target, gated on accuracy)
    → analyse → render (per target) → package

Each stage is a function from one frozen artifact (``mobilegen.artifacts``) to the next; the model is
parsed once, by the export, and handed on in memory. Everything is written into a staging folder beside
the output (``mobilegen.infra.outputs``) and renamed into place at the end, so a failure at any stage leaves no
partial output. What varies by platform lives in ``mobilegen.targets``, what varies by execution
provider in ``mobilegen.providers``.
"""

from __future__ import annotations

import os
from dataclasses import replace
from functools import partial
from pathlib import Path

from mobilegen import artifacts
from mobilegen import notices as build_notices
from mobilegen.artifacts import BuildResult, ShippedModel, VerificationReport
from mobilegen.convert import stage as convert_stage
from mobilegen.coverage import stage as coverage_stage
from mobilegen.errors import UsageError
from mobilegen.export import advice as exporter_advice
from mobilegen.export import early_checks
from mobilegen.export.stage import load_and_export
from mobilegen.infra import progress
from mobilegen.infra.outputs import stage_zip, staged_output
from mobilegen.notices import Notice
from mobilegen.options import BuildOptions, ModelOptions
from mobilegen.package.options import options_record
from mobilegen.passes import stage as fix_stage
from mobilegen.quantize import stage as quantize_stage
from mobilegen.render import stage as render_stage
from mobilegen.targets.chosen import check_runtimes, choose_targets
from mobilegen.tasks import stage as task_stage
from mobilegen.tasks.spec import check_output_names
from mobilegen.verify import stage as verify_stage

__all__ = ["BuildOptions", "ModelOptions", "build", "load_and_export"]


def build(opts: BuildOptions) -> BuildResult:
    from mobilegen.package import finalize_package, source_date_epoch

    chosen = choose_targets(opts)
    opts.model_opts.export_options()  # flag errors before any heavy work
    fix_stage.check_fix_options(opts)
    quantize_stage.check_options(opts)  # --quantize flags (calibration, thresholds) before any heavy work
    check_output_names(opts.task, opts.model_opts.output_names)  # --output-name with --top-k: the task names the outputs
    source_date_epoch()  # a malformed SOURCE_DATE_EPOCH fails now, not after the whole build
    out = Path(os.path.abspath(opts.out))
    if out.suffix.lower() == ".zip":
        # the user's own spelling minus the suffix (any case); --zip then writes FOLDER/ and FOLDER + ".zip"
        folder = Path(opts.out).with_suffix("")
        writes = f"it writes {folder}/ and {folder}.zip"
        if opts.zip:
            raise UsageError(f"-o {opts.out} names the zip, but -o is the package folder", hint=f"pass -o {folder} with --zip: {writes}")
        raise UsageError(f"-o {opts.out} names the output folder, not a zip", hint=f"use -o {folder} --zip: {writes}")  # else a folder named like a zip
    zip_path = Path(str(out) + ".zip") if opts.zip else None
    with staged_output(out, force=opts.force, zip_path=zip_path, protect=(opts.model,)) as root:
        (root / "model").mkdir()
        progress.step("exporting")
        early = partial(early_checks.before_export, task=opts.task, check_io=[c.target.check_io for c in chosen])
        loaded, onnx_model = load_and_export(opts.model, opts.model_opts, root / artifacts.MODEL_ONNX, write=False, before_export=early)
        notices: list[Notice] = build_notices.from_export(loaded, onnx_model, opts)
        as_exported = replace(onnx_model, proto=None)  # its input shapes: the exporter advice gives them to the other exporter's
        exported, task = onnx_model, opts.task
        if task is not None:  # --task: the pre/post-processing nodes are part of the model from here on
            onnx_model, task = task_stage.wrap_exported(onnx_model, task)
            opts = replace(opts, task=task, verify=task_stage.verify_options(opts.verify, task))
            notices += task_stage.notices(task)
        for c in chosen:
            c.target.check_io(onnx_model.io)
        onnx_model, prepare_notices = fix_stage.prepare(onnx_model, chosen, keep_dynamic=opts.keep_dynamic)
        notices += prepare_notices
        if task is not None:  # the original model inside mobilegen.tasks' reference pre/post-processing
            expected, loaded = task_stage.reference(loaded, exported, onnx_model, task, opts.verify)
        else:
            expected, loaded = verify_stage.reference(loaded, onnx_model, opts.verify)  # PyTorch runs now, then is let go
        exported = onnx_model  # the unwrapped model's proto is not needed any more
        progress.step("fixing")
        fix_plan = fix_stage.fix(onnx_model, chosen, opts)  # per target: the passes that help its providers
        notices += fix_plan.notices
        models = convert_stage.write_models(onnx_model, fix_plan, root)  # from here on the files are the models
        onnx_model = exported = replace(onnx_model, proto=None)  # the in-memory weights go before the conversion
        progress.step("converting")
        models = convert_stage.convert(models, root, opts.style)
        verification = verify_stage.verify(expected, models, opts.verify, root, quantize_stage.sorted_outputs(task))  # --top-k scores: no top-1
        quantizing = opts.quantize is not None and opts.quantize.mode is not None
        # the advice compares fp32 models: with --quantize, the build's coverage before it (one more analysis)
        fp32_coverage = coverage_stage.analyse(models, chosen) if quantizing and exporter_advice.may_apply(loaded, as_exported) else None
        models, quant_notices = quantize_stage.quantize_build(models, chosen, opts, root, verification.golden_cases)  # per target; fp32 when refused
        notices += quant_notices
        task_files = task_stage.write_files(root, task, onnx_model, models) if task is not None else None
        check_runtimes(chosen, models)
        progress.step("analysing")
        coverage = coverage_stage.analyse(models, chosen)
        advice = exporter_advice.advise(opts, loaded, as_exported, fp32_coverage or coverage, chosen, fix_plan)  # the other exporter, measured
        notices += exporter_advice.notices(advice)
        notices += verify_stage.fix_notices(fix_plan, models, verification)
        notices += verify_stage.verification_notices(verification)
        warnings = build_notices.finish(notices, models[0].onnx, coverage, loaded)
        progress.step("rendering")
        tolerances, links = render_stage.render(chosen, root, opts, models, coverage, warnings, task_files)
        result = BuildResult(
            out_dir=root,
            model_name=opts.model.stem,
            loaded=loaded,
            onnx=models[0].onnx,
            verification=verification,
            ort=models[0].converted(),
            coverage=tuple(coverage),
            targets=tuple(c.target.name for c in chosen),
            options=options_record(opts, chosen, models, tolerances) | {"task": task_stage.record(task, task_files, root)} | exporter_advice.record(advice),
            runtimes={c.channel: c.runtime.version for c in chosen},
            channels={c.target.name: c.channel for c in chosen},
            warnings=warnings,
            models=models,
            fixes=fix_plan.provider_fixes(coverage),
            model_links=links,
        )
        progress.step("packaging")
        finalize_package(root, result)
        if zip_path is not None:
            stage_zip(root, zip_path)
    return relocate(result, root, out, zip_path)


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
