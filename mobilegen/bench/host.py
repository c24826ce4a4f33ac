"""``mobilegen bench``: the device benchmark's measurement, on this host, with onnxruntime.

Per configuration, with the session options the generated Android wrapper sets (``{{ class_name }}.kt``:
CPU = ORT's defaults; XNNPACK = ``session.intra_op.allow_spinning=0``, one ORT intra-op thread and
XNNPACK's own pool of min(cores, 4) threads):

1. session creation, timed (``InferenceSession(...)``);
2. the first run, timed; ``warmup`` runs, not timed; ``runs`` warm runs, each timed;
3. a second session with profiling on runs once and ``end_profiling()`` gives where each node ran
   (:mod:`mobilegen.bench.profile`). It is a separate session so profiling never slows the timed runs.

The inputs are the package's golden inputs (``golden/golden.mgv``, the case the devices replay); a bare
``.ort`` runs on deterministic inputs made from its input metadata (dynamic dims = 1).
"""

from __future__ import annotations

import hashlib
import os
import platform
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen import __version__
from mobilegen.artifacts import GOLDEN_MGV, MANIFEST
from mobilegen.bench.profile import read_profile
from mobilegen.bench.schema import BenchResult, Configuration, Device, Placement, WarmStats
from mobilegen.errors import UsageError

if TYPE_CHECKING:
    import numpy as np

HOST_EPS = ("cpu", "xnnpack")
MAX_RUNS = 100_000


@dataclass(frozen=True)
class HostConfig:
    """One configuration the host can run: ORT providers with their options, and session config entries."""

    name: str
    ep: str
    providers: tuple[str, ...]
    provider_options: tuple[dict[str, str], ...]
    config_entries: dict[str, str]
    intra_op_threads: int  # 0: ORT's default

    def options(self) -> dict[str, str]:
        out = dict(self.config_entries)
        for provider, opts in zip(self.providers, self.provider_options, strict=True):
            out.update({f"{provider}.{k}": v for k, v in opts.items()})
        if self.intra_op_threads:
            out["intra_op_num_threads"] = str(self.intra_op_threads)
        return out


def xnnpack_threads() -> int:
    return max(1, min(os.cpu_count() or 1, 4))  # ModelSupport.defaultXnnpackThreads


def host_config(ep: str) -> HostConfig:
    if ep == "cpu":
        return HostConfig("cpu", "cpu", ("CPUExecutionProvider",), ({},), {}, 0)
    if ep == "xnnpack":
        return HostConfig(
            "xnnpack",
            "xnnpack",
            ("XnnpackExecutionProvider", "CPUExecutionProvider"),
            ({"intra_op_num_threads": str(xnnpack_threads())}, {}),
            {"session.intra_op.allow_spinning": "0"},
            1,
        )
    raise UsageError(
        f"--ep {ep}: the host benchmark runs {', '.join(HOST_EPS)}",
        hint="NNAPI and CoreML run on the device: use the benchmark in the generated project (README: Benchmarks)",
    )


@dataclass(frozen=True)
class Target:
    ort: Path
    inputs: dict[str, np.ndarray] | None  # None: made from the model's input metadata


