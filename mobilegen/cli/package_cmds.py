"""``mobilegen verify PACKAGE``: check a package folder or zip against its manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from mobilegen.cli import app, run_command
from mobilegen.cli.options import DebugOpt, JsonOpt

PackageArg = Annotated[
    Path,
    typer.Argument(help="A package folder or the .zip written by mobilegen package / android / ios.", show_default=False),
]


@app.command("verify")
def verify_cmd(package: PackageArg, json_out: JsonOpt = False, debug: DebugOpt = False) -> None:
    """Check a package: every file's sha256 and size, the manifest's schema, nothing added or missing;
    re-run the golden vectors on model/model.ort with onnxruntime; check the pinned runtime can load it.

    Exit 0 when all pass, 9 naming every problem otherwise (2 when PACKAGE does not exist)."""

    def action() -> Any:
        from mobilegen.package import verify_package  # lazy: keeps --help instant

        return verify_package(package)

    run_command(action, json_out=json_out, debug=debug, human=_human, to_json=lambda r: r.to_dict())


def _human(result: Any, console: Console) -> None:
    console.print(
        f"[bold green]ok[/bold green] {escape(result.package)} ({result.container}): "
        f"{escape(result.model_name)}, {result.files_checked} files match the manifest "
        f"(schema {result.schema_version})"
    )
    table = Table(title=f"golden vectors on model/model.ort (atol {result.atol:g}, rtol {result.rtol:g})", title_justify="left")
    for col in ("output", "max abs", "max rel", "result"):
        table.add_column(col)
    for g in result.golden:
        table.add_row(escape(g.output), f"{g.max_abs:.3g}", f"{g.max_rel:.3g}", "pass" if g.passed else "FAIL")
    console.print(table)
    for r in result.runtimes:
        console.print(f"runtime {escape(r.channel)} onnxruntime {escape(r.version)}: loadable ({escape(r.note)})")
