"""A model's outputs, however nested, as one flat list in order (the order the ONNX exporters give them)."""

from __future__ import annotations

from typing import Any


def flatten_outputs(out: Any) -> list[Any]:
    """Dict values, list and tuple items and a transformers ``ModelOutput`` (``to_tuple``), depth first."""
    if isinstance(out, dict):
        return [t for v in out.values() for t in flatten_outputs(v)]
    if isinstance(out, (list, tuple)):
        return [t for v in out for t in flatten_outputs(v)]
    if hasattr(out, "to_tuple"):  # transformers ModelOutput
        return flatten_outputs(out.to_tuple())
    return [out]
