"""``mobilegen bench``: the device benchmark's measurement, on this host, with onnxruntime.

Per configuration, with the session options the generated Android wrapper sets (``{{ class_name }}.kt``:
CPU = ORT's defaults; a provider = its ``host_session()`` in :mod:`mobilegen.providers`, the provider options,
session config entries and threads the wrapper sets for it):

1. session creation, timed (``InferenceSession(...)``);
2. the first run, timed; ``warmup`` runs, not timed; ``runs`` warm runs, each timed;
3. a second session with profiling on runs once and ``end_profiling()`` gives where each node ran
   (:mod:`mobilegen.bench.profile`). It is a separate session so profiling never slows the timed runs.

The inputs are the package's golden inputs (``golden/golden.mgv``, the case the devices replay); a bare
``.ort`` runs on deterministic inputs made from its input metadata (dynamic dims = 1).

Without ``--ep``, a package is timed in what its apps ship first: one ``default`` configuration per target
shipping the model (``shipped_default``: android / ios), the provider chain ``create()`` with default options
tries (:mod:`mobilegen.targets.defaults`, from the manifest's ``options.<target>``), each provider set up as
the wrapper sets it up; a provider this host cannot run (one without a ``host_session()``, or missing
from this host's onnxruntime build) is left out as the wrapper leaves out a provider its runtime lacks, and named in the
configuration's ``options["skipped_providers"]``. Then the alternatives (cpu). An image task's preprocessing
(the wrapper's native step: resize and centre crop, here its Python reference
``mobilegen.tasks.reference.resize_crop``) is timed alone on photos of each size in
``mobilegen.targets.defaults.BENCH_IMAGE_SIZES``, as the result's ``preprocessing`` rows.

A bare ``.tflite`` / ``.aimodel``, and the models a package ships for other runtimes (after its ORT rows), are
timed on their own host runtimes by :mod:`mobilegen.bench.runtimes`, in the same result.
"""

from __future__ import annotations

import platform
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen import providers
from mobilegen import targets as target_registry
from mobilegen.artifacts import GOLDEN_MGV, MANIFEST
from mobilegen.bench import runtimes as other_runtimes
from mobilegen.bench.profile import CPU_PROVIDER, read_profile
from mobilegen.bench.runtimes import RuntimeModel
from mobilegen.bench.schema import BenchResult, Configuration, Device, Placement, Preprocessing, WarmStats
from mobilegen.errors import LoadError, UsageError, first_line
from mobilegen.infra.digest import sha256_file
from mobilegen.targets.defaults import (
    BENCH_IMAGE_SIZES,
    BENCH_PREPROCESS_MAX_RUNS,
    BENCH_PREPROCESS_MAX_WARMUP,
    DEFAULT_CONFIG,
    default_chain,
)
from mobilegen.version import __version__

if TYPE_CHECKING:
    import numpy as np

    from mobilegen.providers import ExecutionProvider
    from mobilegen.tasks.spec import TaskSpec

CPU = "cpu"
MAX_RUNS = 100_000
MAX_MGV_BYTES = 1 << 30  # golden vectors: inputs and outputs of one case


@dataclass(frozen=True)
class HostConfig:
    """One configuration the host can run: ORT providers with their options, and session config entries."""

    name: str
    ep: str
    providers: tuple[str, ...]
    provider_options: tuple[dict[str, str], ...]
    config_entries: dict[str, str]
    intra_op_threads: int  # 0: ORT's default
    shipped_default: str | None = None  # the target whose create() with default options this is
    notes: tuple[tuple[str, str], ...] = ()  # recorded in options: the shipped chain, providers left out
    model_format: str = "ort"  # the file the target ships: "ort", or "onnx" (its manifest options say "model": "onnx")

    def options(self) -> dict[str, str]:
        out = dict(self.config_entries)
        for provider, opts in zip(self.providers, self.provider_options, strict=True):
            out.update({f"{provider}.{k}": v for k, v in opts.items()})
        if self.intra_op_threads:
            out["intra_op_num_threads"] = str(self.intra_op_threads)
        out.update(self.notes)
        return out


