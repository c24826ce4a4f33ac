"""The hand-off package: reports, README and ``manifest.json`` for a built folder; a deterministic zip;
and ``verify_package`` that checks a folder or zip against its manifest.

Layout (relative to the package root; constants in :mod:`mobilegen.artifacts`)::

    android/ ios/                 generated projects (per target)
    model/model.onnx model.ort required_operators.config
    golden/golden.npz golden.mgv tolerances.json
    report/coverage.json report.md report.html
    README.md                     for the app team
    manifest.json                 written last; lists every other file with sha256 and size

The manifest is canonical JSON (2-space indent, ASCII, keys in a fixed order, trailing newline) and
carries ``manifest_sha256``, the sha256 of its own canonical text without that key: together with the
per-file hashes, a change of any byte anywhere in the package is caught by ``verify_package``. It is an
integrity check, not a signature (whoever can edit the package can recompute the hashes).

torch and onnxruntime are never imported at module import time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from mobilegen import __version__
from mobilegen.artifacts import (
    ANDROID_DIR,
    GOLDEN_MGV,
    GOLDEN_NPZ,
    GOLDEN_TOLERANCES,
    IOS_DIR,
    MANIFEST,
    MODEL_ONNX,
    MODEL_OPS_CONFIG,
    MODEL_ORT,
    README,
    REPORT_DIR,
    BuildResult,
)
from mobilegen.errors import MobilegenError, PackageError, PackageVerifyError, UsageError
from mobilegen.load import sha256_file
from mobilegen.markdown import md_code, md_escape
from mobilegen.ortformat import format_version
from mobilegen.report import (
    SIZED_FILES,
    coverage_json,
    derived_warnings,
    jsonable,
    placement,
    render_html,
    render_markdown,
    tool_versions,
)

MANIFEST_SCHEMA_VERSION = 1
MANIFEST_KIND = "mobilegen-package"
SELF_HASH_KEY = "manifest_sha256"
REPORT_COVERAGE = f"{REPORT_DIR}/coverage.json"
REPORT_MD = f"{REPORT_DIR}/report.md"
REPORT_HTML = f"{REPORT_DIR}/report.html"

# Files the pipeline must have put into the staging folder before finalize_package.
REQUIRED_FILES = (MODEL_ONNX, MODEL_ORT, MODEL_OPS_CONFIG, GOLDEN_NPZ, GOLDEN_MGV, GOLDEN_TOLERANCES)

ZIP_EPOCH_MIN = 315532800  # 1980-01-01T00:00:00Z, the earliest time a zip entry can hold
ZIP_EPOCH_MAX = 4354819198  # 2107-12-31T23:59:58Z, the latest
_CHUNK = 1 << 20


# ---------------------------------------------------------------------------------------------------
# Hashing and listing


def _is_exec(path: Path) -> bool:
    return bool(path.stat().st_mode & 0o111)


def _walk(root: Path) -> tuple[list[str], list[str]]:
    """Regular files under ``root`` as sorted relative POSIX paths, and anything else found (symlinks,
    sockets...) that a package may not contain."""
    files: list[str] = []
    odd: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        for name in list(dirnames):
            if (d / name).is_symlink():
                odd.append((d / name).relative_to(root).as_posix())
                dirnames.remove(name)
        for name in filenames:
            p = d / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink() or not stat.S_ISREG(p.lstat().st_mode):
                odd.append(rel)
            else:
                files.append(rel)
    return sorted(files), sorted(odd)


def file_entries(root: Path, *, exclude: tuple[str, ...] = (MANIFEST,)) -> list[dict[str, Any]]:
    """``[{"path", "size", "sha256", "executable"}]`` for every regular file, sorted by path."""
    files, odd = _walk(root)
    if odd:
        raise PackageError(
            "the package folder contains entries that are not regular files: " + ", ".join(odd),
            hint="a package may hold only regular files (no symlinks); this is a bug in mobilegen",
        )
    out = []
    for rel in files:
        if rel in exclude:
            continue
        p = root / rel
        out.append({"path": rel, "size": p.stat().st_size, "sha256": sha256_file(p), "executable": _is_exec(p)})
    return out


# ---------------------------------------------------------------------------------------------------
# Manifest


def canonical_json(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=True, allow_nan=False) + "\n"


def _self_hash(doc: Mapping[str, Any]) -> str:
    body = {k: v for k, v in doc.items() if k != SELF_HASH_KEY}
    return hashlib.sha256(canonical_json(body).encode("ascii")).hexdigest()


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


_ABS_PATH = re.compile(r"^(/|[A-Za-z]:[\\/]|\\\\)")


def _scrub_paths(value: Any) -> Any:
    """Options may carry paths: keep only the file name of anything absolute (no absolute paths in a package)."""
    if isinstance(value, Path):
        return value.name
    if isinstance(value, str) and _ABS_PATH.match(value):
        return PurePosixPath(value.replace("\\", "/")).name
    if isinstance(value, Mapping):
        return {str(k): _scrub_paths(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub_paths(v) for v in value]
    return value


def coverage_summary(report: Any) -> dict[str, Any]:
    cpu_nodes = sum(1 for _i, _n, _o, p in placement(report) if not p)
    return {
        "label": report.label,
        "ep": report.ep,
        "format": report.format,
        "total_nodes": report.total_nodes,
        "supported_nodes": report.supported_nodes,
        "percent": round(report.percent, 2),
        "partitions": len(report.partitions),
        "cpu_nodes": cpu_nodes,
        "verdict": report.verdict,
        "refused_ops": [{"op": op, "nodes": n, "reasons": list(r)} for op, n, r in report.unsupported_summary()],
        "settings": dict(report.settings),
    }


def build_manifest(result: BuildResult, files: list[dict[str, Any]], *, epoch: int | None) -> dict[str, Any]:
    ver = result.verification
    ort = result.ort
    doc: dict[str, Any] = {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "kind": MANIFEST_KIND,
        "model_name": result.model_name,
        "targets": list(result.targets),
        "versions": tool_versions(result),
        "source": {"file": result.loaded.source.name, "kind": result.loaded.kind, "sha256": result.loaded.sha256},
        "io": result.onnx.io.to_dict(),
        "onnx": {
            "opset": result.onnx.opset,
            "exporter": result.onnx.exporter,
            "fallback_reason": result.onnx.fallback_reason,
            "example_sizes": {k: result.onnx.example_sizes[k] for k in sorted(result.onnx.example_sizes)},
        },
        "ort": {
            "file": MODEL_ORT,
            "format_version": ort.ort_format_version,
            "max_opset": ort.max_opset,
            "optimization_style": ort.optimization_style,
            "optimization_level": ort.optimization_level,
        },
        "options": _scrub_paths(result.options),
        "tolerances": {"atol": ver.atol, "rtol": ver.rtol},
        "verification": ver.to_dict(),
        "coverage": [coverage_summary(c) for c in result.coverage],
        "warnings": derived_warnings(result),
        "source_date_epoch": epoch,
        "files": files,
    }
    doc = jsonable(doc)
    doc[SELF_HASH_KEY] = _self_hash(doc)
    return doc


# ---------------------------------------------------------------------------------------------------
# The app team's README


def render_readme(result: BuildResult, root: Path) -> str:
    v = tool_versions(result)
    runtimes = v["mobile_runtimes"]
    ver = result.verification
    name = md_escape(result.model_name)
    lines = [
        f"# {name}: on-device model package",
        "",
        f"Built by mobilegen {__version__} from {md_code(result.loaded.source.name)} "
        f"({result.loaded.kind}, sha256 `{result.loaded.sha256}`).",
        "Every file in this folder is listed with its size and sha256 in `manifest.json`; "
        "`mobilegen verify <this folder or its .zip>` checks them, re-runs the golden vectors on "
        "`model/model.ort` and checks that the pinned runtime can load it.",
        "",
        "## What is here",
        "",
        "| path | what |",
        "|---|---|",
    ]
    if ANDROID_DIR in result.targets:
        extra = " (start with `android/README.md`)" if (root / ANDROID_DIR / "README.md").is_file() else ""
        lines.append(
            f"| `android/` | Android Studio project (Gradle) running the model with onnxruntime-android "
            f"{runtimes.get('maven', '?')}{extra} |"
        )
    if IOS_DIR in result.targets:
        extra = " (start with `ios/README.md`)" if (root / IOS_DIR / "README.md").is_file() else ""
        channel = "swiftpm" if "swiftpm" in runtimes else next(iter(runtimes), "?")
        lines.append(f"| `ios/` | Xcode project running the model with onnxruntime {runtimes.get(channel, '?')} ({channel}){extra} |")
    lines += [
        f"| `{MODEL_ORT}` | the model to ship: ORT format version {result.ort.ort_format_version}, "
        f"needs ai.onnx opset ≤ {result.ort.max_opset} |",
        f"| `{MODEL_ONNX}` | the same model as ONNX (opset {result.onnx.opset}), for inspection (e.g. Netron) and desktop tests |",
        f"| `{MODEL_OPS_CONFIG}` | the operators the model needs, for a size-reduced custom ONNX Runtime build |",
        f"| `{GOLDEN_NPZ}` | reference inputs and expected outputs (NumPy; keys `input:<name>`, `output:<name>`) |",
        f"| `{GOLDEN_MGV}` | the same tensors in a small binary format the generated app tests read on the device |",
        f"| `{GOLDEN_TOLERANCES}` | the tolerances outputs must meet |",
        f"| `{REPORT_HTML}` | open in a browser: verification, sizes, versions, warnings, per-EP coverage with a partition picture |",
        f"| `{REPORT_MD}`, `{REPORT_COVERAGE}` | the same facts as text and as JSON |",
        f"| `{MANIFEST}` | versions, options, results and the sha256 of every file (schema version {MANIFEST_SCHEMA_VERSION}) |",
        "",
        "## Inputs and outputs",
        "",
        "| role | name | dtype | shape |",
        "|---|---|---|---|",
    ]
    for role, tensors in (("input", result.onnx.io.inputs), ("output", result.onnx.io.outputs)):
        for t in tensors:
            shape = "[" + ", ".join(str(d) for d in t.shape) + "]" if t.shape else "scalar"
            lines.append(f"| {role} | {md_escape(t.name)} | {t.dtype} | {md_escape(shape)} |")
    lines += [
        "",
        "## Accuracy",
        "",
        f"The exported models were checked against the original model's outputs: "
        f"**{'passed' if ver.passed else 'FAILED'}** (atol {ver.atol:g}, rtol {ver.rtol:g}). The generated app "
        f"tests compare on-device outputs with `{GOLDEN_MGV}` within the same tolerances.",
        "",
        "## Hardware acceleration",
        "",
    ]
    if result.coverage:
        for c in result.coverage:
            lines.append(
                f"- {md_escape(c.label)}: {c.percent:.1f}% of nodes supported ({c.supported_nodes}/{c.total_nodes}), "
                f"{len(c.partitions)} partition(s), verdict {md_escape(c.verdict)}"
            )
        lines.append(f"- details, refused ops and reasons: `{REPORT_HTML}`")
    else:
        lines.append("No execution provider was analysed; the model runs on the CPU EP.")
    warnings = derived_warnings(result)
    lines += ["", "## Warnings", ""]
    lines += [f"- {md_escape(w)}" for w in warnings] or ["None."]
    lines += [
        "",
        "## Checking this package",
        "",
        "```",
        "pip install mobilegen",
        "mobilegen verify path/to/this-folder   # or path/to/the.zip",
        "```",
        "",
        "It exits 0 when every hash matches, nothing was added or removed, the golden vectors reproduce on "
        "`model/model.ort` and the pinned runtime can load it; otherwise it names each problem and exits 9.",
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------
# finalize_package


def finalize_package(root: Path, result: BuildResult) -> dict[str, Any]:
    """Write ``report/``, ``README.md`` and, last, ``manifest.json`` into the staging folder ``root``.

    Returns the manifest. Raises PackageError when the staging folder lacks a file of the layout, holds
    something that is not a regular file, or contains the build folder's absolute path (not reproducible).
    """
    root = Path(root)
    if not root.is_dir():
        raise PackageError(f"package folder {root} does not exist", hint="this is a bug in mobilegen's pipeline")
    missing = [rel for rel in REQUIRED_FILES if not (root / rel).is_file()]
    missing += [f"{t}/" for t in result.targets if not (root / t).is_dir()]
    if missing:
        raise PackageError(
            "the package folder lacks " + ", ".join(missing),
            hint="this is a bug in mobilegen's pipeline: every stage must write its files before packaging",
        )
    epoch = source_date_epoch()
    sizes = {rel: (root / rel).stat().st_size for rel in SIZED_FILES if (root / rel).is_file()}
    try:
        (root / REPORT_DIR).mkdir(exist_ok=True)
        _write_text(root / REPORT_COVERAGE, coverage_json(result))
        _write_text(root / REPORT_MD, render_markdown(result, sizes=sizes))
        _write_text(root / REPORT_HTML, render_html(result, sizes=sizes))
        _write_text(root / README, render_readme(result, root))
    except OSError as err:
        raise PackageError(f"cannot write the package reports into {root}: {err}") from err
    files = file_entries(root)
    _refuse_absolute_paths(root, result, files)
    manifest = build_manifest(result, files, epoch=epoch)
    try:
        _write_text(root / MANIFEST, canonical_json(manifest))
    except OSError as err:
        raise PackageError(f"cannot write {MANIFEST}: {err}") from err
    return manifest


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))  # bytes: no platform newline translation


def _refuse_absolute_paths(root: Path, result: BuildResult, files: list[dict[str, Any]]) -> None:
    needles = {str(root.resolve()), str(root.absolute()), str(result.out_dir)}
    needles = {n for n in needles if Path(n).is_absolute() and len(Path(n).parts) > 2}
    if not needles:
        return
    raw = [n.encode("utf-8") for n in needles]
    leaks = []
    for entry in files:
        data = (root / entry["path"]).read_bytes()
        if any(r in data for r in raw):
            leaks.append(entry["path"])
    if leaks:
        raise PackageError(
            "package files contain the build folder's absolute path, so the package is not reproducible: "
            + ", ".join(leaks),
            hint="this is a bug in mobilegen: write package-relative paths (e.g. strip the comment header "
            "of required_operators.config)",
        )


# ---------------------------------------------------------------------------------------------------
# Deterministic zip


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
        raise PackageError(f"invalid zip folder name {prefix!r}", hint="this is a bug in mobilegen")
    files, odd = _walk(folder)
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
                mode = 0o755 if _is_exec(src) else 0o644
                info.external_attr = (stat.S_IFREG | mode) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                info.file_size = src.stat().st_size  # decides zip64 deterministically
                with src.open("rb") as fin, zf.open(info, "w") as fout:
                    shutil.copyfileobj(fin, fout, _CHUNK)
        os.replace(tmp, zip_path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise PackageError(f"cannot write {zip_path}: {err}", hint="check the output folder is writable") from err
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return zip_path


# ---------------------------------------------------------------------------------------------------
# verify_package


@dataclass(frozen=True)
class GoldenCheck:
    output: str
    max_abs: float
    max_rel: float
    passed: bool
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        return jsonable(
            {"output": self.output, "max_abs": self.max_abs, "max_rel": self.max_rel, "passed": self.passed, "note": self.note}
        )


@dataclass(frozen=True)
class RuntimeCheck:
    channel: str
    version: str
    loadable: bool
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"channel": self.channel, "version": self.version, "loadable": self.loadable, "note": self.note}


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
            "golden": [g.to_dict() for g in self.golden],
            "runtimes": [r.to_dict() for r in self.runtimes],
            "problems": list(self.problems),
        }


def verify_package(path: Path) -> PackageVerification:
    """Check a package folder or zip against its manifest; raise one PackageVerifyError naming every problem."""
    path = Path(path)
    shown = str(path)
    if not path.exists():
        raise UsageError(f"{shown}: no such file or folder", hint="pass a package folder or the .zip mobilegen package wrote")
    if path.is_dir():
        return _verify_root(_package_root(path, shown), shown, "folder", zip_modes=None)
    if not zipfile.is_zipfile(path):
        raise PackageVerifyError(
            f"{shown} is not a mobilegen package (neither a folder nor a zip)",
            hint="pass the folder or the .zip written by mobilegen package",
        )
    with tempfile.TemporaryDirectory(prefix="mobilegen-verify-") as tmp:
        modes = _safe_extract(path, Path(tmp), shown)
        root = _package_root(Path(tmp), shown)
        rel_root = root.relative_to(Path(tmp)).as_posix()
        prefix = "" if rel_root == "." else rel_root + "/"
        zip_modes = {name[len(prefix) :]: m for name, m in modes.items() if name.startswith(prefix)}
        return _verify_root(root, shown, "zip", zip_modes=zip_modes)


def _safe_extract(zip_path: Path, dest: Path, shown: str) -> dict[str, int]:
    """Extract into ``dest`` after checking every entry stays inside it; returns entry → permission bits."""
    modes: dict[str, int] = {}
    try:
        with zipfile.ZipFile(zip_path) as zf:
            infos = zf.infolist()
            seen: set[str] = set()
            for info in infos:
                name = info.filename
                why = _unsafe_entry(info)
                if why:
                    raise PackageVerifyError(
                        f"{shown}: refusing to extract entry {name!r}: {why}; nothing was extracted",
                        hint="this zip was not written by mobilegen package (or was altered); do not unpack it",
                    )
                if name in seen:
                    raise PackageVerifyError(f"{shown}: entry {name!r} appears twice; nothing was extracted")
                seen.add(name)
            base = dest.resolve()
            for info in infos:
                if info.is_dir():
                    continue
                target = (dest / info.filename).resolve()
                if not target.is_relative_to(base):  # belt and braces after _unsafe_entry
                    raise PackageVerifyError(f"{shown}: refusing to extract entry {info.filename!r}: it escapes the folder")
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, target.open("xb") as out:
                    shutil.copyfileobj(src, out, _CHUNK)
                modes[info.filename] = (info.external_attr >> 16) & 0o777
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, NotImplementedError) as err:
        raise PackageVerifyError(f"{shown}: the zip is damaged or unreadable: {err}", hint="copy the package again") from err
    except FileExistsError as err:
        raise PackageVerifyError(f"{shown}: entry {err.filename!r} collides with another entry") from err
    return modes


def _unsafe_entry(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    if not name or "\x00" in name:
        return "empty or NUL in the name"
    if name.startswith("/") or _ABS_PATH.match(name):
        return "absolute path"
    if "\\" in name:
        return "backslash in the path"
    if ".." in PurePosixPath(name).parts:
        return "it escapes the folder ('..')"
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "it is a symbolic link"
    if mode and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)) and stat.S_IFMT(mode):
        return "it is not a regular file"
    return None


def _package_root(folder: Path, shown: str) -> Path:
    if (folder / MANIFEST).is_file():
        return folder
    entries = [p for p in folder.iterdir()]
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink() and (entries[0] / MANIFEST).is_file():
        return entries[0]
    raise PackageVerifyError(
        f"{shown} is not a mobilegen package: no {MANIFEST} at its top level",
        hint="pass the folder or the .zip written by mobilegen package",
    )


def _load_manifest(root: Path, shown: str) -> tuple[dict[str, Any], list[str]]:
    """Parse and check the manifest's form. Fatal problems raise (one line); others are returned."""
    raw = (root / MANIFEST).read_bytes()
    try:
        text = raw.decode("utf-8")
        doc = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise PackageVerifyError(
            f"{shown}: {MANIFEST} is not valid JSON ({err})", hint="the package is damaged; copy it again"
        ) from err
    if not isinstance(doc, dict) or "schema_version" not in doc:
        raise PackageVerifyError(f"{shown} is not a mobilegen package: {MANIFEST} has no schema_version")
    schema = doc["schema_version"]
    if schema != MANIFEST_SCHEMA_VERSION:
        raise PackageVerifyError(
            f"{shown}: manifest schema version {schema!r} is not supported by mobilegen {__version__} "
            f"(it reads version {MANIFEST_SCHEMA_VERSION})",
            hint="verify it with the mobilegen version that wrote it (see versions.mobilegen in manifest.json)",
        )
    problems = []
    if doc.get(SELF_HASH_KEY) != _self_hash(doc):
        problems.append(f"{MANIFEST}: changed after packaging ({SELF_HASH_KEY} does not match its content)")
    elif canonical_json(doc) != text:
        problems.append(f"{MANIFEST}: changed after packaging (its text is not in the canonical form mobilegen writes)")
    return doc, problems


