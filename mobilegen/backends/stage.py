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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen import backends
from mobilegen.artifacts import JSONValue
from mobilegen.errors import UsageError
from mobilegen.infra import progress

if TYPE_CHECKING:
    from mobilegen.artifacts import OnnxModel
    from mobilegen.options import BuildOptions
    from mobilegen.verify.gate import Expected


@dataclass(frozen=True)
class BackendModel:
    """One runtime's converted model: the file the package ships for it, and how long converting took."""

    runtime: str
    path: Path  # in the package folder: model/model.tflite
    platforms: tuple[str, ...]
    seconds: float

    def record(self, root: Path) -> dict[str, JSONValue]:
        return {"runtime": self.runtime, "file": self.path.relative_to(root).as_posix(), "bytes": self.path.stat().st_size,
                "platforms": list(self.platforms), "convert_seconds": round(self.seconds, 2)}


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
        start = time.perf_counter()
        named = {"io": prepared.io} if b.named_io else {}  # Core AI names the function's inputs/outputs as the ONNX model
        impl.convert(module, list(expected.cases[0].values()), path, **named)
        out.append(BackendModel(b.name, path, tuple(p for p in b.platforms if p in opts.targets), time.perf_counter() - start))
    return tuple(out)


def artifacts(models: tuple[BackendModel, ...]) -> dict[str, Path]:
    """The verification table's label of each converted model (``litert``) → its file."""
    return {m.runtime: m.path for m in models}
