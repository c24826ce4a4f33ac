"""``quiet()`` blocks that overlap in threads (a build converts one model while it verifies another, and
runs the PyTorch reference beside the fix stage) share one silencing: the streams stay silenced until the
last block ends, and are the original ones afterwards, whatever order the blocks end in."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from mobilegen.infra.quiet import quiet


def _fd_target(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


@pytest.mark.parametrize("first_to_end", ["main", "thread"])
def test_overlapping_blocks_in_threads_restore_the_streams_once(first_to_end: str) -> None:
    before_fd = (_fd_target(1), _fd_target(2))
    before_py = (sys.stdout, sys.stderr)
    inside, release_thread, thread_done = threading.Event(), threading.Event(), threading.Event()
    seen: list[tuple[object, object]] = []

    def other() -> None:
        with quiet():
            inside.set()
            release_thread.wait(10)
            seen.append((_fd_target(1), sys.stdout))
        thread_done.set()

    with quiet():
        silenced = (_fd_target(1), sys.stdout)
        worker = threading.Thread(target=other)
        worker.start()
        assert inside.wait(10)
        if first_to_end == "thread":
            release_thread.set()
            assert thread_done.wait(10)
            assert (_fd_target(1), sys.stdout) == silenced  # the thread's end did not undo this block's silencing
    if first_to_end == "main":
        assert _fd_target(1) != before_fd[0]  # still silenced: the thread's block is open
        assert sys.stdout is not before_py[0]
        release_thread.set()
    worker.join(10)
    assert seen == [silenced]  # the thread saw the one silencing
    assert (_fd_target(1), _fd_target(2)) == before_fd
    assert (sys.stdout, sys.stderr) == before_py
