"""The output transaction: results are written beside their destination and moved into place at the end.

- A destination that exists is replaced only with ``--force``, and then only an empty folder or an
  earlier mobilegen output folder, an earlier mobilegen package zip, or (``export``/``convert``) a regular
  file; never an input model, a symbolic link or a special file (device, FIFO, socket).
- What is replaced at the end is exactly what was checked at the start (same inode, same tree); when
  something appeared or changed meanwhile it is kept and the run fails with "already exists".
- Writers into one destination serialise their final step on ``.NAME.lock`` in the same folder: of two
  concurrent runs exactly one wins.
- Staging folders (``.NAME.tmp-PID-XXXXXXXX`` beside the output, ``$TMPDIR/mobilegen-KIND-PID-XXXXXXXX``)
  hold an owner file (PID and process start time); the next run into the same folder removes those
  whose process is gone, never a live one's.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from mobilegen import artifacts
from mobilegen.errors import InternalError, UsageError
from mobilegen.infra.staging import locked, rename_noreplace, sweep_stale, write_owner

_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM}
_EXISTS_ERRNOS = {errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR}
_MAX_MANIFEST = 16 << 20
_MAX_TREE = 10_000


# ----------------------------------------------------------------------------- checks


@dataclass(frozen=True)
class Snapshot:
    """What a destination was when it was checked: compared again right before it is replaced."""

    dev: int
    ino: int
    tree: tuple[tuple[str, int, int, int], ...]  # (relative path, inode, size, mtime_ns); folders: size -1


@dataclass(frozen=True)
class Target:
    path: Path
    kind: str  # "folder" (package output), "zip" (package zip) or "file" (export/convert output)
    before: Snapshot | None  # None: it did not exist, and the final step must not replace anything


def check_target(path: Path, kind: str, *, force: bool, protect: tuple[Path, ...] = ()) -> Target:
    """Refuse now what the final step may not replace; remember what it may."""
    path = Path(os.path.abspath(path))
    _check_protected(path, kind, protect)
    try:
        st = os.lstat(path)
    except OSError:  # absent, or a parent that is no folder: creating the staging folder says so
        return Target(path, kind, None)
    if stat.S_ISLNK(st.st_mode):
        raise UsageError(f"{path} is a symbolic link", hint="give the real path for -o: mobilegen does not write through symbolic links")
    if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        raise UsageError(f"{path} is not a regular file or folder (a device, FIFO or socket)", hint="choose another -o")
    if not force:
        raise UsageError(f"{path} already exists", hint="pass --force to replace it, or choose another -o")
    if kind == "folder":
        if not stat.S_ISDIR(st.st_mode):
            raise UsageError(f"{path} is a file, not a folder", hint="choose another -o")
        try:
            empty = not any(path.iterdir())
        except OSError as err:
            raise UsageError(f"cannot read {path}: {err.strerror}", hint="choose another -o") from err
        if not empty and not _is_mobilegen_output(path):
            raise UsageError(
                f"{path} is not empty and is not a mobilegen output folder (no manifest.json of ours)",
                hint="--force replaces only earlier mobilegen outputs; choose another -o",
            )
    elif stat.S_ISDIR(st.st_mode):
        hint = "choose another -o (the zip is written next to the output folder)" if kind == "zip" else "give a file path for -o"
        raise UsageError(f"{path} is a folder", hint=hint)
    elif kind == "zip" and not _is_mobilegen_zip(path):
        raise UsageError(
            f"{path} is not a mobilegen package zip (no manifest.json of ours inside)",
            hint="--force replaces only an earlier mobilegen zip; choose another -o",
        )
    return Target(path, kind, snapshot(path))


def check_replaceable(out: Path, *, force: bool, protect: tuple[Path, ...] = ()) -> Snapshot | None:
    """The checks for an output folder (``package``, ``android``, ``ios``)."""
    return check_target(out, "folder", force=force, protect=protect).before


def _check_protected(path: Path, kind: str, protect: tuple[Path, ...]) -> None:
    try:
        st: os.stat_result | None = os.stat(path)
    except OSError:
        st = None
    for p in protect:
        if kind == "folder":
            outs = {path, Path(os.path.realpath(path))}
            ins = {Path(os.path.abspath(p)), Path(os.path.realpath(p))}
            if any(i.is_relative_to(o) for i in ins for o in outs):
                raise UsageError(f"the output folder {path} contains the input {p}", hint="choose an -o outside the model's folder")
        try:
            same = st is not None and os.path.samestat(st, os.stat(p))
        except OSError:
            same = False
        if same or os.path.abspath(p) == str(path):
            raise UsageError(f"-o {path} is the input model", hint="write the result to another path")


def _is_mobilegen_output(folder: Path) -> bool:
    return _is_our_manifest(folder / artifacts.MANIFEST)


def _is_our_manifest(path: Path) -> bool:
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_MANIFEST:
            return False  # never open a FIFO or a device named manifest.json
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            return _manifest_kind(f.read(_MAX_MANIFEST + 1))
    except OSError:
        return False


def _manifest_kind(data: bytes) -> bool:
    try:
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and doc.get("kind") == "mobilegen-package"


def _is_mobilegen_zip(path: Path) -> bool:
    """A zip whose one top-level folder holds our manifest.json (read within bounds from the directory)."""
    try:
        with zipfile.ZipFile(path) as zf:
            entries = [i for i in zf.infolist() if re.fullmatch(r"[^/]+/" + re.escape(artifacts.MANIFEST), i.filename)]
            if len(entries) != 1 or entries[0].file_size > _MAX_MANIFEST:
                return False
            with zf.open(entries[0]) as f:
                return _manifest_kind(f.read(_MAX_MANIFEST + 1))
    except Exception:  # noqa: BLE001 — any unreadable or hostile zip is simply not ours
        return False


def snapshot(path: Path) -> Snapshot:
    st = os.lstat(path)
    tree: list[tuple[str, int, int, int]] = []
    if stat.S_ISDIR(st.st_mode):
        for root, dirs, files in os.walk(path):
            for name in sorted(dirs) + sorted(files):
                full = os.path.join(root, name)
                try:
                    s = os.lstat(full)
                except OSError:
                    continue
                size = -1 if stat.S_ISDIR(s.st_mode) else s.st_size
                tree.append((os.path.relpath(full, path), s.st_ino, size, -1 if size == -1 else s.st_mtime_ns))
                if len(tree) >= _MAX_TREE:
                    return Snapshot(st.st_dev, st.st_ino, tuple(tree))
    else:
        tree.append(("", st.st_ino, st.st_size, st.st_mtime_ns))
    return Snapshot(st.st_dev, st.st_ino, tuple(tree))


# ----------------------------------------------------------------------------- staging and the final step


class _Transaction:
    """One staging folder per destination folder; new items under ``new/``, replaced ones under ``old/``."""

    def __init__(self, targets: Sequence[Target], *, lock_held: bool = False) -> None:
        self.targets = list(targets)
        self.lock_held = lock_held
        self.containers: dict[Path, Path] = {}
        self.made: list[Path] = []  # the -o parents this run created: removed again unless it committed
        self.committed = False
        for t in self.targets:
            parent = t.path.parent
            if parent in self.containers:
                continue
            sweep_stale(parent)
            try:
                self.made += _missing_parents(parent)
                parent.mkdir(parents=True, exist_ok=True)
                c = Path(tempfile.mkdtemp(prefix=f".{t.path.name[:100]}.tmp-{os.getpid()}-", dir=parent))
                self.containers[parent] = c
                write_owner(c)
                (c / "new").mkdir()
                (c / "old").mkdir()
            except OSError as err:
                self.discard()
                raise UsageError(f"cannot write to {parent}: {err.strerror}", hint="choose a writable -o") from err
            except BaseException:  # Ctrl-C/SIGTERM while the staging is made (even inside mkdtemp): remove ours
                self.discard()
                for p in parent.iterdir():  # this process's name: only this run makes it
                    if p.name.startswith(f".{t.path.name[:100]}.tmp-{os.getpid()}-"):
                        shutil.rmtree(p, ignore_errors=True)
                raise

    def staged(self, t: Target) -> Path:
        return self.containers[t.path.parent] / "new" / t.path.name

    def discard(self) -> None:
        for c in self.containers.values():
            shutil.rmtree(c, ignore_errors=True)
        if not self.committed:
            for d in sorted(set(self.made), key=lambda d: len(d.parts), reverse=True):
                with contextlib.suppress(OSError):  # rmdir: never a folder something else wrote into meanwhile
                    d.rmdir()

    def commit(self) -> None:
        """Move the staged results into place, under each destination's writer lock (unless the caller
        holds it already: ``lock_held``, see :func:`locked_package`)."""
        undo: list[tuple[Path, Path]] = []  # (from, to) renames that put things back
        with contextlib.ExitStack() as locks:
            for t in () if self.lock_held else sorted(self.targets, key=lambda t: str(t.path)):
                locks.enter_context(locked(t.path))
            try:
                for t in self.targets:
                    self._move_aside(t, undo)
                for t in self.targets:
                    new = self.staged(t)
                    if not os.path.lexists(new):
                        raise InternalError(f"nothing was staged for {t.path}", hint="this is a bug in mobilegen; rerun with --debug")
                    try:
                        rename_noreplace(new, t.path)
                    except OSError as err:
                        if err.errno in _EXISTS_ERRNOS:
                            raise UsageError(
                                f"{t.path} already exists (it appeared during the run); nothing was replaced",
                                hint="check what is there, then choose another -o or run again",
                            ) from err
                        raise UsageError(f"cannot move the result into {t.path}: {err.strerror}", hint="choose another -o") from err
                    undo.append((t.path, new))
            except BaseException:
                _undo(undo)
                raise
            self.committed = True

    def _move_aside(self, t: Target, undo: list[tuple[Path, Path]]) -> None:
        if t.before is None:
            return
        aside = self.containers[t.path.parent] / "old" / t.path.name
        try:
            rename_noreplace(t.path, aside)
        except FileNotFoundError:
            return  # removed meanwhile: the result goes into an empty place, nothing is replaced
        except OSError as err:
            raise UsageError(f"cannot replace {t.path}: {err.strerror}", hint="choose another -o") from err
        undo.append((aside, t.path))
        try:
            same = snapshot(aside) == t.before
        except OSError:
            same = False
        if not same:
            raise UsageError(
                f"{t.path} already exists and changed during the run (another program or mobilegen run wrote it); nothing was replaced",
                hint="check what is there, then run again",
            )


def _missing_parents(folder: Path) -> list[Path]:
    """``folder`` and its ancestors that do not exist yet, deepest first (what ``mkdir(parents=True)`` makes)."""
    missing: list[Path] = []
    for d in (folder, *folder.parents):
        if os.path.lexists(d):
            break
        missing.append(d)
    return missing


def _undo(undo: list[tuple[Path, Path]]) -> None:
    for src, dst in reversed(undo):
        try:
            rename_noreplace(src, dst)
        except OSError:
            # Something took the place meanwhile: keep ours beside it rather than lose either.
            with contextlib.suppress(OSError):
                rename_noreplace(src, dst.with_name(f"{dst.name}.kept-{os.getpid()}"))


def _storage_error(err: OSError) -> bool:
    return err.errno in _STORAGE_ERRNOS


def _inside(filename: object, folder: Path) -> bool:
    if not isinstance(filename, (str, bytes, os.PathLike)):
        return False
    name = os.fsdecode(filename)
    return Path(os.path.abspath(name)).is_relative_to(folder)


@contextlib.contextmanager
def locked_package(folder: Path) -> Iterator[None]:
    """Hold the writer lock of the package ``folder`` (the one every build into it finishes under) for a
    whole read-modify-write in place (``mobilegen report``); inside, :func:`staged_output` is called with
    ``lock_held=True``. A second such run waits here until the first has committed."""
    with locked(Path(os.path.abspath(folder))):
        yield


@contextlib.contextmanager
def staged_output(
    out: Path, *, force: bool, zip_path: Path | None = None, protect: tuple[Path, ...] = (), lock_held: bool = False
) -> Iterator[Path]:
    """Yield a staging folder beside ``out``; on success it takes the place of ``out`` (and the zip staged
    by :func:`mobilegen.package.zip_writer.stage_zip` that of ``zip_path``), on failure it is removed and nothing else is touched.
    ``lock_held``: the caller holds ``out``'s writer lock (:func:`locked_package`)."""
    targets = [check_target(out, "folder", force=force, protect=protect)]
    if zip_path is not None:
        targets.append(check_target(zip_path, "zip", force=force, protect=protect))
    txn = _Transaction(targets, lock_held=lock_held)
    try:
        root = txn.staged(targets[0])
        try:
            root.mkdir()
        except OSError as err:
            raise UsageError(f"cannot write to {root.parent}: {err.strerror}", hint="choose a writable -o") from err
        try:
            yield root
        except OSError as err:
            if _storage_error(err) and (err.filename is None or _inside(err.filename, txn.containers[targets[0].path.parent])):
                raise write_error(targets[0].path.parent, err) from err
            raise
        txn.commit()
    finally:
        txn.discard()


