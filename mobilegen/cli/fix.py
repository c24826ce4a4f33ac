"""``mobilegen fix``: the graph passes that help the given execution providers, alone, with the coverage
before and after each provider; the fixed model verified and written as one ``.onnx``."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mobilegen.cli import app, run_command
from mobilegen.cli.flags import LOAD, RUN, SHAPE, VERIFY, Flags, command, param
from mobilegen.cli.options import unique
from mobilegen.cli.provider_flags import setting_params, settings_given

if TYPE_CHECKING:
    from rich.console import Console

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


# The help of --ep and --keep-dynamic is completed from the registry when shown (mobilegen.cli.provider_help).
_Ep = param(
    "ep",
    Annotated[
        list[str],
        typer.Option("--ep", metavar="EP", callback=unique, help="Execution provider to fix the model for (a name in the provider registry). Repeatable."),
    ],
)
_Output = param("output", Annotated[Path, typer.Option("--output", "-o", metavar="FILE.onnx", help="Where to write the fixed .onnx.")])
_KeepDynamic = param(
    "keep_dynamic",
    Annotated[bool, typer.Option("--keep-dynamic", help="Keep dynamic dims (the providers that fix them by default then take no node with a symbolic dim).")],
    False,
)


# After --keep-dynamic: the provider settings' flags (mobilegen.cli.provider_flags), as check has them.
@app.command("fix")
@command("model", _Ep, _Output, "approximate", _KeepDynamic, _setting_params, *SHAPE, "output_name", *LOAD, *VERIFY, *RUN)
def fix(f: Flags) -> None:
    """Rewrite MODEL for the given execution providers (each graph pass kept only if it helps), verify it,
    write OUT.onnx and show each provider's coverage before and after."""

    def action() -> FixResult:
        from mobilegen.commands.fix import FixOptions, fix_model

        opts = FixOptions(eps=tuple(f["ep"]), settings=settings_given(f), approximate=tuple(f["approximate"] or ()), keep_dynamic=f["keep_dynamic"])
        return fix_model(f["model"], f["output"], opts, f.model_options(), f.verify_options(), force=f["force"])

    run_command(action, json_out=f["json_out"], debug=f["debug"], human=_human, to_json=lambda r: r.to_dict())
