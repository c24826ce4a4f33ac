"""The stages of a build between export and package, each a function from artifacts to the next one.

``pipeline.build`` calls them in order; nothing here knows which targets or providers there are: it asks
``mobilegen.targets`` and ``mobilegen.providers``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mobilegen import __version__, artifacts
from mobilegen.artifacts import JSONValue, LoadedModel, OnnxModel, OrtModel, ProjectSpec, VerificationReport
from mobilegen.errors import InternalError, LoadError, MobilegenError, first_line
from mobilegen.targets import BuildContext
from mobilegen.verify import Expected, VerifyOptions, ort_runner, torch_reference
from mobilegen.warnings import Notice

if TYPE_CHECKING:
    from mobilegen.coverage.model import CoverageReport
    from mobilegen.options import BuildOptions
    from mobilegen.pipeline import Chosen

Runner = Callable[[dict[str, np.ndarray]], list[np.ndarray]]


def export_notices(loaded: LoadedModel, exported: OnnxModel, opts: BuildOptions) -> list[Notice]:
    from mobilegen import warnings

    return warnings.export_notices(loaded, exported, output_names_given=bool(opts.model_opts.output_names))


def prepare(exported: OnnxModel, chosen: Sequence[Chosen], *, keep_dynamic: bool) -> tuple[OnnxModel, list[Notice]]:
    """The graph passes the chosen targets' providers need, in memory: the providers' notices, fixed
    dims when a target asks for them (unless ``keep_dynamic``). (The CoreML cache key is stamped when the
    model is written: it hashes the bytes written.)"""
    from mobilegen import passes, providers, warnings

    notices: list[Notice] = []
    model = exported
    ctx = _context(model, chosen)
    for c in chosen:
        for ep in c.target.providers(c.opts, ctx):
            notices.extend(providers.get(ep.ep).notices)
        if c.target.wants_static_dims(c.opts) and not model.io.is_static and not keep_dynamic:
            model, fixed = passes.fix_dynamic_dims(model)
            if fixed:
                also = [o.target.display_name for o in chosen if o is not c and not o.target.wants_static_dims(o.opts)]
                notices.append(warnings.dims_fixed(warnings.dims_fixed_text(fixed), shipped_by=also))
    return model, notices


def write_onnx(model: OnnxModel) -> OnnxModel:
    """The one write of the build's ``model.onnx``, with the CoreML cache key stamped in (one
    serialization). The in-memory model is let go: from here on the file is the model."""
    from mobilegen import passes
    from mobilegen.outputs import write_bytes_atomic

    write_bytes_atomic(model.path, *passes.serialized_with_cache_key(model))
    return replace(model, proto=None)


def convert(model: OnnxModel, root: Path, style: str) -> OrtModel:
    from mobilegen.convert import convert_to_ort

    release_memory()  # the in-memory model is gone by now: the conversion's peak must not count it

    return convert_to_ort(model, root / artifacts.MODEL_ORT, root / artifacts.MODEL_OPS_CONFIG, style=style)


def reference_for(loaded: LoadedModel, exported: OnnxModel) -> tuple[Runner, str]:
    """PyTorch; for an ONNX input, the source model under onnxruntime with optimizations off — or, when
    this onnxruntime cannot load the source as written (a newer IR version), mobilegen's normalized copy
    (from ``exported.path``, or from memory when it is not written yet)."""
    if loaded.kind != "onnx":
        return torch_reference(loaded), "PyTorch"
    if loaded.onnx_path is None:
        raise InternalError("an ONNX source without its path")
    label = "the normalized source ONNX model (no PyTorch model given)"
    try:
        return ort_runner(loaded.onnx_path, basic_only=True), "the source ONNX model (no PyTorch model given)"
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
    return expected, replace(loaded, module=None)  # the caller lets go of the module; convert frees it


def release_memory() -> None:
    """Hand freed memory back to the OS before a heavy stage (glibc keeps freed heap pages otherwise, and
    a 1 GB model's PyTorch weights would count again in the conversion's peak)."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to do
        pass


