"""Core commands: inspect, export, convert."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mobilegen.cli import app, run_command
from mobilegen.cli.options import (
    AllowDegenerateOpt,
    AtolOpt,
    CalibrationMethodOpt,
    CalibrationOpt,
    ConstOpt,
    DebugOpt,
    DynamicOpt,
    EvalOpt,
    ForceOpt,
    InputOpt,
    JsonOpt,
    MinCosineOpt,
    MinTop1Opt,
    ModelArg,
    ModelClassOpt,
    ModelKwargsOpt,
    OpsetOpt,
    OutputNameOpt,
    QuantizeOpt,
    RangeOpt,
    RtolOpt,
    SampleOnlyOpt,
    SampleOpt,
    TrustPickleOpt,
    model_options,
    quantize_options,
    verify_options,
)


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
def inspect(
    model: ModelArg,
    input: InputOpt = None,
    dynamic: DynamicOpt = None,
    const: ConstOpt = None,
    opset: OpsetOpt = None,
    trust_pickle: TrustPickleOpt = False,
    model_class: ModelClassOpt = None,
    model_kwargs: ModelKwargsOpt = None,
    json_out: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Show a model's inputs/outputs, opset, op histogram and parameter count (.pt, .pt2, .onnx, .ort)."""

    def action() -> Inspection:
        from mobilegen.commands.inspection import inspect_model

        return inspect_model(model, model_options(input, dynamic, opset, None, trust_pickle, model_class, model_kwargs, consts=const))

    run_command(action, json_out=json_out, debug=debug, human=_human_inspect, to_json=lambda r: r.to_dict())


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


@app.command()
def export(
    model: ModelArg,
    output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE.onnx", help="Where to write the .onnx.")],
    input: InputOpt = None,
    dynamic: DynamicOpt = None,
    const: ConstOpt = None,
    opset: OpsetOpt = None,
    output_name: OutputNameOpt = None,
    trust_pickle: TrustPickleOpt = False,
    model_class: ModelClassOpt = None,
    model_kwargs: ModelKwargsOpt = None,
    atol: AtolOpt = 1e-4,
    rtol: RtolOpt = 1e-3,
    sample: SampleOpt = None,
    sample_only: SampleOnlyOpt = False,
    range_: RangeOpt = None,
    allow_degenerate: AllowDegenerateOpt = False,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Export MODEL to one self-contained .onnx file, verified against PyTorch."""

    def action() -> ExportResult:
        from mobilegen.commands.export_convert import export_model

        opts = model_options(input, dynamic, opset, output_name, trust_pickle, model_class, model_kwargs, consts=const)
        vopts = verify_options(atol, rtol, sample, range_, sample_only, allow_degenerate)
        return export_model(model, output, opts, vopts, force=force)

    run_command(action, json_out=json_out, debug=debug, human=_human_export, to_json=lambda r: r.__dict__)


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


@app.command()
def convert(
    model: ModelArg,
    output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE.ort", help="Where to write the .ort (NAME.required_operators.config goes beside it).")],
    input: InputOpt = None,
    dynamic: DynamicOpt = None,
    const: ConstOpt = None,
    opset: OpsetOpt = None,
    output_name: OutputNameOpt = None,
    style: Annotated[str, typer.Option("--optimization-style", metavar="STYLE", help="runtime (default: what NNAPI/CoreML can take) or fixed (CPU/XNNPACK only: bakes in com.microsoft fused ops).")] = "runtime",
    trust_pickle: TrustPickleOpt = False,
    model_class: ModelClassOpt = None,
    model_kwargs: ModelKwargsOpt = None,
    atol: AtolOpt = 1e-4,
    rtol: RtolOpt = 1e-3,
    sample: SampleOpt = None,
    sample_only: SampleOnlyOpt = False,
    range_: RangeOpt = None,
    allow_degenerate: AllowDegenerateOpt = False,
    quantize: QuantizeOpt = None,
    calibration: CalibrationOpt = None,
    calibration_method: CalibrationMethodOpt = "minmax",
    eval_: EvalOpt = None,
    min_cosine: MinCosineOpt = 0.99,
    min_top1: MinTop1Opt = 0.98,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Convert MODEL (.onnx or any PyTorch artifact) to ORT format (.ort), verified against the reference."""

    def action() -> ConvertResult:
        from mobilegen.commands.export_convert import convert_model

        opts = model_options(input, dynamic, opset, output_name, trust_pickle, model_class, model_kwargs, consts=const)
        vopts = verify_options(atol, rtol, sample, range_, sample_only, allow_degenerate)
        qopts = quantize_options(quantize, calibration, calibration_method, eval_, min_cosine, min_top1)
        return convert_model(model, output, opts, vopts, style=style, force=force, quantize=qopts)

    run_command(action, json_out=json_out, debug=debug, human=_human_convert, to_json=lambda r: r.__dict__)
