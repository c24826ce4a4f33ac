"""Giving memory back between the stages of a large model's build."""

from __future__ import annotations

import ctypes
import gc


def release_memory() -> None:
    """Collect what was let go and hand freed heap pages back to the OS (glibc keeps them otherwise), so
    a stage's peak does not count the previous stage's model."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to do
        pass


__all__ = ["release_memory"]
