"""A file's SHA-256, read in chunks (models are large); and the digests a build already computed while
writing a file, so the package manifest does not read a large model again to hash it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

# (device, inode, size, mtime in ns) of a file written by this process → the sha256 of what was written.
# Any write to the file changes its size or mtime (a rename keeps both: the file is the same), so an
# entry never names other content; the manifest hashes every file it has no entry for.
_written: dict[tuple[int, int, int, int], str] = {}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _key(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def remember_written(path: Path, sha256: str) -> None:
    """Record ``sha256`` as the digest of ``path`` as it is now (just written and hashed on the way)."""
    _written[_key(os.stat(path))] = sha256


def copy_file(src: Path, dest: Path) -> None:
    """``shutil.copyfile`` (the kernel copies the bytes); a copy of a file whose digest is recorded gets the
    same record, so a project's copy of a large model is not hashed again either."""
    import shutil

    known = written_digest(os.stat(src))
    shutil.copyfile(src, dest)
    if known is not None:
        remember_written(dest, known)


def written_digest(st: os.stat_result) -> str | None:
    """The digest recorded for the file whose ``stat`` this is, when it is unchanged since; else None."""
    return _written.get(_key(st))


__all__ = ["copy_file", "remember_written", "sha256_file", "written_digest"]
