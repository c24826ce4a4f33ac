"""The package's ``README.md`` for the app team, rendered from ``templates/package/README.md.jinja``.

This module builds the context only; the template escapes every model-derived value (model, tensor and
file names, EP labels, verdicts, warnings) with the ``md`` filter (:func:`mobilegen.render.markdown.md_escape`)
or puts it in a code span with ``code`` (:func:`mobilegen.render.markdown.md_code`). Numbers arrive formatted.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen import targets
from mobilegen.artifacts import (
    ANDROID_DIR,
    GOLDEN_MGV,
    GOLDEN_NPZ,
    GOLDEN_TOLERANCES,
    IOS_DIR,
    MANIFEST,
    MODEL_ONNX,
    MODEL_OPS_CONFIG,
    MODEL_ORT,
    REPORT_DIR,
    BuildResult,
)
from mobilegen.errors import InternalError
from mobilegen.package.manifest import MANIFEST_SCHEMA_VERSION
from mobilegen.render.markdown import md_code, md_escape
from mobilegen.render.tree import templates_root
from mobilegen.report import tool_versions, warning_texts
from mobilegen.report.facts import fixes_text
from mobilegen.report.quantization import readme_lines as quantization_lines

if TYPE_CHECKING:
    import jinja2

README_TEMPLATE = "README.md.jinja"
PACKAGE_TEMPLATES = "package"


@dataclass(frozen=True)
class TensorRow:
    role: str
    name: str
    dtype: str
    shape: str


@dataclass(frozen=True)
class CoverageLine:
    label: str
    percent: str
    supported: int
    total: int
    partitions: int
    verdict: str
    fixes: str = ""  # "layernorm (13 nodes); before them ..." when the fix stage changed its model


@dataclass(frozen=True)
class ModelLine:
    """One model of a package whose targets ship different graphs."""

    targets: str  # "android"
    ort: str
    onnx: str
    ops_config: str
    ort_format_version: int
    max_opset: int
    passes: str  # "layernorm (13 nodes), gelu (6 nodes)" or "none"


@dataclass(frozen=True)
class ReadmeContext:
    model_name: str
    mobilegen_version: str
    source_file: str
    source_kind: str
    source_sha256: str
    android: bool
    android_readme: bool
    maven_version: str
    ios: bool
    ios_readme: bool
    ios_channel: str
    ios_version: str
    ort_format_version: int
    max_opset: int
    onnx_opset: int
    schema_version: int
    tensors: tuple[TensorRow, ...]
    passed: bool
    atol: str
    rtol: str
    coverage: tuple[CoverageLine, ...]
    warnings: tuple[str, ...]
    paths: dict[str, str]  # the package layout (mobilegen.artifacts), so names live in one place
    models: tuple[ModelLine, ...] = ()  # one per target when their graphs differ; empty: one model (paths)
    ort_list: str = f"`{MODEL_ORT}`"  # Markdown: the .ort file(s) verify runs, in code spans (fixed names)
    quantization: tuple[str, ...] = ()  # --quantize: one line per shipped model (mobilegen.report.quantization)
    android_artifact: str = "onnxruntime-android"  # the Maven artifact the Android project pins (a provider's own build's, when one needs it)
    # one copy of each model file: (project file that pins it, model) for each project that copies its model at build time
    links: tuple[tuple[str, str], ...] = ()


def readme_context(result: BuildResult, root: Path) -> ReadmeContext:
    versions = tool_versions(result)
    runtimes = versions["mobile_runtimes"]
    ver = result.verification
    channel = "swiftpm" if "swiftpm" in runtimes else next(iter(runtimes), "?")
    android_channel = result.channels.get("android", "maven")  # a provider's own build: its channel (RuntimeArtifact.channel)
    tensors = tuple(
        TensorRow(role, t.name, f"{t.dtype}", "[" + ", ".join(str(d) for d in t.shape) + "]" if t.shape else "scalar")
        for role, group in (("input", result.onnx.io.inputs), ("output", result.onnx.io.outputs))
        for t in group
    )
    coverage = tuple(
        CoverageLine(c.shown, f"{c.percent:.1f}", c.supported_nodes, c.total_nodes, len(c.partitions), c.verdict, fixes_text(result, c))
        for c in result.coverage
    )
    models = tuple(
        ModelLine(
            " and ".join(targets.get(t).display_name for t in m.targets),
            m.ort_file,
            m.onnx_file,
            m.ops_config_file,
            m.converted().ort_format_version,
            m.converted().max_opset,
            ", ".join(f"{f.name} ({f.nodes} node{'s' if f.nodes != 1 else ''})" for f in m.fixes) or "none",
        )
        for m in result.shipped
    ) if result.per_target else ()
    return ReadmeContext(
        model_name=result.model_name,
        mobilegen_version=f"{versions['mobilegen']}",
        source_file=result.loaded.source.name,
        source_kind=f"{result.loaded.kind}",
        source_sha256=result.loaded.sha256,
        android=ANDROID_DIR in result.targets,
        android_readme=(root / ANDROID_DIR / "README.md").is_file(),
        maven_version=f"{runtimes.get(android_channel, '?')}",
        android_artifact=_artifact_name(android_channel),
        links=tuple((file, link.path) for _target, file, link in result.model_links),
        ios=IOS_DIR in result.targets,
        ios_readme=(root / IOS_DIR / "README.md").is_file(),
        ios_channel=channel,
        ios_version=f"{runtimes.get(channel, '?')}",
        ort_format_version=result.ort.ort_format_version,
        max_opset=result.ort.max_opset,
        onnx_opset=result.onnx.opset,
        schema_version=MANIFEST_SCHEMA_VERSION,
        tensors=tensors,
        passed=ver.passed,
        atol=f"{ver.atol:g}",
        rtol=f"{ver.rtol:g}",
        coverage=coverage,
        warnings=tuple(warning_texts(result)),
        paths={
            "model_ort": MODEL_ORT,
            "model_onnx": MODEL_ONNX,
            "ops_config": MODEL_OPS_CONFIG,
            "golden_npz": GOLDEN_NPZ,
            "golden_mgv": GOLDEN_MGV,
            "tolerances": GOLDEN_TOLERANCES,
            "report_html": f"{REPORT_DIR}/report.html",
            "report_md": f"{REPORT_DIR}/report.md",
            "coverage_json": f"{REPORT_DIR}/coverage.json",
            "manifest": MANIFEST,
        },
        models=models,
        ort_list=" and ".join(f"`{m.ort_file}`" for m in result.shipped),
        quantization=tuple(quantization_lines(result.shipped)),
    )


@functools.cache
def _artifact_name(channel: str) -> str:
    """The Maven artifact the Android project pins from ``channel``: onnxruntime-android, or the build of
    its own a provider ships on that channel (its ``RuntimeArtifact.artifact``)."""
    from mobilegen import providers

    own = next((a for p in providers.all_providers() for a in p.runtime_artifacts if a.channel == channel), None)
    return "onnxruntime-android" if own is None else own.artifact.split(":")[-1]


def _environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_root() / PACKAGE_TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,  # Markdown: escaping is explicit, with the md / code filters
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["md"] = md_escape
    env.filters["code"] = md_code
    return env


def render_readme(result: BuildResult, root: Path) -> str:
    import jinja2

    context = readme_context(result, root)
    fields = {f.name: getattr(context, f.name) for f in dataclasses.fields(context)}
    try:
        return _environment().get_template(README_TEMPLATE).render(fields)
    except jinja2.TemplateError as err:
        raise InternalError(
            f"template {PACKAGE_TEMPLATES}/{README_TEMPLATE}: {err}", hint="this is a bug in mobilegen's package templates; please report it"
        ) from err