def host_providers() -> tuple[ExecutionProvider, ...]:
    """The registered providers ``mobilegen bench`` runs on this host (their ``host_session``)."""
    return tuple(p for p in providers.all_providers() if p.ort_name and p.host_session() is not None)


def host_config(ep: str) -> HostConfig:
    if "," in ep:
        several = ep.split(",")
        raise UsageError(
            f"--ep {ep}: one configuration per --ep",
            hint=f"repeat the option: {' '.join(f'--ep {e.strip()}' for e in several if e.strip())}",
        )
    if ep == CPU:
        return HostConfig(CPU, CPU, (CPU_PROVIDER,), ({},), {}, 0)
    provider = providers.find(ep.split("-", 1)[0])  # a device configuration: <provider>-fp16, <provider>-no-cpu
    session = provider.host_session() if provider is not None else None
    if provider is not None and session is not None and provider.ort_name and ep == provider.name:
        return HostConfig(
            ep, ep, (provider.ort_name, CPU_PROVIDER), (dict(session.provider_options), {}), dict(session.config_entries), session.intra_op_threads
        )
    if provider is not None:
        raise UsageError(
            f"--ep {ep}: runs on the device, not here; mobilegen bench takes {_host_eps_here()}",
            hint="use the benchmark in the generated project for the device's providers (README: Benchmarks)",
        )
    others = " or ".join(f"--ep {b.name}" for b in other_runtimes.others())
    raise UsageError(f"--ep {ep}: not a configuration mobilegen bench runs; on this host it takes {_host_eps_here()}; a package's other runtimes: {others}")


def _host_eps_here() -> str:
    """The --ep values bench takes, and whether this host's onnxruntime can really run each provider."""
    import onnxruntime as ort

    here = host_providers()
    flags = " or ".join(f"--ep {name}" for name in (DEFAULT_CONFIG, CPU, *(p.name for p in here)))
    missing = [p.name for p in here if p.ort_name not in ort.get_available_providers()]
    if not missing:
        return flags
    return f"{flags} ({' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} recorded as skipped: onnxruntime {ort.__version__} here lacks {'it' if len(missing) == 1 else 'them'})"


def default_host_config(target: str, flags: dict[str, object], available: Sequence[str], ort_version: str) -> HostConfig:
    """``create()`` with default options of ``target``'s wrapper, as far as this host can run it: the shipped
    chain (``flags``: the manifest's ``options.<target>``), each provider with its ``host_session`` set-up;
    a provider without one (device-only) or missing from this onnxruntime is left out, as the wrapper's
    provider plan leaves out a provider its runtime lacks, and named in ``skipped_providers``."""
    chain = default_chain(target, flags)
    kept: list[ExecutionProvider] = []
    skipped: list[str] = []
    for p in chain:
        session = p.host_session()
        if session is None:
            skipped.append(f"{p.name} (runs on the device only)")
        elif p.ort_name not in available:
            skipped.append(f"{p.name} (onnxruntime {ort_version} on this host lacks it)")
        else:
            kept.append(p)
    sessions = [s for p in kept if (s := p.host_session()) is not None]
    config_entries: dict[str, str] = {}
    for s in sessions:
        config_entries.update(s.config_entries)
    threads = next((s.intra_op_threads for s in sessions if s.intra_op_threads), 0)
    notes = [("shipped_providers", ",".join([*(p.name for p in chain), CPU]))]
    if skipped:
        notes.append(("skipped_providers", "; ".join(skipped)))
    model_format = "onnx" if flags.get("model") == "onnx" else "ort"
    return HostConfig(
        name=f"{DEFAULT_CONFIG}-{target}",
        ep=kept[0].name if kept else CPU,
        providers=(*(str(p.ort_name) for p in kept), CPU_PROVIDER),
        provider_options=(*(dict(s.provider_options) for s in sessions), {}),
        config_entries=config_entries,
        intra_op_threads=threads,
        shipped_default=target,
        notes=tuple(notes),
        model_format=model_format,
    )


