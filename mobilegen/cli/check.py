"""``mobilegen check``: per-node coverage of each execution provider, with reasons, and CI gates.

The ``--ep`` choices and the provider flags (their names, ranges, choices and defaults) come from the
provider registry (``mobilegen.providers``), read when the command runs or its help is shown, so
registered plug-ins appear (:mod:`mobilegen.cli.provider_flags`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mobilegen.cli import app, run_command
from mobilegen.cli.flags import LOAD, SHAPE, Flags, command, param
from mobilegen.cli.options import unique
from mobilegen.cli.provider_flags import setting_params, settings_given

if TYPE_CHECKING:
    from rich.console import Console

    from mobilegen.commands.check import CheckResult


def _human(result: CheckResult, console: Console) -> None:
    from rich.markup import escape
    from rich.table import Table

    for r in result.reports:
        sizes = ", ".join(str(len(p)) for p in r.partitions) or "none"
        colour = {"yes": "green", "maybe": "yellow"}.get(r.verdict, "red")
        release = r.settings.get("ort_version")  # the release whose rules applied (--ort-version, or the pinned one)
        console.print(
            f"[bold]{escape(r.label)}[/bold]: {r.supported_nodes}/{r.total_nodes} nodes ({r.percent:.0f}%), "
            f"{len(r.partitions)} partition(s) {escape(f'[{sizes}]')}, verdict [{colour}]{r.verdict}[/{colour}]"
            + (" (estimate)" if r.estimate else "")
            + (f" [dim](rules of onnxruntime {escape(str(release))})[/dim]" if release else "")
        )
        if r.estimate:  # every verdict of this provider is an estimate; say what only the device decides
            console.print(f"  [dim]{escape(r.estimate)}[/dim]")
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
    if any(r.supported_nodes < r.total_nodes for r in result.reports):
        console.print(
            "[dim]note: this is the model as given; android/ios/package rewrite the graph for each provider first "
            "(graph passes): `mobilegen fix MODEL --ep EP -o fixed.onnx` shows the coverage they ship[/dim]"
        )


# The help of --ep names the registry's providers when shown (mobilegen.cli.provider_help).
_Ep = param("ep", Annotated[list[str], typer.Option("--ep", metavar="EP", callback=unique, help="Execution provider (a name in the provider registry). Repeatable.")])
_FailUnder = param(
    "fail_under", Annotated[float | None, typer.Option("--fail-under", help="Exit 7 if any report supports less than PCT % of nodes.", metavar="PCT")], None
)
_MaxPartitions = param(
    "max_partitions", Annotated[int | None, typer.Option("--max-partitions", help="Exit 7 if any report has more than N partitions.", metavar="N")], None
)


# After --ep: one flag per provider setting that declares one (--android-api, --ort-version, a plug-in's...),
# with its help, range and default from the registry; it sets that setting on every chosen provider that
# declares it.
@app.command("check")
@command("model", _Ep, setting_params, _FailUnder, _MaxPartitions, *SHAPE, *LOAD, "json_out", "debug")
def check(f: Flags) -> None:
    """Which nodes each execution provider will run, each refusal with its reason, and the partitions."""

    def action() -> CheckResult:
        from mobilegen.commands.check import CheckOptions, check

        opts = CheckOptions(eps=tuple(f["ep"]), settings=settings_given(f), fail_under=f["fail_under"], max_partitions=f["max_partitions"])
        return check(f["model"], opts, f.model_options())

    run_command(action, json_out=f["json_out"], debug=f["debug"], human=_human, to_json=lambda r: r.to_dict())
