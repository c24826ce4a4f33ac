"""The load and export stages together: a model file → LoadedModel (its --const inputs bound) → OnnxModel."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen.export.const_inputs import bind_consts
from mobilegen.export.exporter import ExportOptions, export_onnx
from mobilegen.load.loader import load_model

if TYPE_CHECKING:
    from mobilegen.artifacts import LoadedModel, OnnxModel
    from mobilegen.options import ModelOptions


def load_and_export(
    path: Path, opts: ModelOptions, out_path: Path, *, write: bool = True, before_export: Callable[[LoadedModel, ExportOptions], None] | None = None
) -> tuple[LoadedModel, OnnxModel]:
    export_opts = opts.export_options()  # parse flags before any heavy work
    loaded = bind_consts(load_model(path, opts.load), export_opts.consts)  # the reference runs with them too
    if before_export is not None:  # checks of the exported IO, on the IO known before the export (mobilegen.export.early_checks)
        before_export(loaded, export_opts)
    return loaded, export_onnx(loaded, export_opts, out_path, write=write)