def verify(expected: Expected, onnx_model: OnnxModel, ort_model: OrtModel, opts: VerifyOptions, root: Path) -> VerificationReport:
    """The gate: the reference's outputs against the .onnx and the .ort; golden vectors and tolerances."""
    from mobilegen.verify import verify as run_gate

    report = run_gate(expected, {"onnx": onnx_model.path, "ort": ort_model.path}, onnx_model, opts, root / "golden")
    (root / artifacts.GOLDEN_TOLERANCES).write_text(json.dumps({"atol": opts.atol, "rtol": opts.rtol}, indent=2) + "\n", encoding="utf-8")
    return report


def check_runtimes(chosen: Sequence[Chosen], ort_model: OrtModel) -> None:
    """Every pinned mobile runtime can load the .ort (format version, opset)."""
    from mobilegen.runtimes import check_loadable

    for c in chosen:
        check_loadable(c.runtime, max_opset=ort_model.max_opset, ort_format_version=ort_model.ort_format_version, channel=c.target.channel)


def analyse(onnx_model: OnnxModel, chosen: Sequence[Chosen]) -> list[CoverageReport]:
    """Coverage of every provider the targets chose, from the in-memory model (ORT reads the written file)."""
    from mobilegen.coverage import analyze_all

    ctx = _context(onnx_model, chosen)
    eps = [ep for c in chosen for ep in c.target.providers(c.opts, ctx)]
    if not eps:
        return []
    return list(analyze_all(onnx_model.proto, eps, source=onnx_model.path))


def finish_notices(notices: list[Notice], onnx_model: OnnxModel, coverage: Sequence[CoverageReport], loaded: LoadedModel) -> tuple[Notice, ...]:
    from mobilegen import warnings

    return warnings.collect([*notices, *warnings.coverage_notices(coverage)], onnx_model, coverage, source_kind=loaded.kind)


def render(
    chosen: Sequence[Chosen],
    root: Path,
    opts: BuildOptions,
    onnx_model: OnnxModel,
    ort_model: OrtModel,
    coverage: Sequence[CoverageReport],
    warnings: Sequence[Notice],
) -> dict[str, tuple[float, float]]:
    """Render every target's project; returns what each one's accelerated device tests assert."""
    from mobilegen import providers
    from mobilegen.warnings import build_notices, texts

    tolerances: dict[str, tuple[float, float]] = {}
    for c in chosen:
        spec = ProjectSpec(
            model_name=opts.model.stem,
            io=onnx_model.io,
            model_file=ort_model.path,
            golden_mgv=root / artifacts.GOLDEN_MGV,
            atol=opts.verify.atol,
            rtol=opts.verify.rtol,
            coverage=tuple(r for r in coverage if providers.get(r.ep).platform == c.target.name),
            ort_version=c.runtime.version,
            mobilegen_version=__version__,
            notes=tuple(texts(build_notices(warnings))),
        )
        c.target.render(spec, c.opts, root / c.target.folder)
        tolerances[c.target.tolerance_key] = c.target.device_tolerances(spec, c.opts)
    return tolerances


def options_record(
    opts: BuildOptions, chosen: Sequence[Chosen], onnx_model: OnnxModel, ort_model: OrtModel, tolerances: dict[str, tuple[float, float]]
) -> dict[str, JSONValue]:
    """The manifest's ``options``: what was asked and what it became."""
    rec: dict[str, JSONValue] = {
        "inputs": list(opts.model_opts.inputs),
        "dynamic": list(opts.model_opts.dynamic),
        "opset": onnx_model.opset,
        "exporter": onnx_model.exporter,
        "optimization_style": ort_model.optimization_style,
        "optimization_level": ort_model.optimization_level,
        "atol": opts.verify.atol,
        "rtol": opts.verify.rtol,
        "keep_dynamic": opts.keep_dynamic,
    }
    for c in chosen:
        rec[c.target.name] = dict(c.target.options_record(c.opts))
    # what the generated device tests assert for accelerated runs (fp16 paths are wider)
    rec["device_tolerances"] = {k: {"atol": a, "rtol": r} for k, (a, r) in tolerances.items()}
    return rec


def _context(model: OnnxModel, chosen: Sequence[Chosen]) -> BuildContext:
    return BuildContext(io=model.io, static=model.io.is_static, targets=tuple(c.target.name for c in chosen))


__all__ = [
    "analyse",
    "check_runtimes",
    "convert",
    "export_notices",
    "finish_notices",
    "options_record",
    "prepare",
    "reference_for",
    "render",
    "reference",
    "verify",
    "write_onnx",
]