@dataclass(frozen=True)
class Target:
    ort: Path
    name: str  # the .ort's path inside the package, or a bare .ort's file name
    inputs: dict[str, np.ndarray] | None  # None: made from the model's input metadata
    shipped: tuple[tuple[str, dict[str, object]], ...] = ()  # (target, its manifest options) shipping this model
    task: dict[str, Any] | None = None  # the manifest's options.task
    onnx: Path | None = None  # the verified .onnx beside the .ort, which a target shipping "model": "onnx" runs
    onnx_name: str = ""
    runtimes: tuple[RuntimeModel, ...] = ()  # the package's models for the other runtimes (manifest options.runtimes)

    def file_for(self, config: HostConfig) -> tuple[Path, str]:
        """The model file ``config`` times and its name: the .onnx for a target that ships it, else the .ort."""
        if config.model_format == "onnx" and self.onnx is not None:
            return self.onnx, self.onnx_name
        return self.ort, self.name


def resolve_target(path: Path, target: str | None = None) -> Target:
    """The .ort and its golden inputs: a package folder (its model for ``target``; refused when the package
    has one model per target and ``target`` is None) or a bare .ort file."""
    path = Path(path)
    if target is not None and target not in target_registry.names():
        raise UsageError(f"--target {target}: must be {' or '.join(target_registry.names())}")
    if path.is_dir():
        return _package_target(path, target)
    if not path.is_file():
        raise UsageError(f"{path}: no such file or folder", hint="pass a .ort file or a package folder")
    if path.suffix.lower() == ".zip":
        raise UsageError(f"{path}: a zipped package: unzip it first and pass the folder", hint=_unzip_hint(path))
    if path.suffix != ".ort":
        raise UsageError(f"{path}: not a .ort file or a package folder", hint="pass the package folder or its model/…/model.ort")
    if target is not None:
        raise UsageError(f"--target {target}: chooses the model of a package folder; {path} is a .ort file", hint="drop --target, or pass the package folder")
    return Target(path, path.name, None)


