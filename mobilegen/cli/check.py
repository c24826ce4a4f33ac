"""``mobilegen check``: per-node coverage of each execution provider, with reasons, and CI gates.

The ``--ep`` choices and the provider flags' ranges, choices and defaults come from the provider registry
(``mobilegen.providers``), read when a command runs or its help is shown, so registered plug-ins appear.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperCommand, TyperOption

from mobilegen import providers
from mobilegen.cli import app, run_command
from mobilegen.cli.options import (
    DebugOpt,
    DynamicOpt,
    InputOpt,
    JsonOpt,
    ModelArg,
    ModelClassOpt,
    ModelKwargsOpt,
    OpsetOpt,
    TrustPickleOpt,
    model_options,
)
from mobilegen.errors import CoverageGateError, MobilegenError, UsageError
from mobilegen.providers import Setting, SettingValue

if TYPE_CHECKING:
    from typer._click import Context, HelpFormatter

    from mobilegen.coverage import CoverageReport, EPTarget


@dataclass
class CheckResult:
    reports: tuple[CoverageReport, ...]
    gate_error: MobilegenError | None = None

    def to_dict(self) -> dict[str, object]:
        return {"reports": [r.to_dict() for r in self.reports]}


def _targets(eps: list[str], given: Mapping[str, SettingValue | None]) -> list[EPTarget]:
    """One target per provider with the given settings it declares; a provider with a variant setting
    (CoreML's format) gets one target per variant unless its flag names one."""
    from mobilegen.coverage import EPTarget

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


def _validate(eps: list[str], given: Mapping[str, SettingValue | None], fail_under: float | None, max_partitions: int | None) -> None:
    known = providers.names()
    for ep in eps:
        if ep not in known:
            raise UsageError(f"unknown --ep '{ep}'", hint=f"use one of: {', '.join(known)}")
    providers.validate_settings(given)
    if fail_under is not None and not 0 <= fail_under <= 100:
        raise UsageError(f"--fail-under {fail_under:g} is outside 0..100", hint="give a percentage of supported nodes")
    if max_partitions is not None and max_partitions < 1:
        raise UsageError(f"--max-partitions {max_partitions} must be at least 1")


def _load_model(path: Path, workdir: Path, opts: Any) -> Any:
    """The model as the other commands see it: detected by content, exported when it is PyTorch; an ONNX
    model too large for one file (external data past 2 GB) is analysed as given instead of refused."""
    from mobilegen.load import load_model
    from mobilegen.onnx_source import onnx_for_analysis  # lazy: pulls in onnx

    export_opts = opts.export_options()  # flag errors before any heavy work
    return onnx_for_analysis(load_model(path, opts.load), export_opts, workdir / "model.onnx")


def _gate(reports: tuple[CoverageReport, ...], fail_under: float | None, max_partitions: int | None) -> MobilegenError | None:
    misses = []
    for r in reports:
        if fail_under is not None and r.percent < fail_under:
            misses.append(f"{r.label}: {r.percent:.1f}% of nodes supported, below --fail-under {fail_under:g}")
        if max_partitions is not None and len(r.partitions) > max_partitions:
            misses.append(f"{r.label}: {len(r.partitions)} partitions, above --max-partitions {max_partitions}")
    if not misses:
        return None
    return CoverageGateError(
        f"coverage gate failed for {len(misses)} check(s)",
        hint="see the suggestions above, or relax --fail-under / --max-partitions",
        details=misses,
    )


def _human(result: CheckResult, console: Console) -> None:
    for r in result.reports:
        sizes = ", ".join(str(len(p)) for p in r.partitions) or "none"
        colour = {"yes": "green", "maybe": "yellow"}.get(r.verdict, "red")
        console.print(
            f"[bold]{escape(r.label)}[/bold]: {r.supported_nodes}/{r.total_nodes} nodes ({r.percent:.0f}%), "
            f"{len(r.partitions)} partition(s) {escape(f'[{sizes}]')}, verdict [{colour}]{r.verdict}[/{colour}]"
        )
        summary = r.unsupported_summary()
        if summary:
            table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
            table.add_column("op")
            table.add_column("count", justify="right")
            table.add_column("reasons")
            for op, count, reasons in summary:
                shown = list(reasons[:3]) + ([f"… {len(reasons) - 3} more"] if len(reasons) > 3 else [])
                table.add_row(escape(op), str(count), escape("\n".join(shown)))
            console.print(table)
        for s in r.suggestions:
            console.print(f"  → {escape(s)}")
        notes = r.settings.get("notes")
        for note in notes if isinstance(notes, list) else ():
            console.print(f"  [dim]note: {escape(str(note))}[/dim]")


def _declared(name: str) -> Setting | None:
    """The first registered provider's setting called ``name`` (the flag's help and defaults)."""
    return next((s for p in providers.all_providers() if (s := p.setting(name)) is not None), None)


def _flag_help(setting: Setting) -> str:
    if setting.variant:
        return f"{setting.help}: {' or '.join(setting.choices)} (default: report each)."
    if setting.choices:
        return f"{setting.help}: {', '.join(setting.choices)} (default: {setting.default})."
    if setting.minimum is not None or setting.maximum is not None:
        return f"{setting.help} ({setting.range_text}; default {setting.default})."
    return f"{setting.help}."


class _CheckCommand(TyperCommand):
    """Fills the help of ``--ep`` and of the provider flags from the registry when the help is shown."""

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        for param in self.params:
            if not isinstance(param, TyperOption) or param.name is None:
                continue
            if param.name == "ep":
                param.help = f"Execution provider: {', '.join(providers.names())}. Repeatable."
            elif (setting := _declared(param.name)) is not None:
                param.help = _flag_help(setting)
        super().format_help(ctx, formatter)


# Flags named after the provider setting they set (on every chosen provider that declares it); their
# help, ranges and defaults come from the registry.
@app.command("check", cls=_CheckCommand)
def check(
    model: ModelArg,
    ep: Annotated[list[str], typer.Option("--ep", help="Execution provider (a name in the provider registry). Repeatable.")],
    coreml_format: Annotated[str | None, typer.Option("--coreml-format", help="CoreML model format.")] = None,
    android_api: Annotated[int | None, typer.Option("--android-api", help="Android API level the NNAPI rules assume.")] = None,
    require_static_shapes: Annotated[
        bool, typer.Option("--require-static-shapes", help="CoreML: refuse nodes with symbolic dims (RequireStaticInputShapes).")
    ] = False,
    fail_under: Annotated[
        float | None, typer.Option("--fail-under", help="Exit 7 if any report supports less than PCT % of nodes.", metavar="PCT")
    ] = None,
    max_partitions: Annotated[
        int | None, typer.Option("--max-partitions", help="Exit 7 if any report has more than N partitions.", metavar="N")
    ] = None,
    inputs: InputOpt = None,
    dynamic: DynamicOpt = None,
    opset: OpsetOpt = None,
    trust_pickle: TrustPickleOpt = False,
    model_class: ModelClassOpt = None,
    model_kwargs: ModelKwargsOpt = None,
    json_out: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Which nodes each execution provider will run, each refusal with its reason, and the partitions."""

    def action() -> CheckResult:
        eps = [e.strip().lower() for e in ep]
        given: dict[str, SettingValue | None] = {
            "coreml_format": coreml_format,
            "android_api": android_api,
            "require_static_shapes": require_static_shapes,
        }
        _validate(eps, given, fail_under, max_partitions)
        from mobilegen.coverage import analyze_all

        targets = _targets(eps, given)
        opts = model_options(inputs, dynamic, opset, None, trust_pickle, model_class, model_kwargs)
        with tempfile.TemporaryDirectory(prefix="mobilegen-check-") as tmp:
            proto = _load_model(model, Path(tmp), opts)
        reports = analyze_all(proto, targets)
        return CheckResult(reports, _gate(reports, fail_under, max_partitions))

    run_command(action, json_out=json_out, debug=debug, human=_human, to_json=lambda r: r.to_dict())
