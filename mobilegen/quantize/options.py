"""What the user asked for: ``--quantize``, ``--calibration``, ``--calibration-method``, ``--eval``,
``--min-cosine``, ``--min-top1``. Checked cheaply (no numpy/onnx imports) before any model is loaded."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from mobilegen.errors import UsageError
from mobilegen.providers.quantization import MODES as MODES
from mobilegen.providers.quantization import QuantizeMode as QuantizeMode

CalibrationMethod = Literal["minmax", "entropy", "percentile"]
METHODS: tuple[str, ...] = get_args(CalibrationMethod)
RANDOM = "random"
MIN_COSINE, MIN_TOP1 = 0.99, 0.98  # the gate's defaults (the CLI's option defaults too)


@dataclass(frozen=True)
class QuantizeOptions:
    mode: QuantizeMode | None = None
    calibration: str | None = None  # a .npz file, a folder of .npz files, or "random"
    method: CalibrationMethod = "minmax"
    eval: Path | None = None  # accuracy samples (else held out from the calibration set)
    min_cosine: float = MIN_COSINE
    min_top1: float = MIN_TOP1
    seed: int = 0

    def check(self) -> None:
        """One UsageError for the first bad combination of flags (cheap: reads no file)."""
        if self.mode is not None and self.mode not in MODES:
            raise UsageError(f"unknown --quantize mode {self.mode!r}", hint="use one of " + ", ".join(MODES))
        if self.method not in METHODS:
            raise UsageError(f"unknown --calibration-method {self.method!r}", hint="use one of " + ", ".join(METHODS))
        if self.mode is None:
            given = [
                flag
                for flag, on in (
                    ("--calibration", self.calibration is not None),
                    ("--calibration-method", self.method != "minmax"),
                    ("--eval", self.eval is not None),
                    ("--min-cosine", self.min_cosine != MIN_COSINE),  # a default given explicitly goes unnoticed
                    ("--min-top1", self.min_top1 != MIN_TOP1),
                )
                if on
            ]
            if given:
                raise UsageError(
                    f"{given[0]} has no effect without --quantize",
                    hint="add --quantize int8 (or dynamic, fp16), or drop " + given[0],
                )
        if self.mode == "int8" and self.calibration is None:
            raise UsageError(
                "--quantize int8 needs calibration data",
                hint="give --calibration FILE.npz (one array per input, leading samples axis) or a folder of them; "
                "--calibration random accepts seeded random data, and the report marks the result untrustworthy",
            )
        if self.mode in ("dynamic", "fp16") and self.method != "minmax":
            raise UsageError(
                f"--calibration-method has no effect with --quantize {self.mode}",
                hint="only --quantize int8 calibrates activation ranges; drop --calibration-method",
            )
        for flag, value in (("--min-cosine", self.min_cosine), ("--min-top1", self.min_top1)):
            if not (isinstance(value, int | float) and math.isfinite(value) and 0.0 <= value <= 1.0):
                raise UsageError(f"{flag} must be between 0 and 1, not {value!r}", hint=f"e.g. {flag} 0.99")
        if self.calibration is not None and self.calibration != RANDOM:
            where = Path(self.calibration)
            if not where.exists():
                raise UsageError(
                    f"--calibration {self.calibration}: no such file or folder",
                    hint="give an .npz file, a folder of .npz files, or 'random'",
                )
            if where.is_file() and where.suffix.lower() != ".npz":
                raise UsageError(f"--calibration {self.calibration} is not an .npz file", hint=_NPZ_HINT)
        if self.eval is not None:
            if not Path(self.eval).exists():  # a FIFO or device exists: its reader refuses it unopened
                raise UsageError(f"--eval {self.eval}: no such file", hint=_NPZ_HINT)
            if Path(self.eval).is_dir():
                raise UsageError(f"--eval {self.eval} is a folder, not an .npz file", hint=_NPZ_HINT)
            if Path(self.eval).suffix.lower() != ".npz" and Path(self.eval).is_file():
                raise UsageError(f"--eval {self.eval} is not an .npz file", hint=_NPZ_HINT)


_NPZ_HINT = "save the samples with numpy.savez(path, input_name=array) (one array per input, leading samples axis)"
