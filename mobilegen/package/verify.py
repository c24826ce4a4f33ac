"""``verify_package``: check a package folder or zip against its manifest.

A package handed to ``verify`` is untrusted input. Nothing it declares may make verify read, write or
hold more than fixed bounds, block on a special file, or end in anything but exit 9 with one summary line
and one line per problem (2 when the path does not exist):

- a folder is listed without following anything, and refused before any file is read when it holds
  anything but regular files and folders (a FIFO would block, a link to /dev/zero would never end);
- a zip is checked from its central directory (names, encryption, methods, sizes, ratios, total) before a
  byte is unpacked, then read in place (:mod:`mobilegen.package.zip_reader`);
- the manifest is read within :data:`~mobilegen.package.manifest.MAX_MANIFEST_BYTES` and parsed by
  :func:`~mobilegen.package.manifest.parse_manifest`.
"""

from __future__ import annotations

import itertools
import os
import re
import stat
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import NoReturn

from mobilegen.artifacts import GOLDEN_MGV, GOLDEN_NPZ, MANIFEST, MODEL_ORT
from mobilegen.errors import MobilegenError, PackageVerifyError, UsageError
from mobilegen.infra.datafiles import kind
from mobilegen.package.golden_check import (
    GoldenCheck,
    RuntimeCheck,
    check_runtimes,
    rerun_golden,
    rerun_golden_runtime,
)
from mobilegen.package.manifest import (
    MAX_MANIFEST_BYTES,
    FileEntry,
    GoldenInfo,
    LinkEntry,
    ManifestError,
    parse_manifest,
)
from mobilegen.package.tree import FolderSource, Source, Unreadable, open_regular, scan, show
from mobilegen.package.zip_reader import (
    MAX_ENTRIES,
    ZIP_ERRORS,
    ZipSource,
    checked_infos,
    is_golden_file,
    zip_root,
)
from mobilegen.report import jsonable
from mobilegen.version import __version__

MAX_PROBLEM_LINES = 1000
_PASS_PACKAGE = "pass the folder or the .zip written by mobilegen package"


@dataclass(frozen=True)
class PackageVerification:
    """What ``verify_package`` checked (returned only when every check passed)."""

    package: str  # as given on the command line
    container: str  # "folder" or "zip"
    schema_version: int
    model_name: str
    files_checked: int
    golden: tuple[GoldenCheck, ...]
    runtimes: tuple[RuntimeCheck, ...]
    atol: float
    rtol: float
    problems: tuple[str, ...] = field(default_factory=tuple)
    models: tuple[str, ...] = ()  # the packaged .ort files the golden vectors ran on
    unverified: tuple[str, ...] = ()  # outputs the build accepted unverified (--allow-degenerate), per the manifest
    # (model, atol, rtol) of models whose golden vectors have tolerances of their own (quantized: schema 3)
    model_tolerances: tuple[tuple[str, float, float], ...] = ()

    @property
    def passed(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, object]:
        return {
            "package": self.package,
            "container": self.container,
            "passed": self.passed,
            "schema_version": self.schema_version,
            "model_name": self.model_name,
            "files_checked": self.files_checked,
            "tolerances": jsonable({"atol": self.atol, "rtol": self.rtol}),
            "models": list(self.models),
            "unverified": list(self.unverified),
            "model_tolerances": [jsonable({"model": m, "atol": a, "rtol": r}) for m, a, r in self.model_tolerances],
            "golden": [g.to_dict() for g in self.golden],
            "runtimes": [r.to_dict() for r in self.runtimes],
            "problems": list(self.problems),
        }


def verify_package(path: Path) -> PackageVerification:
    """Check a package folder or zip against its manifest; raise one PackageVerifyError naming every problem."""
    path = Path(path)
    shown = str(path)
    try:
        mode = path.stat().st_mode  # follows a symlink named on the command line: the user chose it
    except FileNotFoundError:
        raise UsageError(f"{shown}: no such file or folder", hint="pass a package folder or the .zip mobilegen package wrote") from None
    except OSError as err:
        raise UsageError(f"{shown}: cannot be read ({err.strerror or err})") from err
    if stat.S_ISDIR(mode):
        return _verify_folder(path, shown)
    if not stat.S_ISREG(mode):
        raise UsageError(f"{shown} is not a mobilegen package: it is {kind(mode)}, neither a folder nor a zip", hint=_PASS_PACKAGE)
    return _verify_zip(path, shown)


