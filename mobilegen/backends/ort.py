"""ONNX Runtime, the default runtime: the pipeline's own stages convert (export → fix → ``.ort``,
:mod:`mobilegen.convert`); this module is its entry in the backend registry's contract."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen.errors import InternalError

if TYPE_CHECKING:
    import numpy as np

    from mobilegen.backends import Runner


def convert(module: Any, example: Sequence[np.ndarray], out: Path, *, quantize_calibration: Sequence[Sequence[np.ndarray]] | None = None) -> Path:
    """Not called: ORT's conversion is the build's export and convert stages (they need the ONNX graph)."""
    raise InternalError("the ort backend converts through the pipeline's export and convert stages")


def host_runner(path: Path) -> Runner:
    """onnxruntime's CPU provider (the gate itself uses mobilegen.verify.gate.ort_runner, the same session
    without a memory arena; this one serves callers outside a build, such as the benchmark)."""
    import numpy as np
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 4
    session = ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])

    def run(arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(x) for x in session.run(None, dict(arrays))]

    return run
