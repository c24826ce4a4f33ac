"""Option declarations shared by every command that takes a MODEL (one definition each)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

ModelArg = Annotated[Path, typer.Argument(help="A model: TorchScript .pt, torch.export .pt2, torch.save .pt, state_dict, or .onnx.", show_default=False)]
InputOpt = Annotated[
    list[str] | None,
    typer.Option("--input", "-i", help="Input spec NAME:SHAPE[:DTYPE], e.g. image:1x3x224x224 or ids:batchx128:int64 (a named dim is dynamic). Repeatable."),
]
DynamicOpt = Annotated[list[str] | None, typer.Option("--dynamic", help="Make an axis dynamic: INPUT:AXIS[=NAME], e.g. x:0=batch. Repeatable.")]
OpsetOpt = Annotated[int | None, typer.Option("--opset", help="ONNX opset to export (default: the exporter's, ≤ 24; NNAPI/CoreML take up to 24).")]
OutputNameOpt = Annotated[list[str] | None, typer.Option("--output-name", help="Name the model outputs, in order. Repeatable.")]
TrustPickleOpt = Annotated[bool, typer.Option("--trust-pickle", help="Load a pickled nn.Module (torch.save(model)). Unpickling runs code from the file: only for files you trust.")]
ModelClassOpt = Annotated[str | None, typer.Option("--model-class", help="For a state_dict: the architecture, package.module:ClassName or path/file.py:ClassName.")]
ModelKwargsOpt = Annotated[str | None, typer.Option("--model-kwargs", help="For --model-class: constructor arguments as a JSON object.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable result on stdout (human output stays on stderr).")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace the output if it exists.")]
AtolOpt = Annotated[float, typer.Option("--atol", help="Absolute tolerance of the verification gate.")]
RtolOpt = Annotated[float, typer.Option("--rtol", help="Relative tolerance of the verification gate.")]
SampleOpt = Annotated[Path | None, typer.Option("--sample", help="An .npz of real inputs (one array per input name) to verify on as well.")]
OrtVersionOpt = Annotated[str | None, typer.Option("--ort-version", help="Pin another published ONNX Runtime mobile version (checked against what the model needs).")]
NameOpt = Annotated[str | None, typer.Option("--name", help="Class name of the generated wrapper (default: from the model file name).")]

if TYPE_CHECKING:
    from mobilegen.options import ModelOptions


def model_options(
    inputs: list[str] | None,
    dynamic: list[str] | None,
    opset: int | None,
    output_names: list[str] | None,
    trust_pickle: bool,
    model_class: str | None,
    model_kwargs: str | None,
) -> ModelOptions:  # imported lazily: keeps --help fast
    from mobilegen.load import LoadOptions
    from mobilegen.options import ModelOptions

    return ModelOptions(
        inputs=tuple(inputs or ()),
        dynamic=tuple(dynamic or ()),
        opset=opset,
        output_names=tuple(output_names or ()),
        load=LoadOptions(trust_pickle=trust_pickle, model_class=model_class, model_kwargs=model_kwargs),
    )
