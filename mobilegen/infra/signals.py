"""Ctrl-C and SIGTERM for the console entry point: unwind the stack so staging is removed, exit 128 + signum.

Never inside an import: an exception raised while a native module initialises (torch, onnxruntime)
comes out as "ImportError: initialization failed", a half-imported module that fails later, or an abort.
There a signal is only recorded, and raised as soon as the import has finished (checked every 20 ms).
A second signal waits for the cleanup; a third exits at once (the next run removes what is left).
Installed only by ``python -m mobilegen`` / ``mobilegen.cli.main``, never on import.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType
from typing import NoReturn

# Signals received; the first decides the exit code. Mutated in place, never rebound.
received: list[int] = []


def install() -> None:
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)


def exit_code() -> int:
    return 128 + (received[0] if received else signal.SIGINT)


def quiet_exit(code: int | str | None) -> NoReturn:
    """Exit with ``code``; a signal arriving from now on (interpreter shutdown) changes nothing."""
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    forget_interrupt()
    sys.exit(code)


def forget_interrupt() -> None:
    """A KeyboardInterrupt that left an ``exec``/``eval`` of a string (dataclasses and namedtuple build
    their methods so) sets a flag that makes CPython kill itself with SIGINT at exit (status -2) even when
    the interrupt was handled. Every string ``exec`` clears that flag when it starts."""
    exec("pass")  # noqa: S102 — a constant; its only effect is clearing the flag


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if received:
        received.append(signum)
        if len(received) >= 3:
            os._exit(exit_code())
        return
    received.append(signum)
    _raise_when_safe(frame)


def _raise_when_safe(frame: FrameType | None) -> None:
    if _in_import(frame):
        signal.signal(signal.SIGALRM, lambda _s, f: _raise_when_safe(f))
        signal.setitimer(signal.ITIMER_REAL, 0.02)
        return
    signal.setitimer(signal.ITIMER_REAL, 0)
    if received[0] == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(exit_code())


def _in_import(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False
