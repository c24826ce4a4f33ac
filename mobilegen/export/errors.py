"""Why an ONNX export failed, on one line: the innermost real error of the exception chain (not torch's
"Next steps:" boilerplate), where in the model's code it happened, and, for a known exporter limitation,
what to try. The known limitations are data (``KNOWN_CAUSES``: pattern → hint), each one tested.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen.errors import ExportError, MobilegenError, UsageError, first_line, shorten
from mobilegen.export.limits import MAX_DEFAULT_OPSET, TORCHSCRIPT_MAX_OPSET
from mobilegen.load.traced_inputs import input_flags

if TYPE_CHECKING:
    from mobilegen.artifacts import LoadedModel, OnnxModel, VerificationReport

CAUSE_LIMIT = 500  # long enough for a symbolic shape and its strides, short enough for one line


@dataclass(frozen=True)
class KnownCause:
    """An exporter limitation recognised by ``pattern`` (searched in every message of the chain); a named
    group ``op`` fills ``{op}`` in ``hint``. ``after_fallback``: what a TorchScript fallback that worked
    means for it (said in the fallback reason)."""

    key: str
    pattern: str
    hint: str
    after_fallback: str = ""
    gate_hint: str = ""  # what to do when the fallback's export then fails the verification gate


KNOWN_CAUSES: tuple[KnownCause, ...] = (
    KnownCause(
        "data-dependent-control-flow",
        r"Could not guard on data-dependent expression|Could not extract specialized integer from data-dependent"
        r"|GuardOnDataDependentSymNode",
        "the model branches on tensor values (data-dependent control flow), which torch.export cannot trace: compute both "
        "branches and pick with torch.where (or use torch.cond), or trace it to TorchScript yourself (torch.jit.trace, "
        "which keeps only the branch its example takes) and pass that .pt",
        after_fallback="the TorchScript export keeps only the branch the example inputs took",
        gate_hint="no tolerance fixes a branch the ONNX model does not have: compute both branches and pick with torch.where "
        "(or use torch.cond) so that torch.export can export the model, then re-run mobilegen",
    ),
    KnownCause(
        "dynamic-dim-fixed-by-model",
        r"inferred a static shape of \d+ for dimension|specialized it to be a constant|Constraints violated",
        "the model only works with one size of a dim marked dynamic: give that dim a number in --input and drop "
        "its --dynamic (static shapes)",
    ),
    KnownCause(
        "view-with-dynamic-shape",
        r"Cannot view a tensor with shape|view size is not compatible with input tensor's size and stride",
        "a .view() cannot be proven valid for every size of a dynamic dim: use .reshape() (or .contiguous().view()) "
        "in the model, or export with static shapes (numbers in --input, no --dynamic)",
    ),
    KnownCause(
        "op-without-onnx-function",
        r"No ONNX function found for <OpOverload\(op='(?P<op>[\w.]+)'",
        "{op} has no ONNX translation: replace it in the model with supported ops, try another --opset, or export "
        "to .onnx yourself and pass that file",
    ),
    KnownCause(
        "op-without-onnx-symbolic",
        r"Exporting the operator '(?P<op>[\w:.]+)' to ONNX opset version \d+ is not supported",
        "{op} has no ONNX symbolic in the TorchScript exporter: replace it in the model, try another --opset, or "
        "export to .onnx yourself and pass that file",
    ),
)

# Wrapper texts that say an export failed without saying why: torch.onnx's per-step errors, its node
# translation wrapper. The cause is deeper in the chain (or in their "## Exception summary").
_BOILERPLATE = re.compile(
    r"^(?:Failed to (?:export the model with torch\.export|convert the exported program|decompose the FX graph|"
    r"serialize the ONNX model|export the model to ONNX)"
    r"|Error when translating node .* See the stack trace for more information\.?$"
    r"|The error above occurred when calling torch\.export)"
)
# Phrases inside a real message that only add noise to one line.
_NOISE = (
    re.compile(r"\s*\(unhinted: (?:[^()]|\([^()]*\))*\)"),
    re.compile(r"\s*\(Size-like symbols: [^)]*\)"),
    re.compile(r"\s*Please feel free to request support or submit a pull request on PyTorch GitHub.*$"),
    re.compile(r"\s*See the stack trace for more information\.?$"),
)
_SUMMARY_ENTRY = re.compile(r"^<class '[\w.]+'>: (.*)$")
_USER_CALL = re.compile(r'The following call raised this error:\s*\n\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)\n\s*(?P<code>[^\n]+)')


@dataclass(frozen=True)
class Diagnosis:
    cause: str  # the innermost real error, one line
    where: str  # the model's source line that raised it ("net.py:12 in forward: `if x.sum() > 0:`"), or ""
    known: KnownCause | None
    hint: str  # the known cause's hint ({op} filled), or ""

    def line(self) -> str:
        return self.cause + (f" (at {self.where})" if self.where else "")


def diagnose(err: BaseException) -> Diagnosis:
    chain = list(_chain(err))
    texts = [_plain(_text_of(e)) for e in chain]
    cause = _innermost_cause(chain, texts) or first_line(err, CAUSE_LIMIT)
    known, hint = _known(texts)
    return Diagnosis(cause=cause, where=_where(chain, texts), known=known, hint=hint)


def _chain(err: BaseException) -> Iterator[BaseException]:
    """``err`` and its causes, outermost first (``__cause__``, else ``__context__`` unless suppressed)."""
    seen: list[BaseException] = []
    cur: BaseException | None = err
    while cur is not None and not any(cur is s for s in seen):
        seen.append(cur)
        yield cur
        cur = cur.__cause__ if cur.__cause__ is not None else (None if cur.__suppress_context__ else cur.__context__)


def _text_of(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # noqa: BLE001 — a broken __str__ in a library's exception must not hide the others
        return ""


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _innermost_cause(chain: list[BaseException], texts: list[str]) -> str:
    """The message of the innermost exception that is not a wrapper; a wrapper's own summary of what it
    wraps counts too (torch.onnx writes it when it did not chain the original). A message-less exception
    counts only when nothing else says more."""
    bare = ""
    for exc, text in zip(reversed(chain), reversed(texts), strict=True):
        for candidate in (text, *_summary_entries(text)):
            line = _one_line(candidate)
            if line and not _BOILERPLATE.match(line):
                # A KeyError's text is only the key, an assertion's only the condition: name the type.
                return f"{type(exc).__name__}: {line}" if isinstance(exc, (KeyError, IndexError, AssertionError)) else line
        if not text.strip():
            bare = bare or type(exc).__name__
    return bare


def _summary_entries(text: str) -> list[str]:
    """The "<class 'X'>: message" entries under torch.onnx's "## Exception summary", innermost first."""
    _, found, rest = text.partition("## Exception summary")
    if not found:
        return []
    entries = []
    for ln in rest.splitlines():
        m = _SUMMARY_ENTRY.match(ln.strip())
        if m:
            entries.append(m.group(1))
    return entries


