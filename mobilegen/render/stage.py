"""The render stage of a build: every target's project, each with its own model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen.artifacts import ModelLink, ProjectSpec, ShippedModel
from mobilegen.infra.digest import sha256_file
from mobilegen.notices import Notice, build_notices, notices_for, texts
from mobilegen.quantize.golden import tolerances_of
from mobilegen.targets.chosen import model_of
from mobilegen.version import __version__

if TYPE_CHECKING:
    from mobilegen.backends.stage import BackendModel
    from mobilegen.coverage.model import CoverageReport
    from mobilegen.options import BuildOptions
    from mobilegen.targets.chosen import Chosen
    from mobilegen.tasks.stage import TaskFiles


def render(
    chosen: Sequence[Chosen],
    root: Path,
    opts: BuildOptions,
    models: Sequence[ShippedModel],
    coverage: Sequence[CoverageReport],
    warnings: Sequence[Notice],
    task_files: TaskFiles | None = None,
    runtime_models: Sequence[BackendModel] = (),
) -> tuple[dict[str, tuple[float, float]], tuple[tuple[str, str, ModelLink], ...]]:
    """Render every target's project with its own model; returns what each one's accelerated device tests
    assert, and (``mobilegen package``: one copy of each model file) the projects that copy their model
    from the package's model/ folder at build time: (target, the package file that pins it, the link)."""
    tolerances: dict[str, tuple[float, float]] = {}
    links: list[tuple[str, str, ModelLink]] = []
    for c in chosen:
        model = model_of(models, c)
        ort = model.converted()
        runtime = next((r for r in runtime_models if c.target.name in r.platforms), None)  # --runtime litert: the wrapper's runtime
        # another runtime's project holds its own copy of its model (no link to the package's .ort)
        link = None if opts.standalone or runtime is not None else ModelLink(model.ort_file, ort.path.stat().st_size, ort.sha256 or sha256_file(ort.path))
        atol, rtol = tolerances_of(model, opts.verify.atol, opts.verify.rtol)  # a quantized model's own golden vectors
        spec = ProjectSpec(
            model_name=opts.model.stem,
            io=model.onnx.io,
            model_file=model.converted().path,
            onnx_file=model.onnx.path,
            golden_mgv=root / model.golden_mgv,
            atol=atol,
            rtol=rtol,
            coverage=tuple(r for r in coverage if r.target == c.target.name),
            ort_version=c.runtime.version,
            mobilegen_version=__version__,
            notes=tuple(texts(notices_for(c.target.name, build_notices(warnings), coverage, {x.target.name for x in chosen}))),
            task=opts.task,  # resolved against the model by the pipeline (crop filled in)
            labels_file=task_files.labels if task_files else None,
            tokenizer_file=task_files.tokenizer if task_files else None,
            task_golden=task_files.golden.get(c.target.name) if task_files else None,
            quantization=model.quantization.shipped if model.quantization is not None and model.quantization.quantized else "",
            model_link=link,
            runtime=runtime.runtime if runtime is not None else "ort",
            runtime_model=runtime.path if runtime is not None else None,
        )
        c.target.render(spec, c.opts, root / c.target.folder)
        tolerances[c.target.tolerance_key] = c.target.device_tolerances(spec, c.opts)
        pin = c.target.model_pin(spec, c.opts) if link is not None else ""
        if link is not None and pin:  # "": the project holds its own copy of the model
            links.append((c.target.name, f"{c.target.folder}/{pin}", link))
    return tolerances, tuple(links)