def _manifest_files(doc: Mapping[str, Any], problems: list[str]) -> list[dict[str, Any]]:
    files = doc.get("files")
    if not isinstance(files, list):
        problems.append(f"{MANIFEST}: 'files' is missing or not a list")
        return []
    good = []
    for i, e in enumerate(files):
        if (
            not isinstance(e, dict)
            or not isinstance(e.get("path"), str)
            or not isinstance(e.get("size"), int)
            or not isinstance(e.get("sha256"), str)
        ):
            problems.append(f"{MANIFEST}: files[{i}] is malformed")
            continue
        p = PurePosixPath(e["path"])
        if p.is_absolute() or ".." in p.parts or e["path"] == MANIFEST:
            problems.append(f"{MANIFEST}: files[{i}] has an invalid path {e['path']!r}")
            continue
        good.append(e)
    return good


def _verify_root(root: Path, shown: str, container: str, *, zip_modes: dict[str, int] | None) -> PackageVerification:
    doc, problems = _load_manifest(root, shown)
    listed = _manifest_files(doc, problems)

    # 1. Every listed file: present, same size, same hash, same exec bit.
    present, odd = _walk(root)
    present_set = set(present)
    for rel in odd:
        problems.append(f"{rel}: not a regular file (symlinks and special files are not allowed in a package)")
    for e in listed:
        rel = e["path"]
        p = root / rel
        if rel not in present_set:
            problems.append(f"{rel}: missing (listed in {MANIFEST})")
            continue
        size = p.stat().st_size
        digest = sha256_file(p)
        if size != e["size"]:
            problems.append(f"{rel}: changed (size {size} bytes, manifest says {e['size']})")
        elif digest != e["sha256"]:
            problems.append(f"{rel}: changed (sha256 {digest[:12]}…, manifest says {e['sha256'][:12]}…)")
        want_exec = e.get("executable")
        if isinstance(want_exec, bool) and os.name == "posix":
            has_exec = bool((zip_modes.get(rel, 0) if zip_modes is not None else p.stat().st_mode) & 0o111)
            if want_exec != has_exec:
                problems.append(f"{rel}: executable bit {'lost' if want_exec else 'added'} (manifest says executable={want_exec})")
    listed_paths = {e["path"] for e in listed}
    for rel in present:
        if rel != MANIFEST and rel not in listed_paths:
            problems.append(f"{rel}: not listed in {MANIFEST} (added after packaging)")

    # 2. Golden vectors on the packaged .ort, within the manifest's tolerances.
    tol = _dict(doc.get("tolerances"))
    atol = _as_float(tol.get("atol"))
    rtol = _as_float(tol.get("rtol"))
    golden: list[GoldenCheck] = []
    if atol is None or rtol is None:
        problems.append(f"{MANIFEST}: tolerances.atol / tolerances.rtol missing or not numbers")
    elif not (root / MODEL_ORT).is_file() or not (root / GOLDEN_NPZ).is_file():
        problems.append(f"golden vectors not re-run: {MODEL_ORT} or {GOLDEN_NPZ} is missing")
    else:
        golden = _rerun_golden(root, atol, rtol, problems)

    # 3. The pinned runtimes can load the model.
    runtimes = _check_runtimes(root, doc, problems)

    if problems:
        n = len(problems)
        raise PackageVerifyError(
            f"{shown}: package verification failed, {n} {'problem' if n == 1 else 'problems'}: {problems[0]}"
            + (" (and more below)" if n > 1 else ""),
            hint=None,
            details=problems,
        )
    return PackageVerification(
        package=shown,
        container=container,
        schema_version=int(doc["schema_version"]),
        model_name=str(doc.get("model_name", "")),
        files_checked=len(listed) + 1,
        golden=tuple(golden),
        runtimes=tuple(runtimes),
        atol=float(atol or 0.0),
        rtol=float(rtol or 0.0),
    )


