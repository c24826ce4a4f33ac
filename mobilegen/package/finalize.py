"""Finish a package folder: ``report/``, ``README.md`` and, last, ``manifest.json``.

Layout (relative to the package root; constants in :mod:`mobilegen.artifacts`)::

    android/ ios/                 generated projects (per target)
    model/model.onnx model.ort required_operators.config
                                  (model/<target>/... each when the targets ship different graphs);
                                  the one copy of each: the projects copy their .ort in at build time
                                  (manifest ``model_links``), except a standalone build's (android/ios)
    golden/golden.npz golden.mgv tolerances.json
    report/coverage.json report.md report.html
    README.md                     for the app team
    manifest.json                 written last; lists every other file with sha256 and size
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from mobilegen import targets
from mobilegen.artifacts import (
    GOLDEN_MGV,
    GOLDEN_NPZ,
    GOLDEN_TOLERANCES,
    MANIFEST,
    MODEL_ONNX,
    MODEL_OPS_CONFIG,
    MODEL_ORT,
    README,
    REPORT_DIR,
    BuildResult,
    ShippedModel,
)
from mobilegen.errors import InternalError, PackageError
from mobilegen.package.manifest import (
    ABS_PATH,
    FileEntry,
    GoldenInfo,
    LinkEntry,
    Manifest,
    ModelInfo,
    OrtInfo,
    SourceInfo,
    Tolerances,
)
from mobilegen.package.readme import render_readme
from mobilegen.package.tree import scan_files
from mobilegen.package.zip_writer import source_date_epoch
from mobilegen.quantize.golden import tolerances_of
from mobilegen.report import (
    coverage_json,
    fix_fields,
    jsonable,
    model_files,
    placement,
    render_html,
    render_markdown,
    sized_files,
    tool_versions,
    warning_texts,
)

if TYPE_CHECKING:
    from mobilegen.coverage.model import CoverageReport

REPORT_COVERAGE = f"{REPORT_DIR}/coverage.json"
REPORT_MD = f"{REPORT_DIR}/report.md"
REPORT_HTML = f"{REPORT_DIR}/report.html"

# Files the pipeline must have put into the staging folder before finalize_package.
REQUIRED_FILES = (MODEL_ONNX, MODEL_ORT, MODEL_OPS_CONFIG, GOLDEN_NPZ, GOLDEN_MGV, GOLDEN_TOLERANCES)


def finalize_package(root: Path, result: BuildResult) -> Manifest:
    """Write ``report/``, ``README.md`` and, last, ``manifest.json`` into the staging folder ``root``.

    Returns the manifest. Raises PackageError when the staging folder lacks a file of the layout, holds
    something that is not a regular file, or contains the build folder's absolute path (not reproducible).
    """
    root = Path(root)
    if not root.is_dir():
        raise InternalError(f"package folder {root} does not exist", hint="this is a bug in mobilegen's pipeline")
    cases = result.verification.golden_cases
    required = (
        *model_files(result), GOLDEN_NPZ, GOLDEN_MGV, GOLDEN_TOLERANCES,
        *(f for m in result.shipped for f in (m.golden_npz, m.golden_mgv, *m.golden_case_files(cases))),
    )  # fmt: skip
    missing = [rel for rel in required if not (root / rel).is_file()]
    missing += [f"{folder}/" for folder in (targets.get(t).folder for t in result.targets) if not (root / folder).is_dir()]
    if missing:
        raise InternalError(
            "the package folder lacks " + ", ".join(missing),
            hint="this is a bug in mobilegen's pipeline: every stage must write its files before packaging",
        )
    epoch = source_date_epoch()
    sizes = {rel: (root / rel).stat().st_size for rel in sized_files(result) if (root / rel).is_file()}
    try:
        (root / REPORT_DIR).mkdir(exist_ok=True)
        _write_text(root / REPORT_COVERAGE, coverage_json(result))
        _write_text(root / REPORT_MD, render_markdown(result, sizes=sizes))
        _write_text(root / REPORT_HTML, render_html(result, sizes=sizes))
        _write_text(root / README, render_readme(result, root))
    except OSError as err:
        raise PackageError(f"cannot write the package reports into {root}: {err}") from err
    files = _entries_without_absolute_paths(root, result)
    manifest = build_manifest(result, files, epoch=epoch)
    try:
        _write_text(root / MANIFEST, manifest.text())
    except OSError as err:
        raise PackageError(f"cannot write {MANIFEST}: {err}") from err
    return manifest


def build_manifest(result: BuildResult, files: tuple[FileEntry, ...], *, epoch: int | None) -> Manifest:
    ver = result.verification
    return Manifest(
        model_name=jsonable(result.model_name),
        targets=tuple(jsonable(list(result.targets))),
        versions=jsonable(tool_versions(result)),
        source=SourceInfo(result.loaded.source.name, jsonable(result.loaded.kind), result.loaded.sha256),
        io=jsonable(result.onnx.io.to_dict()),
        onnx=jsonable(
            {
                "opset": result.onnx.opset,
                "exporter": result.onnx.exporter,
                "fallback_reason": result.onnx.fallback_reason,
                "example_sizes": {k: result.onnx.example_sizes[k] for k in sorted(result.onnx.example_sizes)},
            }
        ),
        models=tuple(_model_info(result, m) for m in result.shipped),
        options=jsonable(_scrub_paths(result.options)),
        tolerances=Tolerances(ver.atol, ver.rtol),
        verification=jsonable(ver.to_dict()),
        coverage=tuple(jsonable(coverage_summary(c) | fix_fields(result, c)) for c in result.coverage),
        warnings=tuple(jsonable(warning_texts(result))),
        source_date_epoch=epoch,
        files=files,
        model_links=tuple(LinkEntry(target, file, link.path, link.size, link.sha256) for target, file, link in result.model_links),
    )


def _model_info(result: BuildResult, model: ShippedModel) -> ModelInfo:
    ort = model.converted()
    channels = sorted(result.runtimes) if len(result.shipped) == 1 else [c for t in model.targets if (c := result.channels.get(t) or _channel(t)) in result.runtimes]
    return ModelInfo(
        targets=tuple(jsonable(list(model.targets))),
        channels=tuple(channels),
        onnx=model.onnx_file,
        ort=OrtInfo(
            model.ort_file,
            jsonable(ort.ort_format_version),
            jsonable(ort.max_opset),
            jsonable(ort.optimization_style),
            jsonable(ort.optimization_level),
        ),
        required_operators=model.ops_config_file,
        fixes=tuple(f.to_dict() for f in model.fixes),
        golden=GoldenInfo(
            model.golden_npz,
            model.golden_mgv,
            *tolerances_of(model, result.verification.atol, result.verification.rtol),
            cases=model.golden_case_files(result.verification.golden_cases),
        ),
        quantization=None if model.quantization is None else jsonable(model.quantization.to_dict()),
    )


def _channel(target: str) -> str:
    from mobilegen import targets

    return targets.get(target).channel


def coverage_summary(report: CoverageReport) -> dict[str, Any]:
    cpu_nodes = sum(1 for _i, _n, _o, p in placement(report) if not p)
    return {
        "label": report.label,
        "target": report.target,
        "ep": report.ep,
        "format": report.format,
        "total_nodes": report.total_nodes,
        "supported_nodes": report.supported_nodes,
        "percent": round(report.percent, 2),
        "partitions": len(report.partitions),
        "cpu_nodes": cpu_nodes,
        "verdict": report.verdict,
        "refused_ops": [{"op": op, "nodes": n, "reasons": list(r)} for op, n, r in report.unsupported_summary()],
        "settings": dict(report.settings),
    }


def _scrub_paths(value: Any) -> Any:
    """Options may carry paths: keep only the file name of anything absolute (no absolute paths in a package)."""
    if isinstance(value, Path):
        return value.name
    if isinstance(value, str) and ABS_PATH.match(value):
        return PurePosixPath(value.replace("\\", "/")).name
    if isinstance(value, Mapping):
        return {str(k): _scrub_paths(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub_paths(v) for v in value]
    return value


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))  # bytes: no platform newline translation


def _entries_without_absolute_paths(root: Path, result: BuildResult) -> tuple[FileEntry, ...]:
    """Every file's entry; refuses the package when a file contains the build folder's absolute path."""
    needles = {str(root.resolve()), str(root.absolute()), str(result.out_dir)}
    needles = {n for n in needles if Path(n).is_absolute() and len(Path(n).parts) > 2}
    files, leaks = scan_files(root, needles=tuple(sorted(n.encode("utf-8") for n in needles)))
    if leaks:
        raise InternalError(
            "package files contain the build folder's absolute path, so the package is not reproducible: "
            + ", ".join(leaks),
            hint="this is a bug in mobilegen: write package-relative paths (e.g. strip the comment header "
            "of required_operators.config)",
        )
    return files
