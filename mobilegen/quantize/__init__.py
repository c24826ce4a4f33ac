"""Quantization per execution provider (issue 13): recipes, calibration samples, the quantizer and the
accuracy gate, as a typed library. ``stage.py`` wires it into the build.

- :mod:`~mobilegen.quantize.options`: ``QuantizeOptions`` (the flags) and their cheap checks;
- :mod:`~mobilegen.quantize.recipes`: ``recipe_for`` — which types/granularity a provider takes, or a
  ``Refusal`` (the target ships fp32), each with the ORT source it rests on;
- :mod:`~mobilegen.quantize.calibration`: ``load_calibration`` — .npz file, folder, or random; held-out split;
- :mod:`~mobilegen.quantize.engine`: ``quantize`` — onnxruntime.quantization (QDQ, dynamic) and float16;
- :mod:`~mobilegen.quantize.accuracy`: ``accuracy`` and ``gate`` — cosine, max abs, top-1, worst SQNR.

Importing this package loads no numpy, onnx, onnxruntime or torch: every heavy import is inside a function.
"""

from __future__ import annotations

from mobilegen.quantize.accuracy import AccuracyReport, LayerNoise, OutputAccuracy, accuracy, gate
from mobilegen.quantize.calibration import Calibration, load_calibration
from mobilegen.quantize.engine import QuantizedModel, quantize
from mobilegen.quantize.options import CalibrationMethod, QuantizeMode, QuantizeOptions
from mobilegen.quantize.recipes import Recipe, Refusal, recipe_for

__all__ = [
    "AccuracyReport",
    "Calibration",
    "CalibrationMethod",
    "LayerNoise",
    "OutputAccuracy",
    "QuantizeMode",
    "QuantizeOptions",
    "QuantizedModel",
    "Recipe",
    "Refusal",
    "accuracy",
    "gate",
    "load_calibration",
    "quantize",
    "recipe_for",
]
