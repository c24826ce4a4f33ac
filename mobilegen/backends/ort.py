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


def convert(module: Any, example: Sequence[np.ndarray], out: Path) -> Path:
    """Not called: ORT's conversion is the build's export and convert stages (they need the ONNX graph)."""
    raise InternalError("the ort backend converts through the pipeline's export and convert stages")


def host_runner(path: Path) -> Runner:
    from mobilegen.verify.gate import ort_runner

    return ort_runner(path)
