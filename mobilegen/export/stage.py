"""The load and export stages together: a model file → LoadedModel (its --const inputs bound) → OnnxModel.

:func:`export_onnx` is the one entry of the export stage: a PyTorch model goes to the exporters
(:mod:`mobilegen.export.exporter`), an ONNX model is passed through (:mod:`mobilegen.export.onnx_input`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen.errors import UsageError
from mobilegen.export.const_inputs import bind_consts
from mobilegen.export.exporter import ExportOptions, export_pytorch
from mobilegen.export.limits import MAX_INLINE_BYTES
from mobilegen.export.onnx_input import check_onnx_inputs, load_weights, passthrough, read_onnx_source
from mobilegen.infra.onnx_size import model_bytes
from mobilegen.load.loader import load_model
from mobilegen.spec import onnx_io_spec

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


def export_onnx(loaded: LoadedModel, options: ExportOptions, out_path: Path, *, write: bool = True, torchscript_only: bool = False) -> OnnxModel:
    """Export to ``out_path`` (a single self-contained .onnx). ONNX inputs are copied through. The model
    stays in memory (``OnnxModel.proto``); with ``write=False`` nothing is written yet (the build writes
    it once, after its graph passes). ``torchscript_only``: a module goes to the TorchScript exporter
    directly (mobilegen.export.advice compares the two)."""
    loaded = bind_consts(loaded, options.consts)  # the caller may have bound them already (the reference needs them)
    if loaded.kind == "onnx":
        return passthrough(loaded, options, out_path, read_onnx_source(loaded, options), write=write)
    if loaded.kind == "ort":
        raise UsageError(f"{loaded.source} is already in ORT format", hint="pass the .onnx or PyTorch model it came from")
    return export_pytorch(loaded, options, out_path, write=write, torchscript_only=torchscript_only)


def onnx_for_analysis(loaded: LoadedModel, options: ExportOptions, out_path: Path) -> Any:
    """The ONNX model ``mobilegen check`` analyses: exported as by every other command, except an ONNX
    source too large for one file, which is analysed as given (weights read from its external data)."""

    if loaded.kind != "onnx":
        return export_onnx(loaded, options, out_path, write=False).proto
    model = read_onnx_source(loaded, options)
    if model_bytes(model) <= MAX_INLINE_BYTES:
        return passthrough(loaded, options, out_path, model, write=False, examples=False).proto
    check_onnx_inputs(onnx_io_spec(model), options, loaded.source, examples=False)
    load_weights(model, loaded)
    return model
