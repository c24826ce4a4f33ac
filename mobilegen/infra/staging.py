"""Filesystem primitives of the output transaction (mobilegen.infra.outputs): owner files and the sweep of stale
staging, the writers' lock, and rename-if-absent."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

from mobilegen.errors import UsageError

try:
    import fcntl
except ImportError:  # pragma: no cover — not POSIX: the final step is not serialised between writers
    fcntl = None  # type: ignore[assignment]

OWNER = ".owner"
_STAGING_RE = re.compile(r"^\..*\.tmp-(\d+)-[a-z0-9_]{8}$")
_TEMP_RE = re.compile(r"^mobilegen-[a-z]+-(\d+)-[a-z0-9_]{8}$")
_swept: set[tuple[str, bool]] = set()


def _proc_start(pid: int) -> str | None:
    """The process start time in clock ticks since boot (/proc/PID/stat field 22); None without /proc."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
        return data[data.rindex(b")") + 2 :].split()[19].decode()
    except (OSError, ValueError, IndexError):
        return None


_HAVE_PROC = _proc_start(os.getpid()) is not None


def write_owner(folder: Path) -> None:
    (folder / OWNER).write_text(f"{os.getpid()} {_proc_start(os.getpid()) or '-'}\n", encoding="ascii")


def _read_owner(folder: Path) -> tuple[int, str | None] | None:
    try:
        fd = os.open(folder / OWNER, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            pid, start = f.read(100).decode("ascii").split()
        return int(pid), None if start == "-" else start
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _alive(pid: int, start: str | None) -> bool:
    """Whether the process that wrote an owner file still runs (a reused PID has another start time)."""
    if start is not None and _HAVE_PROC:
        return _proc_start(pid) == start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def sweep_stale(folder: Path, *, temp: bool = False) -> None:
    """Remove staging left by dead mobilegen processes in ``folder`` (once per folder per process). Only
    our own folders (name pattern + owner file naming the same PID + our uid) are ever candidates."""
    key = (os.path.abspath(folder), temp)
    if key in _swept:
        return
    _swept.add(key)
    pattern = _TEMP_RE if temp else _STAGING_RE
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for e in entries:
        m = pattern.match(e.name)
        if m is None:
            continue
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            continue
        owner = _read_owner(Path(e.path))
        if owner is None or owner[0] != int(m.group(1)) or owner[0] <= 0:
            continue  # not ours, or its owner file not written yet
        if not _alive(*owner):
            shutil.rmtree(e.path, ignore_errors=True)


# ----------------------------------------------------------------------------- atomic primitives


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold ``.NAME.lock`` beside ``path`` (flock); the file is removed while still held, so a waiter
    that locked the removed file tries again on the new one."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    lock = path.with_name(f".{path.name[:200]}.lock")
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    while True:
        try:
            fd = os.open(lock, flags, 0o600)
        except OSError as err:
            raise UsageError(f"cannot write to {path.parent}: {err.strerror}", hint="choose a writable -o") from err
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.lstat(lock)
            except FileNotFoundError:
                current = None
            if current is not None and os.path.samestat(current, os.fstat(fd)):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)


def _libc_rename() -> tuple[object, int] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover
        return None
    if hasattr(libc, "renameat2"):  # Linux: renameat2(AT_FDCWD, old, AT_FDCWD, new, RENAME_NOREPLACE)
        return libc.renameat2, 1
    if hasattr(libc, "renamex_np"):  # pragma: no cover — macOS: renamex_np(old, new, RENAME_EXCL)
        return libc.renamex_np, 4
    return None  # pragma: no cover


_RENAME = _libc_rename()
_AT_FDCWD = -100


def rename_noreplace(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst`` only if ``dst`` does not exist, atomically where the OS can
    (renameat2/renamex_np); otherwise, under the writer lock, a check, then link or rename."""
    if _RENAME is not None:
        fn, flag = _RENAME
        a, b = os.fsencode(src), os.fsencode(dst)
        rc = fn(_AT_FDCWD, a, _AT_FDCWD, b, flag) if flag == 1 else fn(a, b, flag)  # type: ignore[operator]
        if rc == 0:
            return
        e = ctypes.get_errno()
        if e not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
            raise OSError(e, os.strerror(e), str(src), None, str(dst))
    if os.path.lexists(dst):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(dst))
    if not os.path.isdir(src):
        try:
            os.link(src, dst, follow_symlinks=False)  # a file: link() refuses an existing name atomically
        except FileExistsError:
            raise
        except OSError:
            pass  # no hard links on this filesystem
        else:
            os.unlink(src)
            return
    # A folder renamed onto an empty folder replaces it: only an empty folder made in this instant can go.
    os.rename(src, dst)
