"""Listing and reading a package folder without surprises: nothing is followed, nothing special is opened,
no read is unbounded. Shared by the writer (which must list only regular files) and ``verify`` (which
reads folders it did not write)."""

from __future__ import annotations

import hashlib
import mmap
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from mobilegen.artifacts import MANIFEST
from mobilegen.errors import PackageError
from mobilegen.infra.datafiles import kind
from mobilegen.infra.digest import written_digest
from mobilegen.package.manifest import FileEntry

CHUNK = 1 << 20
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # opening a FIFO must not wait for a writer
_O_BINARY = getattr(os, "O_BINARY", 0)


class Unreadable(Exception):
    """One file of a package cannot be checked; the text completes ``"<path>: "``."""


def show(name: str, limit: int = 200) -> str:
    """A name from a package as safe one-line text (control characters escaped, long names cut)."""
    text = name if name.isprintable() else ascii(name)[1:-1]
    return text if len(text) <= limit else text[:limit] + "…"


def show_repr(name: str, limit: int = 200) -> str:
    text = repr(name)
    return text if len(text) <= limit else text[:limit] + "…"


def open_regular(path: Path, *, follow: bool = False) -> IO[bytes]:
    """Open ``path`` for reading only if it is a regular file: never follows a symlink (unless ``follow``)
    and never waits on a FIFO, so a file swapped after the listing still cannot hang or flood a reader."""
    fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_BINARY | (0 if follow else _O_NOFOLLOW))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise Unreadable(f"is {kind(mode)}, not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; Unreadable otherwise."""
    try:
        with open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            data = f.read(limit + 1) if size <= limit else b""
    except OSError as err:
        raise Unreadable(f"cannot be read ({err.strerror or err})") from err
    if size > limit or len(data) > limit:
        raise Unreadable(f"too large to check ({max(size, len(data))} bytes; verify reads at most {limit})")
    return data


def hash_stream(src: IO[bytes], declared: int, sink: IO[bytes] | None = None) -> str:
    """sha256 of ``src``, reading no more than ``declared`` bytes (+ one chunk to notice a longer stream)."""
    h = hashlib.sha256()
    n = 0
    while chunk := src.read(CHUNK):
        n += len(chunk)
        if n > declared:
            raise Unreadable(f"holds more data than the {declared} bytes it declares")
        h.update(chunk)
        if sink is not None:
            sink.write(chunk)
    if n != declared:
        raise Unreadable(f"holds {n} bytes, not the {declared} it declares")
    return h.hexdigest()


def scan(root: Path, limit: int | None = None) -> tuple[dict[str, os.stat_result], list[tuple[str, str]]]:
    """Regular files under ``root`` (relative POSIX path → lstat, sorted by path) and everything else
    found (symlinks, FIFOs, devices...) with its kind. Nothing is followed and nothing is opened.
    Raises OSError when a folder cannot be listed, Unreadable past ``limit`` entries."""
    files: dict[str, os.stat_result] = {}
    odd: list[tuple[str, str]] = []
    pending = [""]
    while pending:
        rel_dir = pending.pop()
        with os.scandir(root / rel_dir if rel_dir else root) as it:
            for entry in it:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    pending.append(rel)
                elif stat.S_ISREG(st.st_mode):
                    files[rel] = st
                else:
                    odd.append((rel, kind(st.st_mode)))
        if limit is not None and len(files) + len(odd) > limit:
            raise Unreadable(f"holds more than {limit} files, more than a package has")
    return dict(sorted(files.items())), sorted(odd)


def walk(root: Path) -> tuple[list[str], list[str]]:
    """Regular files under ``root`` as sorted relative POSIX paths, and anything else found (symlinks,
    sockets...) that a package may not contain."""
    try:
        files, odd = scan(root)
    except OSError as err:
        raise PackageError(f"cannot list {root}: {err.strerror or err}") from err
    return list(files), [rel for rel, _kind in odd]


def is_exec(path: Path) -> bool:
    return bool(path.stat().st_mode & 0o111)


def file_entries(root: Path, *, exclude: tuple[str, ...] = (MANIFEST,)) -> tuple[FileEntry, ...]:
    """Every regular file under ``root`` with its size, sha256 and exec bit, sorted by path."""
    return scan_files(root, exclude=exclude)[0]


def scan_files(
    root: Path, *, exclude: tuple[str, ...] = (MANIFEST,), needles: tuple[bytes, ...] = ()
) -> tuple[tuple[FileEntry, ...], tuple[str, ...]]:
    """:func:`file_entries`, and the files that contain any of ``needles``, in one read of each file
    (streamed: a large model is never held whole; two files at a time, hashlib releases the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    files, odd = walk(root)
    if odd:
        raise PackageError(
            "the package folder contains entries that are not regular files: " + ", ".join(odd),
            hint="a package may hold only regular files (no symlinks); this is a bug in mobilegen",
        )
    rels = [rel for rel in files if rel not in exclude]
    with ThreadPoolExecutor(max_workers=2) as pool:
        scanned = list(pool.map(lambda rel: _scan(root / rel, needles), rels))
    entries = tuple(FileEntry(rel, size, digest, is_exec(root / rel)) for rel, (size, digest, _) in zip(rels, scanned, strict=True))
    return entries, tuple(rel for rel, (_, _, hit) in zip(rels, scanned, strict=True) if hit)


def _scan(path: Path, needles: tuple[bytes, ...]) -> tuple[int, str, bool]:
    """(size, sha256, whether any needle occurs), reading the file once in chunks. A file this process
    wrote and hashed on the way (a model: ``mobilegen.infra.digest``) is not hashed again; only searched
    for the needles, through a read-only map."""
    with path.open("rb") as f:
        st = os.fstat(f.fileno())
        known = written_digest(st)
        if known is not None:
            if not needles or not st.st_size:
                return st.st_size, known, False
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return st.st_size, known, any(data.find(n) != -1 for n in needles)
    h = hashlib.sha256()
    keep = max((len(n) for n in needles), default=1) - 1  # a needle may straddle two chunks
    tail = b""
    hit = False
    size = 0
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
            size += len(chunk)
            if needles and not hit:
                window = tail + chunk
                hit = any(n in window for n in needles)
                tail = window[-keep:] if keep else b""
    return size, h.hexdigest(), hit


@dataclass(frozen=True)
class Entry:
    """A regular file of a package as listed (folder: lstat; zip: central directory)."""

    size: int
    executable: bool


class Source(Protocol):
    """A package to check, folder or zip: its listing and bounded reads."""

    @property
    def container(self) -> str:
        """"folder" or "zip"."""
        ...

    @property
    def entries(self) -> Mapping[str, Entry]:
        """Relative POSIX path → entry, regular files only."""
        ...

    def manifest_bytes(self) -> bytes: ...

    def digest(self, rel: str, *, keep: bool = False) -> str:
        """sha256 of one entry; ``keep``: also make it available on disk through :meth:`local`."""
        ...

    def local(self, rel: str) -> Path | None: ...

    def read(self, rel: str, limit: int) -> bytes:
        """The bytes of one entry of at most ``limit`` bytes; Unreadable otherwise."""
        ...


class FolderSource:
    container = "folder"

    def __init__(self, root: Path, files: Mapping[str, os.stat_result], manifest_limit: int) -> None:
        self.root = root
        self.manifest_limit = manifest_limit
        self.entries = {rel: Entry(st.st_size, bool(st.st_mode & 0o111)) for rel, st in files.items()}

    def manifest_bytes(self) -> bytes:
        return read_regular(self.root / MANIFEST, self.manifest_limit)

    def digest(self, rel: str, *, keep: bool = False) -> str:
        del keep  # a folder's files are on disk already
        try:
            with open_regular(self.root / rel) as f:
                return hash_stream(f, os.fstat(f.fileno()).st_size)
        except OSError as err:
            raise Unreadable(f"cannot be read ({err.strerror or err})") from err

    def local(self, rel: str) -> Path | None:
        return self.root / rel if rel in self.entries else None

    def read(self, rel: str, limit: int) -> bytes:
        return read_regular(self.root / rel, limit)
