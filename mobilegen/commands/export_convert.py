"""The single-artifact commands: ``export`` (a verified .onnx) and ``convert`` (a verified .ort).

Each is one function with its stage order; the CLI only turns flags into options and renders the result.
Outputs are staged and checked again right before they replace anything (``mobilegen.infra.outputs``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen import targets
from mobilegen.convert.to_ort import config_path_for, convert_to_ort
from mobilegen.errors import UsageError
from mobilegen.export.stage import load_and_export
from mobilegen.infra import progress
from mobilegen.infra.memory import release_memory
from mobilegen.infra.outputs import check_target, staged_files, temp_dir
from mobilegen.options import ModelOptions
from mobilegen.quantize.stage import quantize_convert
from mobilegen.runtimes import check_loadable, default_release
from mobilegen.verify.gate import VerifyOptions, verify
from mobilegen.verify.stage import reference, reference_for

if TYPE_CHECKING:
    from mobilegen.artifacts import OrtModel
    from mobilegen.quantize import QuantizeOptions


@dataclass(frozen=True)
class ExportResult:
    output: str
    exporter: str
    fallback_reason: str | None
    opset: int
    io: dict[str, Any]
    verification: dict[str, Any] | None
    notes: list[str]


@dataclass(frozen=True)
class ConvertResult:
    output: str
    required_operators: str
    optimization_style: str
    optimization_level: str
    ort_format_version: int
    converter_version: str
    opset: int
    verification: dict[str, Any]
    notes: list[str]
    quantization: dict[str, Any] | None = None  # --quantize: recipe, calibration, sizes, the accuracy gate's table


def export_model(model: Path, output: Path, opts: ModelOptions, verify_opts: VerifyOptions, *, force: bool) -> ExportResult:
    """load → export → verify against PyTorch → write ``output``."""
    check_target(output, "file", force=force, protect=(model,))  # what -o is (a link, a FIFO, ...) is said first
    if output.suffix.lower() != ".onnx":  # an ONNX file named .ort (or anything else) would mislead whoever loads it
        hint = "for an ORT-format model use mobilegen convert -o FILE.ort" if output.suffix.lower() == ".ort" else f"e.g. -o {output.with_suffix('.onnx').name}"
        raise UsageError(f"-o {output} does not name an .onnx file", hint=hint)
    with staged_files([output], force=force, protect=(model,)) as (staged,), temp_dir("export") as tmp:
        progress.step("exporting")
        loaded, onnx_model = load_and_export(model, opts, tmp / "model.onnx")
        onnx_model = replace(onnx_model, proto=None)  # written: the gate loads the file
        ref, label = reference_for(loaded, onnx_model)
        report = verify(ref, {"onnx": onnx_model.path}, onnx_model, verify_opts, reference_label=label)
        staged.copy_from(onnx_model.path)
    return ExportResult(
        str(output), onnx_model.exporter, onnx_model.fallback_reason, onnx_model.opset, onnx_model.io.to_dict(), report.to_dict(), [*onnx_model.notes, *report.notices]
    )


def convert_model(
    model: Path, output: Path, opts: ModelOptions, verify_opts: VerifyOptions, *, style: str, force: bool, quantize: QuantizeOptions | None = None
) -> ConvertResult:
    """load → export → convert → check every target's default runtime loads it → verify → (``--quantize``:
    quantize with the CPU recipe → convert → accuracy gate against the fp32 model) → write ``output`` and
    ``NAME.required_operators.config`` beside it."""
    config_out = config_path_for(output)  # refuses an -o named like the config
    if output.suffix.lower() != ".ort":
        raise UsageError(f"-o {output} does not name an .ort file", hint=f"give the path of the ORT-format model to write, e.g. -o {output.with_suffix('.ort').name}")
    with staged_files([output, config_out], force=force, protect=(model,)) as (staged_ort, staged_config), temp_dir("convert") as work:
        progress.step("exporting")
        loaded, onnx_model = load_and_export(model, opts, work / "model.onnx")
        onnx_model = replace(onnx_model, proto=None)  # written: from here on the file is the model
        release_memory()  # the in-memory model's weights go before the conversion loads them again
        progress.step("converting")
        (work / "ort").mkdir()  # the final names, so the config's header names the .ort the user gets
        ort_model = convert_to_ort(onnx_model, work / "ort" / output.name, work / "ort" / config_out.name, style=style)
        for name in targets.names():  # the runtimes the generated apps pin by default
            channel = targets.get(name).channel
            check_loadable(default_release(channel), max_opset=ort_model.max_opset, ort_format_version=ort_model.ort_format_version, channel=channel)
        expected, loaded = reference(loaded, onnx_model, verify_opts)  # computed, then the reference is let go
        report = verify(expected, {"onnx": onnx_model.path, "ort": ort_model.path}, onnx_model, verify_opts)
        quantized = None if quantize is None else quantize_convert(onnx_model, ort_model, quantize, work / "quantized", style)
        if quantized is not None:  # the fp32 model proved the export; the quantized one passed its accuracy gate
            ort_model = quantized.ort
            _check_pins(ort_model)
            ort_model = _renamed_config(ort_model, work / "ort" / config_out.name, output.name)
        staged_ort.copy_from(ort_model.path)
        staged_config.copy_from(ort_model.config_path)
    return ConvertResult(
        str(output), str(config_out), ort_model.optimization_style, ort_model.optimization_level,
        ort_model.ort_format_version, ort_model.converter_version, onnx_model.opset, report.to_dict(),
        [*onnx_model.notes, *report.notices, *(quantized.notes if quantized else ())],
        None if quantized is None else quantized.record.to_dict(),
    )


def _check_pins(ort_model: OrtModel) -> None:
    """Every target's default pinned runtime loads ``ort_model``."""
    for name in targets.names():
        channel = targets.get(name).channel
        check_loadable(default_release(channel), max_opset=ort_model.max_opset, ort_format_version=ort_model.ort_format_version, channel=channel)


def _renamed_config(ort_model: OrtModel, dest: Path, ort_name: str) -> OrtModel:
    """The quantized model's operator config, its header naming the .ort the user gets (as the fp32 one's)."""
    text = ort_model.config_path.read_text(encoding="utf-8").replace(f"# - {ort_model.path.name}", f"# - {ort_name}")
    dest.write_text(text, encoding="utf-8")
    return replace(ort_model, config_path=dest)