# What every package holds besides its manifest: a folder or zip with one of these (at its top or in its one
# folder) is a package that lost its manifest, not something else passed by mistake.
_PACKAGE_MARKS = (GOLDEN_NPZ, GOLDEN_MGV, MODEL_ORT)


def _not_a_package(shown: str, names: Iterable[str] = ()) -> MobilegenError:
    """No manifest at the top: a package that lost it (some of its other files are there) failed
    verification (exit 9); anything else is no package at all, a mistake in the command (exit 2)."""
    if any(name.endswith(_PACKAGE_MARKS) and name.count("/") <= 3 for name in names):
        return PackageVerifyError(f"{shown}: package verification failed: {MANIFEST} is missing (the package's other files are there)", hint="copy the package again")
    return UsageError(f"{shown} is not a mobilegen package: no {MANIFEST} at its top level", hint=_PASS_PACKAGE)


def _folder_names(folder: Path) -> list[str]:
    """The package-relative names of the files that mark a package, in ``folder`` or its one sub-folder."""
    found = []
    with os.scandir(folder) as it:
        subs = [e.name for e in itertools.islice(it, 64) if e.is_dir(follow_symlinks=False)]
    for base in ("", *(f"{d}/" for d in subs)):
        found += [base + mark for mark in _PACKAGE_MARKS if os.path.lexists(folder / (base + mark))]
    return found


def _fail(shown: str, problems: list[str]) -> NoReturn:
    n = len(problems)
    details = problems[:MAX_PROBLEM_LINES]
    if n > MAX_PROBLEM_LINES:
        details.append(f"… and {n - MAX_PROBLEM_LINES} more problems")
    raise PackageVerifyError(
        f"{shown}: package verification failed, {n} {'problem' if n == 1 else 'problems'}: {problems[0]}"
        + (" (and more below)" if n > 1 else ""),
        hint=None,
        details=details,
    )


# --- folder and zip ------------------------------------------------------------------------------------


def _verify_folder(folder: Path, shown: str) -> PackageVerification:
    try:
        root = _folder_root(folder)
        if root is None:
            raise _not_a_package(shown, _folder_names(folder))
        files, odd = scan(root, MAX_ENTRIES)
    except OSError as err:
        raise PackageVerifyError(f"{shown}: cannot list the package folder ({err.strerror or err})") from err
    except Unreadable as err:
        raise PackageVerifyError(f"{shown}: {err}") from err
    if odd:
        # Refused before anything is read: a FIFO would block, a link to /dev/zero would never end.
        _fail(shown, [f"{show(rel)}: is {what}, not a regular file (a package holds only regular files)" for rel, what in odd])
    if MANIFEST not in files:
        raise _not_a_package(shown, files)
    return _verify_source(FolderSource(root, files, MAX_MANIFEST_BYTES), shown)


def _folder_root(folder: Path) -> Path | None:
    """``folder`` when the manifest is at its top, its only entry when that is a folder holding one."""
    if os.path.lexists(folder / MANIFEST):
        return folder
    with os.scandir(folder) as it:
        entries = list(itertools.islice(it, 2))
    if len(entries) == 1 and entries[0].is_dir(follow_symlinks=False) and os.path.lexists(Path(entries[0].path) / MANIFEST):
        return Path(entries[0].path)
    return None


