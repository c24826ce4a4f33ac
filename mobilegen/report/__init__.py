"""The build report as text: Markdown (``report.md``), one self-contained HTML page (``report.html``)
and the coverage JSON (``coverage.json``).

Pure functions of a :class:`~mobilegen.artifacts.BuildResult` (plus, optionally, the sizes of the
package files). Nothing here writes files, prints, or puts a date or an absolute path into its output:
the same result gives the same bytes (reproducible packages). The report code builds a typed context
(:mod:`mobilegen.report.context`); ``templates/report/*.jinja`` turn it into text, escaping every
model-derived string (tensor, node and model names, reasons, warnings) for the format it lands in.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata
from typing import Any

from mobilegen.artifacts import BuildResult
from mobilegen.notices import texts
from mobilegen.report.context import ReportContext, build_context
from mobilegen.report.facts import (
    CPU,
    SIZED_FILES,
    coverage_json,
    default_sizes,
    fix_fields,
    jsonable,
    model_files,
    placement,
    runs,
    sized_files,
)
from mobilegen.report.picture import CPU_COLOR, PALETTE, PartitionPicture, partition_picture
from mobilegen.report.render import render_html_text, render_markdown_text
from mobilegen.version import __version__

__all__ = [
    "CPU",
    "CPU_COLOR",
    "PALETTE",
    "SIZED_FILES",
    "PartitionPicture",
    "ReportContext",
    "coverage_json",
    "default_sizes",
    "fix_fields",
    "jsonable",
    "model_files",
    "partition_picture",
    "placement",
    "render_html",
    "render_markdown",
    "report_context",
    "runs",
    "sized_files",
    "tool_versions",
    "warning_texts",
]


def _dist_version(dist: str) -> str | None:
    """Installed version of a distribution, without importing it (torch stays unimported)."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def tool_versions(result: BuildResult) -> dict[str, Any]:
    """mobilegen, torch, onnx, the onnxruntime that converted the model, and the pinned mobile runtimes."""
    return {
        "mobilegen": __version__,
        "torch": _dist_version("torch"),
        "onnx": _dist_version("onnx"),
        "onnxruntime_converter": result.ort.converter_version,
        "mobile_runtimes": {k: result.runtimes[k] for k in sorted(result.runtimes)},
    }


def warning_texts(result: BuildResult) -> list[str]:
    """The text of every warning of the build, in order (report, package README, manifest)."""
    return texts(result.warnings)


# Kept for callers written before mobilegen.notices: the list is no longer re-derived, only read.
derived_warnings = warning_texts


def report_context(result: BuildResult, *, sizes: Mapping[str, int] | None = None) -> ReportContext:
    """What both report pages show; ``sizes`` defaults to the sizes of the files the result points at."""
    return build_context(result, default_sizes(result) if sizes is None else sizes, tool_versions(result))


def render_markdown(result: BuildResult, *, sizes: Mapping[str, int] | None = None) -> str:
    """``report.md``: the same facts as the HTML page, as plain Markdown."""
    return render_markdown_text(report_context(result, sizes=sizes))


def render_html(result: BuildResult, *, sizes: Mapping[str, int] | None = None) -> str:
    """``report.html``: one self-contained page (inline CSS and SVG, no script, no external asset)."""
    return render_html_text(report_context(result, sizes=sizes))
