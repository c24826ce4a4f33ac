"""Option declarations shared by the commands (one definition each; ``mobilegen.cli.flags`` gathers them
by name, and the help of a few is completed from the provider registry when shown:
``mobilegen.cli.provider_help``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

ModelArg = Annotated[Path, typer.Argument(metavar="MODEL", help="A model: TorchScript .pt, torch.export .pt2, torch.save .pt, state_dict, or .onnx.", show_default=False)]
InputOpt = Annotated[
    list[str] | None,
    typer.Option("--input", "-i", metavar="NAME:SHAPE", help="Input spec NAME:SHAPE[:DTYPE], e.g. image:1x3x224x224 or ids:batchx128:int64 (a named dim is dynamic). Repeatable."),
]
ConstOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--const",
        metavar="NAME=VALUE",
        help="Bind a model input (a forward argument or ONNX input) to a value, baked into the shipped model: NAME=VALUE with an int, a float or true/false, e.g. sr=16000. Repeatable.",
    ),
]
DynamicOpt = Annotated[list[str] | None, typer.Option("--dynamic", metavar="INPUT:AXIS[=NAME]", help="Make an axis dynamic: INPUT:AXIS[=NAME], e.g. x:0=batch. Repeatable.")]
OpsetOpt = Annotated[int | None, typer.Option("--opset", help="ONNX opset to export (default: the exporter's; at most 24, the newest mobilegen exports and verifies).")]
OutputNameOpt = Annotated[list[str] | None, typer.Option("--output-name", metavar="NAME", help="Name the model outputs, in order. Repeatable.")]
TrustPickleOpt = Annotated[bool, typer.Option("--trust-pickle", help="Load a pickled nn.Module (torch.save(model)). Unpickling runs code from the file: only for files you trust.")]
ModelClassOpt = Annotated[str | None, typer.Option("--model-class", metavar="MODULE:CLASS", help="For a state_dict: the architecture, package.module:ClassName or path/file.py:ClassName.")]
ModelKwargsOpt = Annotated[str | None, typer.Option("--model-kwargs", metavar="JSON", help="For --model-class: constructor arguments as a JSON object.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable result on stdout (human output stays on stderr).")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace the output if it exists.")]
AtolOpt = Annotated[float, typer.Option("--atol", help="Absolute tolerance of the verification gate.")]
RtolOpt = Annotated[float, typer.Option("--rtol", help="Relative tolerance of the verification gate.")]
SampleOpt = Annotated[
    Path | None,
    typer.Option("--sample", metavar="FILE.npz", help="An .npz of real inputs to verify on as well: one array per input name, with an optional leading cases axis."),
]
SampleOnlyOpt = Annotated[bool, typer.Option("--sample-only", help="Verify on the --sample cases only (they replace the seeded inputs).")]
RangeOpt = Annotated[
    list[str] | None,
    typer.Option("--range", metavar="NAME=LO:HI", help="Seeded values of a numeric input drawn uniformly from [LO, HI): NAME=LO:HI, e.g. input_ids=0:30522. Repeatable."),
]
AllowDegenerateOpt = Annotated[
    bool,
    typer.Option("--allow-degenerate", help="Accept outputs whose reference is degenerate (all ~0, constant or NaN/Inf) instead of failing; they are reported as unverified."),
]
RuntimeOpt = Annotated[
    str | None,
    typer.Option(
        "--runtime",
        metavar="NAME[,NAME]",
        help="Inference runtime of the generated wrapper: ort (ONNX Runtime, default), litert (Android, pip install 'mobilegen[litert]'), coreai (iOS 27+ beside the ORT build, pip install 'mobilegen[coreai]'); comma-separated for package.",
    ),
]
OrtVersionOpt = Annotated[str | None, typer.Option("--ort-version", metavar="VERSION", help="Pin another published ONNX Runtime mobile version (checked against what the model needs).")]
NameOpt = Annotated[str | None, typer.Option("--name", metavar="CLASS", help="Class name of the generated wrapper (default: from the model file name).")]
NoFixOpt = Annotated[bool, typer.Option("--no-fix", help="Ship the exported graph as it is: no graph passes for the execution providers (fixed dims still follow --keep-dynamic).")]
NoCompareExportersOpt = Annotated[
    bool,
    typer.Option(
        "--no-compare-exporters",
        help="Skip measuring the other PyTorch exporter when a provider splits the model (a TorchScript file or a module; see docs/exporters.md).",
    ),
]
ApproximateOpt = Annotated[
    list[str] | None,
    typer.Option("--approximate", metavar="PASS", help="Allow an approximate graph pass by name; its effect on the outputs is reported. Repeatable."),
]
QuantizeOpt = Annotated[
    str | None,
    typer.Option("--quantize", metavar="MODE", help="Quantize the shipped model: int8 (static QDQ, needs --calibration), dynamic (int8 weights) or fp16; per target, as its execution provider takes it (a target that cannot take it ships fp32 and says why)."),
]
CalibrationOpt = Annotated[
    str | None,
    typer.Option("--calibration", metavar="FILE.npz|FOLDER|random", help="Calibration samples for --quantize: an .npz (one array per input, leading samples axis), a folder of them, or random (seeded; the result is marked untrustworthy)."),
]
CalibrationMethodOpt = Annotated[str, typer.Option("--calibration-method", metavar="METHOD", help="How --quantize int8 picks activation ranges: minmax (default), entropy or percentile.")]
EvalOpt = Annotated[
    Path | None,
    typer.Option("--eval", metavar="FILE.npz", help="Samples for the quantization accuracy gate (default: about 20% held out from --calibration)."),
]
MinCosineOpt = Annotated[float, typer.Option("--min-cosine", metavar="X", help="Quantization gate: the least cosine similarity to the fp32 outputs, per output (0..1).")]
MinTop1Opt = Annotated[float, typer.Option("--min-top1", metavar="X", help="Quantization gate: the least top-1 agreement with fp32 for classifier-shaped outputs (0..1).")]

# The build commands' own flags (android, ios, web, react-native, package), declared once here too.
PackageOpt = Annotated[str | None, typer.Option("--package", metavar="NAME", help="Kotlin package of the generated code, e.g. com.example.vision.")]
MavenGroupOpt = Annotated[str | None, typer.Option("--maven-group", metavar="GROUP", help="groupId of the Android library's Maven publication (default: the Kotlin package).")]
MavenArtifactOpt = Annotated[str | None, typer.Option("--maven-artifact", metavar="ARTIFACT", help="artifactId of the Android library's Maven publication (default: the library module's name).")]
LibVersionOpt = Annotated[str | None, typer.Option("--lib-version", metavar="X.Y.Z", help="Version of the generated library: the AAR's Maven version and the Swift package's release tag (default 1.0.0).")]
# Its help names the providers whose build fixes dynamic dims (mobilegen.cli.provider_help, when shown).
KeepDynamicOpt = Annotated[bool, typer.Option("--keep-dynamic", help="Keep dynamic dims (the providers that fix them by default then take no node with a symbolic dim).")]
ZipOpt = Annotated[bool, typer.Option("--zip", help="Also write OUT.zip (deterministic).")]
StyleOpt = Annotated[str, typer.Option("--optimization-style", metavar="STYLE", help="ORT-format optimization style: runtime (default) or fixed.")]
AndroidOrtVersionOpt = Annotated[str | None, typer.Option("--android-ort-version", metavar="VERSION", help="Pin another published onnxruntime-android version.")]
IosOrtVersionOpt = Annotated[str | None, typer.Option("--ios-ort-version", metavar="VERSION", help="Pin another published ORT Swift package version.")]

if TYPE_CHECKING:
    from mobilegen.options import ModelOptions
    from mobilegen.quantize import QuantizeOptions
    from mobilegen.verify.gate import VerifyOptions


def unique(values: list[str] | None) -> list[str] | None:
    """A repeatable option's callback: each value once, in the order first given (``--ep EP --ep EP``: one EP)."""
    return list(dict.fromkeys(values)) if values else values


