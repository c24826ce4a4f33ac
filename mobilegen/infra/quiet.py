"""Keeping the exporters' and runtimes' chatter (Python and native) off the CLI's streams."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator

_lock = threading.Lock()
_open = 0  # quiet() blocks open now, in every thread
_silencing: contextlib.ExitStack | None = None  # what the first of them set up


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """The exporters print progress to stdout and warnings to stderr: keep both off the CLI's streams.

    What it changes is process-wide (file descriptors 1 and 2, ``sys.stdout``, the warnings filters, the
    libraries' log levels), so blocks that overlap — nested, or in threads side by side (a build converts
    one model while it makes the next) — share one silencing: the first block to enter sets it up, the
    last to leave undoes it. (Undone by whichever block ended first, the streams would be restored while
    another block still ran, and that block would later put back the scratch file as the streams.)"""
    global _open, _silencing
    with _lock:
        if _open == 0:
            stack = contextlib.ExitStack()
            try:
                stack.enter_context(_silenced())
            except BaseException:
                stack.close()
                raise
            _silencing = stack
        _open += 1
    try:
        yield
    finally:
        with _lock:
            _open -= 1
            if _open == 0 and _silencing is not None:
                done, _silencing = _silencing, None
                done.close()


@contextlib.contextmanager
def _silenced() -> Iterator[None]:
    sink = io.StringIO()
    loggers = [logging.getLogger(n) for n in ("torch.onnx", "torch._dynamo", "torch.export", "onnxscript", "torch")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with _native_output_silenced(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, lv in zip(loggers, levels, strict=True):
            lg.setLevel(lv)


@contextlib.contextmanager
def _native_output_silenced() -> Iterator[None]:
    """C++ code (the TorchScript exporter dumps whole graphs on failure) writes to file descriptors 1/2
    directly; point them at a scratch file so `--json` stdout stays one clean document."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
    finally:
        os.close(saved[0])
        os.close(saved[1])
