"""The Typer app. The only place a MobilegenError becomes an exit code, and the only code that prints.

Human output goes to stderr (rich), ``--json`` output to stdout. torch / onnxruntime are imported
lazily by the commands so ``mobilegen --help`` stays instant.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable
from types import FrameType
from typing import Any, NoReturn

import typer
from rich.console import Console

from mobilegen import __version__
from mobilegen.errors import InternalError, MobilegenError

app = typer.Typer(
    name="mobilegen",
    help="Turn a trained PyTorch model into verified Android and iOS projects on ONNX Runtime Mobile.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Modules that register commands on `app` (each owns one command family).
COMMAND_MODULES = ("core", "build", "package_cmds", "check")

err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"mobilegen {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """mobilegen: model in, verified mobile projects out."""


def emit_json(payload: Any) -> None:
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
    try:
        result = action()
        gate = getattr(result, "gate_error", None)
        if json_out:
            payload = to_json(result)
            if isinstance(gate, MobilegenError) and isinstance(payload, dict):
                payload = {**payload, "error": gate.kind, "message": gate.message, "hint": gate.hint, "details": gate.details, "exit_code": gate.exit_code}
            emit_json(payload)
        else:
            human(result, err_console)
    except KeyboardInterrupt:
        _interrupted(json_out)
    except (typer.Exit, typer.Abort):
        raise
    except Exception as err:  # noqa: BLE001 — the one place a bug becomes exit code 1
        if _signalled:  # a library turned the interrupt into its own error (ImportError: initialization failed)
            _interrupted(json_out)
        if isinstance(err, MobilegenError):
            _report_error(err, json_out=json_out, debug=debug)
            raise typer.Exit(err.exit_code) from None
        wrapped = InternalError(
            f"internal error: {type(err).__name__}: {err}",
            hint="this is a bug in mobilegen; rerun with --debug and report the traceback",
        )
        if debug:
            traceback.print_exc(file=sys.stderr)
        _report_error(wrapped, json_out=json_out, debug=False)
        raise typer.Exit(1) from None
    if isinstance(gate, MobilegenError):
        _report_error(gate, json_out=False, debug=False)
        raise typer.Exit(gate.exit_code)


def _interrupted(json_out: bool) -> NoReturn:
    code = 128 + (_signalled[0] if _signalled else signal.SIGINT)
    if json_out:
        emit_json({"error": "interrupted", "message": "interrupted", "hint": None, "details": [], "exit_code": code})
    err_console.print("[red]interrupted[/red]")
    raise typer.Exit(code) from None


def _report_error(err: MobilegenError, *, json_out: bool, debug: bool) -> None:
    if debug and err.__cause__ is not None:
        traceback.print_exception(err.__cause__, file=sys.stderr)
    if json_out:
        emit_json(err.to_dict())
    # One line on stderr always (CI logs read stderr even with --json).
    err_console.print(f"[bold red]error:[/bold red] {_escape(err.one_line())}")
    if all(line in err.message for line in err.details):
        return  # details that only repeat the summary stay out: one line is the rule
    for line in err.details:
        err_console.print(f"  {_escape(line)}")


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


# Signals received (the first decides the exit code: 128 + signum). Set by main()'s handlers only.
_signalled: list[int] = []


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C and SIGTERM unwind the stack (KeyboardInterrupt / SystemExit), so staging is removed.

    Never inside an import: an exception raised while a native module initialises (torch, onnxruntime)
    comes out as "ImportError: initialization failed", a half-imported module, or an abort. There the
    signal is only recorded, and raised as soon as the import has finished. A second signal waits for the
    cleanup; a third exits at once (the next run removes what is left)."""
    if _signalled:
        _signalled.append(signum)
        if len(_signalled) >= 3:
            os._exit(128 + _signalled[0])
        return
    _signalled.append(signum)
    _raise_when_safe(frame)


def _raise_when_safe(frame: FrameType | None) -> None:
    if _in_import(frame):
        signal.signal(signal.SIGALRM, lambda _s, f: _raise_when_safe(f))
        signal.setitimer(signal.ITIMER_REAL, 0.02)
        return
    signal.setitimer(signal.ITIMER_REAL, 0)
    if _signalled[0] == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + _signalled[0])


def _in_import(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def install_signal_handlers() -> None:
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)


def main() -> None:
    """Console entry point: one line for usage errors (unknown flag, missing argument), exit codes kept."""
    install_signal_handlers()
    try:  # recent Typer vendors its own copy of click
        from typer._click import exceptions as click_exc  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover — Typer releases that use click itself
        from click import exceptions as click_exc  # type: ignore[no-redef]
    no_args_help = getattr(click_exc, "NoArgsIsHelpError", ())

    try:
        rv = app(prog_name="mobilegen", standalone_mode=False)
    except no_args_help as err:  # `mobilegen` alone: the help text, as Typer shows it
        err.show()
        _exit(2)
    except click_exc.UsageError as err:
        where = f"mobilegen {err.ctx.info_name} --help" if err.ctx is not None and err.ctx.parent is not None else "mobilegen --help"
        where = where.replace("mobilegen mobilegen", "mobilegen")
        err_console.print(f"[bold red]error:[/bold red] {_escape(err.format_message())} — see '{where}'")
        _exit(2)
    except (typer.Abort, KeyboardInterrupt):  # Ctrl-C outside a command's action (argument parsing)
        err_console.print("[red]interrupted[/red]")
        _exit(128 + (_signalled[0] if _signalled else signal.SIGINT))
    except typer.Exit as exit_:
        _exit(exit_.exit_code)
    _exit(rv if isinstance(rv, int) else 0)


def _exit(code: int) -> NoReturn:
    # The work is done (or cleaned up): a signal during interpreter shutdown must not turn the result
    # into a Python traceback or a death by signal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(code)


for _mod in COMMAND_MODULES:
    importlib.import_module(f"mobilegen.cli.{_mod}")