def verify_options(
    atol: float, rtol: float, sample: Path | None, ranges: list[str] | None, sample_only: bool, allow_degenerate: bool
) -> VerifyOptions:  # imported lazily: keeps --help fast
    from mobilegen.verify.gate import VerifyOptions

    return VerifyOptions(atol=atol, rtol=rtol, sample=sample, ranges=tuple(ranges or ()), sample_only=sample_only, allow_degenerate=allow_degenerate)


def model_options(
    inputs: list[str] | None,
    dynamic: list[str] | None,
    opset: int | None,
    output_names: list[str] | None,
    trust_pickle: bool,
    model_class: str | None,
    model_kwargs: str | None,
    consts: list[str] | None = None,
) -> ModelOptions:  # imported lazily: keeps --help fast
    from mobilegen.export.const_inputs import parse_const
    from mobilegen.load.loader import LoadOptions
    from mobilegen.options import ModelOptions

    return ModelOptions(
        inputs=tuple(inputs or ()),
        dynamic=tuple(dynamic or ()),
        opset=opset,
        output_names=tuple(output_names or ()),
        load=LoadOptions(trust_pickle=trust_pickle, model_class=model_class, model_kwargs=model_kwargs),
        consts=tuple(parse_const(c) for c in consts or ()),
    )


def quantize_options(
    mode: str | None, calibration: str | None, method: str, eval_: Path | None, min_cosine: float, min_top1: float
) -> QuantizeOptions:  # imported lazily: keeps --help fast
    from mobilegen.quantize.options import QuantizeOptions

    options = QuantizeOptions(
        mode=mode,  # type: ignore[arg-type]  # checked by QuantizeOptions.check
        calibration=calibration,
        method=method,  # type: ignore[arg-type]
        eval=eval_,
        min_cosine=min_cosine,
        min_top1=min_top1,
    )
    options.check()  # flag errors before any heavy work
    return options
