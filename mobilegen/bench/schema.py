"""The benchmark result (schema version 2; version 1 is still read): typed dataclasses, their JSON, and a reader for files from
elsewhere (a phone, another host).

The JSON Schema document ``bench-result.schema.json`` next to this module is the published contract
(README "Benchmarks"); the dataclasses write exactly that shape and :func:`parse_result` reads it back,
refusing anything else with one line (exit 2). tests/unit/test_bench_schema.py validates both against the
schema with ``jsonschema``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from mobilegen.errors import UsageError
from mobilegen.infra.datafiles import open_data_file

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)  # version 1: no shipped_default, no preprocessing rows
KIND = "mobilegen-bench"
NOT_A_RESULT = "not a mobilegen benchmark result"
SCHEMA_FILE = "bench-result.schema.json"
MAX_RESULT_BYTES = 64 << 20

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
STATUSES = ("ok", "skipped", "failed")


def schema_document() -> dict[str, Any]:
    """The JSON Schema of a result (shipped as package data)."""
    text = resources.files("mobilegen.bench").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    doc: dict[str, Any] = json.loads(text)
    return doc


@dataclass(frozen=True)
class Device:
    kind: str  # "host" / "device"
    model: str
    soc: str | None
    os: str
    api_level: int | None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "model": self.model, "soc": self.soc, "os": self.os, "api_level": self.api_level}

    @property
    def label(self) -> str:
        parts = [self.model] + ([self.soc] if self.soc else []) + [self.os]
        return " · ".join(parts) + (" (host)" if self.kind == "host" else "")


@dataclass(frozen=True)
class WarmStats:
    n: int
    min: float
    p50: float
    p90: float
    mean: float

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "min": self.min, "p50": self.p50, "p90": self.p90, "mean": self.mean}

    @classmethod
    def of(cls, times_ms: list[float]) -> WarmStats:
        """Nearest-rank percentiles (the p-th percentile is a measured value, never interpolated)."""
        if not times_ms:
            raise ValueError("no warm runs")
        s = sorted(times_ms)
        return cls(len(s), _r(s[0]), _r(_rank(s, 50)), _r(_rank(s, 90)), _r(sum(s) / len(s)))


def _rank(sorted_ms: list[float], p: int) -> float:
    k = max(1, math.ceil(p / 100 * len(sorted_ms)))
    return sorted_ms[k - 1]


def _r(ms: float) -> float:
    return round(ms, 4)


@dataclass(frozen=True)
class PlacedNode:
    node: str
    op: str
    provider: str  # ORT's name: CPUExecutionProvider, <Name>ExecutionProvider, ...

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "op": self.op, "provider": self.provider}


@dataclass(frozen=True)
class Placement:
    available: bool
    reason: str | None
    nodes: tuple[PlacedNode, ...] = ()
    partitions: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "available": self.available,
            "reason": self.reason,
            "nodes": [n.to_json() for n in self.nodes],
            "partitions": self.partitions,
        }

    @classmethod
    def unavailable(cls, reason: str) -> Placement:
        return cls(False, reason)


@dataclass(frozen=True)
class Configuration:
    name: str
    ep: str  # provider registry name, or "cpu"
    format: str | None
    providers: tuple[str, ...]
    options: dict[str, str] = field(default_factory=dict)
    status: str = "ok"
    reason: str | None = None
    session_create_ms: float | None = None
    first_run_ms: float | None = None
    warm: WarmStats | None = None
    placement: Placement = field(default_factory=lambda: Placement.unavailable("not measured"))
    # the target ("android" / "ios") whose create() with default options this configuration is; None: an alternative
    shipped_default: str | None = None

    @property
    def accelerated(self) -> bool:
        return self.ep != "cpu"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ep": self.ep,
            "format": self.format,
            "providers": list(self.providers),
            "options": dict(self.options),
            "status": self.status,
            "reason": self.reason,
            "session_create_ms": None if self.session_create_ms is None else _r(self.session_create_ms),
            "first_run_ms": None if self.first_run_ms is None else _r(self.first_run_ms),
            "warm": None if self.warm is None else self.warm.to_json(),
            "placement": self.placement.to_json(),
            "shipped_default": self.shipped_default,
        }


@dataclass(frozen=True)
class Preprocessing:
    """The app's input preprocessing timed alone on one source size: a photo of ``source`` (width, height)
    through ``entry_point`` (the wrapper's public preprocessing call, or the Python reference on a host)
    to the model's input of ``output`` (width, height)."""

    name: str  # image-<w>x<h>
    entry_point: str
    source: tuple[int, int]
    output: tuple[int, int] | None
    status: str = "ok"
    reason: str | None = None
    first_run_ms: float | None = None
    warm: WarmStats | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "entry_point": self.entry_point,
            "source_width": self.source[0],
            "source_height": self.source[1],
            "output_width": None if self.output is None else self.output[0],
            "output_height": None if self.output is None else self.output[1],
            "status": self.status,
            "reason": self.reason,
            "first_run_ms": None if self.first_run_ms is None else _r(self.first_run_ms),
            "warm": None if self.warm is None else self.warm.to_json(),
        }


