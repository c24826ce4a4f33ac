"""One piece of a build run in a thread of its own while the build goes on.

The libraries that do a build's heavy lifting let go of Python's global lock while they work
(onnxruntime's session creation and runs, file writes and kernel copies, hashing), so such work in a
thread overlaps the Python work of the build's own thread (graph passes, serializing the next model)
on a machine with more than one core. The thread starts with an empty context: what it does reports no
progress (the build's thread does).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Background(Generic[T]):
    """``fn()`` started now in a thread of its own; :meth:`result` waits for it and returns what it
    returned, or raises what it raised."""

    def __init__(self, fn: Callable[[], T], name: str) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None

        def body() -> None:
            try:
                self._value = fn()
            except BaseException as err:  # noqa: BLE001 — handed to the caller of result(), whatever it is
                self._error = err

        self._thread = threading.Thread(target=body, name=name, daemon=True)
        self._thread.start()

    def wait(self) -> BaseException | None:
        """Wait for it to end; what it raised (None when it returned)."""
        self._thread.join()
        return self._error

    def result(self) -> T:
        error = self.wait()
        if error is not None:
            raise error
        return self._value  # type: ignore[return-value]  # fn returned: set


def results(jobs: Sequence[Background[T]]) -> list[T]:
    """Every job's value, in order, after every job has ended (nothing is left running, whatever
    happened); raises the error of the first job, in order, that raised."""
    errors = [job.wait() for job in jobs]
    for error in errors:
        if error is not None:
            raise error
    return [job.result() for job in jobs]


def wait_all(jobs: Sequence[Background[T]]) -> None:
    """Wait for every job to end, ignoring what they raised: for a caller that is already raising (its
    error is the one to report; the jobs must not go on writing into a folder it removes)."""
    for job in jobs:
        job.wait()


def meanwhile(jobs: Sequence[Background[Any]], work: Callable[[], T]) -> T:
    """``work()`` in this thread while ``jobs`` go on; if it raises, every job has ended first (none goes on
    writing into a folder the caller removes, nor holds memory the caller's error path counts on)."""
    try:
        return work()
    except BaseException:
        wait_all(jobs)
        raise


__all__ = ["Background", "meanwhile", "results", "wait_all"]
