"""``mobilegen verify PACKAGE``: check a package folder or zip against its manifest."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mobilegen.cli import app, run_command
from mobilegen.cli.options import DebugOpt, JsonOpt

PackageArg = Annotated[
    Path,
    typer.Argument(metavar="PACKAGE", help="A package folder or the .zip written by mobilegen package / android / ios.", show_default=False),
]


if TYPE_CHECKING:
    from rich.console import Console

@app.command("verify")
def verify_cmd(package: PackageArg, json_out: JsonOpt = False, debug: DebugOpt = False) -> None:
    """Check a package: every file's sha256 and size, the manifest's schema, nothing added or missing;
    re-run the golden vectors on each packaged .ort with onnxruntime; check the pinned runtimes can load them.

    Exit 0 when all pass, 9 naming every problem otherwise (a package is untrusted input: special files,
    zip bombs and malformed manifests are problems too); 2 when PACKAGE does not exist or cannot be read."""

    def action() -> Any:
        from mobilegen.package import verify_package  # lazy: keeps --help instant

        return verify_package(package)

    run_command(action, json_out=json_out, debug=debug, human=_human, to_json=lambda r: r.to_dict())


def _text(value: str) -> str:
    """Text from a package (model, output and runtime names) as printable, markup-free console text."""
    from rich.markup import escape

    return escape(value if value.isprintable() else ascii(value)[1:-1])


# The golden table's result column, by GoldenCheck.status.
_RESULT = {"pass": "pass", "fail": "[red]FAIL[/red]", "unverified": "[yellow]unverified[/yellow]"}


def _human(result: Any, console: Console) -> None:
    from rich.markup import escape
    from rich.table import Table

    from mobilegen.report.facts import checks_text

    console.print(
        f"[bold green]ok[/bold green] {escape(result.package)} ({result.container}): "
        f"{_text(result.model_name)}, {result.files_checked} files match the manifest "
        f"(schema {result.schema_version})"
    )
    if result.unverified:
        names = ", ".join(repr(_text(o)) for o in result.unverified)
        console.print(
            f"[yellow]unverified:[/yellow] {names}: the build accepted a degenerate reference (--allow-degenerate); "
            "the golden vectors reproduce, but cannot tell a wrong model from the right one"
        )
    models = ", ".join(_text(m) for m in result.models) or "model/model.ort"
    own = "".join(f"; {_text(m)}: atol {a:g}, rtol {r:g} (its own golden vectors)" for m, a, r in result.model_tolerances)
    table = Table(title=f"golden vectors on {models} (atol {result.atol:g}, rtol {result.rtol:g}{own})", title_justify="left")
    several = len(result.models) > 1
    for col in ("model",) * several + ("case", "output", "max abs", "max rel", "result"):
        table.add_column(col)
    for g in result.golden:
        cells = (_text(g.case.rpartition("/")[2]), _text(g.output), f"{g.max_abs:.3g}", f"{g.max_rel:.3g}", _RESULT[g.status])
        table.add_row(*((_text(g.model),) if several else ()), *cells)
    console.print(table)
    console.print(f"golden vectors: {checks_text([g.status for g in result.golden])}")
    for r in result.runtimes:
        console.print(f"runtime {_text(r.channel)} onnxruntime {_text(r.version)}: loadable ({_text(r.note)})")
