"""The Typer app. The only place a MobilegenError becomes an exit code, and the only code that prints.

Human output goes to stderr (rich), ``--json`` output to stdout. torch / onnxruntime are imported
lazily by the commands so ``mobilegen --help`` stays instant.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from mobilegen.cli.clickext import LazyTyper
from mobilegen.cli.console import emit_json, err_console, progress_reporter, report_error, say_interrupted
from mobilegen.infra import signals
from mobilegen.version import __version__

# traceback, rich and mobilegen.errors are imported where they are used: `mobilegen --help` needs none.
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
COMMAND_MODULES = ("core", "build", "package_cmds", "check", "fix", "bench", "js_build")

if TYPE_CHECKING:
    from rich.console import Console


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
            report_error(err, json_out=json_out, debug=debug)
            raise typer.Exit(err.exit_code) from None
        wrapped = InternalError(
            f"internal error: {type(err).__name__}: {err}",
            hint="this is a bug in mobilegen; rerun with --debug and report the traceback",
        )
        if debug:
            import traceback

            traceback.print_exc(file=sys.stderr)
        report_error(wrapped, json_out=json_out, debug=False)
        raise typer.Exit(1) from None
    if isinstance(gate, MobilegenError):
        report_error(gate, json_out=False, debug=False)
        raise typer.Exit(gate.exit_code)


def _interrupted(json_out: bool) -> NoReturn:
    code = signals.exit_code()
    if json_out:
        emit_json({"error": "interrupted", "message": "interrupted", "hint": None, "details": [], "exit_code": code})
    say_interrupted()
    raise typer.Exit(code) from None


def main() -> None:
    """Console entry point: exit codes kept, signals handled (usage errors are one line: ``clickext``)."""
    signals.install()
    try:
        rv = app(prog_name="mobilegen", standalone_mode=False)
    except (typer.Abort, KeyboardInterrupt):  # Ctrl-C outside a command's action
        say_interrupted()
        signals.quiet_exit(signals.exit_code())
    except typer.Exit as exit_:
        signals.quiet_exit(exit_.exit_code)
    except SystemExit as exit_:  # SIGTERM
        signals.quiet_exit(exit_.code)
    if signals.received and rv == signals.exit_code():  # Typer makes a KeyboardInterrupt outside run_command exit 130
        say_interrupted()
    signals.quiet_exit(rv if isinstance(rv, int) else 0)


for _mod in COMMAND_MODULES:
    importlib.import_module(f"mobilegen.cli.{_mod}")
