"""Reading a package zip someone handed over, in place and within bounds.

Every entry's name, flags, method and sizes are checked from the central directory before a byte is
unpacked; entries are then hashed as they stream (the declared size enforced while reading), and only
the files the golden re-run needs are unpacked, into a temporary folder.
"""

from __future__ import annotations

import io
import re
import stat
import zipfile
import zlib
from pathlib import Path
from typing import IO

from mobilegen.artifacts import (
    ANDROID_DIR,
    GOLDEN_MGV,
    GOLDEN_NPZ,
    GOLDEN_PER_TARGET,
    IOS_DIR,
    MANIFEST,
    MODEL_ORTS,
)
from mobilegen.errors import PackageVerifyError, UsageError
from mobilegen.package.manifest import MAX_MANIFEST_BYTES, path_problem
from mobilegen.package.tree import Entry, Unreadable, hash_stream, show_repr

MAX_ENTRIES = 100_000  # files in a package folder / entries in a zip
MAX_RATIO = 100  # unpacked : packed bytes of one entry above RATIO_FLOOR (model weights pack < 2:1)
RATIO_FLOOR = 1 << 20
# The files the golden re-run reads: the only entries ever unpacked to disk.
# The files verify unpacks from a zip: fixed, safe names (a model per built-in target included).
GOLDEN_FILES = frozenset({*MODEL_ORTS, GOLDEN_NPZ, GOLDEN_MGV, *GOLDEN_PER_TARGET})
# ... and the further golden cases (golden_case<i>.npz) beside either golden.npz: fixed, safe names too
_GOLDEN_CASE = re.compile(rf"golden/(?:(?:{re.escape(ANDROID_DIR)}|{re.escape(IOS_DIR)})/)?golden_case[1-9][0-9]{{0,5}}\.npz")


def is_golden_file(rel: str) -> bool:
    """Whether verify may unpack ``rel`` from a zip for the golden re-run (:data:`GOLDEN_FILES`, or a case)."""
    return rel in GOLDEN_FILES or _GOLDEN_CASE.fullmatch(rel) is not None
# bzip2 and lzma decompress a whole read at once, however much it expands: a package uses neither.
ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
_ZIP_ENCRYPTED = 0x1
_REFUSE_HINT = "this zip was not written by mobilegen package (or was altered); do not unpack it"
# What zipfile raises on a damaged entry.
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, NotImplementedError)


def total_cap(packed: int) -> int:
    """The most all entries of a ``packed``-byte zip may unpack to."""
    return MAX_RATIO * max(packed, RATIO_FLOOR)


def data_problem(info: zipfile.ZipInfo) -> str | None:
    """Why the data of an entry may not be read (None when it may)."""
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "it is a symbolic link"
    if mode and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)) and stat.S_IFMT(mode):
        return "it is not a regular file"
    if info.flag_bits & _ZIP_ENCRYPTED:
        return "it is encrypted"
    if info.compress_type not in ZIP_METHODS:
        return f"compression method {info.compress_type} is not one a package uses ({', '.join(ZIP_METHODS.values())})"
    if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * info.compress_size:
        return f"it would unpack {info.file_size} bytes from {info.compress_size} (more than {MAX_RATIO}:1, a zip bomb?)"
    return None


def checked_infos(infos: list[zipfile.ZipInfo], zip_size: int, shown: str) -> list[zipfile.ZipInfo]:
    """Refuse the zip (one line) unless every entry's name, method, flags and sizes are those of a package."""
    if len(infos) > MAX_ENTRIES:
        raise PackageVerifyError(
            f"{shown}: the zip holds {len(infos)} entries, more than the {MAX_ENTRIES} a package may have; nothing was extracted",
            hint=_REFUSE_HINT,
        )
    seen: set[str] = set()
    for info in infos:
        why = path_problem(info.filename) or data_problem(info)
        if why:
            raise PackageVerifyError(
                f"{shown}: refusing to extract entry {show_repr(info.filename)}: {why}; nothing was extracted", hint=_REFUSE_HINT
            )
        if info.filename in seen:
            raise PackageVerifyError(f"{shown}: entry {show_repr(info.filename)} appears twice; nothing was extracted", hint=_REFUSE_HINT)
        seen.add(info.filename)
    total = sum(i.file_size for i in infos)
    if total > total_cap(zip_size):
        raise PackageVerifyError(
            f"{shown}: the zip's entries would unpack to {total} bytes from {zip_size} (more than {MAX_RATIO}:1, "
            "a zip bomb?); nothing was extracted",
            hint=_REFUSE_HINT,
        )
    return infos


def zip_root(infos: list[zipfile.ZipInfo]) -> str | None:
    """``""`` when the manifest is at the zip's top, ``"NAME/"`` when everything sits in one folder NAME
    holding it, None when the zip holds no package."""
    files = {i.filename for i in infos if not i.is_dir()}
    if MANIFEST in files:
        return ""
    tops = {i.filename.split("/", 1)[0] for i in infos}
    if len(tops) == 1:
        prefix = next(iter(tops)) + "/"
        if prefix + MANIFEST in files:
            return prefix
    return None


class ZipSource:
    """A package zip read in place: entries are hashed as they stream; only :data:`GOLDEN_FILES` are
    unpacked, into ``tmp``, and only when the caller asks (it does when the manifest lists them at no
    smaller a size than the zip declares)."""

    container = "zip"

    def __init__(self, zf: zipfile.ZipFile, infos: list[zipfile.ZipInfo], prefix: str, tmp: Path) -> None:
        self.zf = zf
        self.tmp = tmp
        self.infos = {i.filename[len(prefix) :]: i for i in infos if not i.is_dir()}
        self.entries = {rel: Entry(i.file_size, bool((i.external_attr >> 16) & 0o111)) for rel, i in self.infos.items()}
        self.kept: dict[str, Path] = {}

    def manifest_bytes(self) -> bytes:
        info = self.infos[MANIFEST]
        if info.file_size > MAX_MANIFEST_BYTES:
            raise Unreadable(f"too large to check ({info.file_size} bytes; verify reads at most {MAX_MANIFEST_BYTES})")
        sink = io.BytesIO()
        self._stream(MANIFEST, sink)
        return sink.getvalue()

    def digest(self, rel: str, *, keep: bool = False) -> str:
        if not keep or not is_golden_file(rel):
            return self._stream(rel, None)
        target = self.tmp / rel  # one of GOLDEN_FILES or a golden case: a fixed, safe name
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("xb") as sink:
                digest = self._stream(rel, sink)
        except OSError as err:
            raise UsageError(
                f"cannot unpack {rel} into the temporary folder {self.tmp.parent}: {err.strerror or err}",
                hint="free some space there, or set TMPDIR to a folder with room",
            ) from err
        self.kept[rel] = target
        return digest

    def _stream(self, rel: str, sink: IO[bytes] | None) -> str:
        info = self.infos[rel]
        try:
            with self.zf.open(info) as src:
                return hash_stream(src, info.file_size, sink)
        except (*ZIP_ERRORS, RuntimeError) as err:
            raise Unreadable(f"damaged in the zip ({err})") from err

    def local(self, rel: str) -> Path | None:
        return self.kept.get(rel)

    def read(self, rel: str, limit: int) -> bytes:
        size = self.infos[rel].file_size
        if size > limit:
            raise Unreadable(f"too large to check ({size} bytes; verify reads at most {limit})")
        sink = io.BytesIO()
        self._stream(rel, sink)
        return sink.getvalue()
