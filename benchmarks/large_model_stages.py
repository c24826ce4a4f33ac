"""Where `mobilegen package` spends its time on a large model: wall and CPU seconds per pipeline stage.

    python benchmarks/large_model_stages.py [MODEL] [mobilegen package flags...]

Without MODEL (the first argument is a flag, or there is none) it makes the ViT-Large ``.pt2`` of
``benchmarks/large_model.py`` (303M parameters, random weights) first, in a child process, and uses
``--android --ios --nnapi --coreml`` when no flags are given. Runs ``mobilegen package MODEL -o TMP/out FLAGS`` in this process (through ``python -m mobilegen``'s
entry, so the CLI's settings apply) with a timer around each stage function of ``mobilegen.pipeline``
and a few of the costly calls inside them, then prints a table (``x N``: calls). CPU seconds are the
process's (every thread's), which a shared machine's other load changes least; peak GiB is the largest
resident size sampled (every 50 ms) while the row's call ran (rows of calls that overlap share samples). Nested rows are part of
the row above them. docs/benchmarks.md reports the ViT-Large run; asserts nothing.
"""

from __future__ import annotations

import functools
import gc
import importlib
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

# (module, function, indent): stage functions as pipeline.build calls them, then costly calls inside.
TIMED = [
    ("mobilegen.pipeline", "load_and_export", 0),
    ("mobilegen.load.loader", "load_model", 1),
    ("mobilegen.export.exporter", "_check_example_run", 1),
    ("mobilegen.export.exporter", "_export_program", 1),
    ("mobilegen.export.exporter", "finish_model", 1),
    ("mobilegen.tasks.stage", "build_reference", 0),
    ("mobilegen.passes.stage", "fix", 0),
    ("mobilegen.convert.stage", "write_models", 0),
    ("mobilegen.passes", "serialized_with_digest", 1),
    ("mobilegen.infra.outputs", "write_bytes_atomic", 1),
    ("mobilegen.convert.stage", "convert", 0),
    ("mobilegen.convert.to_ort", "_save_ort", 1),
    ("mobilegen.convert.to_ort", "canonicalize_file", 1),
    ("mobilegen.verify.stage", "verify", 0),
    ("mobilegen.verify.gate", "ort_runner", 1),
    ("mobilegen.quantize.stage", "quantize_build", 0),
    ("mobilegen.coverage.stage", "analyse", 0),
    ("mobilegen.render.stage", "render", 0),
    ("mobilegen.package", "finalize_package", 0),
]

times: dict[str, list[float]] = {}
active: dict[str, int] = {}  # the timed calls running now (in any thread), by label
peaks: dict[str, float] = {}  # the largest resident size sampled while each label ran, GiB


def _rss_gib() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 2**20
    return 0.0


def _sample(stop: threading.Event) -> None:
    """Every 50 ms: the resident size, counted for every timed call running then (where the peak is)."""
    while not stop.wait(0.05):
        rss = _rss_gib()
        for label, n in list(active.items()):
            if n:
                peaks[label] = max(peaks.get(label, 0.0), rss)


def timed(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        active[label] = active.get(label, 0) + 1
        try:
            return fn(*args, **kwargs)
        finally:
            active[label] -= 1
            row = times.setdefault(label, [0.0, 0.0, 0])
            row[0] += time.perf_counter() - wall
            row[1] += time.process_time() - cpu
            row[2] += 1

    return wrapper


def main() -> None:
    args = sys.argv[1:]
    for module, name, _indent in TIMED:
        mod = importlib.import_module(module)
        setattr(mod, name, timed(f"{module}.{name}", getattr(mod, name)))
    gc_cpu = [0.0, 0.0]

    def on_gc(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            gc_cpu[1] = time.process_time()
        else:
            gc_cpu[0] += time.process_time() - gc_cpu[1]

    gc.callbacks.append(on_gc)
    from mobilegen.__main__ import run

    stop = threading.Event()
    sampler = threading.Thread(target=_sample, args=(stop,), daemon=True)
    sampler.start()

    with tempfile.TemporaryDirectory(prefix="mobilegen-stages-") as tmp:
        if not args or args[0].startswith("-"):
            from large_model import MAKE  # this folder is on sys.path when the script runs

            model = f"{tmp}/vit.pt2"
            subprocess.run([sys.executable, "-c", MAKE, model, "large"], check=True, capture_output=True)
            args = [model, *(args or ["--android", "--ios", "--nnapi", "--coreml"])]
        sys.argv = ["mobilegen", "package", args[0], "-o", f"{tmp}/out", *args[1:]]
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        try:
            run()
        except SystemExit as done:
            if done.code:
                raise
        finally:
            total_wall, total_cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
            stop.set()
    print(f"{'stage':44} {'wall s':>8} {'CPU s':>8} {'peak GiB':>9}  calls")
    for module, name, indent in TIMED:
        row = times.get(f"{module}.{name}")
        if row is not None:
            label = ("  " * indent + ("- " if indent else "") + f"{module.rsplit('.', 1)[-1]}.{name}")[:44]
            peak = peaks.get(f"{module}.{name}")
            print(f"{label:44} {row[0]:8.1f} {row[1]:8.1f} {'' if peak is None else f'{peak:9.2f}':>9}  x{int(row[2])}")
    print(f"{'garbage collection (every stage)':44} {'':8} {gc_cpu[0]:8.1f}")
    print(f"{'whole run (imports, CLI, the above)':44} {total_wall:8.1f} {total_cpu:8.1f}")
    print(f"peak resident memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")


if __name__ == "__main__":
    main()