def _one_line(text: str) -> str:
    """The first meaningful line; a line that ends in ':' takes the next one along (torch lists the
    actual problem below "... the following conflicts:")."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return ""
    line = lines[0]
    for nxt in lines[1:3]:
        if not line.endswith(":"):
            break
        line = f"{line} {nxt.removeprefix('- ')}"
    # first_line drops colour codes and C++ source locations (its limit is not the one that applies here).
    line = re.sub(r"\s{2,}", " ", first_line(RuntimeError(line), 10 * CAUSE_LIMIT))
    for noise in _NOISE:
        line = noise.sub("", line)
    return shorten(line.strip(), CAUSE_LIMIT)


def _known(texts: list[str]) -> tuple[KnownCause | None, str]:
    joined = "\n".join(texts)
    for known in KNOWN_CAUSES:
        m = re.search(known.pattern, joined)
        if m:
            op = m.groupdict().get("op") or "the operator"
            return known, known.hint.format(op=op)
    return None, ""


def _where(chain: list[BaseException], texts: list[str]) -> str:
    """The model's own source line: what torch.export reports as "The following call raised this error",
    else the deepest frame of the model's code that torch was running when the chain began."""
    for text in texts:
        m = _USER_CALL.search(text)
        if m:
            return f"{Path(m['file']).name}:{m['line']} in {m['func']}: `{m['code'].strip()}`"
    for exc in reversed(chain):
        frame = _deepest_model_frame(exc)
        if frame:
            return frame
    return ""


def _deepest_model_frame(exc: BaseException) -> str:
    """Frames below torch's first one that are neither torch, mobilegen nor the standard library: the
    model's forward (the caller's frames, above torch, are never the model's)."""
    import linecache

    torch_dir, library = _library_dirs()
    found = ""
    inside_torch = False
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        path = os.path.abspath(filename) if not filename.startswith("<") else ""
        if path.startswith(torch_dir):
            inside_torch = True
        elif inside_torch and path and not path.startswith(library):
            src = linecache.getline(filename, tb.tb_lineno).strip()
            found = f"{Path(filename).name}:{tb.tb_lineno} in {tb.tb_frame.f_code.co_name}" + (f": `{src}`" if src else "")
        tb = tb.tb_next
    return found


