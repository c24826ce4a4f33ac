"""The build report as text: Markdown (``report.md``), one self-contained HTML page (``report.html``)
and the coverage JSON (``coverage.json``).

Pure functions of a :class:`~mobilegen.artifacts.BuildResult` (plus, optionally, the sizes of the
package files). Nothing here writes files, prints, or puts a date or an absolute path into its output:
the same result gives the same bytes (reproducible packages). Every model-derived string (tensor,
node and model names, reasons, warnings) is escaped for the format it lands in.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from mobilegen import __version__
from mobilegen.artifacts import (
    GOLDEN_MGV,
    GOLDEN_NPZ,
    GOLDEN_TOLERANCES,
    MODEL_ONNX,
    MODEL_OPS_CONFIG,
    MODEL_ORT,
    NNAPI_DEPRECATION,
    BuildResult,
)
from mobilegen.markdown import md_escape

# Files whose sizes the report lists (package-relative paths), in this order.
SIZED_FILES = (MODEL_ONNX, MODEL_ORT, MODEL_OPS_CONFIG, GOLDEN_NPZ, GOLDEN_MGV, GOLDEN_TOLERANCES)

# Partition colours (Tableau 10 without its grey); CPU is grey. Cycled when there are more partitions.
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#2f4b7c",
)
CPU_COLOR = "#cfcfcf"
CPU = "CPU"



# ---------------------------------------------------------------------------------------------------
# Facts shared by every output format (and by the manifest in mobilegen.package)


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


def default_sizes(result: BuildResult) -> dict[str, int]:
    """Sizes of the model and golden files, read from the paths the result carries (when they exist)."""
    paths: dict[str, Path | None] = {
        MODEL_ONNX: result.onnx.path,
        MODEL_ORT: result.ort.path,
        MODEL_OPS_CONFIG: result.ort.config_path,
        GOLDEN_NPZ: result.verification.golden_npz,
        GOLDEN_MGV: result.verification.golden_mgv,
    }
    return {rel: p.stat().st_size for rel, p in paths.items() if p is not None and p.is_file()}


def placement(report: Any) -> list[tuple[int, str, str, int]]:
    """Where each node runs, in the report's node order: (index, node name, op, partition number).

    Partition numbers start at 1 (ORT's order); 0 means the CPU EP (refused, or supported but left out
    of every partition, e.g. because ORT drops partitions that are too small).
    """
    part_of: dict[str, int] = {}
    for i, names in enumerate(report.partitions, start=1):
        for name in names:
            part_of.setdefault(name, i)
    return [(i, n.name, _op_label(n), part_of.get(n.name, 0)) for i, n in enumerate(report.nodes)]


def runs(report: Any) -> list[tuple[int, int, int]]:
    """Consecutive nodes with the same placement: (partition number or 0 for CPU, first index, count)."""
    out: list[tuple[int, int, int]] = []
    for idx, _name, _op, part in placement(report):
        if out and out[-1][0] == part:
            p, first, count = out[-1]
            out[-1] = (p, first, count + 1)
        else:
            out.append((part, idx, 1))
    return out


def derived_warnings(result: BuildResult) -> list[str]:
    """The pipeline's warnings first, then facts worth a warning derived from the result (deduplicated)."""
    out: list[str] = list(result.warnings)
    if result.onnx.fallback_reason:
        out.append(f"ONNX export fell back to the {result.onnx.exporter} exporter: {result.onnx.fallback_reason}")
    out.extend(result.onnx.notes)
    eps = {c.ep for c in result.coverage}
    if "nnapi" in eps and not any("deprecated" in w.lower() and "nnapi" in w.lower() for w in out):
        out.append(NNAPI_DEPRECATION)
    for t in result.onnx.io.inputs:
        if t.dynamic_dims:
            out.append(
                f"input {t.name} has dynamic dims ({', '.join(t.dynamic_dims)}): NNAPI and CoreML need "
                "static shapes and run such nodes on the CPU unless the dims are fixed"
            )
    for c in result.coverage:
        cpu = c.total_nodes - sum(1 for _i, _n, _o, p in placement(c) if p)
        if cpu:
            out.append(
                f"{c.label}: {cpu} of {c.total_nodes} nodes fall back to the CPU EP "
                f"({len(c.partitions)} {_plural(len(c.partitions), 'partition')} on {c.ep})"
            )
    unique: list[str] = []
    for w in out:
        # Skip a derived warning the pipeline already gave (the same text, a longer version of it, or
        # another line about the same EP).
        label = w.split(":", 1)[0] + ":"
        if any(w in u or (label in {f"{c.label}:" for c in result.coverage} and u.startswith(label)) for u in unique):
            continue
        unique.append(w)
    return unique


