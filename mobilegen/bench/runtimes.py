"""``mobilegen bench`` on the other runtimes of the registry (:mod:`mobilegen.backends`): a LiteRT ``.tflite``
or a Core AI ``.aimodel`` timed on this host with the backend's own host runtime, in the same result schema as
the ORT configurations so every runtime of a package compares in one table.

A row (a :class:`~mobilegen.bench.schema.Configuration`) per runtime: ``name`` and the ``--ep`` that asks for
it are the runtime's registry name (``litert``, ``coreai``); ``ep`` is ``cpu`` (the host runtimes run on the
CPU, so no row is compared with the coverage prediction); ``providers`` names the runtime's accelerator;
``options`` record the runtime's distribution and version, the API that ran it and the file timed
(``model_file``). Session creation is the backend's :meth:`~mobilegen.backends.BenchImpl.open_session` (load,
and for Core AI the lowering), then the first run, the warm-up and the timed runs, as for ORT. Placement is
unavailable: neither host runtime reports where each op ran.

The optional dependency is checked first: a bare model file whose runtime is not installed is refused in one
line naming the extra; a package's row for it is ``skipped`` with the same sentence, the ORT rows still run.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen import backends
from mobilegen.bench.schema import Configuration, Placement, WarmStats
from mobilegen.errors import LoadError, MobilegenError, UsageError, first_line
from mobilegen.infra.digest import sha256_file

if TYPE_CHECKING:
    import numpy as np

NO_ORT = "none"  # a result's ort_version when ONNX Runtime ran none of its rows (a bare .tflite / .aimodel)
NO_PLACEMENT = "{runtime}'s host runtime reports no per-op placement"


def others() -> tuple[backends.Backend, ...]:
    """The runtimes ``mobilegen bench`` times besides ORT (their registry names are ``--ep`` values)."""
    return tuple(b for b in backends.BUILTIN if b.name != backends.DEFAULT)


def runtime_of(path: Path) -> backends.Backend | None:
    """The non-ORT backend whose model files look like ``path`` (``.tflite``; the ``.aimodel`` folder)."""
    b = backends.by_suffix(path.suffix)
    return b if b is not None and b.name != backends.DEFAULT else None


def model_digest(path: Path) -> str:
    """sha256 of a model file; of a folder model (``.aimodel``): of its files' sorted ``<path> <sha256>`` lines."""
    if not path.is_dir():
        return sha256_file(path)
    lines = sorted(f"{p.relative_to(path).as_posix()} {sha256_file(p)}\n" for p in path.rglob("*") if p.is_file())
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class RuntimeModel:
    """One model file of another runtime to time: its backend, path, name in the package, and inputs."""

    backend: backends.Backend
    path: Path
    name: str  # its path inside the package, or a bare file's name
    inputs: Mapping[str, np.ndarray] | None  # the package's golden inputs; None: made from the model's signature


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def what_needs(b: backends.Backend, name: str) -> str:
    return f"timing {name} ({b.display_name})"


def measure(model: RuntimeModel, runs: int, warmup: int, clock: Callable[[], float] = time.perf_counter) -> Configuration:
    """One row: ``skipped`` when the runtime is not installed here, ``failed`` (with the first line of the
    error) when it cannot load or run the model, else the timings."""
    b = model.backend
    options = {"runtime": f"{b.host_runtime} {_version(b.host_runtime)}", "model_file": model.name}
    base = Configuration(b.name, "cpu", None, (f"{b.display_name} CPU",), options)
    try:
        impl = backends.bench_implementation(b, what_needs(b, model.name))
    except UsageError as err:
        why = err.one_line()
        return _with(base, status="skipped", reason=why, placement=Placement.unavailable(why))
    session: Any = None
    try:
        feeds = dict(model.inputs) if model.inputs is not None else impl.sample_inputs(model.path)
        t0 = clock()
        session = impl.open_session(model.path)
        created = (clock() - t0) * 1000
        options["api"] = session.api
        t0 = clock()
        session.run(feeds)
        first = (clock() - t0) * 1000
        for _ in range(warmup):
            session.run(feeds)
        times = []
        for _ in range(runs):
            t0 = clock()
            session.run(feeds)
            times.append((clock() - t0) * 1000)
    except Exception as err:  # noqa: BLE001 — each runtime raises its own errors; recorded in the row
        why = err.message if isinstance(err, MobilegenError) else f"{type(err).__name__}: {first_line(err)}"
        return _with(base, options=options, status="failed", reason=why[:2000], placement=Placement.unavailable(why[:2000]))
    finally:
        if session is not None:
            session.close()
    none = NO_PLACEMENT.format(runtime=b.display_name)
    return _with(base, options=options, session_create_ms=created, first_run_ms=first, warm=WarmStats.of(times), placement=Placement.unavailable(none))


def _with(c: Configuration, **changes: Any) -> Configuration:
    from dataclasses import replace

    return replace(c, **changes)


def package_models(root: Path, runtimes: object, inputs: Mapping[str, np.ndarray] | None, target: str | None = None) -> tuple[RuntimeModel, ...]:
    """The other runtimes' models a package ships: its manifest's ``options.runtimes`` (``{"runtime",
    "file", ...}`` per runtime, :mod:`mobilegen.backends.stage`), each timed on the package's golden inputs;
    with ``target`` (``--target``) only the runtimes of that platform."""
    from mobilegen.package.manifest import path_problem

    out = []
    for rec in runtimes if isinstance(runtimes, list) else []:
        if not isinstance(rec, dict) or not isinstance(rec.get("runtime"), str) or not isinstance(rec.get("file"), str):
            continue
        b = next((o for o in others() if o.name == rec["runtime"]), None)
        if b is None or path_problem(rec["file"]) or not (root / rec["file"]).exists() or (target is not None and target not in b.platforms):
            continue
        out.append(RuntimeModel(b, root / rec["file"], rec["file"], inputs))
    return tuple(out)


def bare_model(path: Path, eps: tuple[str, ...] | None) -> RuntimeModel:
    """A bare ``.tflite`` / ``.aimodel`` and inputs made from its own signature; refused in one line when its
    runtime is not installed, when ``--ep`` asks for another configuration, or when it cannot load (exit 3)."""
    b = runtime_of(path)
    if b is None:
        raise UsageError(f"{path}: not a model file of {', '.join(o.display_name for o in others())}")
    wrong = [e for e in eps or () if e != b.name]
    if wrong:
        raise UsageError(f"--ep {wrong[0]}: {path.name} runs on {b.display_name} only", hint=f"drop --ep, or pass --ep {b.name}")
    if b.suffix == ".aimodel" and not path.is_dir():
        raise UsageError(f"{path}: a {b.display_name} model is a folder ({b.suffix}), this is a file", hint="pass the .aimodel folder that mobilegen ios --runtime coreai wrote")
    impl = backends.bench_implementation(b, what_needs(b, path.name))
    try:
        inputs = impl.sample_inputs(path)
    except MobilegenError:
        raise
    except Exception as err:  # noqa: BLE001 — each runtime raises its own load errors
        raise LoadError(
            f"{b.host_runtime} cannot load {path.name}: {first_line(err)}",
            hint=f"pass a {b.suffix} that mobilegen wrote with --runtime {b.name}, or the package folder",
        ) from err
    return RuntimeModel(b, path, path.name, inputs)