def _unzip_hint(path: Path) -> str:
    """How to bench a zip's contents: the package is the zip's one top-level folder (``--zip`` writes
    every entry under ``<name>/``), so ``bench DIR`` alone would find no manifest."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as zf:
            tops = {name.split("/", 1)[0] for name in zf.namelist() if "/" in name.strip("/")}
    except (OSError, zipfile.BadZipFile, ValueError):
        tops = set()
    if len(tops) == 1:
        (top,) = tops
        return f"e.g. unzip {path} -d DIR, then mobilegen bench DIR/{top}"
    return f"e.g. unzip {path} -d DIR, then mobilegen bench the folder in DIR that holds manifest.json"


def _package_target(root: Path, target: str | None) -> Target:
    from mobilegen.package.manifest import ManifestError, load_json
    from mobilegen.verify.golden import decode_mgv

    manifest = root / MANIFEST
    if not manifest.is_file():
        raise UsageError(f"{root}: no {MANIFEST}: not a mobilegen package folder", hint="pass the package folder or a .ort file")
    try:
        doc, _text = load_json(manifest.read_bytes())
    except ManifestError as err:
        raise UsageError(f"{root}: {err.message}", hint=err.hint) from err
    models = [m for m in (doc.get("models") if isinstance(doc, dict) else None) or [] if isinstance(m, dict)]
    from mobilegen.package.manifest import path_problem

    ort, golden = _package_model(root, models, target)
    for rel in (ort, golden):
        if problem := path_problem(rel):
            raise UsageError(f"{root}: its manifest names the model file {rel!r}: {problem}", hint="run mobilegen verify on it")
    mgv = root / golden
    if not (root / ort).is_file() or not mgv.is_file():
        raise UsageError(f"{root}: the package lacks {ort} or {golden}", hint="run mobilegen verify on it")
    from mobilegen.errors import MobilegenError
    from mobilegen.infra.datafiles import read_data_file

    data = read_data_file(mgv, str(mgv), limit=MAX_MGV_BYTES, hint="run mobilegen verify on the package")
    try:
        case = decode_mgv(data)
    except MobilegenError as err:
        raise UsageError(f"{mgv}: {err.message}", hint="run mobilegen verify on the package") from err
    found = doc.get("options") if isinstance(doc, dict) else None
    options: dict[str, Any] = found if isinstance(found, dict) else {}
    shipping = [t for m in models if isinstance(m.get("ort"), dict) and m["ort"].get("file") == ort for t in m.get("targets") or [] if isinstance(t, str)]
    if not models:  # manifest schema 1: one model, every target ships it
        shipping = [t for t in (doc.get("targets") or []) if isinstance(t, str)] if isinstance(doc, dict) else []
    if target is not None:
        shipping = [t for t in shipping if t == target]
    shipped = tuple((t, dict(o)) for t in dict.fromkeys(shipping) if t in target_registry.names() and isinstance(o := options.get(t), dict))
    task = options.get("task") if isinstance(options.get("task"), dict) else None
    onnx = next((m["onnx"] for m in models if isinstance(m.get("ort"), dict) and m["ort"].get("file") == ort and isinstance(m.get("onnx"), str)), None)
    if onnx is not None and (path_problem(onnx) or not (root / onnx).is_file()):
        onnx = None  # a .onnx the manifest names but the package lacks: the .ort is timed for every row
    inputs = dict(case.inputs)
    others = other_runtimes.package_models(root, options.get("runtimes"), inputs, target)
    return Target(root / ort, ort, inputs, shipped, task, root / onnx if onnx else None, onnx or "", others)


def _package_model(root: Path, models: list[dict[str, Any]], target: str | None) -> tuple[str, str]:
    """(the .ort, its golden vectors) for ``target``: golden vectors of the model's own when the manifest
    names them, else the package's. With one model per target and no ``target``, refused: timing one
    target's model silently would pass for the other's."""
    from mobilegen.artifacts import MODEL_ORT

    found: dict[str, tuple[str, list[str]]] = {}  # .ort -> (golden vectors, targets shipping it)
    for m in models:
        ort, golden, targets = m.get("ort"), m.get("golden"), m.get("targets")
        if isinstance(ort, dict) and isinstance(ort.get("file"), str):
            mgv = golden.get("mgv") if isinstance(golden, dict) else None
            shipped = [t for t in targets if isinstance(t, str)] if isinstance(targets, list) else []
            found.setdefault(str(ort["file"]), (mgv if isinstance(mgv, str) else GOLDEN_MGV, []))[1].extend(shipped)
    if not found:
        return MODEL_ORT, GOLDEN_MGV  # manifest schema 1: one model at model/model.ort
    chosen = {ort: v for ort, v in found.items() if target is None or target in v[1]}
    choices = ", ".join(f"{ort} (--target {' / '.join(v[1]) or '?'})" for ort, v in found.items())
    if not chosen:
        raise UsageError(f"{root}: no model for --target {target}; its models: {choices}", hint="pass one of the --target values listed, or omit --target when the package has one model")
    if len(chosen) > 1:
        in_package = [t for v in found.values() for t in v[1]]
        raise UsageError(f"{root}: has one model per target, say which to time: {choices}", hint=f"pass --target {' or --target '.join(dict.fromkeys(in_package))}")
    ((ort, (golden, _targets)),) = chosen.items()
    return ort, golden


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


def run_host_bench(
    target_path: Path,
    eps: Sequence[str] | None = None,
    *,
    runs: int = 50,
    warmup: int = 5,
    clock: Callable[[], float] = time.perf_counter,
    target: str | None = None,
) -> BenchResult:
    """Benchmark the model on this host, one configuration per ``eps`` entry, in the result schema; ``eps``
    None: a package's shipped default configurations first (``default``, one per target shipping the
    model), then cpu, then the package's other runtimes; a bare .ort: cpu; a bare .tflite / .aimodel: its runtime.
    An image task's preprocessing is timed per source size."""
    if not 1 <= runs <= MAX_RUNS:
        raise UsageError(f"--runs {runs} is out of range", hint=f"give the number of timed runs, 1 to {MAX_RUNS}, e.g. --runs 50")
    if not 0 <= warmup <= MAX_RUNS:
        raise UsageError(f"--warmup {warmup} is out of range", hint=f"give the number of untimed warm-up runs, 0 to {MAX_RUNS}, e.g. --warmup 5")
    asked = tuple(dict.fromkeys(eps)) if eps else None
    if other_runtimes.runtime_of(Path(target_path)) is not None:  # a .tflite, an .aimodel: its own runtime
        if target is not None:
            raise UsageError(f"--target {target}: chooses the model of a package folder; {target_path} is a model file", hint="drop --target, or pass the package folder")
        return _bench_runtime_file(Path(target_path), asked, runs, warmup, clock)
    runtime_names = {b.name for b in other_runtimes.others()}
    for ep in asked or ():
        if ep != DEFAULT_CONFIG and ep not in runtime_names:
            host_config(ep)  # refuses an unknown --ep before the model is read
    model = resolve_target(target_path, target)
    rows = _runtime_rows(model, target_path, asked)
    import onnxruntime as ort

    configs: list[HostConfig] = []
    for ep in asked or (DEFAULT_CONFIG, CPU):
        if ep in runtime_names:
            continue
        if ep != DEFAULT_CONFIG:
            configs.append(host_config(ep))
        elif model.shipped:
            available = ort.get_available_providers()
            configs.extend(default_host_config(t, flags, available, ort.__version__) for t, flags in model.shipped)
        elif asked:
            raise UsageError(
                f"--ep {DEFAULT_CONFIG}: {target_path} is a bare .ort, whose shipped configuration mobilegen cannot know",
                hint="pass the package folder (its manifest says what the apps ship)",
            )
    feeds = model.inputs if model.inputs is not None or not configs else _made_inputs(ort, model.ort)
    if configs:
        _warm_library(ort, model.ort)
    results = tuple(_measure(ort, model, c, feeds or {}, runs, warmup, clock) for c in configs)
    results += tuple(other_runtimes.measure(m, runs, warmup, clock) for m in rows)
    pre = preprocessing_rows(model.task, runs=min(runs, BENCH_PREPROCESS_MAX_RUNS), warmup=min(warmup, BENCH_PREPROCESS_MAX_WARMUP), clock=clock)
    return BenchResult(
        model_sha256=sha256_file(model.ort),
        model_file=model.name,
        mobilegen_version=__version__,
        ort_version=ort.__version__,
        device=host_device(),
        runs=runs,
        warmup=warmup,
        configurations=results,
        preprocessing=pre,
    )


