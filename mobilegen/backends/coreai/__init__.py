"""Core AI (iOS / macOS 27+): Apple's ``.aimodel`` beside the ONNX Runtime build.

``convert`` turns the same PyTorch module into an ``.aimodel`` with ``coreai-torch``; ``host`` runs it on this
machine with ``coreai-core``'s Linux CPU runtime; ``stage`` gates it against the reference with mobilegen's
verification gate and golden vectors, and an int8 variant (``coreai-opt``) with the int8 accuracy gate;
``swift`` renders the Swift that runs it on iOS 27+ while the ORT build keeps serving older systems.
The packages are optional (``pip install mobilegen[coreai]``): nothing here imports them at import time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen.backends.coreai import host, session
from mobilegen.backends.coreai.convert import CoreAIArtifact, convert_module, to_coreai, to_coreai_int8
from mobilegen.backends.coreai.deps import available, require
from mobilegen.backends.coreai.stage import CoreAIBuild, build_coreai, int8_accuracy, verify_coreai

if TYPE_CHECKING:
    import numpy as np

    from mobilegen.spec import IOSpec


# The registry's contract (mobilegen.backends.BackendImpl).
def convert(module: Any, example: Sequence[np.ndarray], out: Path, *, io: IOSpec, quantize_calibration: Sequence[Sequence[np.ndarray]] | None = None) -> Path:
    """``module`` → the ``.aimodel`` folder ``out``, named as ``io`` (the registry passes it: ``named_io``)."""
    return convert_module(module, example, out, io=io, quantize_calibration=quantize_calibration)


def host_runner(path: Path) -> Callable[[dict[str, np.ndarray]], list[np.ndarray]]:
    """One verification case on coreai-core's Linux CPU runtime (the gate's runner for ``.aimodel``)."""
    return host.host_runner(path)


# The benchmark's hooks (mobilegen.bench.runtimes): the model loaded once, and inputs from its own descriptors.
def open_session(path: Path) -> session.CoreAISession:
    return session.open_session(path)


def sample_inputs(path: Path) -> dict[str, np.ndarray]:
    return session.sample_inputs(path)


__all__ = [
    "CoreAIArtifact",
    "CoreAIBuild",
    "available",
    "build_coreai",
    "convert",
    "host_runner",
    "int8_accuracy",
    "open_session",
    "require",
    "sample_inputs",
    "to_coreai",
    "to_coreai_int8",
    "verify_coreai",
]