def _dict(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _as_float(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def _rerun_golden(root: Path, atol: float, rtol: float, problems: list[str]) -> list[GoldenCheck]:
    import numpy as np

    from mobilegen.golden import decode_mgv, read_npz
    from mobilegen.verify import compare  # the gate's own comparison, so verify and build agree

    try:
        case = read_npz(root / GOLDEN_NPZ)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as err:
        problems.append(f"{GOLDEN_NPZ}: cannot be read ({err})")
        return []
    if not case.outputs:
        problems.append(f"{GOLDEN_NPZ}: holds no expected outputs (keys 'output:<name>')")
        return []

    mgv = root / GOLDEN_MGV
    if mgv.is_file():
        try:
            dev = decode_mgv(mgv.read_bytes())
            diff = _case_differences(case, dev, np)
            if diff:
                problems.append(f"{GOLDEN_MGV}: disagrees with {GOLDEN_NPZ} ({diff})")
        except Exception as err:  # noqa: BLE001 — any decode failure (struct, dtype, reshape) is a finding
            problems.append(f"{GOLDEN_MGV}: cannot be decoded ({type(err).__name__}: {err})")

    try:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        sess = ort.InferenceSession(str(root / MODEL_ORT), sess_options=opts, providers=["CPUExecutionProvider"])
        feeds = {k: v for k, v in case.inputs.items()}
        wanted = [o.name for o in sess.get_outputs()]
        missing_in = [i.name for i in sess.get_inputs() if i.name not in feeds]
        if missing_in:
            problems.append(f"{GOLDEN_NPZ}: has no input for model input(s) {', '.join(missing_in)}")
            return []
        results = sess.run(None, feeds)
        version = ort.__version__
    except Exception as err:  # noqa: BLE001 — onnxruntime raises its own exception types; each is a finding
        problems.append(f"{MODEL_ORT}: onnxruntime could not run it on the golden inputs ({type(err).__name__}: {err})")
        return []

    got = dict(zip(wanted, results, strict=True))
    checks = []
    for name, expected in case.outputs.items():
        if name not in got:
            problems.append(f"golden output {name}: the packaged model has no such output")
            continue
        max_abs, max_rel, _cos, _top1, ok, note = compare(name, np.asarray(expected), np.asarray(got[name]), atol, rtol)
        if note.startswith("shape"):
            problems.append(f"golden output {name}: {note}")
            checks.append(GoldenCheck(name, max_abs, max_rel, False, "shape mismatch"))
            continue
        checks.append(GoldenCheck(name, max_abs, max_rel, ok, f"onnxruntime {version} CPU"))
        if not ok:
            problems.append(
                f"golden output {name}: max abs diff {max_abs:.3g} (max rel {max_rel:.3g}) is outside "
                f"atol {atol:g} + rtol {rtol:g}·|expected| on {MODEL_ORT}"
            )
    return checks


def _case_differences(a: Any, b: Any, np: Any) -> str:
    for role in ("inputs", "outputs"):
        x, y = getattr(a, role), getattr(b, role)
        if list(x) != list(y):
            return f"{role} {sorted(x)} vs {sorted(y)}"
        for k in x:
            if x[k].dtype != y[k].dtype or x[k].shape != y[k].shape or not np.array_equal(x[k], y[k], equal_nan=True):
                return f"{role[:-1]} {k} differs"
    return ""


def _check_runtimes(root: Path, doc: Mapping[str, Any], problems: list[str]) -> list[RuntimeCheck]:
    from mobilegen.runtimes import check_loadable, find_release

    ort_info = _dict(doc.get("ort"))
    pinned = _dict(_dict(doc.get("versions")).get("mobile_runtimes"))
    max_opset = ort_info.get("max_opset")
    fmt = ort_info.get("format_version")
    if not isinstance(max_opset, int) or not (fmt is None or isinstance(fmt, int)):
        problems.append(f"{MANIFEST}: ort.max_opset / ort.format_version missing or not integers")
        return []
    actual_fmt = _ort_format_version(root / MODEL_ORT)
    if actual_fmt is not None and fmt is not None and actual_fmt != fmt:
        problems.append(f"{MODEL_ORT}: is ORT format version {actual_fmt}, manifest says {fmt}")
    if not pinned:
        problems.append(f"{MANIFEST}: no pinned mobile runtime recorded (versions.mobile_runtimes)")
    checks = []
    for channel in sorted(pinned):
        version = str(pinned[channel])
        try:
            release = find_release(version, channel)
            check_loadable(release, max_opset=max_opset, ort_format_version=fmt, channel=channel)
        except MobilegenError as err:
            problems.append(f"runtime {channel} {version}: {err.message}")
            checks.append(RuntimeCheck(channel, version, False, err.message))
            continue
        checks.append(RuntimeCheck(channel, version, True, f"loads ORT format {fmt}, ai.onnx opset ≤ {release.max_opset}"))
    return checks


def _ort_format_version(path: Path) -> int | None:
    """The ORT-format version recorded in the .ort flatbuffer (None when it cannot be read)."""
    try:
        return format_version(path.read_bytes())
    except OSError:
        return None
