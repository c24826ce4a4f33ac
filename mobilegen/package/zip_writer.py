"""The deterministic zip of a package folder, and ``SOURCE_DATE_EPOCH`` (the one clock a package may carry).

Same folder, same bytes: entries sorted under one top folder, one timestamp, mode 0644 or 0755 with Unix
as creator system, deflate; written to a temporary name and renamed into place.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import time
import zipfile
from pathlib import Path

from mobilegen.errors import InternalError, PackageError, UsageError
from mobilegen.package.tree import CHUNK, is_exec, walk

ZIP_EPOCH_MIN = 315532800  # 1980-01-01T00:00:00Z, the earliest time a zip entry can hold
ZIP_EPOCH_MAX = 4354819198  # 2107-12-31T23:59:58Z, the latest


def source_date_epoch() -> int | None:
    """``SOURCE_DATE_EPOCH`` as an int, or None when unset/empty (reproducible-builds.org convention)."""
    raw = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not raw:
        return None
    if not re.fullmatch(r"\d+", raw):
        raise UsageError(
            f"SOURCE_DATE_EPOCH={raw!r} is not a number of seconds since 1970",
            hint="set it to an integer such as the last commit's time (git log -1 --format=%ct), or unset it",
        )
    return int(raw)


def zip_date_time(epoch: int | None = None) -> tuple[int, int, int, int, int, int]:
    """The timestamp of every zip entry: SOURCE_DATE_EPOCH (UTC, clamped to what zip can hold), else 1980-01-01."""
    value = source_date_epoch() if epoch is None else epoch
    if value is None:
        value = ZIP_EPOCH_MIN
    value = min(max(value, ZIP_EPOCH_MIN), ZIP_EPOCH_MAX)
    t = time.gmtime(value)
    return (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec - t.tm_sec % 2)


def zip_prefix(zip_path: Path) -> str:
    """Default top-level folder inside the zip: the zip's name up to its last ``.zip``, leading dots
    dropped, so ``OUT.zip`` and a staging name like ``.OUT.zip.tmp-123`` both give ``OUT``."""
    name = Path(zip_path).name
    cut = name.rfind(".zip")
    return (name[:cut] if cut > 0 else name).lstrip(".") or "package"


def write_zip(folder: Path, zip_path: Path, *, prefix: str | None = None) -> Path:
    """Zip ``folder`` reproducibly into ``zip_path``: entries under ``<prefix>/`` (default
    :func:`zip_prefix`), sorted, fixed timestamp (SOURCE_DATE_EPOCH or 1980-01-01), mode 0644 or 0755
    (exec bit kept), deflate; written to a temporary name next to ``zip_path`` and renamed into place.
    The folder's own name never enters the zip (it may be a random staging name)."""
    folder = Path(folder)
    zip_path = Path(zip_path)
    prefix = zip_prefix(zip_path) if prefix is None else prefix
    if not prefix or "/" in prefix or "\\" in prefix or prefix in (".", ".."):
        raise InternalError(f"invalid zip folder name {prefix!r}", hint="this is a bug in mobilegen")
    files, odd = walk(folder)
    if odd:
        raise PackageError(
            f"cannot zip {folder}: it contains entries that are not regular files: " + ", ".join(odd),
            hint="a package may hold only regular files (no symlinks)",
        )
    date_time = zip_date_time()
    tmp = zip_path.with_name(f".{zip_path.name}.{os.getpid()}.tmp")
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for rel in files:
                src = folder / rel
                info = zipfile.ZipInfo(f"{prefix}/{rel}", date_time=date_time)
                info.create_system = 3  # Unix, so the permission bits below mean the same everywhere
                mode = 0o755 if is_exec(src) else 0o644
                info.external_attr = (stat.S_IFREG | mode) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                info.file_size = src.stat().st_size  # decides zip64 deterministically
                with src.open("rb") as fin, zf.open(info, "w") as fout:
                    shutil.copyfileobj(fin, fout, CHUNK)
        os.replace(tmp, zip_path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise PackageError(f"cannot write {zip_path}: {err}", hint="check the output folder is writable") from err
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return zip_path


def stage_zip(root: Path, zip_path: Path) -> Path:
    """Zip the staged folder ``root`` next to it; :func:`mobilegen.infra.outputs.staged_output` moves it to ``zip_path`` at the end."""
    return write_zip(root, root.parent / Path(zip_path).name, prefix=root.name)
