"""One error root. Every failure a user can cause is a MobilegenError with a hint saying what to do.

Exit codes are part of the CLI contract (docs/exit-codes.md: its table is generated from the classes below):

    0 ok · 1 internal bug · 2 bad usage or input · 3 load · 4 export · 5 verification ·
    6 conversion · 7 coverage gate · 8 render / package · 9 package verification ·
    10 the reference model failed on the verification inputs
"""

from __future__ import annotations

import re

# A C++ source location and function signature that onnxruntime/onnx put in front of the real message
# ("/onnxruntime_src/.../model_load_utils.h:46 void onnxruntime::f(const std::string&, int) Opset 99 is ...").
_CXX_FRAME = re.compile(r"[\w./\\-]+\.(?:h|hpp|cc|cpp|cxx):\d+\s+[^()]*\((?:[^()]|\([^()]*\))*\)\s*(?:const\s+)?")


def first_line(err: BaseException | None, limit: int = 300) -> str:
    """The first non-empty line of an exception's text (colour codes and C++ source locations removed), or
    its type name; past ``limit`` characters it ends at a sentence or word boundary, with an ellipsis."""
    if err is None:
        return ""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(err))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    line = re.sub(r"\s{2,}", " ", _CXX_FRAME.sub(" ", lines[0])).strip() if lines else ""
    return shorten(line or (lines[0] if lines else type(err).__name__), limit)


def shorten(text: str, limit: int = 300) -> str:
    """``text`` if it fits in ``limit`` characters, else cut after its last full sentence (when that keeps
    at least half) or its last whole word, followed by an ellipsis — never mid-word."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    sentence = max(head.rfind(". "), head.rfind("; "), head.rfind("! "), head.rfind("? "))
    if sentence >= limit // 2:
        return head[: sentence + 1] + " …"
    space = head.rfind(" ")
    if space > 0:
        return head[:space].rstrip(" ,;:-(") + " …"
    return head + "…"


class MobilegenError(Exception):
    """Base of every expected failure. ``message`` says what is wrong, ``hint`` what to do next."""

    exit_code = 2
    kind = "error"

    def __init__(self, message: str, *, hint: str | None = None, details: list[str] | None = None, data: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        # Extra lines (every failing output, every refused node...) shown below the one-line summary.
        self.details = list(details or [])
        # The same facts as JSON for --json (e.g. the accuracy gate's table: {"accuracy": {...}}).
        self.data = dict(data or {})

    def one_line(self) -> str:
        return f"{self.message} — {self.hint}" if self.hint else self.message

    def to_dict(self) -> dict[str, object]:
        return {
            "error": self.kind,
            "message": self.message,
            "hint": self.hint,
            "details": self.details,
            "exit_code": self.exit_code,
            **self.data,
        }


class UsageError(MobilegenError):
    """Bad usage or input: flags, malformed specs, paths, an output that exists (without ``--force``) or
    cannot be written."""

    exit_code = 2
    kind = "usage"


class LoadError(MobilegenError):
    """The model cannot be loaded."""

    exit_code = 3
    kind = "load"


class ExportError(MobilegenError):
    """Export failed: the line names the innermost cause of torch's exception chain (docs/exporters.md)."""

    exit_code = 4
    kind = "export"


class VerificationError(MobilegenError):
    """Verification failed: the numbers differ; also a quantized model below ``--min-cosine``/``--min-top1``."""

    exit_code = 5
    kind = "verification"


class ReferenceFailedError(MobilegenError):
    """The reference (PyTorch, or the source ONNX model) raised on the verification inputs: the model's
    own error, not an export that computes something else."""

    exit_code = 10
    kind = "reference"


class ConversionError(MobilegenError):
    """ORT-format conversion failed."""

    exit_code = 6
    kind = "conversion"


class CoverageGateError(MobilegenError):
    """A coverage gate (``--fail-under``, ``--max-partitions``) was missed."""

    exit_code = 7
    kind = "coverage-gate"


class RenderError(MobilegenError):
    """Rendering a project (Android, iOS) failed."""

    exit_code = 8
    kind = "render"


class PackageError(MobilegenError):
    """Writing the package (manifest, reports, zip) failed."""

    exit_code = 8
    kind = "package"


class PackageVerifyError(MobilegenError):
    """``mobilegen verify`` found a problem in a package."""

    exit_code = 9
    kind = "package-verify"


class InternalError(MobilegenError):
    """A broken invariant inside mobilegen: a bug, never the user's fault (rerun with ``--debug`` and report
    the traceback)."""

    exit_code = 1
    kind = "internal"
