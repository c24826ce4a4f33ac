"""Stage progress for long runs: one status line per stage, on a terminal only.

Library code announces stages with ``step("exporting")`` and ``count("verifying", k, n)``; both do
nothing unless a reporter is installed for the current context (``reporting(...)``). The CLI installs one
only when stderr is a terminal and ``--json`` is off, so pipes, CI logs and JSON output never carry
status lines, and library callers (``mobilegen.build``) stay silent.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TextIO

__all__ = ["Reporter", "count", "reporting", "step"]


@dataclass
class Reporter:
    """Writes one line per stage to ``stream`` (a terminal): a count rewrites its stage's line in place;
    each line starts with the seconds since the run began."""

    stream: TextIO
    _stage: str | None = field(default=None, init=False)
    _open: bool = field(default=False, init=False)  # the current line has no newline yet
    _started: float = field(default_factory=time.monotonic, init=False)

    def step(self, stage: str, detail: str = "") -> None:
        self._show(stage, f"{stage} {detail}".rstrip())

    def count(self, stage: str, done: int, total: int) -> None:
        self._show(stage, f"{stage} {done}/{total}")

    def close(self) -> None:
        """End the open line (before the result is printed)."""
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False

    def _show(self, stage: str, text: str) -> None:
        if self._open:
            self.stream.write("\r\x1b[2K" if stage == self._stage else "\n")
        self._stage, self._open = stage, True
        self.stream.write(f"{time.monotonic() - self._started:5.1f}s  {text}")
        self.stream.flush()


_current: ContextVar[Reporter | None] = ContextVar("mobilegen_progress", default=None)


def step(stage: str, detail: str = "") -> None:
    """Announce that ``stage`` (a verb in -ing: "exporting", "converting") starts now."""
    reporter = _current.get()
    if reporter is not None:
        reporter.step(stage, detail)


def count(stage: str, done: int, total: int) -> None:
    """``stage`` has done ``done`` of ``total`` items (``count("verifying", 1, 4)``)."""
    reporter = _current.get()
    if reporter is not None:
        reporter.count(stage, done, total)


@contextmanager
def reporting(reporter: Reporter | None) -> Iterator[Reporter | None]:
    """Install ``reporter`` for the code run inside (None: stay silent); its last line is ended on exit."""
    token = _current.set(reporter)
    try:
        yield reporter
    finally:
        _current.reset(token)
        if reporter is not None:
            reporter.close()
