"""Benchmark results against the package's static prediction, and the report section that shows both.

The prediction is the package's ``report/coverage.json`` (``mobilegen check``'s contract): per provider,
every node with its verdict and the partitions ORT would form. The observation is a configuration's
placement from ORT's profiling file. Nodes are matched by name; nodes ORT made or fused at load time
(e.g. ``Conv`` + ``Relu`` into one NCHWc node) have names of their own and are counted apart.
"""

from __future__ import annotations

import html
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mobilegen.bench.profile import CPU_PROVIDER
from mobilegen.bench.schema import BenchResult, Configuration
from mobilegen.render.markdown import md_escape

MAX_LISTED = 20  # node names listed per difference; the count is always whole


@dataclass(frozen=True)
class Prediction:
    label: str  # <provider>, <provider>/<format>, <provider> (<target>) when the provider was analysed for two targets
    ep: str
    format: str | None
    partitions: int
    on_provider: frozenset[str]  # node names inside a predicted partition
    nodes: tuple[str, ...]  # every node, topological order
    target: str | None = None  # the target whose model was analysed (coverage.json's ``target``); None: any


def predictions(coverage: Mapping[str, Any]) -> tuple[Prediction, ...]:
    """The per-provider predictions of a ``report/coverage.json`` document (malformed entries skipped)."""
    reports = [r for r in coverage.get("reports", []) if isinstance(r, dict) and isinstance(r.get("ep"), str)] if isinstance(coverage.get("reports"), list) else []
    out = []
    for r in reports:
        parts = [p for p in r.get("partitions", []) if isinstance(p, list)]
        nodes = tuple(str(n.get("name")) for n in r.get("nodes", []) if isinstance(n, dict))
        fmt = r.get("format") if isinstance(r.get("format"), str) else None
        target = r.get("target") if isinstance(r.get("target"), str) and r.get("target") else None
        label = f"{r['ep']}/{fmt}" if fmt else r["ep"]
        if target and sum(1 for o in reports if o.get("ep") == r["ep"] and o.get("format") == r.get("format")) > 1:
            label = f"{label} ({target})"  # as the report names it
        on = frozenset(str(n) for p in parts for n in p)
        out.append(Prediction(label, r["ep"], fmt, len(parts), on, nodes, target))
    return tuple(out)


@dataclass(frozen=True)
class Comparison:
    device: str
    config: str
    prediction: str | None  # the coverage label compared with; None when the package has none
    available: bool
    note: str  # why there is no comparison, else ""
    predicted_partitions: int | None = None
    observed_partitions: int | None = None
    predicted_on_ep_ran_cpu: tuple[str, ...] = ()
    predicted_cpu_ran_on_ep: tuple[str, ...] = ()
    predicted_cpu_not_seen: tuple[str, ...] = ()  # inside a compiled partition, or removed by ORT
    ort_made: int = 0  # observed nodes with names the model does not have (ORT's fusions)

    @property
    def agrees(self) -> bool:
        return self.available and not self.predicted_on_ep_ran_cpu and not self.predicted_cpu_ran_on_ep and self.predicted_partitions == self.observed_partitions


def _prediction_for(config: Configuration, preds: Sequence[Prediction]) -> Prediction | None:
    for p in preds:
        if p.ep == config.ep and (config.format is None or p.format == config.format):
            return p
    return None


def _of_targets(preds: Sequence[Prediction], targets: Collection[str], device_os: str) -> list[Prediction]:
    """The predictions made on the measured model: of its ``targets`` (a package with one model per
    target analysed each target's own), the device's platform first (its runtime release's rules);
    every prediction when ``targets`` is empty or a report names no target (older packages)."""
    kept = [p for p in preds if not targets or p.target is None or p.target in targets]
    return sorted(kept, key=lambda p: not (p.target and device_os.lower().startswith(p.target.lower())))


def compare(result: BenchResult, preds: Sequence[Prediction], targets: Collection[str] = ()) -> tuple[Comparison, ...]:
    """One comparison per accelerated configuration of ``result`` that ran, against the predictions of
    ``targets`` (the targets shipping the measured model; empty: any)."""
    mine = _of_targets(preds, targets, result.device.os)
    out = []
    for c in result.configurations:
        if not c.accelerated or c.status != "ok":
            continue
        if c.shipped_default and sum(1 for p in c.providers if p != CPU_PROVIDER) > 1:
            continue  # a chain of providers: the alternatives with one provider each are compared instead
        out.append(_compare_one(result.device.label, c, _prediction_for(c, mine)))
    return tuple(out)