def _verify_zip(path: Path, shown: str) -> PackageVerification:
    try:
        f = open_regular(path, follow=True)
    except OSError as err:
        raise UsageError(f"{shown}: cannot be read ({err.strerror or err})") from err
    except Unreadable as err:
        raise UsageError(f"{shown} is not a mobilegen package: it {err}", hint=_PASS_PACKAGE) from err
    with f:
        size = os.fstat(f.fileno()).st_size
        if not zipfile.is_zipfile(f):
            raise UsageError(f"{shown} is not a mobilegen package (neither a folder nor a zip)", hint=_PASS_PACKAGE)
        try:
            zf = zipfile.ZipFile(f)
            infos = zf.infolist()
        except (*ZIP_ERRORS, ValueError, OSError) as err:
            raise PackageVerifyError(f"{shown}: the zip is damaged or unreadable: {err}", hint="copy the package again") from err
        with zf:
            prefix = zip_root(checked_infos(infos, size, shown))
            if prefix is None:
                raise _not_a_package(shown, [i.filename for i in infos if not i.is_dir()])
            try:
                tmp = tempfile.TemporaryDirectory(prefix="mobilegen-verify-")
            except OSError as err:
                raise UsageError(
                    f"cannot create a folder in the temporary folder {tempfile.gettempdir()}: {err.strerror or err}",
                    hint="set TMPDIR to a writable folder with room",
                ) from err
            with tmp:
                return _verify_source(ZipSource(zf, infos, prefix, Path(tmp.name)), shown)


# --- the checks ----------------------------------------------------------------------------------------


def _verify_source(source: Source, shown: str) -> PackageVerification:
    try:
        manifest = parse_manifest(source.manifest_bytes(), reader_version=__version__)
    except Unreadable as err:
        raise PackageVerifyError(f"{shown}: {MANIFEST}: {err}", hint="the package is damaged; copy it again") from err
    except ManifestError as err:
        message = f"{shown} is not a mobilegen package: {err.message}" if err.not_ours else f"{shown}: {err.message}"
        raise PackageVerifyError(message, hint=err.hint) from err
    problems = list(manifest.problems)

    # 1. Every listed file: present, same size, same hash, same exec bit; nothing added.
    _check_files(source, manifest.files, problems)

    # 1b. One copy of each model: every project that copies a model at build time pins that model.
    _check_links(source, manifest.model_links, manifest.files, {m.ort.file for m in manifest.models}, problems)

    # 2. Golden vectors on every packaged .ort, within the manifest's tolerances; 3. the pinned runtimes
    # of its targets can load it.
    golden: list[GoldenCheck] = []
    runtimes: list[RuntimeCheck] = []
    tol = manifest.tolerances
    checked_mgv: set[str] = set()
    for model in manifest.models:
        name = model.ort.file
        ort_path = source.local(name)
        # version 3: each model names its golden vectors and their tolerances (a quantized model has its own)
        npz_name, mgv_name = (model.golden.npz, model.golden.mgv) if model.golden is not None else (GOLDEN_NPZ, GOLDEN_MGV)
        npz_path = source.local(npz_name)
        if tol is not None:
            atol, rtol = (model.golden.atol, model.golden.rtol) if model.golden is not None else (tol.atol, tol.rtol)
            if ort_path is None or npz_path is None:
                problems.append(f"golden vectors not re-run: {show(name)} or {show(npz_name)} is missing")
            else:
                mgv = source.local(mgv_name) if mgv_name not in checked_mgv else None  # each golden file is checked once
                checked_mgv.add(mgv_name)
                golden += rerun_golden(ort_path, npz_path, mgv, atol, rtol, problems, ort_name=show(name), unverified=manifest.unverified,
                                       npz_name=show(npz_name), mgv_name=show(mgv_name))
                # every further case: the device replays the first, the package must hold up on all of them
                for case in _further_cases(model.golden, npz_name, manifest.files):
                    case_path = source.local(case)
                    if case_path is None:
                        problems.append(f"golden vectors not re-run: {show(case)} is missing")
                        continue
                    golden += rerun_golden(ort_path, case_path, None, atol, rtol, problems, ort_name=show(name),
                                           unverified=manifest.unverified, npz_name=show(case))
        unknown = [c for c in model.channels if c not in manifest.mobile_runtimes]
        if unknown:
            problems.append(f"{MANIFEST}: {show(name)} names runtime channel(s) {show(', '.join(unknown))} not in versions.mobile_runtimes")
        pinned = {c: manifest.mobile_runtimes[c] for c in model.channels if c in manifest.mobile_runtimes}
        runtimes += check_runtimes(ort_path, model.ort, pinned, problems, ort_name=show(name))

    # 2b. --runtime litert: the golden vectors on each other runtime's fp32 model, with its own host runtime
    # (an int8 one was judged by the accuracy gate against the fp32 model at build time, not by these tolerances).
    if tol is not None:
        for entry in manifest.runtime_models:
            if not isinstance(entry.get("file"), str) or entry.get("quantization"):
                continue
            path, npz = _local_model(source, entry["file"], manifest.files), source.local(GOLDEN_NPZ)
            if path is None or npz is None:
                problems.append(f"golden vectors not re-run: {show(entry['file'])} or {show(GOLDEN_NPZ)} is missing")
                continue
            golden += rerun_golden_runtime(path, npz, tol.atol, tol.rtol, problems, model_name=show(entry["file"]), npz_name=show(GOLDEN_NPZ))

    if problems or tol is None:  # a missing tolerance is one of the problems
        _fail(shown, problems)
    return PackageVerification(
        package=shown,
        container=source.container,
        schema_version=manifest.schema_version,
        model_name=manifest.model_name,
        files_checked=len(manifest.files) + 1,
        golden=tuple(golden),
        runtimes=tuple(runtimes),
        models=tuple(m.ort.file for m in manifest.models),
        atol=tol.atol,
        rtol=tol.rtol,
        unverified=tuple(o for o in manifest.unverified if any(g.output == o for g in golden)),  # only what the golden vectors hold
        model_tolerances=tuple(
            (m.ort.file, m.golden.atol, m.golden.rtol) for m in manifest.models if m.golden is not None and (m.golden.atol, m.golden.rtol) != (tol.atol, tol.rtol)
        ),
    )


