"""``mobilegen check``: per-node coverage of NNAPI / CoreML / XNNPACK, with reasons, and CI gates."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

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

EPS = ("nnapi", "coreml", "xnnpack")
FORMATS = ("mlprogram", "neuralnetwork")
API_MIN, API_MAX = 27, 36  # = coverage.target.MIN_/MAX_ANDROID_API (not imported: it loads onnx)


@dataclass
class CheckResult:
    reports: tuple[Any, ...]  # CoverageReport
    gate_error: MobilegenError | None = None

    def to_dict(self) -> dict[str, object]:
        return {"reports": [r.to_dict() for r in self.reports]}


def _targets(eps: list[str], coreml_format: str | None, android_api: int, static: bool) -> list[Any]:
    from mobilegen.coverage import EPTarget

    out = []
    for ep in eps:
        if ep == "coreml":
            for fmt in (coreml_format,) if coreml_format else FORMATS:
                out.append(EPTarget("coreml", coreml_format=fmt, require_static_shapes=static))
        else:
            out.append(EPTarget(ep, android_api=android_api, require_static_shapes=static))
    return out


def _validate(eps: list[str], coreml_format: str | None, android_api: int, fail_under: float | None, max_partitions: int | None) -> None:
    for ep in eps:
        if ep not in EPS:
            raise UsageError(f"unknown --ep '{ep}'", hint=f"use one of: {', '.join(EPS)}")
    if coreml_format is not None and coreml_format not in FORMATS:
        raise UsageError(f"unknown --coreml-format '{coreml_format}'", hint=f"use one of: {', '.join(FORMATS)}")
    if not API_MIN <= android_api <= API_MAX:
        raise UsageError(f"--android-api {android_api} is outside {API_MIN}..{API_MAX}", hint="NNAPI needs API 27 or newer")
    if fail_under is not None and not 0 <= fail_under <= 100:
        raise UsageError(f"--fail-under {fail_under:g} is outside 0..100", hint="give a percentage of supported nodes")
    if max_partitions is not None and max_partitions < 1:
        raise UsageError(f"--max-partitions {max_partitions} must be at least 1")


def _load_model(path: Path, workdir: Path, opts: Any) -> Any:
    """The model as the other commands see it: detected by content, exported when it is PyTorch."""
    import onnx

    from mobilegen.pipeline import load_and_export  # lazy: pulls in torch

    _, exported = load_and_export(path, opts, workdir / "model.onnx")
    return onnx.load_model(str(exported.path))


def _gate(reports: tuple[Any, ...], fail_under: float | None, max_partitions: int | None) -> MobilegenError | None:
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
        for note in r.settings.get("notes", ()):
            console.print(f"  [dim]note: {escape(str(note))}[/dim]")


@app.command("check")
def check(
    model: ModelArg,
    ep: Annotated[list[str], typer.Option("--ep", help="Execution provider: nnapi, coreml or xnnpack. Repeatable.")],
    coreml_format: Annotated[
        str | None, typer.Option("--coreml-format", help="mlprogram or neuralnetwork (default: report both).")
    ] = None,
    android_api: Annotated[
        int, typer.Option("--android-api", help="Android API level the NNAPI rules assume (27..36; ORT's host default is 31).")
    ] = 31,
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
    """Which nodes NNAPI / CoreML / XNNPACK will run, each refusal with its reason, and the partitions."""

    def action() -> CheckResult:
        eps = [e.strip().lower() for e in ep]
        _validate(eps, coreml_format, android_api, fail_under, max_partitions)
        from mobilegen.coverage import analyze_all

        targets = _targets(eps, coreml_format, android_api, require_static_shapes)
        opts = model_options(inputs, dynamic, opset, None, trust_pickle, model_class, model_kwargs)
        with tempfile.TemporaryDirectory(prefix="mobilegen-check-") as tmp:
            proto = _load_model(model, Path(tmp), opts)
        reports = analyze_all(proto, targets)
        return CheckResult(reports, _gate(reports, fail_under, max_partitions))

    run_command(action, json_out=json_out, debug=debug, human=_human, to_json=lambda r: r.to_dict())
