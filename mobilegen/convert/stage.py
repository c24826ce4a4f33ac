"""The convert stage of a build: each distinct model written once, then converted to ORT format beside it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen import passes
from mobilegen.artifacts import OnnxModel, ShippedModel
from mobilegen.convert.to_ort import convert_to_ort
from mobilegen.infra.digest import remember_written
from mobilegen.infra.memory import release_memory
from mobilegen.passes.stage import materialize

if TYPE_CHECKING:
    from mobilegen.passes.stage import FixPlan


def write_models(base: OnnxModel, fix_plan: FixPlan, root: Path) -> tuple[ShippedModel, ...]:
    """Each distinct model once (``model/``, or ``model/<target>/`` when the targets' graphs differ)."""
    return materialize(base, fix_plan, root, write_onnx)


def write_onnx(model: OnnxModel) -> OnnxModel:
    """The one write of the build's ``model.onnx``, with the providers' cache keys stamped in
    (:func:`mobilegen.passes.cache_keys`; one serialization, hashed once: the manifest takes the digest
    instead of reading the file again). The in-memory model is let go: from here on the file is the model."""
    from mobilegen.infra.outputs import write_bytes_atomic

    chunks, sha256 = passes.serialized_with_digest(model, passes.cache_keys())
    write_bytes_atomic(model.path, *chunks)
    remember_written(model.path, sha256)
    return replace(model, proto=None)


def convert(models: Sequence[ShippedModel], root: Path, style: str) -> tuple[ShippedModel, ...]:
    """Each model's ``.ort`` and ``required_operators.config`` beside its ``.onnx``."""
    release_memory()  # the in-memory model is gone by now: the conversion's peak must not count it

    return tuple(
        replace(m, ort=convert_to_ort(m.onnx, root / m.ort_file, root / m.ops_config_file, style=style)) for m in models
    )

