"""What the CLI writes: the stderr console (rich, made on first use), ``error:``/``note:`` lines, the
``--json`` document on stdout. The CLI's other modules print through these; nothing else prints."""

from __future__ import annotations

import functools
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from mobilegen.errors import MobilegenError
    from mobilegen.infra.progress import Reporter

META_KEY = "mobilegen.config"  # ctx.meta: the config file that was applied (shared by the whole context chain)


# Off a terminal rich would fit tables into 80 columns and split cells across lines; logs and pipes
# get every value whole on its line instead.
_UNBOUNDED_WIDTH = 100_000


@functools.cache
def err_console() -> Console:
    """The console on stderr, made on first use (importing rich costs ~50 ms that --help does not need)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich would exit 1 (mobilegen's "internal bug"): the CLI ends a closed pipe itself (clickext)
            self.quiet = True
            raise BrokenPipeError

    width = None if _isatty(sys.stderr) else _UNBOUNDED_WIDTH
    return _Console(stderr=True, highlight=False, soft_wrap=True, width=width)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # replaced or closed stream
        return False


def progress_reporter(json_out: bool) -> Reporter | None:
    """Stage status lines on stderr: only on a terminal, and never with --json."""
    if json_out or not _isatty(sys.stderr):
        return None
    from mobilegen.infra.progress import Reporter

    return Reporter(sys.stderr)


def emit_json(payload: Any) -> None:

    if isinstance(payload, dict) and (config := used_file()) is not None:
        payload = {**payload, "config": config}  # which mobilegen.toml / --config file was applied
    sys.stdout.write(json.dumps(payload, indent=2, sort_keys=False, default=str) + "\n")
    sys.stdout.flush()


_said: list[bool] = []


def say_interrupted() -> None:
    if not _said:
        _said.append(True)
        err_console().print("[red]interrupted[/red]")


def report_error(err: MobilegenError, *, json_out: bool, debug: bool) -> None:
    if debug and err.__cause__ is not None:
        import traceback

        traceback.print_exception(err.__cause__, file=sys.stderr)
    if json_out:
        emit_json(err.to_dict())
    # One line on stderr always (CI logs read stderr even with --json).
    print_error(err.one_line())
    if all(line in err.message for line in err.details):
        return  # details that only repeat the summary stay out: one line is the rule
    for line in err.details:
        err_console().print(f"  {_escape(line)}")


def print_error(line: str) -> None:
    """The one ``error:`` line on stderr, for mobilegen's errors and Click's usage errors alike."""
    err_console().print(f"[bold red]error:[/bold red] {_escape(line)}")


def print_notice(line: str) -> None:
    """A ``note:`` line on stderr (also with ``--json``): something the user should know did happen."""
    err_console().print(f"[yellow]note:[/yellow] {_escape(line)}")


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def used_file() -> str | None:
    """The config file the running command applied, if any (for its ``--json`` output)."""
    from typer._click.globals import get_current_context  # type: ignore[import-not-found,unused-ignore]

    ctx = get_current_context(silent=True)
    found = ctx.meta.get(META_KEY) if ctx is not None else None
    return found if isinstance(found, str) else None