def _runtime_rows(model: Target, path: Path, asked: tuple[str, ...] | None) -> tuple[RuntimeModel, ...]:
    """The package's other runtimes to time: every one it ships without ``--ep``, else those asked for
    (refused when the package ships no model for one)."""
    if asked is None:
        return model.runtimes
    out = []
    for ep in asked:
        b = next((o for o in other_runtimes.others() if o.name == ep), None)
        if b is None:
            continue
        found = [m for m in model.runtimes if m.backend.name == ep]
        if not found:
            raise UsageError(f"--ep {ep}: {path} ships no {b.display_name} model", hint=f"build the package with --runtime ort,{ep}, or drop --ep {ep}")
        out.extend(found)
    return tuple(out)


def _bench_runtime_file(path: Path, asked: tuple[str, ...] | None, runs: int, warmup: int, clock: Callable[[], float]) -> BenchResult:
    """A bare model file of another runtime: one row on its host runtime, inputs from its own signature."""
    model = other_runtimes.bare_model(path, asked)
    row = other_runtimes.measure(model, runs, warmup, clock)
    return BenchResult(
        model_sha256=other_runtimes.model_digest(path),
        model_file=path.name,
        mobilegen_version=__version__,
        ort_version=other_runtimes.NO_ORT,
        device=host_device(),
        runs=runs,
        warmup=warmup,
        configurations=(row,),
    )