def resolve_target(path: Path) -> Target:
    """The .ort and its golden inputs: a package folder (its manifest's model for android, else its first)
    or a bare .ort file."""
    path = Path(path)
    if path.is_dir():
        return _package_target(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such file or folder", hint="pass a .ort file or a package folder")
    if path.suffix != ".ort":
        raise UsageError(f"{path}: not a .ort file or a package folder", hint="pass the package folder or its model/…/model.ort")
    return Target(path, None)


def _package_target(root: Path) -> Target:
    from mobilegen.golden import decode_mgv
    from mobilegen.package.manifest import ManifestError, load_json

    manifest = root / MANIFEST
    if not manifest.is_file():
        raise UsageError(f"{root}: no {MANIFEST}: not a mobilegen package folder", hint="pass the package folder or a .ort file")
    try:
        doc, _text = load_json(manifest.read_bytes())
    except ManifestError as err:
        raise UsageError(f"{root}: {err.message}", hint=err.hint) from err
    models = [m for m in (doc.get("models") if isinstance(doc, dict) else None) or [] if isinstance(m, dict)]
    from mobilegen.package.manifest import path_problem

    ort, golden = _package_model(models)
    for rel in (ort, golden):
        if problem := path_problem(rel):
            raise UsageError(f"{root}: its manifest names the model file {rel!r}: {problem}", hint="run mobilegen verify on it")
    mgv = root / golden
    if not (root / ort).is_file() or not mgv.is_file():
        raise UsageError(f"{root}: the package lacks {ort} or {golden}", hint="run mobilegen verify on it")
    try:
        case = decode_mgv(mgv.read_bytes())
    except (ValueError, OSError) as err:
        raise UsageError(f"{mgv}: cannot be read ({err})", hint="run mobilegen verify on it") from err
    return Target(root / ort, dict(case.inputs))


def _package_model(models: list[dict[str, Any]]) -> tuple[str, str]:
    """(the .ort, its golden vectors): android's model first (XNNPACK is an Android provider), else the
    first; golden vectors of the model's own when the manifest names them, else the package's."""
    from mobilegen.artifacts import MODEL_ORT

    ranked = sorted(models, key=lambda m: "android" not in (m.get("targets") or []))
    for m in ranked:
        ort, golden = m.get("ort"), m.get("golden")
        if isinstance(ort, dict) and isinstance(ort.get("file"), str):
            mgv = golden.get("mgv") if isinstance(golden, dict) else None
            return str(ort["file"]), mgv if isinstance(mgv, str) else GOLDEN_MGV
    return MODEL_ORT, GOLDEN_MGV  # manifest schema 1: one model at model/model.ort


def host_device() -> Device:
    """The host: its machine type, processor name where readable, OS (never the host name)."""
    uname = platform.uname()
    return Device("host", uname.machine or "unknown", _processor() or None, f"{uname.system} {uname.release}".strip(), None)


def _processor() -> str:
    try:  # Linux names the processor here; platform.processor() often says only "x86_64"
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware")):
                return line.split(":", 1)[1].strip()[:200]
    except OSError:
        pass
    return platform.processor()[:200]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run_host_bench(
    target_path: Path,
    eps: Sequence[str] = ("cpu",),
    *,
    runs: int = 50,
    warmup: int = 5,
    clock: Callable[[], float] = time.perf_counter,
) -> BenchResult:
    """Benchmark the model on this host, one configuration per ``eps`` entry, in the result schema."""
    if not 1 <= runs <= MAX_RUNS or not 0 <= warmup <= MAX_RUNS:
        raise UsageError(f"--runs must be 1..{MAX_RUNS} and --warmup 0..{MAX_RUNS} (got {runs} and {warmup})")
    configs = [host_config(ep) for ep in dict.fromkeys(eps or ("cpu",))]
    target = resolve_target(target_path)
    import onnxruntime as ort

    feeds = target.inputs if target.inputs is not None else _made_inputs(ort, target.ort)
    results = tuple(_measure(ort, target.ort, c, feeds, runs, warmup, clock) for c in configs)
    return BenchResult(
        model_sha256=sha256_file(target.ort),
        model_file=target.ort.name,
        mobilegen_version=__version__,
        ort_version=ort.__version__,
        device=host_device(),
        runs=runs,
        warmup=warmup,
        configurations=results,
    )


def _session_options(ort: Any, config: HostConfig, profile_prefix: str | None) -> Any:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    for k, v in config.config_entries.items():
        so.add_session_config_entry(k, v)
    if config.intra_op_threads:
        so.intra_op_num_threads = config.intra_op_threads
    if profile_prefix is not None:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
    return so


def _session(ort: Any, model: Path, config: HostConfig, profile_prefix: str | None = None) -> Any:
    return ort.InferenceSession(
        str(model),
        sess_options=_session_options(ort, config, profile_prefix),
        providers=list(config.providers),
        provider_options=[dict(o) for o in config.provider_options],
    )


def _measure(
    ort: Any, model: Path, config: HostConfig, feeds: dict[str, Any], runs: int, warmup: int, clock: Callable[[], float]
) -> Configuration:
    base = Configuration(config.name, config.ep, None, config.providers, config.options())
    missing = [p for p in config.providers if p not in ort.get_available_providers()]
    if missing:
        why = f"onnxruntime {ort.__version__} on this host was built without {', '.join(missing)}"
        return _replace(base, status="skipped", reason=why, placement=Placement.unavailable(why))
    try:
        t0 = clock()
        session = _session(ort, model, config)
        created = (clock() - t0) * 1000
        t0 = clock()
        session.run(None, feeds)
        first = (clock() - t0) * 1000
        for _ in range(warmup):
            session.run(None, feeds)
        times = []
        for _ in range(runs):
            t0 = clock()
            session.run(None, feeds)
            times.append((clock() - t0) * 1000)
        del session
        placement = _profiled_placement(ort, model, config, feeds)
    except Exception as err:  # noqa: BLE001 — onnxruntime's errors have no common base; recorded in the result
        why = f"{type(err).__name__}: {str(err).strip().splitlines()[0][:500] if str(err).strip() else ''}"
        return _replace(base, status="failed", reason=why, placement=Placement.unavailable(why))
    return _replace(base, session_create_ms=created, first_run_ms=first, warm=WarmStats.of(times), placement=placement)


def _replace(c: Configuration, **changes: Any) -> Configuration:
    from dataclasses import replace

    return replace(c, **changes)


def _profiled_placement(ort: Any, model: Path, config: HostConfig, feeds: dict[str, Any]) -> Placement:
    with tempfile.TemporaryDirectory(prefix="mobilegen-bench-") as tmp:
        session = _session(ort, model, config, profile_prefix=str(Path(tmp) / "profile"))
        session.run(None, feeds)
        path = session.end_profiling()
        placement = read_profile(Path(path))
        del session
        return placement


_NP_DTYPES = {
    "tensor(float)": "float32",
    "tensor(double)": "float64",
    "tensor(int64)": "int64",
    "tensor(int32)": "int32",
    "tensor(int16)": "int16",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(bool)": "bool",
    "tensor(float16)": "float16",
}


def _made_inputs(ort: Any, model: Path) -> dict[str, Any]:
    """Deterministic inputs for a bare .ort: values in [0, 1) (integers 0), dynamic dims 1."""
    import numpy as np

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds: dict[str, Any] = {}
    for i in session.get_inputs():
        dtype = _NP_DTYPES.get(i.type)
        if dtype is None:
            raise UsageError(f"{model}: input {i.name!r} has type {i.type}, which mobilegen bench cannot make", hint="benchmark the package instead (its golden inputs)")
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        feeds[i.name] = rng.random(shape).astype(dtype) if dtype.startswith("float") else np.zeros(shape, dtype=dtype)
    return feeds
