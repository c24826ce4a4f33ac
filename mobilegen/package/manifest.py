"""``manifest.json`` (schema version 2): one typed definition, used by the writer and by ``verify``.

Version 2 replaced version 1's ``ort`` (one model for every target) with ``models``: one entry per model
the package ships (one for every target, or one per target when their graphs differ), each with its
targets, the runtime channels that load it, its files and the graph passes applied to it; coverage
entries gained ``before`` and ``fixes``. Version 3 added ``options.quantize`` and, per model, ``golden``
(its golden vectors and their tolerances: a quantized model reproduces its own outputs) and
``quantization``. Version 4 added ``model_links``: one copy of each model file, the projects copy theirs
from model/ at build time, and each link names the project file that pins the model's size and sha256.
``verify`` reads all four versions.

The writer builds a :class:`Manifest` and writes :meth:`Manifest.text`: canonical JSON (2-space indent,
ASCII, keys in a fixed order, trailing newline) carrying ``manifest_sha256``, the sha256 of its own
canonical text without that key. Together with the per-file hashes, a change of any byte anywhere in the
package is caught. It is an integrity check, not a signature (whoever can edit the package can recompute
the hashes).

``verify`` reads manifests it did not write with :func:`parse_manifest`: JSON mobilegen never writes
(NaN, 1e999, integers of thousands of digits, deep nesting) is refused as a bad package, and every part
``verify`` uses comes back as the same types the writer used, or as a problem naming what is malformed.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any, TypeGuard

from mobilegen.artifacts import MANIFEST, MODEL_ONNX, MODEL_OPS_CONFIG, MODEL_ORT

MANIFEST_SCHEMA_VERSION = 4
READABLE_SCHEMA_VERSIONS = (1, 2, 3, 4)  # verify reads packages of mobilegen releases before per-target models and quantization
MANIFEST_KIND = "mobilegen-package"
SELF_HASH_KEY = "manifest_sha256"

# Bounds on a manifest from elsewhere (ours are a few kB, six levels deep, with int64-sized numbers).
MAX_MANIFEST_BYTES = 64 << 20
MAX_JSON_DEPTH = 64
MAX_INT_DIGITS = 100
# Bounds on a path inside a package (manifest entries and zip entry names).
MAX_PATH_BYTES = 1024
MAX_NAME_BYTES = 255

JsonObject = dict[str, Any]

ABS_PATH = re.compile(r"^(/|[A-Za-z]:[\\/]|\\\\)")


def canonical_json(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=True, allow_nan=False) + "\n"


def self_hash(doc: Mapping[str, Any]) -> str:
    """sha256 of the canonical text of ``doc`` without its ``manifest_sha256``."""
    body = {k: v for k, v in doc.items() if k != SELF_HASH_KEY}
    return hashlib.sha256(canonical_json(body).encode("ascii")).hexdigest()


def is_int(x: object) -> TypeGuard[int]:
    """An integer that is not a bool (``True == 1`` in Python; in a manifest it is no number)."""
    return isinstance(x, int) and not isinstance(x, bool)


def _number(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)  # the convention of every mobilegen JSON: "nan", "inf"


def path_problem(name: str) -> str | None:
    """Why ``name`` cannot be a path inside a package (None when it can)."""
    if not name or "\x00" in name:
        return "empty or NUL in the name"
    raw = name.encode("utf-8", "surrogateescape")
    if len(raw) > MAX_PATH_BYTES or any(len(p.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES for p in name.split("/")):
        return f"its name is too long ({len(raw)} bytes)"
    if name.startswith("/") or ABS_PATH.match(name):
        return "absolute path"
    if "\\" in name:
        return "backslash in the path"
    if ".." in PurePosixPath(name).parts:
        return "it escapes the folder ('..')"
    if not name.isprintable():
        return "control characters in the name"
    return None


# ---------------------------------------------------------------------------------------------------
# The parts


@dataclass(frozen=True)
class FileEntry:
    path: str  # relative, POSIX
    size: int
    sha256: str
    executable: bool

    def to_json(self) -> JsonObject:
        return {"path": self.path, "size": self.size, "sha256": self.sha256, "executable": self.executable}

    @classmethod
    def from_json(cls, value: object) -> FileEntry | None:
        """The entry, or None when a field is missing or has the wrong type."""
        if not isinstance(value, dict):
            return None
        path, size, digest, executable = (value.get(k) for k in ("path", "size", "sha256", "executable"))
        if not isinstance(path, str) or not is_int(size) or size < 0 or not isinstance(digest, str):
            return None
        if not isinstance(executable, bool):
            return None
        return cls(path, size, digest, executable)


@dataclass(frozen=True)
class LinkEntry:
    """A project that copies a model of the package at build time (version 4): ``target``'s ``file`` (the
    Gradle script, the fetch script) pins ``model``'s ``size`` and ``sha256``."""

    target: str
    file: str  # package-relative, POSIX
    model: str  # package-relative, POSIX: one of the models' .ort files
    size: int
    sha256: str

    def to_json(self) -> JsonObject:
        return {"target": self.target, "file": self.file, "model": self.model, "size": self.size, "sha256": self.sha256}

    @classmethod
    def from_json(cls, value: object) -> LinkEntry | None:
        if not isinstance(value, dict):
            return None
        target, file, model, size, digest = (value.get(k) for k in ("target", "file", "model", "size", "sha256"))
        if not all(isinstance(x, str) for x in (target, file, model, digest)) or not is_int(size) or size < 0:
            return None
        return cls(target, file, model, size, digest)  # type: ignore[arg-type]  # checked just above


