"""The report's Runtimes section: every runtime the package ships a model for, side by side (``--runtime
ort,litert,coreai``): its platforms, model file and size, its parity with the PyTorch reference on this host
(from the verification table) and what it can accelerate.

Every fact comes from data: the backend registry (:mod:`mobilegen.backends`: names, host runtime, the
accelerate text), the manifest's ``options.runtimes`` records (the other runtimes' files, bytes, platforms),
the verification rows and the coverage analysis (ORT's execution providers). Nothing here knows a runtime by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mobilegen import backends
from mobilegen.artifacts import BuildResult, VerifyRow
from mobilegen.report.facts import human_bytes, num, plural


@dataclass(frozen=True)
class RuntimeRow:
    runtime: str  # "ONNX Runtime (ort)"
    platforms: str  # "android, ios"
    model: str  # package path: "model/model.tflite"
    size_bytes: str  # "12345" ("–" when not measured)
    size: str  # "12.1 KiB"
    max_abs: str  # worst max abs error over its verification rows ("–" when it has none)
    cosine: str  # lowest cosine over them
    result: str  # "pass" / "FAIL" / "not verified"
    checked_by: str  # the host runtime that ran it for the gate: "onnxruntime"
    accelerates: str  # "<provider> 29/29, 1 partition; <provider> 29/29, 1 partition"

    @property
    def cells(self) -> tuple[str, ...]:
        return (self.runtime, self.platforms, self.model, self.size_bytes, self.size, self.max_abs, self.cosine, self.result, self.checked_by, self.accelerates)


def records(result: BuildResult) -> tuple[Mapping[str, object], ...]:
    """The manifest's ``options.runtimes``: one record per runtime other than ORT (empty without --runtime)."""
    recs = result.options.get("runtimes")
    return tuple(r for r in recs if isinstance(r, dict) and isinstance(r.get("runtime"), str)) if isinstance(recs, list) else ()


def _parity(rows: Sequence[VerifyRow]) -> tuple[str, str, str]:
    if not rows:
        return "–", "–", "not verified"
    worst = max(r.max_abs for r in rows)
    cosine = min(r.cosine for r in rows)
    result = "FAIL" if any(r.status == "fail" for r in rows) else "pass"
    return num(worst), num(cosine), result


def _size(path: str, sizes: Mapping[str, int], recorded: object = None) -> tuple[str, str]:
    n = sizes.get(path, recorded if isinstance(recorded, int) and not isinstance(recorded, bool) else None)
    return ("–", "–") if n is None else (str(n), human_bytes(n))


def _coverage_text(result: BuildResult, targets: Sequence[str], fallback: str) -> str:
    reps = [c for c in result.coverage if not c.target or c.target in targets]
    parts = [f"{c.shown} {c.supported_nodes}/{c.total_nodes}, {len(c.partitions)} {plural(len(c.partitions), 'partition')}" for c in reps]
    return "; ".join(parts) or fallback


def _runs_ort(b: backends.Backend) -> bool:
    """Whether a target's project whose wrapper runs on ``b`` loads the .ort (ORT itself, or beside it)."""
    return b.name == backends.DEFAULT or b.beside_ort


def rows(result: BuildResult, sizes: Mapping[str, int]) -> tuple[RuntimeRow, ...]:
    """ORT's row(s) first (one per shipped model), then one per other runtime, in the manifest's order."""
    from mobilegen.verify.stage import artifact_label

    others = records(result)
    names = (backends.DEFAULT, *(str(r["runtime"]) for r in others))
    ort = backends.get(backends.DEFAULT)
    out = []
    shipped = result.shipped
    for m in shipped:
        # the targets whose project runs this .ort: ORT's own, or a runtime that keeps the ORT build beside it
        on = [t for t in m.targets if t in ort.platforms and _runs_ort(backends.for_platform(names, t))]
        label = artifact_label(m, ort.name, shipped)  # the gate labels the .ort rows by the runtime name
        max_abs, cosine, verdict = _parity([r for r in result.verification.rows if r.artifact == label])
        size_bytes, size = _size(m.ort_file, sizes)
        accel = _coverage_text(result, m.targets, ort.accelerates) if ort.accelerates_from_coverage else ort.accelerates
        out.append(RuntimeRow(f"{ort.display_name} ({ort.name})", ", ".join(on) or "none", m.ort_file, size_bytes, size, max_abs, cosine, verdict, ort.host_runtime, accel))
    for rec in others:
        b = backends.get(str(rec["runtime"]))
        plats = rec.get("platforms")
        file = str(rec.get("file", ""))
        max_abs, cosine, verdict = _parity([r for r in result.verification.rows if r.artifact == b.name])
        size_bytes, size = _size(file, sizes, rec.get("bytes"))
        accel = _coverage_text(result, [str(p) for p in plats] if isinstance(plats, list) else (), b.accelerates) if b.accelerates_from_coverage else b.accelerates
        out.append(
            RuntimeRow(
                f"{b.display_name} ({b.name})", ", ".join(str(p) for p in plats) if isinstance(plats, list) and plats else "none",
                file, size_bytes, size, max_abs, cosine, verdict, b.host_runtime, accel,
            )
        )
    return tuple(out)