@dataclass(frozen=True)
class BenchResult:
    model_sha256: str
    model_file: str
    mobilegen_version: str
    ort_version: str
    device: Device
    runs: int
    warmup: int
    configurations: tuple[Configuration, ...]
    preprocessing: tuple[Preprocessing, ...] = ()
    schema_version: int = SCHEMA_VERSION
    kind: str = KIND

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "schema_version": self.schema_version,
            "model_sha256": self.model_sha256,
            "model_file": self.model_file,
            "mobilegen_version": self.mobilegen_version,
            "ort_version": self.ort_version,
            "device": self.device.to_json(),
            "runs": self.runs,
            "warmup": self.warmup,
            "configurations": [c.to_json() for c in self.configurations],
            "preprocessing": [p.to_json() for p in self.preprocessing],
        }

    def text(self) -> str:
        return json.dumps(self.to_json(), indent=2, ensure_ascii=True, allow_nan=False) + "\n"


# ---------------------------------------------------------------------------------------------------
# Reading a result from elsewhere


class _Bad(ValueError):
    pass


def _get(obj: object, key: str, where: str) -> Any:
    if not isinstance(obj, dict):
        raise _Bad(f"{where} is not an object")
    if key not in obj:
        raise _Bad(f"{where} has no '{key}'")
    return obj[key]


def _str(obj: object, key: str, where: str, *, null: bool = False, limit: int = 4096) -> Any:
    v = _get(obj, key, where)
    if (v is None and null) or (isinstance(v, str) and len(v) <= limit):
        return v
    raise _Bad(f"{where}.{key} is not a string" + (" or null" if null else ""))


def _int(obj: object, key: str, where: str, *, null: bool = False, low: int = 0) -> Any:
    v = _get(obj, key, where)
    if v is None and null:
        return None
    if isinstance(v, int) and not isinstance(v, bool) and low <= v <= 10**9:
        return v
    raise _Bad(f"{where}.{key} is not an integer >= {low}")


def _ms(obj: object, key: str, where: str, *, null: bool = True) -> Any:
    v = _get(obj, key, where)
    if v is None and null:
        return None
    if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0:
        return float(v)
    raise _Bad(f"{where}.{key} is not a number of milliseconds >= 0")


_TOP_FIELDS = ("kind", "schema_version", "model_sha256", "model_file", "mobilegen_version", "ort_version", "device", "runs", "warmup", "configurations", "preprocessing")
_CONFIG_FIELDS = ("name", "ep", "format", "providers", "options", "status", "reason", "session_create_ms", "first_run_ms", "warm", "placement", "shipped_default")
_PRE_FIELDS = ("name", "entry_point", "source_width", "source_height", "output_width", "output_height", "status", "reason", "first_run_ms", "warm")


