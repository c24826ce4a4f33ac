"""Data files a user names on the command line (``--calibration``/``--eval`` .npz files, ``report
--results``, a package's ``.mgv`` given to ``bench``): regular files only, read within bounds.

- A FIFO, socket or device is refused from ``stat`` before it is opened (opening a FIFO waits for a
  writer; a device never ends), and again from ``fstat`` of what was opened, without blocking
  (``O_NONBLOCK``), in case the name was swapped in between.
- An ``.npz``'s arrays are sized from their ``.npy`` headers before anything is allocated: an archive
  declaring a 698 TiB array, a compressed member that would unpack to gigabytes, or one array larger than
  the caller's budget is refused with one line, and an ``.npy`` given for an ``.npz`` says so.

Every refusal is a :class:`~mobilegen.errors.UsageError` (exit 2) naming the file.
"""

from __future__ import annotations

import math
import os
import stat
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING

from mobilegen.errors import UsageError, first_line

if TYPE_CHECKING:
    import numpy as np

    from mobilegen.spec import TensorSpec

_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
NPY_MAGIC = b"\x93NUMPY"
MAX_NPZ_MEMBERS = 4096
# Budgets for arrays of samples (samples_budget): a dynamic dim counts as DYNAMIC_DIM; never more than
# MAX_BUDGET in all (what one run may hold in memory), always at least MIN_BUDGET.
DYNAMIC_DIM = 1024
MAX_BUDGET = 4 << 30
MIN_BUDGET = 64 << 20

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),  # only from lstat (a package listing); stat and fstat follow links
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)


class NotRegularFile(UsageError):
    """A FIFO, socket, device or folder where a data file was expected."""


class DeclaredTooLarge(UsageError):
    """An array whose header declares more bytes than the budget (or than its entry holds)."""


def kind(mode: int) -> str:
    """What a non-regular file is, for a message ("a FIFO (named pipe)", "a folder", ...)."""
    return next((text for test, text in _KINDS if test(mode)), "a special file")


def size_text(n: int) -> str:
    """A byte count for a message: ``698.0 TiB``, ``12.5 MiB``, ``512 bytes``."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"


def open_data_file(path: Path, label: str, *, hint: str) -> IO[bytes]:
    """``path`` opened for reading if it is a regular file (a symbolic link to one is fine); otherwise a
    UsageError ``"<label>: no such file"`` / ``"<label> is a FIFO (named pipe), not a regular file"``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UsageError(f"{label}: no such file", hint=hint) from None
    except OSError as err:
        raise UsageError(f"{label} cannot be read: {err.strerror or err}", hint=hint) from err
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(f"{label} is {kind(st.st_mode)}, not a regular file", hint=hint)
    try:
        fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_BINARY)
    except OSError as err:
        raise UsageError(f"{label} cannot be read: {err.strerror or err}", hint=hint) from err
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # swapped for something else since the stat above
            raise NotRegularFile(f"{label} is {kind(mode)}, not a regular file", hint=hint)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_data_file(path: Path, label: str, *, limit: int, hint: str) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them (a larger file is refused)."""
    with open_data_file(path, label, hint=hint) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise UsageError(f"{label} is {size_text(size)}, over the {size_text(limit)} such a file may hold", hint=hint)
        try:
            data = f.read(limit + 1)
        except OSError as err:
            raise UsageError(f"{label} cannot be read: {err.strerror or err}", hint=hint) from err
    if len(data) > limit:
        raise UsageError(f"{label} is over the {size_text(limit)} such a file may hold", hint=hint)
    return data


def samples_budget(specs: Iterable[TensorSpec], samples: int) -> int:
    """The most bytes ``samples`` samples of inputs ``specs`` hold (a dynamic dim counted as
    :data:`DYNAMIC_DIM`), within [:data:`MIN_BUDGET`, :data:`MAX_BUDGET`]."""
    import numpy as np

    per_sample = 0
    for spec in specs:
        itemsize = np.dtype(spec.dtype).itemsize if spec.dtype not in ("string", "bfloat16") else 2
        per_sample += math.prod(d if isinstance(d, int) and d > 0 else DYNAMIC_DIM for d in spec.shape) * itemsize
    return max(MIN_BUDGET, min(MAX_BUDGET, samples * per_sample))


def npz_member_names(path: Path) -> list[str] | None:
    """The array names of the ``.npz`` at ``path``, read from its zip directory alone (nothing is
    decompressed); None when it is not a regular file holding a zip of ``.npy`` members (the full read,
    :func:`load_npz`, says what is wrong with it)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    except (OSError, zipfile.BadZipFile, ValueError, RuntimeError, NotImplementedError):
        return None
    if len(names) > MAX_NPZ_MEMBERS or not all(n.endswith(".npy") for n in names):
        return None
    return [n[: -len(".npy")] for n in names]


