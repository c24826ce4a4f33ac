"""``mobilegen fix``: the graph passes that help the given execution providers, alone, with the coverage
before and after each provider; the fixed model verified and written as one ``.onnx``."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperOption

from mobilegen.cli import app, run_command
from mobilegen.cli.clickext import MobilegenCommand
from mobilegen.cli.options import (
    AllowDegenerateOpt,
    ApproximateOpt,
    AtolOpt,
    ConstOpt,
    DebugOpt,
    DynamicOpt,
    ForceOpt,
    InputOpt,
    JsonOpt,
    ModelArg,
    ModelClassOpt,
    ModelKwargsOpt,
    OpsetOpt,
    OutputNameOpt,
    RangeOpt,
    RtolOpt,
    SampleOnlyOpt,
    SampleOpt,
    TrustPickleOpt,
    model_options,
    unique,
    verify_options,
)
from mobilegen.cli.provider_flags import setting_params, settings_given, with_provider_flags

if TYPE_CHECKING:
    from rich.console import Console
    from typer._click import Context, HelpFormatter

    from mobilegen.commands.fix import FixResult


def _human(result: FixResult, console: Console) -> None:
    from rich.markup import escape

    from mobilegen.passes.stage import counts_text

    dims = ", ".join(f"{d}={n}" for d, n in result.fixed_dims.items())
    console.print(f"[bold green]wrote[/bold green] {escape(result.output)}" + (f" (dynamic dims fixed: {escape(dims)})" if dims else ""))
    passes = ", ".join(f"{f.name} ({f.nodes} node{'s' if f.nodes != 1 else ''})" for f in result.applied) or "none"
    console.print(f"graph passes applied: {escape(passes)}")
    for before, r in result.entries():
        colour = {"yes": "green", "maybe": "yellow"}.get(r.verdict, "red")
        after = f"{r.supported_nodes}/{r.total_nodes} nodes, {len(r.partitions)} partition{'s' if len(r.partitions) != 1 else ''}"
        console.print(
            f"[bold]{escape(r.label)}[/bold]: {escape(counts_text(before))} ({before.percent:.1f}%) → {escape(after)} "
            f"({r.percent:.1f}%), verdict [{colour}]{r.verdict}[/{colour}]"
        )
    applied = {f.name for f in result.applied}  # a pass undone alone may be kept together with others later
    for t in result.tried:
        if not t.kept and t.name not in applied:
            console.print(f"  [dim]not kept: {escape(t.name)} ({t.nodes} nodes): {escape(t.why)}[/dim]")
    rows = result.verification.get("rows")
    if isinstance(rows, list):
        worst = max((float(r["max_abs"]) for r in rows if isinstance(r, dict)), default=0.0)
        console.print(f"verification: {len(rows)} checks passed (max abs error {worst:.2e})")
    for note in result.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")


def _setting_params() -> list[inspect.Parameter]:
    return setting_params(variants_each=False)  # fix writes one model: a variant left out is its default


# After --keep-dynamic: the provider settings' flags (mobilegen.cli.provider_flags), as check has them.
class _FixCommand(MobilegenCommand):
    """Names the ``--ep`` choices in the help, read from the registry when the help is shown."""

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        from mobilegen import providers

        for param in self.params:
            if isinstance(param, TyperOption) and param.name == "ep":
                param.help = f"Execution provider to fix the model for: {', '.join(providers.names())}. Repeatable."
        super().format_help(ctx, formatter)


@app.command("fix", cls=_FixCommand)
@with_provider_flags(_setting_params, after="keep_dynamic")
def fix(
    model: ModelArg,
    ep: Annotated[
        list[str],
        typer.Option("--ep", metavar="EP", callback=unique, help="Execution provider to fix the model for (a name in the provider registry). Repeatable."),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE.onnx", help="Where to write the fixed .onnx.")],
    approximate: ApproximateOpt = None,
    keep_dynamic: Annotated[bool, typer.Option("--keep-dynamic", help="Keep dynamic dims (NNAPI then takes no node with a symbolic dim).")] = False,
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
    **settings: Any,
) -> None:
    """Rewrite MODEL for the given execution providers (each graph pass kept only if it helps), verify it,
    write OUT.onnx and show each provider's coverage before and after."""

    def action() -> FixResult:
        from mobilegen.commands.fix import FixOptions, fix_model

        opts = FixOptions(eps=tuple(ep), settings=settings_given(settings), approximate=tuple(approximate or ()), keep_dynamic=keep_dynamic)
        mopts = model_options(input, dynamic, opset, output_name, trust_pickle, model_class, model_kwargs, consts=const)
        vopts = verify_options(atol, rtol, sample, range_, sample_only, allow_degenerate)
        return fix_model(model, output, opts, mopts, vopts, force=force)

    run_command(action, json_out=json_out, debug=debug, human=_human, to_json=lambda r: r.to_dict())