@dataclass(frozen=True)
class SourceInfo:
    file: str  # name only, never a path
    kind: str
    sha256: str

    def to_json(self) -> JsonObject:
        return {"file": self.file, "kind": self.kind, "sha256": self.sha256}


@dataclass(frozen=True)
class OrtInfo:
    file: str
    format_version: int | None
    max_opset: int
    optimization_style: str
    optimization_level: str

    def to_json(self) -> JsonObject:
        return {
            "file": self.file,
            "format_version": self.format_version,
            "max_opset": self.max_opset,
            "optimization_style": self.optimization_style,
            "optimization_level": self.optimization_level,
        }

    @classmethod
    def from_json(cls, value: object) -> OrtInfo | None:
        obj = value if isinstance(value, dict) else {}
        max_opset, fmt = obj.get("max_opset"), obj.get("format_version")
        if not is_int(max_opset) or not (fmt is None or is_int(fmt)):
            return None
        return cls(
            str(obj.get("file", "")), fmt, max_opset, str(obj.get("optimization_style", "")), str(obj.get("optimization_level", ""))
        )


@dataclass(frozen=True)
class ModelInfo:
    """One model of the package: the targets shipping it, the runtime channels that load it (keys of
    ``versions.mobile_runtimes``), its files, and the graph passes applied to it (``pass``, ``nodes``)."""

    targets: tuple[str, ...]
    channels: tuple[str, ...]
    onnx: str
    ort: OrtInfo
    required_operators: str
    fixes: tuple[JsonObject, ...] = ()
    golden: GoldenInfo | None = None  # version 3: the golden vectors it reproduces (None: golden/, the manifest's tolerances)
    quantization: JsonObject | None = None  # version 3: what --quantize did to it (None without --quantize)

    def to_json(self) -> JsonObject:
        out: JsonObject = {
            "targets": list(self.targets),
            "channels": list(self.channels),
            "onnx": self.onnx,
            "ort": self.ort.to_json(),
            "required_operators": self.required_operators,
            "fixes": list(self.fixes),
        }
        if self.golden is not None:
            out["golden"] = self.golden.to_json()
        out["quantization"] = self.quantization
        return out

    @classmethod
    def from_json(cls, value: object) -> ModelInfo | None:
        """The entry, or None when a field is missing or has the wrong type."""
        if not isinstance(value, dict):
            return None
        targets, channels, onnx, config = (value.get(k) for k in ("targets", "channels", "onnx", "required_operators"))
        ort = OrtInfo.from_json(value.get("ort"))
        if ort is None or not _strings(targets) or not _strings(channels) or not isinstance(onnx, str) or not isinstance(config, str):
            return None
        if not ort.file or path_problem(ort.file):
            return None
        fixes = value.get("fixes", [])
        golden = GoldenInfo.from_json(value["golden"]) if "golden" in value else None
        if "golden" in value and golden is None:
            return None
        quantization = value.get("quantization")
        return cls(
            tuple(targets), tuple(channels), onnx, ort, config, tuple(f for f in fixes if isinstance(f, dict)) if isinstance(fixes, list) else (),
            golden, quantization if isinstance(quantization, dict) else None,
        )


