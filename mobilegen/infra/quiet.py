"""Keeping the exporters' and runtimes' chatter (Python and native) off the CLI's streams."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """The exporters print progress to stdout and warnings to stderr: keep both off the CLI's streams."""
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
