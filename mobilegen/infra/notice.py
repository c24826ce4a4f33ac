"""What a build says besides its result: one :class:`Notice` (a leaf module, so the stage objects and the
providers that carry notices need not import the code that computes them, :mod:`mobilegen.notices`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["warning", "severe"]
Scope = Literal["build", "package"]


@dataclass(frozen=True)
class Notice:
    """One warning: a stable ``code``, how loud it is, its one-line ``text`` (raw; escape per format)."""

    code: str  # e.g. "cpu-fallback", "exporter-fallback"
    severity: Severity  # "severe" when the build is of little use as asked (e.g. the only accelerator asked for takes nothing)
    text: str
    scope: Scope = "build"
    subject: str = ""  # what it is about when a code repeats: an EP label, an input name