@dataclass(frozen=True)
class GoldenInfo:
    """A model's golden vectors (version 3): its ``.npz`` and ``.mgv`` and the tolerances they are re-run
    with. A quantized model has its own (its outputs, not the fp32 reference's), checked with a wider
    ``atol`` (another CPU's integer kernels round differently)."""

    npz: str
    mgv: str
    atol: float
    rtol: float
    # the further cases (golden_case1.npz, ...), each reproduced by the same model with the same tolerances;
    # absent in packages written before it (verify then takes the golden_case*.npz files listed beside npz)
    cases: tuple[str, ...] | None = None

    def to_json(self) -> JsonObject:
        out: JsonObject = {"npz": self.npz, "mgv": self.mgv, "atol": _number(self.atol), "rtol": _number(self.rtol)}
        if self.cases:  # none: the key is left out (verify then finds no golden_case*.npz listed beside npz either)
            out["cases"] = list(self.cases)
        return out

    @classmethod
    def from_json(cls, value: object) -> GoldenInfo | None:
        if not isinstance(value, dict):
            return None
        npz, mgv, cases = value.get("npz"), value.get("mgv"), value.get("cases")
        tol = Tolerances.from_json(value)
        if not isinstance(npz, str) or not isinstance(mgv, str) or tol is None or path_problem(npz) or path_problem(mgv):
            return None
        if cases is not None and (not _strings(cases) or any(path_problem(c) for c in cases)):
            return None
        return cls(npz, mgv, tol.atol, tol.rtol, None if cases is None else tuple(cases))


def _strings(value: object) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


@dataclass(frozen=True)
class Tolerances:
    atol: float
    rtol: float

    def to_json(self) -> JsonObject:
        return {"atol": _number(self.atol), "rtol": _number(self.rtol)}

    @classmethod
    def from_json(cls, value: object) -> Tolerances | None:
        obj = value if isinstance(value, dict) else {}
        atol, rtol = obj.get("atol"), obj.get("rtol")
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in (atol, rtol)):
            return None
        return cls(float(atol), float(rtol))  # type: ignore[arg-type]  # checked just above


@dataclass(frozen=True)
class Manifest:
    """Everything ``manifest.json`` holds. Nested facts (IO, verification rows, coverage, options) are
    JSON objects already made JSON-safe by the writer; the parts ``verify`` relies on are typed."""

    model_name: str
    targets: tuple[str, ...]
    versions: JsonObject  # mobilegen, torch, onnx, onnxruntime_converter, mobile_runtimes
    source: SourceInfo
    io: JsonObject
    onnx: JsonObject
    models: tuple[ModelInfo, ...]
    options: JsonObject
    tolerances: Tolerances
    verification: JsonObject
    coverage: tuple[JsonObject, ...]
    warnings: tuple[str, ...]
    source_date_epoch: int | None
    files: tuple[FileEntry, ...]
    model_links: tuple[LinkEntry, ...] = ()
    schema_version: int = MANIFEST_SCHEMA_VERSION
    kind: str = MANIFEST_KIND

    def body(self) -> JsonObject:
        """The document without its self-hash, keys in the documented order."""
        return {
            "schema_version": self.schema_version,
            "kind": self.kind,
            "model_name": self.model_name,
            "targets": list(self.targets),
            "versions": self.versions,
            "source": self.source.to_json(),
            "io": self.io,
            "onnx": self.onnx,
            "models": [m.to_json() for m in self.models],
            "options": self.options,
            "tolerances": self.tolerances.to_json(),
            "verification": self.verification,
            "coverage": list(self.coverage),
            "warnings": list(self.warnings),
            "source_date_epoch": self.source_date_epoch,
            "model_links": [link.to_json() for link in self.model_links],
            "files": [f.to_json() for f in self.files],
        }

    def to_json(self) -> JsonObject:
        body = self.body()
        return {**body, SELF_HASH_KEY: self_hash(body)}

    def text(self) -> str:
        return canonical_json(self.to_json())


# ---------------------------------------------------------------------------------------------------
# Reading a manifest mobilegen did not necessarily write


