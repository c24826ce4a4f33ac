"""Core commands: inspect, export, convert."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mobilegen.cli import app, run_command
from mobilegen.cli.flags import LOAD, QUANTIZE, RUN, SHAPE, VERIFY, Flags, command, param


def _human_inspect(r: Inspection, console: Console) -> None:
    from rich.markup import escape as esc
    from rich.table import Table

    console.print(f"[bold]{esc(r.path)}[/bold]  ({r.kind})  sha256 {r.sha256[:16]}…")
    t = Table("", "name", "dtype", "shape", box=None, pad_edge=False)
    for role, items in (("input", r.inputs), ("output", r.outputs)):
        for i in items:
            t.add_row(role, esc(i["name"]), i["dtype"], esc("x".join(str(d) for d in i["shape"])) or "scalar")
    console.print(t)
    if r.opset:
        console.print("opset: " + ", ".join(f"{k} {v}" for k, v in r.opset.items()))
    for line in r.parameter_lines():
        console.print(esc(line))
    if r.ort_format_version is not None:
        console.print(f"ORT format version: {r.ort_format_version}")
    if r.op_histogram:
        console.print(esc("ops: " + ", ".join(f"{k}×{v}" for k, v in r.op_histogram.items())))
    for n in r.notes:
        console.print(f"[dim]{esc(n)}[/dim]")


if TYPE_CHECKING:
    from rich.console import Console

    from mobilegen.commands.export_convert import ConvertResult, ExportResult
    from mobilegen.commands.inspection import Inspection


@app.command()
@command("model", *SHAPE, *LOAD, "json_out", "debug")
def inspect(f: Flags) -> None:
    """Show a model's inputs/outputs, opset, op histogram and parameter count (.pt, .pt2, .onnx, .ort)."""

    def action() -> Inspection:
        from mobilegen.commands.inspection import inspect_model

        return inspect_model(f["model"], f.model_options())

    run_command(action, json_out=f["json_out"], debug=f["debug"], human=_human_inspect, to_json=lambda r: r.to_dict())


def _human_export(r: ExportResult, console: Console) -> None:
    from rich.markup import escape as esc

    console.print(f"[green]wrote[/green] {esc(r.output)} (opset {r.opset}, {r.exporter} exporter)")
    if r.fallback_reason:
        console.print(f"[yellow]fell back to the TorchScript exporter:[/yellow] {esc(r.fallback_reason)}")
    elif r.exporter == "torchscript":  # a TorchScript file: its exporter by design, not a fallback
        console.print("[dim]exported with the TorchScript exporter (a TorchScript file)[/dim]")
    if r.verification:
        _print_verification(r.verification, console)
    for n in r.notes:
        console.print(f"[yellow]note:[/yellow] {esc(n)}")


def _print_verification(v: dict[str, Any], console: Console) -> None:
    from rich.markup import escape as esc
    from rich.table import Table

    from mobilegen.report.facts import checks_text

    t = Table(title=f"verification (atol {v['atol']:g}, rtol {v['rtol']:g})")
    for col in ("artifact", "case", "output", "max abs", "max rel", "cosine", "top-1", ""):
        t.add_column(col, overflow="fold")
    for r in v["rows"]:
        t.add_row(
            r["artifact"], esc(r["case"]), esc(r["output"]), f"{r['max_abs']:.2e}", f"{r['max_rel']:.2e}", f"{r['cosine']:.6f}",
            "" if r["top1"] is None else f"{r['top1']:.2f}", _STATUS_CELL[r["status"]],
        )
    console.print(t)
    console.print(f"verification: {checks_text([r['status'] for r in v['rows']])}")


# The last column of the verification table, by VerifyRow.status.
_STATUS_CELL = {"pass": "[green]ok[/green]", "unverified": "[yellow]unverified[/yellow]", "fail": "[red]FAIL[/red]"}


_ExportOut = param("output", Annotated[Path, typer.Option("--output", "-o", metavar="FILE.onnx", help="Where to write the .onnx.")])


@app.command()
@command("model", _ExportOut, *SHAPE, "output_name", *LOAD, *VERIFY, *RUN)
def export(f: Flags) -> None:
    """Export MODEL to one self-contained .onnx file, verified against PyTorch."""

    def action() -> ExportResult:
        from mobilegen.commands.export_convert import export_model

        return export_model(f["model"], f["output"], f.model_options(), f.verify_options(), force=f["force"])

    run_command(action, json_out=f["json_out"], debug=f["debug"], human=_human_export, to_json=lambda r: r.__dict__)


def _human_convert(r: ConvertResult, console: Console) -> None:
    from rich.markup import escape as esc

    console.print(
        f"[green]wrote[/green] {esc(r.output)} (ORT format v{r.ort_format_version}, optimization style {r.optimization_style}, "
        f"level {r.optimization_level}, onnxruntime {r.converter_version}) and {esc(r.required_operators)}"
    )
    _print_verification(r.verification, console)
    if r.quantization is not None:
        from mobilegen.report.quantization import convert_line

        console.print(f"quantization: {esc(convert_line(r.quantization))}")
    for n in r.notes:
        console.print(f"[yellow]note:[/yellow] {esc(n)}")


_ConvertOut = param(
    "output",
    Annotated[Path, typer.Option("--output", "-o", metavar="FILE.ort", help="Where to write the .ort (NAME.required_operators.config goes beside it).")],
)
# Its help says which providers take each style (mobilegen.cli.provider_help, when shown).
_ConvertStyle = param(
    "style",
    Annotated[str, typer.Option("--optimization-style", metavar="STYLE", help="runtime (default: what every provider can take) or fixed (bakes in com.microsoft fused ops).")],
    "runtime",
)


@app.command()
@command("model", _ConvertOut, *SHAPE, "output_name", _ConvertStyle, *LOAD, *VERIFY, *QUANTIZE, *RUN)
def convert(f: Flags) -> None:
    """Convert MODEL (.onnx or any PyTorch artifact) to ORT format (.ort), verified against the reference."""

    def action() -> ConvertResult:
        from mobilegen.commands.export_convert import convert_model

        return convert_model(
            f["model"], f["output"], f.model_options(), f.verify_options(), style=f["style"], force=f["force"], quantize=f.quantize_options()
        )

    run_command(action, json_out=f["json_out"], debug=f["debug"], human=_human_convert, to_json=lambda r: r.__dict__)