def _compare_one(device: str, c: Configuration, pred: Prediction | None) -> Comparison:
    if pred is None:
        return Comparison(device, c.name, None, False, f"the package has no static prediction for {c.ep}")
    if not c.placement.available:
        return Comparison(device, c.name, pred.label, False, c.placement.reason or "placement not recorded")
    cpu = {n.node for n in c.placement.nodes if n.provider == CPU_PROVIDER}
    ep = {n.node for n in c.placement.nodes if n.provider != CPU_PROVIDER}
    known = set(pred.nodes)
    predicted_cpu = [n for n in pred.nodes if n not in pred.on_provider]
    return Comparison(
        device,
        c.name,
        pred.label,
        True,
        "",
        predicted_partitions=pred.partitions,
        observed_partitions=c.placement.partitions,
        predicted_on_ep_ran_cpu=tuple(n for n in pred.nodes if n in pred.on_provider and n in cpu),
        predicted_cpu_ran_on_ep=tuple(n for n in predicted_cpu if n in ep),
        predicted_cpu_not_seen=tuple(n for n in predicted_cpu if n not in cpu and n not in ep),
        ort_made=sum(1 for n in c.placement.nodes if n.node not in known),
    )


# ---------------------------------------------------------------------------------------------------
# Rendering: the "Measured on devices" section of report.md / report.html

MD_BEGIN = "<!-- mobilegen:measured:begin -->"
MD_END = "<!-- mobilegen:measured:end -->"
HTML_BEGIN = MD_BEGIN
HTML_END = MD_END

LATENCY_HEAD = ("device", "configuration", "status", "session create", "first run", "warm p50", "warm p90", "warm min", "warm mean", "runs", "model", "result")


def _ms(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f} ms"


def latency_rows(results: Sequence[BenchResult], files: Sequence[str] = ()) -> list[tuple[str, ...]]:
    """One row per configuration; the last two cells tell apart two results of one device (the schema has
    no timestamp): the model file timed and ``files[i]``, the result's file in the package ("–" without)."""
    rows: list[tuple[str, ...]] = []
    for i, r in enumerate(results):
        stored = files[i] if i < len(files) else "–"
        for c in r.configurations:
            w = c.warm
            status = c.status if c.status == "ok" else f"{c.status}: {c.reason or ''}".strip()
            rows.append(
                (
                    f"{r.device.label}, ORT {r.ort_version}",
                    _config_label(c),
                    status,
                    _ms(c.session_create_ms),
                    _ms(c.first_run_ms),
                    _ms(w.p50 if w else None),
                    _ms(w.p90 if w else None),
                    _ms(w.min if w else None),
                    _ms(w.mean if w else None),
                    str(w.n) if w else "–",
                    c.options.get("model_file") or r.model_file,
                    stored,
                )
            )
    return rows


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED]) + (f", … ({len(names) - MAX_LISTED} more)" if len(names) > MAX_LISTED else "")
    return f"{len(names)}" + (f" ({shown})" if names else "")


