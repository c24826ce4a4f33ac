"""The Typer app. The only place a MobilegenError becomes an exit code, and the only code that prints.

Human output goes to stderr (rich), ``--json`` output to stdout. torch / onnxruntime are imported
lazily by the commands so ``mobilegen --help`` stays instant.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from mobilegen import __version__
from mobilegen.cli.clickext import LazyTyper
from mobilegen.infra import signals

# json, traceback, rich and mobilegen.errors are imported where they are used: `mobilegen --help` needs none.
app = LazyTyper(
    name="mobilegen",
    help="Turn a trained PyTorch model into verified Android and iOS projects on ONNX Runtime Mobile.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help: Typer's rich help formatter imports rich.markdown and markdown-it (~170 ms) for every
    # --help; the text is the same.
    rich_markup_mode=None,
    # Help fills a wide terminal up to 120 columns (Click stops at 80 however wide it is).
    context_settings={"max_content_width": 120},
)

# Modules that register commands on `app` (each owns one command family).
COMMAND_MODULES = ("core", "build", "package_cmds", "check", "fix", "bench")

if TYPE_CHECKING:
    from rich.console import Console

    from mobilegen.errors import MobilegenError
    from mobilegen.infra.progress import Reporter

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


@contextmanager
def _progress(json_out: bool) -> Iterator[None]:
    from mobilegen.infra import progress

    with progress.reporting(progress_reporter(json_out)):
        yield


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"mobilegen {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """mobilegen: model in, verified mobile projects out."""
    from mobilegen.cli.config import attach  # every command takes --config FILE / reads ./mobilegen.toml

    attach(ctx)


def emit_json(payload: Any) -> None:
    import json

    from mobilegen.cli.config import used_file

    if isinstance(payload, dict) and (config := used_file()) is not None:
        payload = {**payload, "config": config}  # which mobilegen.toml / --config file was applied
    sys.stdout.write(json.dumps(payload, indent=2, sort_keys=False, default=str) + "\n")
    sys.stdout.flush()


def run_command(
    action: Callable[[], Any],
    *,
    json_out: bool,
    debug: bool,
    human: Callable[[Any, Console], None],
    to_json: Callable[[Any], Any],
) -> None:
    """Run ``action``; render its result (JSON on stdout or human text on stderr); map errors to exit codes.

    A result may carry a gate failure: ``human``/``to_json`` are still rendered first, then the error
    (e.g. coverage gates print the table *and* exit 7).
    """
    from mobilegen.errors import InternalError, MobilegenError

    try:
        from mobilegen.infra.outputs import no_torch_cache_leftover

        with _progress(json_out), no_torch_cache_leftover():
            result = action()
        gate = getattr(result, "gate_error", None)
        if json_out:
            payload = to_json(result)
            if isinstance(gate, MobilegenError) and isinstance(payload, dict):
                payload = {**payload, "error": gate.kind, "message": gate.message, "hint": gate.hint, "details": gate.details, "exit_code": gate.exit_code}
            emit_json(payload)
        else:
            human(result, err_console())
    except KeyboardInterrupt:
        _interrupted(json_out)
    except (typer.Exit, typer.Abort):
        raise
    except BrokenPipeError:  # the reader of our output has gone (`| head`): no bug, ends quietly (clickext)
        raise
    except Exception as err:  # noqa: BLE001 — the one place a bug becomes exit code 1
        if signals.received:  # a library turned the interrupt into its own error (ImportError: initialization failed)
            _interrupted(json_out)
        if isinstance(err, MobilegenError):
            _report_error(err, json_out=json_out, debug=debug)
            raise typer.Exit(err.exit_code) from None
        wrapped = InternalError(
            f"internal error: {type(err).__name__}: {err}",
            hint="this is a bug in mobilegen; rerun with --debug and report the traceback",
        )
        if debug:
            import traceback

            traceback.print_exc(file=sys.stderr)
        _report_error(wrapped, json_out=json_out, debug=False)
        raise typer.Exit(1) from None
    if isinstance(gate, MobilegenError):
        _report_error(gate, json_out=False, debug=False)
        raise typer.Exit(gate.exit_code)


def _interrupted(json_out: bool) -> NoReturn:
    code = signals.exit_code()
    if json_out:
        emit_json({"error": "interrupted", "message": "interrupted", "hint": None, "details": [], "exit_code": code})
    _say_interrupted()
    raise typer.Exit(code) from None


_said: list[bool] = []


def _say_interrupted() -> None:
    if not _said:
        _said.append(True)
        err_console().print("[red]interrupted[/red]")


def _report_error(err: MobilegenError, *, json_out: bool, debug: bool) -> None:
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


def main() -> None:
    """Console entry point: exit codes kept, signals handled (usage errors are one line: ``clickext``)."""
    signals.install()
    try:
        rv = app(prog_name="mobilegen", standalone_mode=False)
    except (typer.Abort, KeyboardInterrupt):  # Ctrl-C outside a command's action
        _say_interrupted()
        signals.quiet_exit(signals.exit_code())
    except typer.Exit as exit_:
        signals.quiet_exit(exit_.exit_code)
    except SystemExit as exit_:  # SIGTERM
        signals.quiet_exit(exit_.code)
    if signals.received and rv == signals.exit_code():  # Typer makes a KeyboardInterrupt outside run_command exit 130
        _say_interrupted()
    signals.quiet_exit(rv if isinstance(rv, int) else 0)


for _mod in COMMAND_MODULES:
    importlib.import_module(f"mobilegen.cli.{_mod}")