@dataclass(frozen=True)
class StagedFile:
    path: Path  # where to write the result now
    dest: Path  # where it goes when everything succeeded

    def copy_from(self, src: Path) -> None:
        try:
            shutil.copyfile(src, self.path)
        except OSError as err:
            raise write_error(self.dest, err) from err


@contextlib.contextmanager
def staged_files(dests: Sequence[Path], *, force: bool, protect: tuple[Path, ...] = ()) -> Iterator[list[StagedFile]]:
    """Check every destination now; yield where to write each; move them all into place at the end."""
    targets = [check_target(d, "file", force=force, protect=protect) for d in dests]
    if len({t.path for t in targets}) != len(targets):
        raise UsageError("two outputs have the same path", hint="choose another -o")
    txn = _Transaction(targets)
    try:
        yield [StagedFile(txn.staged(t), t.path) for t in targets]
        txn.commit()
    finally:
        txn.discard()


def atomic_write_file(src: Path, dest: Path, *, force: bool, protect: tuple[Path, ...] = ()) -> None:
    with staged_files([dest], force=force, protect=protect) as (staged,):
        staged.copy_from(src)


def write_bytes_atomic(path: Path, *chunks: bytes) -> None:
    """Write ``chunks`` one after another to ``path`` (inside a folder of ours, e.g. the staging folder)
    through a temporary name: ``path`` is complete or absent, and nothing else is left behind."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with tmp.open("wb") as f:
            for chunk in chunks:
                f.write(chunk)
        os.replace(tmp, path)
    except OSError as err:
        raise write_error(path, err) from err
    finally:
        tmp.unlink(missing_ok=True)


def write_error(where: Path, err: OSError) -> UsageError:
    full = err.errno in (errno.ENOSPC, errno.EDQUOT)
    return UsageError(
        f"cannot write {where}: {err.strerror}",
        hint="free space there, or choose another -o" if full else "choose a writable -o",
    )


# ----------------------------------------------------------------------------- TMPDIR


@contextlib.contextmanager
def temp_dir(kind: str) -> Iterator[Path]:
    """A private folder ``$TMPDIR/mobilegen-KIND-PID-XXXXXXXX``, removed on exit. A storage error inside it
    (full, read-only, not writable) names TMPDIR, never -o: the body must write nothing else."""
    base = Path(tempfile.gettempdir())
    sweep_stale(base, temp=True)
    try:
        d = Path(tempfile.mkdtemp(prefix=f"mobilegen-{kind}-{os.getpid()}-", dir=base))
    except OSError as err:
        raise tmpdir_error(base, err) from err
    try:
        write_owner(d)
        yield d
    except OSError as err:
        if _storage_error(err) and (err.filename is None or _inside(err.filename, d)):
            raise tmpdir_error(base, err) from err
        raise
    finally:
        shutil.rmtree(d, ignore_errors=True)


def tmpdir_error(base: Path, err: OSError) -> UsageError:
    full = err.errno in (errno.ENOSPC, errno.EDQUOT)
    return UsageError(
        f"{'no space left in' if full else 'cannot write to'} the temp folder {base} (TMPDIR): {err.strerror}",
        hint="free space there, or point TMPDIR at a folder with room" if full else "point TMPDIR at a writable folder",
    )


@contextlib.contextmanager
def no_torch_cache_leftover() -> Iterator[None]:
    """Remove the empty cache folder torch makes in the temp folder on its first export
    (``$TMPDIR/torchinductor_USER``, created when ``torch._dynamo`` is imported) if it was not there
    before: a mobilegen run leaves nothing behind outside its output. A folder torch filled, or one the
    user points ``TORCHINDUCTOR_CACHE_DIR`` at, is left alone."""
    if os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        yield
        return
    import getpass

    try:
        user = re.sub(r'[\\/:*?"<>|]', "_", getpass.getuser())
    except (KeyError, ModuleNotFoundError, OSError):
        user = f"uid_{os.getuid()}" if hasattr(os, "getuid") else "unknown_user"
    folder = Path(tempfile.gettempdir()) / f"torchinductor_{user}"
    existed = folder.exists()
    try:
        yield
    finally:
        if not existed:
            with contextlib.suppress(OSError):  # not empty, or already gone: leave it
                folder.rmdir()
        if os.environ.get("TORCHINDUCTOR_CACHE_DIR") == str(folder):  # torch records its choice there
            del os.environ["TORCHINDUCTOR_CACHE_DIR"]
