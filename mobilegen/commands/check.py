"""``check``: per-node coverage of execution providers for one model, and the CI gates on it.

The model is loaded as every other command loads it (by content; PyTorch is exported), then analysed
once per chosen provider (and per variant, e.g. a provider's two model formats, unless one is named).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen import providers
from mobilegen.coverage import EPTarget, analyze_all
from mobilegen.errors import CoverageGateError, MobilegenError, UsageError
from mobilegen.export.stage import onnx_for_analysis  # lazy: pulls in onnx
from mobilegen.infra import progress
from mobilegen.infra.outputs import temp_dir
from mobilegen.load.loader import load_model
from mobilegen.providers import SettingValue

if TYPE_CHECKING:
    from mobilegen.coverage import CoverageReport, EPTarget
    from mobilegen.options import ModelOptions


@dataclass(frozen=True)
class CheckOptions:
    """Which providers to analyse (registry names), their settings (None: not given), and the gates."""

    eps: tuple[str, ...]
    settings: Mapping[str, SettingValue | None] = field(default_factory=dict)
    fail_under: float | None = None  # percent of nodes a report must support
    max_partitions: int | None = None


@dataclass(frozen=True)
class CheckResult:
    reports: tuple[CoverageReport, ...]
    gate_error: MobilegenError | None = None  # a failed gate: the reports are still shown, then exit 7

    def to_dict(self) -> dict[str, object]:
        return {"reports": [r.to_dict() for r in self.reports]}


def check(model: Path, opts: CheckOptions, model_opts: ModelOptions) -> CheckResult:
    eps = tuple(e.strip().lower() for e in opts.eps)
    validate(eps, opts)
    targets = ep_targets(eps, opts.settings)
    export_opts = model_opts.export_options()  # flag errors before any heavy work

    progress.step("loading")
    with temp_dir("check") as tmp:
        # as the other commands see it; an ONNX model too large for one file is analysed as given
        proto = onnx_for_analysis(load_model(model, model_opts.load), export_opts, tmp / "model.onnx")
    progress.step("analysing")
    reports = analyze_all(proto, targets)
    return CheckResult(reports, gate(reports, opts.fail_under, opts.max_partitions))


def validate(eps: tuple[str, ...], opts: CheckOptions) -> None:
    known = providers.names()
    if not eps:
        raise UsageError("no execution provider to check", hint=f"pass --ep with one of: {', '.join(known)}")
    for ep in eps:
        if ep not in known:
            raise UsageError(f"unknown --ep '{ep}'", hint=f"use one of: {', '.join(known)}")
    _refuse_unused_settings(eps, opts.settings)
    providers.validate_settings(opts.settings)
    if opts.fail_under is not None and not 0 <= opts.fail_under <= 100:
        raise UsageError(f"--fail-under {opts.fail_under:g} is outside 0..100", hint="give a percentage of supported nodes")
    if opts.max_partitions is not None and opts.max_partitions < 1:
        raise UsageError(f"--max-partitions {opts.max_partitions} must be at least 1")


def _refuse_unused_settings(eps: tuple[str, ...], given: Mapping[str, SettingValue | None]) -> None:
    """A setting's flag given when no chosen provider declares it would be silently ignored: refuse it."""
    for key, value in given.items():
        if value is None or value is False or any(providers.get(ep).setting(key) is not None for ep in eps):
            continue  # not given (a bool flag left off), or some chosen provider takes it
        owners = [(p.name, s) for p in providers.all_providers() if (s := p.setting(key)) is not None]
        if owners:
            flag = owners[0][1].flag or key
            needs = " or ".join(f"--ep {name}" for name, _ in owners)
            raise UsageError(f"{flag} needs {needs}", hint=f"add --ep {owners[0][0]}, or drop {flag}")


def ep_targets(eps: tuple[str, ...], given: Mapping[str, SettingValue | None]) -> list[EPTarget]:
    """One target per provider with the given settings it declares; a provider with a variant setting
    (a model format) gets one target per variant unless its flag names one."""
    out: list[EPTarget] = []
    for name in eps:
        provider = providers.get(name)
        values = {s.name: given[s.name] for s in provider.settings if given.get(s.name) is not None}
        variant = provider.variant
        if variant is None or variant.name in values:
            out.append(EPTarget(name, **values))
        else:
            out.extend(EPTarget(name, **values, **{variant.name: choice}) for choice in variant.choices)
    return out


def gate(reports: tuple[CoverageReport, ...], fail_under: float | None, max_partitions: int | None) -> MobilegenError | None:
    misses = []
    for r in reports:
        if fail_under is not None and r.percent < fail_under:
            misses.append(f"{r.label}: {r.percent:.1f}% of nodes supported, below --fail-under {fail_under:g}")
        if max_partitions is not None and len(r.partitions) > max_partitions:
            misses.append(f"{r.label}: {len(r.partitions)} partitions, above --max-partitions {max_partitions}")
    if not misses:
        return None
    return CoverageGateError(f"coverage gate failed for {len(misses)} check(s)", hint=gate_hint(reports), details=misses)


def gate_hint(reports: tuple[CoverageReport, ...]) -> str:
    """What to do about a missed gate, in words that read the same on a terminal and in the JSON document
    (which has no "above"): the reports' own suggestions when there are any."""
    relax = "relax --fail-under / --max-partitions"
    if any(r.supported_nodes < r.total_nodes for r in reports):
        eps = " ".join(f"--ep {ep}" for ep in dict.fromkeys(r.ep for r in reports))
        relax = f"check what the builds ship (they rewrite the graph per provider first): mobilegen fix MODEL {eps} -o fixed.onnx, then check fixed.onnx; or {relax}"
    labels = [r.label for r in reports if r.suggestions]
    if labels:
        return f"each report's suggestions ({', '.join(labels)}) say what would merge partitions or raise the verdict; or {relax}"
    return f"no suggestion would improve a report: the refused nodes' reasons say what to change in the model; or {relax}"
