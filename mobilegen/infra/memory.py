"""Giving memory back between the stages of a large model's build."""

from __future__ import annotations

import ctypes
import gc
import importlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager


def release_memory(*, collect: bool = True) -> None:
    """Collect what was let go and hand freed heap pages back to the OS (glibc keeps them otherwise), so
    a stage's peak does not count the previous stage's model. ``collect=False``: only hand pages back,
    for memory freed by reference counting (an onnxruntime session let go): a full collection walks
    every object of the process (tenths of a second with torch loaded) and finds nothing there."""
    if collect:
        gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to do
        pass


@contextmanager
def frozen_heap(modules: Sequence[str] = ()) -> Iterator[None]:
    """Import ``modules`` (libraries the code inside uses anyway), then keep every object that exists now
    out of the garbage collector's full collections until the end (``gc.freeze``; ``gc.unfreeze`` after):
    torch's and onnx's own objects (modules, classes, functions: a few hundred thousand) are never
    garbage, and each full collection of a large model's build walked them all again (1.6 of 85 CPU
    seconds at 300M parameters). What is created inside is collected as usual; what existed before and
    becomes garbage inside is collected after. A process that froze objects itself (a server that forks)
    is left as it is: unfreezing would undo its freeze."""
    if gc.get_freeze_count():
        yield
        return
    for name in modules:
        importlib.import_module(name)
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


__all__ = ["frozen_heap", "release_memory"]
