"""The runtimes stage of a build (``--runtime``): every runtime other than ORT converts the same PyTorch
module into its own model file, which the same verification gate checks against the same golden
vectors (the PyTorch reference's outputs on the same cases).

Order in ``pipeline.build``: ``check_options`` with the other flag checks (before any heavy work);
``convert`` after the reference ran but before the PyTorch module is let go; ``artifacts`` hands the
converted files to the verify stage, whose gate runs each on this host with its own runtime
(:func:`mobilegen.backends.host_runner`), in one table with the ``.onnx``/``.ort`` rows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen import backends
from mobilegen.artifacts import JSONValue
from mobilegen.errors import UsageError
from mobilegen.infra import progress

if TYPE_CHECKING:
    from mobilegen.artifacts import BuildResult, OnnxModel
    from mobilegen.options import BuildOptions
    from mobilegen.quantize.accuracy import AccuracyReport
    from mobilegen.verify.gate import Expected


@dataclass(frozen=True)
class BackendModel:
    """One runtime's converted model: the file the package ships for it, and how long converting took."""

    runtime: str
    path: Path  # in the package folder: model/model.tflite (fp32 until finish())
    platforms: tuple[str, ...]
    seconds: float
    quantized: Path | None = None  # --quantize int8: the runtime's int8 model, until finish() moves it to path
    accuracy: AccuracyReport | None = None  # --quantize int8: the accuracy gate's report (int8 vs the fp32 model)

    def record(self, root: Path) -> dict[str, JSONValue]:
        return {"runtime": self.runtime, "file": self.path.relative_to(root).as_posix(), "bytes": model_bytes(self.path),
                "platforms": list(self.platforms), "convert_seconds": round(self.seconds, 2),
                "quantization": None if self.accuracy is None else {"mode": "int8", "accuracy": self.accuracy.record()}}


def model_bytes(path: Path) -> int:
    """A model's size: its file's, or the total of the files in a folder model (Core AI's ``.aimodel``),
    not the directory entry's own few KiB."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def chosen(opts: BuildOptions) -> tuple[backends.Backend, ...]:
    """The runtimes this build converts itself (every one but ORT)."""
    return tuple(backends.get(n) for n in opts.runtimes if n != backends.DEFAULT)


def check_options(opts: BuildOptions) -> None:
    """Every --runtime refusal that needs no model: the optional dependency installed, fixed shapes,
    a PyTorch source, no flag the runtime cannot honour."""
    for b in chosen(opts):
        backends.check_available(b)
        eo = opts.model_opts.export_options()
        backends.check_static(b, eo.inputs, dynamic_flags=opts.model_opts.dynamic)
        if b.needs_pytorch and Path(opts.model).suffix.lower() == ".onnx":
            raise UsageError(f"--runtime {b.name} converts the PyTorch model, {Path(opts.model).name} is ONNX", hint="give the .pt/.pt2 file, or build with --runtime ort")
        if opts.task is not None and not b.task_api:
            raise UsageError(f"--runtime {b.name} has no --task API yet: its wrapper takes the model's tensors", hint=f"drop --task, or build {b.display_name} in a run of its own without it")
        if opts.quantize is not None and opts.quantize.mode is not None and opts.quantize.mode not in b.quantize_modes:
            modes = f"use --quantize {' or '.join(b.quantize_modes)}, or drop --quantize" if b.quantize_modes else f"drop --quantize (the build ships {b.display_name}'s fp32 model)"
            raise UsageError(f"--runtime {b.name} has no --quantize {opts.quantize.mode}", hint=modes)
        if opts.model_opts.consts:
            raise UsageError(f"--runtime {b.name} does not take --const yet", hint="drop --const (or bind the value in the model's forward)")


def convert(module: Any, source: Path, prepared: OnnxModel, expected: Expected, opts: BuildOptions, root: Path) -> tuple[BackendModel, ...]:
    """Each chosen runtime's model from the PyTorch ``module`` (the loaded model's, kept by the pipeline
    until now), traced with the first verification case (the prepared model's fixed shapes); written into
    ``root/model``."""
    out = []
    for b in chosen(opts):
        if module is None:
            raise UsageError(f"--runtime {b.name} converts the PyTorch model, {source.name} has none", hint="give the .pt/.pt2 file, or build with --runtime ort")
        backends.check_io(b, prepared.io)
        progress.step(f"converting for {b.display_name}")
        impl = backends.implementation(b)
        path = root / "model" / f"model{b.suffix}"
        example = list(expected.cases[0].values())
        start = time.perf_counter()
        if b.named_io:  # Core AI names the function's inputs/outputs as the ONNX model
            impl.convert(module, example, path, io=prepared.io)
        else:
            impl.convert(module, example, path)
        seconds = time.perf_counter() - start
        platforms = tuple(p for p in b.platforms if p in opts.targets)
        q = opts.quantize
        if q is not None and q.mode == "int8":
            progress.step(f"quantizing for {b.display_name}")
            qpath, accuracy = _int8(impl, module, example, path, prepared, opts)
            out.append(BackendModel(b.name, path, platforms, seconds, quantized=qpath, accuracy=accuracy))
        else:
            out.append(BackendModel(b.name, path, platforms, seconds))
    return tuple(out)


def _int8(impl: backends.BackendImpl, module: Any, example: list[Any], fp32: Path, prepared: OnnxModel, opts: BuildOptions) -> tuple[Path, AccuracyReport]:
    """The runtime's own int8 model, calibrated on ``--calibration`` and judged by the same accuracy gate
    as ORT's (cosine, top-1 on the held-out samples) against the runtime's fp32 model (exit 5 below it)."""
    from mobilegen.quantize.accuracy import accuracy_of_runs, gate
    from mobilegen.quantize.calibration import load_calibration

    assert opts.quantize is not None
    calib = load_calibration(opts.quantize, prepared.io)
    names = [t.name for t in prepared.io.inputs]
    cases = [[calib.samples[n][i] for n in names] for i in range(calib.count)]
    qpath = fp32.with_name(f"model.int8{fp32.suffix}")
    impl.convert(module, example, qpath, quantize_calibration=cases)
    held = [{n: calib.held_out[n][i] for n in names} for i in range(calib.held_out_count)]
    ref_run, q_run = backends.host_runner(fp32), backends.host_runner(qpath)
    ref, got = [ref_run(f) for f in held], [q_run(f) for f in held]
    report = accuracy_of_runs([t.name for t in prepared.io.outputs], ref, got, opts.quantize, calib=calib)
    gate(report)
    return qpath, report


def finish(models: tuple[BackendModel, ...]) -> tuple[BackendModel, ...]:
    """After the gate: an int8 model replaces the fp32 one it was judged against (the package ships one
    model per runtime, as ORT's --quantize does)."""
    out = []
    for m in models:
        if m.quantized is not None:
            m.quantized.replace(m.path)
            m = replace(m, quantized=None)
        out.append(m)
    return tuple(out)


def artifacts(models: tuple[BackendModel, ...]) -> dict[str, Path]:
    """The verification table's label of each converted model (``litert``) → its file."""
    return {m.runtime: m.path for m in models}


def record(result: BuildResult, models: tuple[BackendModel, ...], root: Path) -> BuildResult:
    """The manifest's ``options.runtimes``: each other runtime's model (file, bytes, platforms, conversion
    time, int8 accuracy); a build without --runtime records nothing (its manifest is unchanged)."""
    if not models:
        return result
    return replace(result, options={**result.options, "runtimes": [m.record(root) for m in models]})
