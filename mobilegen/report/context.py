"""What ``report.md`` and ``report.html`` show, as one typed context built from a BuildResult.

Every value is raw text (the templates escape it for their format: Markdown through ``md_escape``,
HTML through autoescape); numbers are formatted here so both formats print them the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mobilegen.artifacts import BuildResult
from mobilegen.notices import Notice
from mobilegen.report.facts import (
    CPU,
    coverage_headline,
    fixes_text,
    human_bytes,
    num,
    op_label,
    plural,
    runs,
    settings_text,
    shape_text,
    sized_files,
    unverified_text,
)
from mobilegen.report.picture import PartitionPicture, partition_picture
from mobilegen.report.quantization import QuantSection
from mobilegen.report.quantization import sections as quant_sections
from mobilegen.report.quantization import summary_fact as quant_summary
from mobilegen.report.runtimes import RuntimeRow
from mobilegen.report.runtimes import rows as runtime_rows

if TYPE_CHECKING:
    from mobilegen.coverage.model import CoverageReport

NO_REASON = "no reason given"


@dataclass(frozen=True)
class Fact:
    """One row of a two-column table (summary, versions)."""

    name: str
    value: str

    @property
    def cells(self) -> tuple[str, ...]:
        return (self.name, self.value)


@dataclass(frozen=True)
class IORow:
    role: str  # "input" / "output"
    name: str
    dtype: str
    shape: str

    @property
    def cells(self) -> tuple[str, ...]:
        return (self.role, self.name, self.dtype, self.shape)


@dataclass(frozen=True)
class VerifyLine:
    artifact: str
    case: str
    output: str
    max_abs: str
    max_rel: str
    cosine: str
    top1: str
    result: str  # "pass" / "FAIL" / "unverified"
    note: str

    @property
    def cells(self) -> tuple[str, ...]:
        return (self.artifact, self.case, self.output, self.max_abs, self.max_rel, self.cosine, self.top1, self.result, self.note)


@dataclass(frozen=True)
class SizeRow:
    file: str
    size_bytes: int
    size: str  # human-readable

    @property
    def cells(self) -> tuple[str, ...]:
        return (self.file, str(self.size_bytes), self.size)


@dataclass(frozen=True)
class RefusedOp:
    op: str
    nodes: int
    reasons: str  # "; "-joined

    @property
    def cells(self) -> tuple[str, ...]:
        return (self.op, str(self.nodes), self.reasons)


@dataclass(frozen=True)
class RefusedNode:
    index: int
    name: str
    op: str
    reasons: str

    @property
    def cells(self) -> tuple[str, ...]:
        return (str(self.index), self.name, self.op, self.reasons)


@dataclass(frozen=True)
class CoverageSection:
    index: int
    label: str
    headline: str  # "86.8% of nodes supported (79/91), 9 partitions, verdict: no"
    fixes: str  # "layernorm (13 nodes), gelu (6 nodes); before them ..."; "" when no graph pass was applied
    settings: str  # "" when the EP has no settings
    suggestions: tuple[str, ...]
    refused_ops: tuple[RefusedOp, ...]
    refused_nodes: tuple[RefusedNode, ...]
    refused_title: str  # "All 3 refused nodes"
    placement: str  # "P1×4 · CPU×2"; "" without nodes
    picture: PartitionPicture | None


@dataclass(frozen=True)
class ReportContext:
    model_name: str
    summary: tuple[Fact, ...]
    versions: tuple[Fact, ...]
    io: tuple[IORow, ...]
    passed: bool
    unverified: str  # "1 output unverified ('y', accepted with --allow-degenerate)"; "" when none
    atol: str
    rtol: str
    verification: tuple[VerifyLine, ...]
    sizes: tuple[SizeRow, ...]
    warnings: tuple[Notice, ...]
    coverage: tuple[CoverageSection, ...]
    quantization: tuple[QuantSection, ...] = ()  # --quantize: one section per shipped model
    runtimes: tuple[RuntimeRow, ...] = ()  # every runtime shipped, side by side (mobilegen.report.runtimes)


def build_context(result: BuildResult, sizes: Mapping[str, int], versions: Mapping[str, Any]) -> ReportContext:
    """The report of ``result``; ``sizes`` maps package paths to bytes, ``versions`` is ``tool_versions``."""
    ver = result.verification
    return ReportContext(
        model_name=result.model_name,
        summary=_summary(result),
        versions=_versions(versions),
        io=tuple(
            IORow(role, t.name, t.dtype, shape_text(t.shape))
            for role, tensors in (("input", result.onnx.io.inputs), ("output", result.onnx.io.outputs))
            for t in tensors
        ),
        passed=ver.passed,
        unverified=unverified_text(ver.unverified),
        atol=f"{ver.atol:g}",
        rtol=f"{ver.rtol:g}",
        verification=tuple(
            VerifyLine(
                r.artifact, r.case, r.output, num(r.max_abs), num(r.max_rel), num(r.cosine), num(r.top1),
                _RESULT[r.status], r.note,
            )
            for r in ver.rows
        ),
        sizes=_sizes(sizes, sized_files(result)),
        warnings=tuple(result.warnings),
        coverage=tuple(coverage_section(i, c, fixes_text(result, c)) for i, c in enumerate(result.coverage)),
        quantization=quant_sections(result.shipped),
        runtimes=runtime_rows(result, sizes),
    )


# The verification table's result column, by VerifyRow.status.
_RESULT = {"pass": "pass", "fail": "FAIL", "unverified": "unverified"}


def _unverified_suffix(outputs: tuple[str, ...]) -> str:
    return f"; {unverified_text(outputs)}" if outputs else ""


def coverage_section(index: int, c: CoverageReport, fixes: str = "") -> CoverageSection:
    refused = tuple(
        RefusedNode(i, n.name, op_label(n), "; ".join(n.reasons) or NO_REASON) for i, n in enumerate(c.nodes) if not n.supported
    )
    return CoverageSection(
        index=index,
        label=c.shown,
        headline=coverage_headline(c),
        fixes=fixes,
        settings=settings_text(c.settings) if c.settings else "",
        suggestions=tuple(c.suggestions),
        refused_ops=tuple(RefusedOp(op, n, "; ".join(r) or NO_REASON) for op, n, r in c.unsupported_summary()),
        refused_nodes=refused,
        refused_title=f"All {len(refused)} refused {plural(len(refused), 'node')}",
        placement=" · ".join(f"{'P' + str(p) if p else CPU}×{n}" for p, _first, n in runs(c)),
        picture=partition_picture(c),
    )


def _summary(result: BuildResult) -> tuple[Fact, ...]:
    ver, ort, onnx = result.verification, result.ort, result.onnx
    return (
        Fact("Model", result.model_name),
        Fact("Source", f"{result.loaded.source.name} ({result.loaded.kind})"),
        Fact("Source sha256", result.loaded.sha256),
        Fact("Targets", ", ".join(result.targets) or "none"),
        Fact("Verification", f"{'passed' if ver.passed else 'FAILED'} (atol {ver.atol:g}, rtol {ver.rtol:g})" + _unverified_suffix(ver.unverified)),
        Fact("ONNX", f"opset {onnx.opset}, {onnx.exporter} exporter"),
        Fact(
            "ORT model",
            f"format version {ort.ort_format_version}, optimization {ort.optimization_style}/{ort.optimization_level}, "
            f"highest ai.onnx opset needed {ort.max_opset}",
        ),
        *_models(result),
        *((Fact("Quantization", q),) if (q := quant_summary(result.shipped)) else ()),
        *_task(result),
    )


def _task(result: BuildResult) -> tuple[Fact, ...]:
    """``--task``: the pre/post-processing around the model (mobilegen.tasks)."""
    from mobilegen.tasks.spec import describe
    from mobilegen.tasks.text.task import describe_tokenizer

    rec = result.options.get("task")
    if not isinstance(rec, dict):
        return ()
    tok = rec.get("tokenizer")
    return (Fact("Task", describe(rec)), *((Fact("Tokenizer", describe_tokenizer(tok)),) if isinstance(tok, dict) else ()))


def _models(result: BuildResult) -> tuple[Fact, ...]:
    """One row per target model when the targets ship different graphs."""
    from mobilegen import targets

    if not result.per_target:
        return ()
    rows = []
    for m in result.shipped:
        passes = ", ".join(f"{f.name} ({f.nodes} {plural(f.nodes, 'node')})" for f in m.fixes) or "none"
        ort = m.converted()
        rows.append(
            Fact(
                f"Model for {' and '.join(targets.get(t).display_name for t in m.targets)}",
                f"{m.ort_file} (highest ai.onnx opset needed {ort.max_opset}); graph passes: {passes}",
            )
        )
    return tuple(rows)


def _versions(v: Mapping[str, Any]) -> tuple[Fact, ...]:
    rows = [
        Fact("mobilegen", v["mobilegen"]),
        Fact("torch", v["torch"] or "not installed"),
        Fact("onnx", v["onnx"] or "not installed"),
        Fact("onnxruntime (converter)", v["onnxruntime_converter"]),
    ]
    rows += [Fact(f"onnxruntime mobile ({channel})", version) for channel, version in v["mobile_runtimes"].items()]
    return tuple(rows)


def _sizes(sizes: Mapping[str, int], order: tuple[str, ...]) -> tuple[SizeRow, ...]:
    known = [(p, sizes[p]) for p in order if p in sizes]
    extra = sorted((p, n) for p, n in sizes.items() if p not in order)
    return tuple(SizeRow(p, n, human_bytes(n)) for p, n in known + extra)
