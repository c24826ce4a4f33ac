"""Facts the report, the manifest and the package README share: where each node runs, file sizes, the
coverage JSON, and the small text formats every rendering uses."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen.artifacts import (
    GOLDEN_MGV,
    GOLDEN_NPZ,
    GOLDEN_TOLERANCES,
    MODEL_ONNX,
    MODEL_OPS_CONFIG,
    MODEL_ORT,
    BuildResult,
    CoverageCounts,
    ProviderFixes,
)

if TYPE_CHECKING:
    from mobilegen.coverage.model import CoverageReport, NodeVerdict

# Files whose sizes the report lists (package-relative paths), in this order.
GOLDEN_FILES = (GOLDEN_NPZ, GOLDEN_MGV, GOLDEN_TOLERANCES)
SIZED_FILES = (MODEL_ONNX, MODEL_ORT, MODEL_OPS_CONFIG, *GOLDEN_FILES)  # one model for every target

CPU = "CPU"


def default_sizes(result: BuildResult) -> dict[str, int]:
    """Sizes of the model and golden files, read from the paths the result carries (when they exist)."""
    paths: dict[str, Path | None] = {}
    for m in result.shipped:
        paths[m.onnx_file] = m.onnx.path
        paths[m.ort_file] = None if m.ort is None else m.ort.path
        paths[m.ops_config_file] = None if m.ort is None else m.ort.config_path
    paths[GOLDEN_NPZ] = result.verification.golden_npz
    paths[GOLDEN_MGV] = result.verification.golden_mgv
    root = result.verification.golden_npz.parent.parent if result.verification.golden_npz is not None else None
    for rel in own_golden_files(result):  # a quantized model's own golden vectors (golden/<target>/)
        paths[rel] = None if root is None else root / rel
    return {rel: p.stat().st_size for rel, p in paths.items() if p is not None and p.is_file()}


def placement(report: CoverageReport) -> list[tuple[int, str, str, int]]:
    """Where each node runs, in the report's node order: (index, node name, op, partition number).

    Partition numbers start at 1 (ORT's order); 0 means the CPU EP (refused, or supported but left out
    of every partition, e.g. because ORT drops partitions that are too small).
    """
    part_of: dict[str, int] = {}
    for i, names in enumerate(report.partitions, start=1):
        for name in names:
            part_of.setdefault(name, i)
    return [(i, n.name, op_label(n), part_of.get(n.name, 0)) for i, n in enumerate(report.nodes)]


def runs(report: CoverageReport) -> list[tuple[int, int, int]]:
    """Consecutive nodes with the same placement: (partition number or 0 for CPU, first index, count)."""
    out: list[tuple[int, int, int]] = []
    for idx, _name, _op, part in placement(report):
        if out and out[-1][0] == part:
            p, first, count = out[-1]
            out[-1] = (p, first, count + 1)
        else:
            out.append((part, idx, 1))
    return out


def coverage_json(result: BuildResult) -> str:
    """``{"reports": [CoverageReport.to_dict() + before + fixes, ...]}``: the contract of ``mobilegen check
    --json``, each entry with the fix stage's ``before`` and ``fixes`` (:func:`fix_fields`)."""
    payload = {"reports": [r.to_dict() | fix_fields(result, r) for r in result.coverage]}
    return json.dumps(jsonable(payload), indent=2, ensure_ascii=True) + "\n"


def fix_fields(result: BuildResult, report: CoverageReport) -> dict[str, Any]:
    """What the fix stage adds to a coverage entry: ``before`` (``supported_nodes``, ``total_nodes``,
    ``partitions`` before the graph passes; today's numbers when none was applied) and ``fixes`` (each
    pass applied to the provider's model: ``pass``, ``nodes`` rewritten)."""
    record = result.fixes_of(report.label, report.target)
    if record is None:
        return ProviderFixes(report.label, "", CoverageCounts.of(report)).to_dict()
    return record.to_dict()


def fixes_text(result: BuildResult, report: CoverageReport) -> str:
    """``before: 60/88 nodes, 9 partitions; passes: layernorm (13 nodes), gelu (6 nodes)``, or "" when the
    fix stage changed nothing for this provider."""
    record = result.fixes_of(report.label, report.target)
    if record is None or not record.fixes:
        return ""
    before = record.before
    passes = ", ".join(f"{f.name} ({f.nodes} {plural(f.nodes, 'node')})" for f in record.fixes)
    return (
        f"{passes}; before them {before.percent:.1f}% of nodes supported ({before.supported_nodes}/{before.total_nodes}), "
        f"{before.partitions} {plural(before.partitions, 'partition')}"
    )


def model_files(result: BuildResult) -> tuple[str, ...]:
    """Package paths of every shipped model's files (.onnx, .ort, operator config), model by model."""
    return tuple(f for m in result.shipped for f in m.files())


def sized_files(result: BuildResult) -> tuple[str, ...]:
    """The files whose sizes the report lists, in order: every model's, then the golden vectors'."""
    return (*model_files(result), *GOLDEN_FILES, *own_golden_files(result))


def own_golden_files(result: BuildResult) -> tuple[str, ...]:
    """The golden files of models that have their own, beside the shared ``golden/`` (quantized models):
    vectors and the tolerances they are checked with (mobilegen.quantize.golden)."""
    own = (f for m in result.shipped if m.golden_npz != GOLDEN_NPZ for f in (m.golden_npz, m.golden_mgv, f"{m.golden}/tolerances.json"))
    return tuple(dict.fromkeys(own))


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
# Text formats


def plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


def checks_text(statuses: Sequence[str]) -> str:
    """The verification rows counted by status (``VerifyRow.status``): ``4 checks passed``, ``3 checks
    passed, 1 unverified (--allow-degenerate)``, ``2 checks unverified (--allow-degenerate)``; failures,
    when there are any, first."""
    counts = [(sum(1 for s in statuses if s == status), word) for status, word in _CHECK_WORDS]
    shown = [(n, word) for n, word in counts if n] or [(0, "passed")]
    (first, word), rest = shown[0], shown[1:]
    return ", ".join([f"{first} {plural(first, 'check')} {word}", *(f"{n} {w}" for n, w in rest)])


_CHECK_WORDS = (("fail", "failed"), ("pass", "passed"), ("unverified", "unverified (--allow-degenerate)"))


def unverified_text(outputs: Sequence[str]) -> str:
    """``1 output unverified ('y', accepted with --allow-degenerate)``; "" when every output was verified."""
    if not outputs:
        return ""
    names = ", ".join(repr(o) for o in outputs)
    return f"{len(outputs)} {plural(len(outputs), 'output')} unverified ({names}, accepted with --allow-degenerate)"


def op_label(node: NodeVerdict) -> str:
    return f"{node.domain}:{node.op_type}" if node.domain not in ("", "ai.onnx") else str(node.op_type)


def num(x: float | None) -> str:
    if x is None:
        return "–"
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return f"{x:.3g}"


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def shape_text(shape: Sequence[Any]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]" if shape else "scalar"


def partition_text(part: int) -> str:
    return f"partition {part}" if part else CPU


def settings_text(settings: Mapping[str, object]) -> str:
    return ", ".join(f"{k}={json.dumps(jsonable(settings[k]))}" for k in sorted(settings))


def coverage_headline(c: CoverageReport) -> str:
    text = (
        f"{c.percent:.1f}% of nodes supported ({c.supported_nodes}/{c.total_nodes}), "
        f"{len(c.partitions)} {plural(len(c.partitions), 'partition')}, verdict: {c.verdict}"
    )
    return f"{text} (estimate). {c.estimate}" if c.estimate else text