@functools.cache
def _library_dirs() -> tuple[str, tuple[str, ...]]:
    """torch's folder, and every folder whose code is not the model's (torch, the exporters' libraries,
    mobilegen, the standard library)."""
    import torch

    torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    package_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # mobilegen/, not export/
    dirs = {torch_dir, sysconfig.get_paths()["stdlib"] + os.sep, package_dir}
    for name in ("onnxscript", "onnx", "onnx_ir"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            dirs.add(os.path.dirname(os.path.abspath(spec.origin)) + os.sep)
    return torch_dir, tuple(sorted(dirs))


def _opset_note(kind: str) -> str:
    if kind == "exported_program":
        return f"try another --opset (up to {MAX_DEFAULT_OPSET})"
    if kind == "torchscript":
        return f"try another --opset (the TorchScript exporter takes up to {TORCHSCRIPT_MAX_OPSET})"
    return f"try another --opset (torch.export takes up to {MAX_DEFAULT_OPSET}, the TorchScript exporter up to {TORCHSCRIPT_MAX_OPSET})"


def _hint(kind: str, *diagnoses: Diagnosis) -> str:
    hints = list(dict.fromkeys(d.hint for d in diagnoses if d.hint))
    return "; ".join(hints) if hints else f"{_opset_note(kind)}; or export to .onnx yourself and pass that file"


@dataclass(frozen=True)
class Fallback:
    """Why a module went to the TorchScript exporter: ``reason`` is torch.export's cause on one line (and,
    for a known cause, what the fallback means for the model); ``cause`` the ``KnownCause.key``, or ""."""

    reason: str
    cause: str = ""


def fallback_of(primary: BaseException) -> Fallback:
    d = diagnose(primary)
    after = d.known.after_fallback if d.known else ""
    return Fallback(d.line() + (f"; {after}" if after else ""), d.known.key if d.known else "")


def fallback_reason(primary: BaseException) -> str:
    """Why the TorchScript exporter was used (and, for a known cause, what that means for the model)."""
    return fallback_of(primary).reason


def explain_gate_failure(err: MobilegenError, onnx_model: OnnxModel, report: VerificationReport) -> None:
    """A gate whose outputs differ after a real fallback (a module torch.export failed on; never a
    TorchScript file, whose exporter is not a fallback) says so in ``err``: the fallback is the likely
    reason, and loosening tolerances is not the fix. Changes ``err`` in place."""
    if report.passed or onnx_model.exporter != "torchscript" or not onnx_model.fallback_reason:
        return
    known = next((k for k in KNOWN_CAUSES if k.key == onnx_model.fallback_cause), None)
    traced = "" if known and known.after_fallback else "; the TorchScript exporter records what the example inputs ran, which may differ for other inputs"
    err.message += (
        f"; the ONNX model comes from the TorchScript exporter, a fallback because torch.export failed: {onnx_model.fallback_reason}{traced}"
    )
    err.args = (err.message,)
    if known and known.gate_hint:
        err.hint = known.gate_hint
    else:
        fix = known.hint.format(op="the operator") if known else "fix torch.export's error above"
        err.hint = f"make the model exportable by torch.export ({fix}) so that no fallback is needed" + (f"; {err.hint}" if err.hint else "")


def export_failed(source: str, kind: str, primary: BaseException | None, fallback: BaseException | None) -> ExportError:
    """The error for a failed export: ``primary`` is torch.export's failure (None for a TorchScript file,
    which only the TorchScript exporter takes), ``fallback`` the TorchScript exporter's (None for a .pt2,
    which never falls back). The primary failure comes first."""
    if primary is None:
        if fallback is None:
            raise ValueError("export_failed needs at least one failure")
        d = diagnose(fallback)
        return ExportError(f"the TorchScript exporter could not export {source}: {d.line()}", hint=_hint(kind, d))
    p = diagnose(primary)
    message = f"torch.export could not export {source}: {p.line()}"
    if fallback is None:
        return ExportError(message, hint=_hint(kind, p))
    f = diagnose(fallback)
    return ExportError(f"{message}; the TorchScript exporter (the fallback) failed too: {f.line()}", hint=_hint(kind, p, f))


def unknown_shapes(loaded: LoadedModel, names: list[str]) -> UsageError:
    """No ``--input`` for a model that records no shapes: the flags to add. A traced TorchScript file's
    example inputs give real shapes and dtypes (mobilegen.load.traced_inputs); otherwise placeholders."""
    what = f"the input shapes of {loaded.source.name} are unknown (a {loaded.kind} file does not record them)"
    flags, traced = input_flags(loaded.traced_inputs, names or ["x"])
    if traced:
        return UsageError(what, hint=f"add {flags} (the example inputs it was traced with; a name for a size makes that dim dynamic)")
    return UsageError(what, hint=f"add {flags} ({SHAPE_HELP})")


SHAPE_HELP = "SHAPE: sizes joined by x, e.g. 1x128; DTYPE: float32 unless given, e.g. int64 for token ids"