def coverage_json(result: BuildResult) -> str:
    """``{"reports": [CoverageReport.to_dict(), ...]}``, the same contract as ``mobilegen check --json``."""
    payload = {"reports": [r.to_dict() for r in result.coverage]}
    return json.dumps(jsonable(payload), indent=2, ensure_ascii=True) + "\n"


def jsonable(value: Any) -> Any:
    """JSON-safe copy: non-finite floats become "nan"/"inf"/"-inf", paths keep only their name, tuples lists."""
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Path):
        return value.name
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if hasattr(value, "item"):  # numpy scalar
        return jsonable(value.item())
    return str(value)


# ---------------------------------------------------------------------------------------------------
# Small formatting helpers


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


def _op_label(node: Any) -> str:
    return f"{node.domain}:{node.op_type}" if node.domain not in ("", "ai.onnx") else str(node.op_type)


def _num(x: float | None) -> str:
    if x is None:
        return "–"
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return f"{x:.3g}"


def _bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def _shape(shape: Sequence[Any]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]" if shape else "scalar"


def _partition_text(part: int) -> str:
    return f"partition {part}" if part else CPU


def _color(part: int) -> str:
    return PALETTE[(part - 1) % len(PALETTE)] if part else CPU_COLOR


def _summary_rows(result: BuildResult) -> list[tuple[str, str]]:
    ver = result.verification
    ort = result.ort
    onnx = result.onnx
    return [
        ("Model", result.model_name),
        ("Source", f"{result.loaded.source.name} ({result.loaded.kind})"),
        ("Source sha256", result.loaded.sha256),
        ("Targets", ", ".join(result.targets) or "none"),
        ("Verification", f"{'passed' if ver.passed else 'FAILED'} (atol {ver.atol:g}, rtol {ver.rtol:g})"),
        ("ONNX", f"opset {onnx.opset}, {onnx.exporter} exporter"),
        (
            "ORT model",
            f"format version {ort.ort_format_version}, optimization {ort.optimization_style}/{ort.optimization_level}, "
            f"highest ai.onnx opset needed {ort.max_opset}",
        ),
    ]


def _version_rows(result: BuildResult) -> list[tuple[str, str]]:
    v = tool_versions(result)
    rows = [
        ("mobilegen", v["mobilegen"]),
        ("torch", v["torch"] or "not installed"),
        ("onnx", v["onnx"] or "not installed"),
        ("onnxruntime (converter)", v["onnxruntime_converter"]),
    ]
    for channel, version in v["mobile_runtimes"].items():
        rows.append((f"onnxruntime mobile ({channel})", version))
    return rows


def _io_rows(result: BuildResult) -> list[tuple[str, str, str, str]]:
    rows = []
    for role, tensors in (("input", result.onnx.io.inputs), ("output", result.onnx.io.outputs)):
        for t in tensors:
            rows.append((role, t.name, t.dtype, _shape(t.shape)))
    return rows


def _verify_rows(result: BuildResult) -> list[tuple[str, ...]]:
    return [
        (
            r.artifact,
            r.case,
            r.output,
            _num(r.max_abs),
            _num(r.max_rel),
            _num(r.cosine),
            _num(r.top1),
            "pass" if r.passed else "FAIL",
            r.note,
        )
        for r in result.verification.rows
    ]


def _size_rows(sizes: Mapping[str, int]) -> list[tuple[str, int]]:
    known = [(p, sizes[p]) for p in SIZED_FILES if p in sizes]
    extra = sorted((p, n) for p, n in sizes.items() if p not in SIZED_FILES)
    return known + extra


def _settings_text(settings: Mapping[str, object]) -> str:
    return ", ".join(f"{k}={json.dumps(jsonable(settings[k]))}" for k in sorted(settings))