def placement_rows(comparisons: Sequence[Comparison]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for c in comparisons:
        if not c.available:
            rows.append((c.device, c.config, c.prediction or "–", "–", "–", "–", f"not compared: {c.note}"))
            continue
        verdict = "as predicted" if c.agrees else "differs"
        extra = []
        if c.predicted_cpu_not_seen:
            extra.append(f"{len(c.predicted_cpu_not_seen)} predicted-CPU nodes not seen on the CPU (inside a compiled partition, or removed by ORT)")
        if c.ort_made:
            extra.append(f"{c.ort_made} nodes ORT made at load time (fusions)")
        rows.append(
            (
                c.device,
                c.config,
                c.prediction or "–",
                f"{c.predicted_partitions} → {c.observed_partitions}",
                _names(c.predicted_on_ep_ran_cpu),
                _names(c.predicted_cpu_ran_on_ep),
                "; ".join([verdict, *extra]),
            )
        )
    return rows


PLACEMENT_HEAD = (
    "device",
    "configuration",
    "prediction",
    "partitions predicted → observed",
    "predicted on the provider, ran on the CPU",
    "predicted on the CPU, ran on the provider",
    "result",
)

_INTRO = (
    "Benchmark results merged with `mobilegen report --results` (host: `mobilegen bench`; devices: the "
    "benchmark in the generated projects). Times are wall-clock per call on the golden inputs; placement is "
    "ONNX Runtime's profiling record of where each node ran, compared with this report's static coverage."
)


PREPROCESSING_HEAD = ("device", "source", "model input", "timed", "status", "first call", "warm p50", "warm p90", "warm min", "warm mean", "runs", "result")


def preprocessing_rows(results: Sequence[BenchResult], files: Sequence[str] = ()) -> list[tuple[str, ...]]:
    """One row per preprocessing row of each result (schema version 2): the app's input preparation timed alone."""
    rows: list[tuple[str, ...]] = []
    for i, r in enumerate(results):
        stored = files[i] if i < len(files) else "–"
        for p in r.preprocessing:
            w = p.warm
            status = p.status if p.status == "ok" else f"{p.status}: {p.reason or ''}".strip()
            rows.append(
                (
                    r.device.label,
                    f"{p.source[0]}x{p.source[1]}",
                    "–" if p.output is None else f"{p.output[0]}x{p.output[1]}",
                    p.entry_point,
                    status,
                    _ms(p.first_run_ms),
                    _ms(w.p50 if w else None),
                    _ms(w.p90 if w else None),
                    _ms(w.min if w else None),
                    _ms(w.mean if w else None),
                    str(w.n) if w else "–",
                    stored,
                )
            )
    return rows


def _md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(md_escape(h) for h in head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    return lines


def measured_markdown(results: Sequence[BenchResult], comparisons: Sequence[Comparison], files: Sequence[str] = ()) -> str:
    """``files``: each result's file, as the report folder names it (``results/<device>-<hash>.json``)."""
    lines = [MD_BEGIN, "## Measured on devices", "", _INTRO, "", "### Latency", ""]
    lines += _md_table(LATENCY_HEAD, latency_rows(results, files))
    if pre := preprocessing_rows(results, files):
        lines += ["", "### Preprocessing (input preparation alone, per source size)", ""]
        lines += _md_table(PREPROCESSING_HEAD, pre)
    lines += ["", "### Placement: predicted vs observed", ""]
    rows = placement_rows(comparisons)
    lines += _md_table(PLACEMENT_HEAD, rows) if rows else ["No accelerated configuration ran."]
    lines += ["", MD_END, ""]
    return "\n".join(lines)


def _html_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    th = "".join(f"<th>{html.escape(h, quote=True)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c, quote=True)}</td>" for c in row) + "</tr>\n" for row in rows)
    return f"<table>\n<thead><tr>{th}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>\n"


def measured_html(results: Sequence[BenchResult], comparisons: Sequence[Comparison], files: Sequence[str] = ()) -> str:
    rows = placement_rows(comparisons)
    placement = _html_table(PLACEMENT_HEAD, rows) if rows else "<p>No accelerated configuration ran.</p>\n"
    pre = preprocessing_rows(results, files)
    preprocessing = f"<h3>Preprocessing (input preparation alone, per source size)</h3>\n{_html_table(PREPROCESSING_HEAD, pre)}" if pre else ""
    return (
        f"{HTML_BEGIN}\n<section id=\"measured\">\n<h2>Measured on devices</h2>\n<p>{html.escape(_INTRO, quote=True)}</p>\n"
        f"<h3>Latency</h3>\n{_html_table(LATENCY_HEAD, latency_rows(results, files))}{preprocessing}"
        f"<h3>Placement: predicted vs observed</h3>\n{placement}</section>\n{HTML_END}\n"
    )


def splice(text: str, section: str, begin: str, end: str, *, before: str | None = None) -> str:
    """``text`` with its measured section replaced by ``section`` (added before ``before``, or at the end)."""
    start = text.find(begin)
    if start >= 0:
        stop = text.find(end, start)
        if stop >= 0:
            tail = text[stop + len(end) :]
            return text[:start] + section.rstrip("\n") + (tail if tail.startswith("\n") else "\n" + tail)
    if before is not None and (at := text.rfind(before)) >= 0:
        return text[:at] + section + text[at:]
    return text.rstrip("\n") + "\n\n" + section


def _config_label(c: Configuration) -> str:
    """A configuration as the report names it, with what the host left out of a shipped default."""
    if not c.shipped_default:
        return c.name
    left_out = c.options.get("skipped_providers")
    return f"{c.name} (what the {c.shipped_default} app ships{f', without {left_out}' if left_out else ''})"