def load_npz(path: Path, label: str, *, max_bytes: int, hint: str) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` at ``path`` (keys without ``.npy``), none of them allocated before its
    header is read and the arrays' total is known to be at most ``max_bytes``. Refused (UsageError): a
    special file, an ``.npy``, anything but a zip of ``.npy`` members, an object (pickle) array, an array
    declaring more bytes than its member holds or than ``max_bytes``."""
    import numpy as np

    with open_data_file(path, label, hint=hint) as f:
        if f.read(len(NPY_MAGIC)) == NPY_MAGIC:
            raise UsageError(f"{label} is an .npy file (one unnamed array), not an .npz", hint=hint)
        f.seek(0)
        try:
            with zipfile.ZipFile(f) as zf:
                infos = zf.infolist()
                if len(infos) > MAX_NPZ_MEMBERS:
                    raise UsageError(f"{label} holds {len(infos)} entries, over {MAX_NPZ_MEMBERS}", hint=hint)
                total = 0
                for info in infos:
                    total += _declared_bytes(zf, info, label, max_bytes - total, hint)
                arrays: dict[str, np.ndarray] = {}
                for info in infos:
                    with zf.open(info) as member:
                        arrays[info.filename[: -len(".npy")]] = np.lib.format.read_array(member, allow_pickle=False)
        except UsageError:
            raise
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError, NotImplementedError, zlib.error) as err:
            raise UsageError(f"{label} is not a readable .npz file: {first_line(err)}", hint=hint) from err
    return arrays


def _declared_bytes(zf: zipfile.ZipFile, info: zipfile.ZipInfo, label: str, budget: int, hint: str) -> int:
    """The bytes the array in ``info`` declares, refused past ``budget`` or past what its member holds."""
    import numpy as np

    name = info.filename
    if not name.endswith(".npy") or info.is_dir():
        raise UsageError(f"{label}: entry {name!r} is not an .npy array (not an .npz written by numpy.savez)", hint=hint)
    with zf.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version not in ((1, 0), (2, 0)):
            raise UsageError(f"{label}: entry {name!r} has .npy format version {version}", hint=hint)
        reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _fortran, dtype = reader(member)
    if dtype.hasobject:
        raise UsageError(f"{label}: array {name[:-4]!r} holds Python objects (a pickle), which are never loaded", hint=hint)
    need = math.prod(shape) * dtype.itemsize
    shown = "x".join(str(d) for d in shape) or "scalar"
    if need > budget:
        raise DeclaredTooLarge(
            f"{label}: array {name[:-4]!r} declares shape {shown} of {dtype} ({size_text(need)}), "
            f"over the {size_text(max(budget, 0))} allowed for this model's inputs",
            hint=hint,
        )
    if need > info.file_size:
        raise DeclaredTooLarge(f"{label}: array {name[:-4]!r} declares {size_text(need)}, its entry holds {size_text(info.file_size)} (truncated)", hint=hint)
    return need