def _coverage_headline(c: Any) -> str:
    return (
        f"{c.percent:.1f}% of nodes supported ({c.supported_nodes}/{c.total_nodes}), "
        f"{len(c.partitions)} {_plural(len(c.partitions), 'partition')}, verdict: {c.verdict}"
    )


# ---------------------------------------------------------------------------------------------------
# Markdown

def _md_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(md_escape(c) for c in row) + " |")
    return lines


def render_markdown(result: BuildResult, *, sizes: Mapping[str, int] | None = None) -> str:
    """``report.md``: the same facts as the HTML page, as plain Markdown."""
    sizes = default_sizes(result) if sizes is None else sizes
    out: list[str] = [f"# mobilegen report: {md_escape(result.model_name)}", ""]
    out += ["## Summary", ""]
    out += _md_table(("fact", "value"), _summary_rows(result))
    out += ["", "## Versions", ""]
    out += _md_table(("tool", "version"), _version_rows(result))
    out += ["", "## Inputs and outputs", ""]
    out += _md_table(("role", "name", "dtype", "shape"), _io_rows(result))

    ver = result.verification
    out += ["", "## Verification", ""]
    out += [
        f"Every artifact ran on the same inputs and was compared with the reference outputs "
        f"(pass when |a − b| ≤ atol + rtol·|b|, atol {ver.atol:g}, rtol {ver.rtol:g}): "
        f"**{'passed' if ver.passed else 'FAILED'}**.",
        "",
    ]
    if ver.rows:
        out += _md_table(
            ("artifact", "case", "output", "max abs", "max rel", "cosine", "top-1", "result", "note"),
            _verify_rows(result),
        )
    else:
        out.append("No verification rows.")

    out += ["", "## Sizes", ""]
    size_rows = _size_rows(sizes)
    if size_rows:
        out += _md_table(("file", "bytes", "size"), ((p, n, _bytes(n)) for p, n in size_rows))
    else:
        out.append("No files measured.")

    out += ["", "## Warnings", ""]
    warnings = derived_warnings(result)
    out += [f"- {md_escape(w)}" for w in warnings] or ["None."]

    out += ["", "## Execution provider coverage", ""]
    if not result.coverage:
        out.append("No execution provider was analysed.")
    for c in result.coverage:
        out += _md_coverage(c)
    return "\n".join(out).rstrip("\n") + "\n"


def _md_coverage(c: Any) -> list[str]:
    out = [f"### {md_escape(c.label)}", "", md_escape(_coverage_headline(c)) + ".", ""]
    if c.settings:
        out += [f"Settings: {md_escape(_settings_text(c.settings))}.", ""]
    if c.suggestions:
        out += ["Suggestions:", ""] + [f"- {md_escape(s)}" for s in c.suggestions] + [""]
    summary = c.unsupported_summary()
    if summary:
        out += ["Refused ops:", ""]
        out += _md_table(("op", "nodes", "reasons"), ((op, n, "; ".join(r) or "no reason given") for op, n, r in summary))
        out += ["", "Refused nodes:", ""]
        out += _md_table(
            ("#", "node", "op", "reasons"),
            ((i, n.name, _op_label(n), "; ".join(n.reasons) or "no reason given") for i, n in enumerate(c.nodes) if not n.supported),
        )
        out.append("")
    else:
        out += ["No op is refused.", ""]
    placement_runs = runs(c)
    if placement_runs:
        text = " · ".join(f"{'P' + str(p) if p else CPU}×{n}" for p, _first, n in placement_runs)
        out += [f"Placement in node order (P*k* = partition *k*, {CPU} = CPU EP): {text}", ""]
    return out