_CASE_NAME = re.compile(r"golden_case([1-9][0-9]{0,5})\.npz")


def _local_model(source: Source, rel: str, files: Iterable[FileEntry]) -> Path | None:
    """A runtime model's local path: its file, or for a folder model (Core AI's ``.aimodel``, listed file by
    file in the manifest) the folder, when every file in it is local; None otherwise."""
    found: Path | None = source.local(rel)
    if found is not None:
        return found
    inside = [f.path for f in files if f.path.startswith(rel + "/")]
    local = [p for p in (source.local(f) for f in inside) if p is not None]
    if not inside or len(local) != len(inside):
        return None
    folder = local[0]
    for _part in PurePosixPath(inside[0][len(rel) + 1 :]).parts:
        folder = folder.parent
    return folder


def _further_cases(golden: GoldenInfo | None, npz_name: str, listed: tuple[FileEntry, ...]) -> tuple[str, ...]:
    """The cases after ``npz_name`` a model reproduces: the manifest's ``cases``, or in a package written
    before it named them, the ``golden_case<i>.npz`` files listed beside ``npz_name``, in case order."""
    if golden is not None and golden.cases is not None:
        return golden.cases
    folder = npz_name.rpartition("/")[0]
    found = []
    for e in listed:
        where, _, base = e.path.rpartition("/")
        m = _CASE_NAME.fullmatch(base)
        if where == folder and m is not None:
            found.append((int(m.group(1)), e.path))
    return tuple(path for _i, path in sorted(found))