class ManifestError(Exception):
    """The manifest cannot be checked at all (one line). ``not_ours``: it is no mobilegen manifest."""

    def __init__(self, message: str, *, hint: str | None = None, not_ours: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.not_ours = not_ours


@dataclass(frozen=True)
class ReadManifest:
    """A manifest as read from a package: each part ``verify`` uses, typed, or None when malformed (the
    problem is in ``problems``, with every other form problem found)."""

    schema_version: int
    model_name: str
    files: tuple[FileEntry, ...]  # the well-formed entries
    tolerances: Tolerances | None
    models: tuple[ModelInfo, ...]  # the well-formed entries (version 1: its one model)
    mobile_runtimes: Mapping[str, str]
    problems: tuple[str, ...]
    unverified: tuple[str, ...] = ()  # outputs the build accepted unverified (--allow-degenerate)
    model_links: tuple[LinkEntry, ...] = ()  # version 4: the projects that copy a model at build time
    # options.runtimes (--runtime litert): the other runtimes' models, as the build recorded them (JSON objects)
    runtime_models: tuple[JsonObject, ...] = ()


class _BadNumber(ValueError):
    pass


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:  # int() of 5000 digits raises, of 300 overflows float()
        raise _BadNumber(f"an integer has {digits} digits, more than {MAX_INT_DIGITS}")
    return int(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _BadNumber(f"the number {text[:40]} is out of range")
    return value


def _parse_constant(text: str) -> Any:
    raise _BadNumber(f"{text} is not a JSON number")


def _json_depth(doc: object) -> int:
    """Nesting depth (iterative: a deep document must not exhaust the stack here either)."""
    deepest = 0
    pending: list[tuple[object, int]] = [(doc, 1)]
    while pending and deepest <= MAX_JSON_DEPTH:
        value, depth = pending.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is not None:
            deepest = max(deepest, depth)
            pending.extend((c, depth + 1) for c in children)
    return deepest


def load_json(raw: bytes) -> tuple[object, str]:
    """The document and its text; ManifestError for anything that is not JSON mobilegen could write."""
    damaged = "the package is damaged; copy it again"
    try:
        text = raw.decode("utf-8")
        doc = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except RecursionError as err:
        raise ManifestError(f"{MANIFEST} is not valid JSON (nested too deeply)", hint=damaged) from err
    except ValueError as err:  # UnicodeDecodeError, JSONDecodeError, _BadNumber
        raise ManifestError(f"{MANIFEST} is not valid JSON ({str(err)[:300]})", hint=damaged) from err
    if _json_depth(doc) > MAX_JSON_DEPTH:
        raise ManifestError(f"{MANIFEST} is nested more than {MAX_JSON_DEPTH} levels deep", hint=damaged)
    return doc, text


def parse_manifest(raw: bytes, *, reader_version: str) -> ReadManifest:
    """Read ``manifest.json``'s bytes. Raises ManifestError when it cannot be checked at all; every other
    problem of form (self-hash, canonical text, malformed entries) is listed in the result."""
    doc, text = load_json(raw)
    if not isinstance(doc, dict) or "schema_version" not in doc:
        raise ManifestError(f"{MANIFEST} has no schema_version", not_ours=True)
    schema = doc["schema_version"]
    if not is_int(schema) or schema not in READABLE_SCHEMA_VERSIONS:
        raise ManifestError(
            f"manifest schema version {json.dumps(schema)[:40]} is not supported by mobilegen {reader_version} "
            f"(it reads versions {', '.join(map(str, READABLE_SCHEMA_VERSIONS))})",
            hint="verify it with the mobilegen version that wrote it (see versions.mobilegen in manifest.json)",
        )
    problems = []
    if doc.get(SELF_HASH_KEY) != self_hash(doc):
        problems.append(f"{MANIFEST}: changed after packaging ({SELF_HASH_KEY} does not match its content)")
    elif canonical_json(doc) != text:
        problems.append(f"{MANIFEST}: changed after packaging (its text is not in the canonical form mobilegen writes)")
    files = _files(doc.get("files"), problems)
    tolerances = Tolerances.from_json(doc.get("tolerances"))
    if tolerances is None:
        problems.append(f"{MANIFEST}: tolerances.atol / tolerances.rtol missing or not numbers")
    versions = doc.get("versions")
    pinned = versions.get("mobile_runtimes") if isinstance(versions, dict) else None
    runtimes = {str(k): str(v) for k, v in pinned.items()} if isinstance(pinned, dict) else {}
    models = _models_v1(doc, runtimes, problems) if schema == 1 else _models(doc.get("models"), problems)
    links = _links(doc.get("model_links"), problems) if schema >= 4 else ()
    return ReadManifest(
        schema_version=schema,
        model_name=str(doc.get("model_name", "")),
        files=files,
        tolerances=tolerances,
        models=models,
        mobile_runtimes=runtimes,
        problems=tuple(problems),
        unverified=_unverified(doc.get("verification")),
        model_links=links,
        runtime_models=_runtime_models(doc.get("options")),
    )


_ACCEPTED_NOTE = "accepted with --allow-degenerate"  # how rows of manifests without a row status say it


def _unverified(verification: object) -> tuple[str, ...]:
    """The outputs the build's gate accepted unverified: its rows with status ``unverified`` (or, written
    before rows had a status, the note saying so). Anything malformed counts as none: verify re-runs the
    golden vectors either way, this only labels their rows."""
    rows = verification.get("rows") if isinstance(verification, dict) else None
    names: dict[str, None] = {}
    for row in rows if isinstance(rows, list) else ():
        if not isinstance(row, dict) or not isinstance(row.get("output"), str):
            continue
        status, note = row.get("status"), row.get("note")
        if status == "unverified" or (status is None and isinstance(note, str) and _ACCEPTED_NOTE in note):
            names[row["output"]] = None
    return tuple(names)


def _runtime_models(options: object) -> tuple[JsonObject, ...]:
    runtimes = options.get("runtimes") if isinstance(options, dict) else None
    return tuple(r for r in runtimes if isinstance(r, dict)) if isinstance(runtimes, list) else ()


def _models_v1(doc: JsonObject, runtimes: Mapping[str, str], problems: list[str]) -> tuple[ModelInfo, ...]:
    """Version 1's one model (``ort``, at model/model.ort), loaded by every pinned runtime."""
    ort = OrtInfo.from_json(doc.get("ort"))
    if ort is None:
        problems.append(f"{MANIFEST}: ort.max_opset / ort.format_version missing or not integers")
        return ()
    targets = doc.get("targets")
    return (ModelInfo(tuple(targets) if _strings(targets) else (), tuple(runtimes), MODEL_ONNX, replace(ort, file=MODEL_ORT), MODEL_OPS_CONFIG),)


def _models(value: object, problems: list[str]) -> tuple[ModelInfo, ...]:
    if not isinstance(value, list) or not value:
        problems.append(f"{MANIFEST}: 'models' is missing, empty or not a list")
        return ()
    good: list[ModelInfo] = []
    for i, item in enumerate(value):
        model = ModelInfo.from_json(item)
        if model is None and isinstance(item, dict) and OrtInfo.from_json(item.get("ort")) is None:
            problems.append(f"{MANIFEST}: models[{i}].ort.max_opset / models[{i}].ort.format_version missing or not integers")
        elif model is None:
            problems.append(f"{MANIFEST}: models[{i}] is malformed (targets, channels, onnx, ort, required_operators)")
        elif any(m.ort.file == model.ort.file for m in good):
            problems.append(f"{MANIFEST}: models[{i}] lists {model.ort.file} a second time")
        else:
            good.append(model)
    return tuple(good)


def _files(value: object, problems: list[str]) -> tuple[FileEntry, ...]:
    if not isinstance(value, list):
        problems.append(f"{MANIFEST}: 'files' is missing or not a list")
        return ()
    good: list[FileEntry] = []
    seen: set[str] = set()
    for i, item in enumerate(value):
        entry = FileEntry.from_json(item)
        if entry is None:
            problems.append(f"{MANIFEST}: files[{i}] is malformed")
        elif path_problem(entry.path) or entry.path == MANIFEST or any(p in ("", ".") for p in entry.path.split("/")):
            shown = repr(entry.path)
            problems.append(f"{MANIFEST}: files[{i}] has an invalid path {shown if len(shown) <= 200 else shown[:200] + '…'}")
        elif entry.path in seen:
            problems.append(f"{MANIFEST}: files[{i}] lists {entry.path} a second time")
        else:
            seen.add(entry.path)
            good.append(entry)
    return tuple(good)


def _links(value: object, problems: list[str]) -> tuple[LinkEntry, ...]:
    if not isinstance(value, list):
        problems.append(f"{MANIFEST}: 'model_links' is missing or not a list")
        return ()
    good: list[LinkEntry] = []
    for i, item in enumerate(value):
        link = LinkEntry.from_json(item)
        if link is None:
            problems.append(f"{MANIFEST}: model_links[{i}] is malformed (target, file, model, size, sha256)")
            continue
        bad = [(what, p, why) for what, p in (("file", link.file), ("model", link.model)) if (why := _link_path_problem(p))]
        if bad:
            what, p, why = bad[0]
            shown = repr(p)
            problems.append(f"{MANIFEST}: model_links[{i}].{what} {shown if len(shown) <= 200 else shown[:200] + '…'} is refused: {why}")
            continue
        good.append(link)
    return tuple(good)


def _link_path_problem(name: str) -> str | None:
    if problem := path_problem(name):
        return problem
    return "an empty or '.' part in the path" if any(p in ("", ".") for p in name.split("/")) else None