# ---------------------------------------------------------------------------------------------------
# HTML


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _html_table(header: Sequence[str] | None, rows: Iterable[Sequence[object]], *, cls: str = "") -> str:
    thead = "<thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in header) + "</tr></thead>" if header else ""
    body = []
    for row in rows:
        cells = []
        for c in row:
            text = str(c)
            klass = ' class="fail"' if text == "FAIL" else (' class="pass"' if text == "pass" else "")
            cells.append(f"<td{klass}>{_e(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}>{thead}<tbody>" + "".join(body) + "</tbody></table>"


_CSS = """
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
       max-width: 1100px; padding: 16px 24px 48px; color: #1d1d1f; background: #fff; }
h1 { font-size: 24px; margin: 8px 0 16px; } h2 { font-size: 19px; margin-top: 32px;
     border-bottom: 1px solid #ddd; padding-bottom: 4px; } h3 { font-size: 16px; margin-top: 24px; }
table { border-collapse: collapse; margin: 8px 0 12px; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th, table.kv td:first-child { background: #f4f4f6; font-weight: 600; } td.pass { color: #1a7f37; font-weight: 600; }
td.fail, .bad { color: #c62828; font-weight: 600; } .good { color: #1a7f37; font-weight: 600; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
ul.warnings li { margin: 2px 0; } .muted { color: #666; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 14px; margin: 6px 0; font-size: 12px; }
.legend span.sw { display: inline-block; width: 12px; height: 12px; border-radius: 2px;
                  vertical-align: -2px; margin-right: 4px; }
svg.strip, svg.grid { display: block; max-width: 100%; height: auto; margin: 6px 0; }
details { margin: 6px 0; } summary { cursor: pointer; }
"""


def render_html(result: BuildResult, *, sizes: Mapping[str, int] | None = None) -> str:
    """``report.html``: one self-contained page (inline CSS and SVG, no script, no external asset)."""
    sizes = default_sizes(result) if sizes is None else sizes
    ver = result.verification
    parts: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        # Nothing may be fetched: the page must open from disk (and an accidental external asset is an
        # error in the browser console, which the Chromium test catches).
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>mobilegen report: {_e(result.model_name)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>mobilegen report: {_e(result.model_name)}</h1>",
        '<section id="summary"><h2>Summary</h2>',
        _html_table(None, _summary_rows(result), cls="kv"),
        "</section>",
        '<section id="versions"><h2>Versions</h2>',
        _html_table(("tool", "version"), _version_rows(result)),
        "</section>",
        '<section id="io"><h2>Inputs and outputs</h2>',
        _html_table(("role", "name", "dtype", "shape"), _io_rows(result)),
        "</section>",
        '<section id="verification"><h2>Verification</h2>',
        f"<p>Every artifact ran on the same inputs and was compared with the reference outputs (pass when "
        f"|a − b| ≤ atol + rtol·|b|, atol {ver.atol:g}, rtol {ver.rtol:g}): "
        + ('<span class="good">passed</span>' if ver.passed else '<span class="bad">FAILED</span>')
        + ".</p>",
    ]
    if ver.rows:
        parts.append(
            _html_table(
                ("artifact", "case", "output", "max abs", "max rel", "cosine", "top-1", "result", "note"),
                _verify_rows(result),
            )
        )
    else:
        parts.append("<p>No verification rows.</p>")
    parts.append("</section>")

    parts.append('<section id="sizes"><h2>Sizes</h2>')
    size_rows = _size_rows(sizes)
    if size_rows:
        parts.append(_html_table(("file", "bytes", "size"), ((p, n, _bytes(n)) for p, n in size_rows)))
    else:
        parts.append("<p>No files measured.</p>")
    parts.append("</section>")

    parts.append('<section id="warnings"><h2>Warnings</h2>')
    warnings = derived_warnings(result)
    if warnings:
        parts.append('<ul class="warnings">' + "".join(f"<li>{_e(w)}</li>" for w in warnings) + "</ul>")
    else:
        parts.append("<p>None.</p>")
    parts.append("</section>")

    parts.append('<section id="coverage"><h2>Execution provider coverage</h2>')
    if not result.coverage:
        parts.append("<p>No execution provider was analysed.</p>")
    for i, c in enumerate(result.coverage):
        parts.append(_html_coverage(c, i))
    parts.append("</section>")
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"


def _html_coverage(c: Any, index: int) -> str:
    parts = [f'<div class="ep" id="ep-{index}">', f"<h3>{_e(c.label)}</h3>", f"<p>{_e(_coverage_headline(c))}.</p>"]
    if c.settings:
        parts.append(f'<p class="muted">Settings: <span class="mono">{_e(_settings_text(c.settings))}</span></p>')
    if c.suggestions:
        parts.append("<p>Suggestions:</p><ul>" + "".join(f"<li>{_e(s)}</li>" for s in c.suggestions) + "</ul>")
    summary = c.unsupported_summary()
    if summary:
        parts.append("<p>Refused ops:</p>")
        parts.append(
            _html_table(("op", "nodes", "reasons"), ((op, n, "; ".join(r) or "no reason given") for op, n, r in summary))
        )
        refused = [(i, n) for i, n in enumerate(c.nodes) if not n.supported]
        parts.append(f"<details><summary>All {len(refused)} refused {_plural(len(refused), 'node')}</summary>")
        parts.append(
            _html_table(
                ("#", "node", "op", "reasons"),
                ((i, n.name, _op_label(n), "; ".join(n.reasons) or "no reason given") for i, n in refused),
            )
        )
        parts.append("</details>")
    else:
        parts.append("<p>No op is refused.</p>")
    parts.append(_partition_picture(c))
    parts.append("</div>")
    return "\n".join(parts)


def _partition_picture(c: Any) -> str:
    """Legend, a run strip (one bar per stretch of nodes with the same placement, width ∝ nodes) and a
    grid with one cell per node in order, each with a tooltip. Sized to stay readable for thousands of nodes."""
    nodes = placement(c)
    if not nodes:
        return "<p>No nodes.</p>"
    n = len(nodes)
    cols = 50 if n <= 1000 else 100
    cell = 14 if n <= 1000 else 9
    gap = 1
    rows = math.ceil(n / cols)
    label_w = 44
    width = label_w + cols * cell
    height = rows * cell

    counts: dict[int, int] = {}
    for _i, _name, _op, p in nodes:
        counts[p] = counts.get(p, 0) + 1
    legend = ['<div class="legend">']
    legend.append(f'<span><span class="sw" style="background:{CPU_COLOR}"></span>{CPU} ({counts.get(0, 0)} nodes)</span>')
    shown = sorted(p for p in counts if p)
    for p in shown[:20]:
        legend.append(f'<span><span class="sw" style="background:{_color(p)}"></span>partition {p} ({counts[p]} nodes)</span>')
    if len(shown) > 20:
        legend.append(f'<span class="muted">… {len(shown) - 20} more partitions (colours repeat; hover a cell)</span>')
    legend.append("</div>")

    # Run strip: the whole graph as one bar.
    strip_w = 1000
    strip = [
        f'<svg class="strip" role="img" viewBox="0 0 {strip_w} 22" width="{strip_w}" height="22">'
        f'<title>{_e(c.label)}: placement of {n} nodes in order</title>'
    ]
    for part, first, count in runs(c):
        x = strip_w * first / n
        w = max(strip_w * count / n, 0.5)
        last = first + count - 1
        tip = f"{_partition_text(part)}: nodes {first}–{last} ({count} {_plural(count, 'node')})"
        strip.append(
            f'<rect x="{x:.2f}" y="0" width="{w:.2f}" height="22" fill="{_color(part)}"><title>{_e(tip)}</title></rect>'
        )
    strip.append("</svg>")

    grid = [
        f'<svg class="grid" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}">'
        f'<title>{_e(c.label)}: one cell per node, in order</title>',
        f'<g font-size="{max(cell - 4, 7)}" font-family="monospace" fill="#666">',
    ]
    for r in range(rows):
        grid.append(f'<text x="{label_w - 4}" y="{r * cell + cell - 3}" text-anchor="end">{r * cols}</text>')
    grid.append("</g>")
    for idx, name, op, part in nodes:
        r, col = divmod(idx, cols)
        node = c.nodes[idx]
        tip = f"#{idx} {name} ({op}): {_partition_text(part)}"
        if not node.supported and node.reasons:
            tip += " — " + "; ".join(node.reasons)
        grid.append(
            f'<rect x="{label_w + col * cell}" y="{r * cell}" width="{cell - gap}" height="{cell - gap}" '
            f'fill="{_color(part)}"><title>{_e(tip)}</title></rect>'
        )
    grid.append("</svg>")
    return (
        '<div class="partitions"><p>Where each node runs, in graph order (hover for details):</p>'
        + "".join(legend)
        + "".join(strip)
        + "\n"
        + "\n".join(grid)
        + "</div>"
    )