PRE_ENTRY_POINT = "mobilegen.tasks.reference.resize_crop"


def preprocessing_rows(
    task: dict[str, Any] | None, *, runs: int, warmup: int, clock: Callable[[], float] = time.perf_counter
) -> tuple[Preprocessing, ...]:
    """An image task's native preprocessing (resize and centre crop) timed alone on a deterministic photo of
    each source size, through the Python reference of the wrappers' ``ImageInput.prepare``; () otherwise."""
    spec = _image_task(task)
    if spec is None:
        return ()
    import numpy as np

    from mobilegen.tasks.reference import resize_crop

    rows = []
    for w, h in BENCH_IMAGE_SIZES:
        photo = np.random.default_rng(w * h).integers(0, 256, (h, w, 3), dtype=np.uint8)
        t0 = clock()
        out = resize_crop(photo, spec)
        first = (clock() - t0) * 1000
        for _ in range(warmup):
            resize_crop(photo, spec)
        times = []
        for _ in range(runs):
            t0 = clock()
            resize_crop(photo, spec)
            times.append((clock() - t0) * 1000)
        rows.append(Preprocessing(f"image-{w}x{h}", PRE_ENTRY_POINT, (w, h), (int(out.shape[1]), int(out.shape[0])), first_run_ms=first, warm=WarmStats.of(times)))
    return tuple(rows)


def _image_task(task: dict[str, Any] | None) -> TaskSpec | None:
    """The manifest's ``options.task`` as the TaskSpec its native image step needs; None: no image task."""
    from mobilegen.tasks.spec import TaskSpec

    if not task or task.get("kind") not in ("image-classification", "image"):
        return None
    crop, resize, flt = task.get("crop"), task.get("resize"), task.get("resize_filter")
    if not (isinstance(crop, list) and len(crop) == 2 and all(isinstance(c, int) and c > 0 for c in crop)):
        return None
    return TaskSpec(
        kind=task["kind"],
        crop=(crop[0], crop[1]),
        resize=resize if isinstance(resize, int) and resize > 0 else None,
        resize_filter=flt if flt in ("antialias", "bilinear") else "antialias",
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


def _warm_library(ort: Any, model: Path) -> None:
    """One untimed session and run before the first timed configuration: onnxruntime's one-off start-up
    (its environment, thread pools, kernel registries) would otherwise land on whichever row comes first."""
    try:
        ort.InferenceSession(str(model), providers=[CPU_PROVIDER])
    except Exception:  # noqa: BLE001, S110 — a model that cannot load is reported by its own timed row
        pass


def _measure(
    ort: Any, target: Target, config: HostConfig, feeds: dict[str, Any], runs: int, warmup: int, clock: Callable[[], float]
) -> Configuration:
    model, name = target.file_for(config)
    options = config.options()
    if model != target.ort:
        options["model_file"] = name
    base = Configuration(config.name, config.ep, None, config.providers, options, shipped_default=config.shipped_default)
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

    try:
        session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001 — onnxruntime's errors have no common base
        raise LoadError(
            f"onnxruntime cannot load {model.name}: {first_line(err)}",
            hint="pass a .ort file that mobilegen convert, android or ios wrote, or the package folder",
        ) from err
    rng = np.random.default_rng(0)
    feeds: dict[str, Any] = {}
    for i in session.get_inputs():
        dtype = _NP_DTYPES.get(i.type)
        if dtype is None:
            raise UsageError(f"{model}: input {i.name!r} has type {i.type}, which mobilegen bench cannot make", hint="benchmark the package instead (its golden inputs)")
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        feeds[i.name] = rng.random(shape).astype(dtype) if dtype.startswith("float") else np.zeros(shape, dtype=dtype)
    return feeds