def _keys(obj: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    extra = sorted(set(obj) - set(allowed))
    if extra:
        raise _Bad(f"{where} has unknown field '{extra[0]}'")


def _device(v: object) -> Device:
    w = "device"
    kind = _str(v, "kind", w)
    if kind not in ("host", "device"):
        raise _Bad("device.kind is neither 'host' nor 'device'")
    _keys(v, ("kind", "model", "soc", "os", "api_level"), w)  # type: ignore[arg-type]  # _str checked it is a dict
    return Device(kind, _str(v, "model", w), _str(v, "soc", w, null=True), _str(v, "os", w), _int(v, "api_level", w, null=True))


def _warm(v: object, where: str) -> WarmStats | None:
    if v is None:
        return None
    _keys(v if isinstance(v, dict) else {}, ("n", "min", "p50", "p90", "mean"), where)
    return WarmStats(_int(v, "n", where, low=1), *(_ms(v, k, where, null=False) for k in ("min", "p50", "p90", "mean")))


def _placement(v: object, where: str) -> Placement:
    available = _get(v, "available", where)
    _keys(v, ("available", "reason", "nodes", "partitions"), where)  # type: ignore[arg-type]  # _get checked it is a dict
    if not isinstance(available, bool):
        raise _Bad(f"{where}.available is not true/false")
    nodes_v = _get(v, "nodes", where)
    if not isinstance(nodes_v, list):
        raise _Bad(f"{where}.nodes is not a list")
    nodes = tuple(
        PlacedNode(_str(n, "node", f"{where}.nodes[{i}]"), _str(n, "op", f"{where}.nodes[{i}]"), _str(n, "provider", f"{where}.nodes[{i}]"))
        for i, n in enumerate(nodes_v)
    )
    return Placement(available, _str(v, "reason", where, null=True), nodes, _int(v, "partitions", where, null=True))


def _configuration(v: object, i: int) -> Configuration:
    w = f"configurations[{i}]"
    name, ep = _str(v, "name", w), _str(v, "ep", w)
    for key, value in (("name", name), ("ep", ep)):
        if not _NAME.match(value):
            raise _Bad(f"{w}.{key} {value[:40]!r} is not a lower-case name")
    _keys(v, _CONFIG_FIELDS, w)  # type: ignore[arg-type]  # _str checked it is a dict
    status = _str(v, "status", w)
    if status not in STATUSES:
        raise _Bad(f"{w}.status is not one of {', '.join(STATUSES)}")
    providers = _get(v, "providers", w)
    options = _get(v, "options", w)
    if not isinstance(providers, list) or not all(isinstance(p, str) for p in providers):
        raise _Bad(f"{w}.providers is not a list of strings")
    if not isinstance(options, dict) or not all(isinstance(x, str) for x in options.values()):
        raise _Bad(f"{w}.options is not an object of strings")
    return Configuration(
        name=name,
        ep=ep,
        format=_str(v, "format", w, null=True),
        providers=tuple(providers),
        options=dict(options),
        status=status,
        reason=_str(v, "reason", w, null=True),
        session_create_ms=_ms(v, "session_create_ms", w),
        first_run_ms=_ms(v, "first_run_ms", w),
        warm=_warm(_get(v, "warm", w), f"{w}.warm"),
        placement=_placement(_get(v, "placement", w), f"{w}.placement"),
        shipped_default=_str(v, "shipped_default", w, null=True, limit=64) if isinstance(v, dict) and "shipped_default" in v else None,
    )


def _preprocessing(v: object, i: int) -> Preprocessing:
    w = f"preprocessing[{i}]"
    name = _str(v, "name", w)
    if not _NAME.match(name):
        raise _Bad(f"{w}.name {name[:40]!r} is not a lower-case name")
    _keys(v, _PRE_FIELDS, w)  # type: ignore[arg-type]  # _str checked it is a dict
    status = _str(v, "status", w)
    if status not in STATUSES:
        raise _Bad(f"{w}.status is not one of {', '.join(STATUSES)}")
    out_w, out_h = _int(v, "output_width", w, null=True), _int(v, "output_height", w, null=True)
    return Preprocessing(
        name=name,
        entry_point=_str(v, "entry_point", w, limit=200),
        source=(_int(v, "source_width", w, low=1), _int(v, "source_height", w, low=1)),
        output=None if out_w is None or out_h is None else (out_w, out_h),
        status=status,
        reason=_str(v, "reason", w, null=True),
        first_run_ms=_ms(v, "first_run_ms", w),
        warm=_warm(_get(v, "warm", w), f"{w}.warm"),
    )


def result_from_json(doc: object) -> BenchResult:
    """The result; ValueError naming the first field that is missing or malformed."""
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise _Bad(f"{NOT_A_RESULT} (no \"kind\": \"{KIND}\")")
    version = doc.get("schema_version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise _Bad(f"its schema_version {json.dumps(version)[:20]} is not {' or '.join(map(str, READABLE_VERSIONS))}, the versions this mobilegen reads")
    _keys(doc, _TOP_FIELDS, "the result")
    sha = _str(doc, "model_sha256", "result")
    if not _SHA256.match(sha):
        raise _Bad("model_sha256 is not 64 lower-case hex digits")
    configs = _get(doc, "configurations", "result")
    if not isinstance(configs, list):
        raise _Bad("configurations is not a list")
    names = [_str(c, "name", f"configurations[{i}]") for i, c in enumerate(configs)]
    if len(set(names)) != len(names):
        raise _Bad("two configurations have the same name")
    pre = doc.get("preprocessing", []) if version >= 2 else []
    if version >= 2 and "preprocessing" not in doc:
        raise _Bad("result has no 'preprocessing'")
    if version < 2 and "preprocessing" in doc:
        raise _Bad("result has unknown field 'preprocessing' (schema version 1)")
    if not isinstance(pre, list):
        raise _Bad("preprocessing is not a list")
    return BenchResult(
        model_sha256=sha,
        model_file=_str(doc, "model_file", "result", limit=255),
        mobilegen_version=_str(doc, "mobilegen_version", "result", limit=64),
        ort_version=_str(doc, "ort_version", "result", limit=64),
        device=_device(_get(doc, "device", "result")),
        runs=_int(doc, "runs", "result", low=1),
        warmup=_int(doc, "warmup", "result"),
        configurations=tuple(_configuration(c, i) for i, c in enumerate(configs)),
        preprocessing=tuple(_preprocessing(p, i) for i, p in enumerate(pre)),
    )


def _no_constant(text: str) -> Any:
    raise _Bad(f"{text} is not a JSON number")


def read_result(path: Path) -> BenchResult:
    """Read a result file; UsageError (exit 2, one line) when it cannot be read or is not a result."""
    shown = str(path)
    if Path(path).is_dir():
        raise UsageError(
            f"{shown}: cannot be read (a folder)",
            hint="results are the JSON files mobilegen bench MODEL -o FILE.json or the device benchmark writes; "
            "pass each file (--results F1.json --results F2.json), not their folder",
        )
    # a FIFO, socket or device is refused before it is opened (opening a FIFO waits for a writer)
    with open_data_file(Path(path), shown, hint="pass the JSON file mobilegen bench or the device benchmark wrote") as f:
        try:
            raw = f.read(MAX_RESULT_BYTES + 1)
        except OSError as err:
            raise UsageError(f"{shown}: cannot be read ({err.strerror or err})", hint="pass the JSON file mobilegen bench or the device benchmark wrote") from err
    if len(raw) > MAX_RESULT_BYTES:
        raise UsageError(f"{shown}: larger than {MAX_RESULT_BYTES >> 20} MiB, not a benchmark result")
    hint = f"results are the JSON files mobilegen bench MODEL -o FILE.json or the device benchmark writes (schema {SCHEMA_FILE}, README: Benchmarks)"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{shown} is not a JSON file (not UTF-8 text)", hint=hint) from None
    try:
        doc = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise UsageError(f"{shown}: not a benchmark result (nested too deeply)") from None
    except json.JSONDecodeError as err:  # Python's own wording ("Unterminated string starting at…") says little
        if text.lstrip(" \t\r\n\ufeff")[:1] not in ("{", "["):
            raise UsageError(f"{shown} is not a JSON file", hint=hint) from None
        raise UsageError(f"{shown} is not valid JSON (line {err.lineno})", hint=hint) from None
    except ValueError as err:  # a NaN/Infinity constant
        raise UsageError(f"{shown}: {NOT_A_RESULT}: {str(err)[:300]}", hint=hint) from None
    try:
        return result_from_json(doc)
    except RecursionError:
        raise UsageError(f"{shown}: not a benchmark result (nested too deeply)") from None
    except ValueError as err:  # _Bad
        why = str(err)[:300]
        raise UsageError(
            f"{shown}: {why}" if why.startswith(NOT_A_RESULT) else f"{shown}: {NOT_A_RESULT}: {why}",
            hint=f"results follow the schema {SCHEMA_FILE} (README: Benchmarks)",
        ) from err