def _check_files(source: Source, listed: tuple[FileEntry, ...], problems: list[str]) -> None:
    for e in listed:
        entry = source.entries.get(e.path)
        if entry is None:
            problems.append(f"{show(e.path)}: missing (listed in {MANIFEST})")
            continue
        same_size = entry.size == e.size
        if not same_size:
            problems.append(f"{show(e.path)}: changed (size {entry.size} bytes, manifest says {e.size})")
        # A zip entry is unpacked only for the golden re-run, and never past the size the manifest lists.
        keep = is_golden_file(e.path) and entry.size <= e.size
        if same_size or keep:
            try:
                digest = source.digest(e.path, keep=keep)
            except Unreadable as err:
                problems.append(f"{show(e.path)}: {err}")
                continue
            if same_size and digest != e.sha256:
                problems.append(f"{show(e.path)}: changed (sha256 {digest[:12]}…, manifest says {show(e.sha256[:12])}…)")
        if os.name == "posix" and e.executable != entry.executable:
            lost = "lost" if e.executable else "added"
            problems.append(f"{show(e.path)}: executable bit {lost} (manifest says executable={e.executable})")
    listed_paths = {e.path for e in listed}
    _check_unlisted(source, [rel for rel in source.entries if rel != MANIFEST and rel not in listed_paths], listed, problems)


_REVERIFY = "verify the package as delivered (a fresh copy or the zip), not a project built in"


def _check_unlisted(source: Source, unlisted: list[str], listed: tuple[FileEntry, ...], problems: list[str]) -> None:
    """Files the manifest does not list, each a problem, named for what they most likely are: the files of
    a folder a build or an install makes (``node_modules/``, ``build/``: the targets' ``build_made``), one
    line per folder; a copy of one of the package's models (a project's build step copies it in); else a
    file added after packaging."""
    from mobilegen import targets

    made = {name for n in targets.names() for name in targets.get(n).build_made}
    by_size: dict[int, list[FileEntry]] = {}
    for e in listed:
        if e.path.endswith((".ort", ".onnx")):
            by_size.setdefault(e.size, []).append(e)
    folders: dict[str, int] = {}
    for rel in unlisted:
        parts = rel.split("/")
        at = next((i for i, part in enumerate(parts[:-1]) if part in made), None)
        if at is not None:
            folder = "/".join(parts[: at + 1])
            folders[folder] = folders.get(folder, 0) + 1
            continue
        entry = source.entries[rel]
        same = by_size.get(entry.size, [])
        try:
            digest = source.digest(rel) if same else ""
        except Unreadable:
            digest = ""
        copy_of = next((e.path for e in same if e.sha256 == digest), None)
        if copy_of is not None:
            problems.append(f"{show(rel)}: not listed in {MANIFEST}: a copy of {show(copy_of)}, put there by a project's build step; {_REVERIFY}")
        else:
            problems.append(f"{show(rel)}: not listed in {MANIFEST} (added after packaging)")
    for folder, n in folders.items():
        problems.append(f"{show(folder)}/: {n} {'file' if n == 1 else 'files'} not listed in {MANIFEST}, made by building or installing in the project; {_REVERIFY}")


MAX_PIN_FILE_BYTES = 1 << 20  # a Gradle script or a shell script: a few kB


def _check_links(source: Source, links: tuple[LinkEntry, ...], listed: tuple[FileEntry, ...], orts: set[str], problems: list[str]) -> None:
    """Each project that copies a model of the package at build time (one copy of each model file): the
    model is one the manifest lists and verify re-runs, with the size and sha256 the link says, present in
    the package; the project's file that pins it is listed and pins that sha256."""
    files = {e.path: e for e in listed}
    for link in links:
        where = f"{show(link.file)}: the {show(link.target)} project copies {show(link.model)} at build time"
        model = files.get(link.model)
        if link.model not in orts or model is None:
            problems.append(f"{where}, which is not a model {MANIFEST} lists")
            continue
        if (model.size, model.sha256) != (link.size, link.sha256):
            problems.append(f"{where}, but pins another size or sha256 than {MANIFEST} lists for it")
        if link.model not in source.entries:
            problems.append(f"{where}, and it is missing: that project cannot build (copy the package again)")
        if link.file not in files or link.file not in source.entries:
            problems.append(f"{where}, but that file is not in the package")
            continue
        try:
            text = source.read(link.file, MAX_PIN_FILE_BYTES)
        except Unreadable as err:
            problems.append(f"{show(link.file)}: {err}")
            continue
        if link.sha256.encode("ascii", "replace") not in text:
            problems.append(f"{where}, but does not pin its sha256 {show(link.sha256[:12])}…")
