"""One frozen object per pipeline stage. Each carries the paths it owns; no later stage guesses a name."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen.spec import IOSpec

if TYPE_CHECKING:
    import onnx

    from mobilegen.coverage.model import CoverageReport

# What the manifest can hold.
JSONValue = str | int | float | bool | None | list["JSONValue"] | dict[str, "JSONValue"]

if TYPE_CHECKING:
    from mobilegen.warnings import Notice

# What a loaded artifact was, detected by content.
KINDS = ("torchscript", "exported_program", "pickle", "state_dict", "onnx", "ort")


@dataclass(frozen=True)
class LoadedModel:
    source: Path
    kind: str  # one of KINDS
    sha256: str
    module: Any = None  # torch.nn.Module / ScriptModule / ExportedProgram; None for onnx
    io_hint: IOSpec | None = None  # shapes recorded in the artifact itself, when there are any
    onnx_path: Path | None = None  # for kind == "onnx"
    example_sizes: dict[str, int] = field(default_factory=dict)  # example size of each named dim in io_hint


@dataclass(frozen=True)
class OnnxModel:
    path: Path  # a single self-contained .onnx (weights inlined)
    io: IOSpec  # as the graph declares it (named dims for dynamic axes)
    opset: int
    exporter: str  # "dynamo", "torchscript" or "passthrough"
    fallback_reason: str | None = None
    example_sizes: dict[str, int] = field(default_factory=dict)  # example size per named dim
    notes: tuple[str, ...] = ()
    # The onnx.ModelProto, parsed once by the export and handed on in memory (graph passes change it
    # before the build writes ``path`` once); None when only the file is known.
    proto: onnx.ModelProto | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class VerifyRow:
    artifact: str  # "onnx" / "ort"
    case: str  # e.g. "1x3x224x224"
    output: str
    max_abs: float
    max_rel: float
    cosine: float
    top1: float | None  # fraction of rows whose argmax agrees (2-D outputs), else None
    passed: bool
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "artifact": self.artifact,
            "case": self.case,
            "output": self.output,
            "max_abs": self.max_abs,
            "max_rel": self.max_rel,
            "cosine": self.cosine,
            "top1": self.top1,
            "passed": self.passed,
            "note": self.note,
        }


@dataclass(frozen=True)
class VerificationReport:
    rows: tuple[VerifyRow, ...]
    atol: float
    rtol: float
    golden_npz: Path | None = None  # first case: inputs + PyTorch outputs
    golden_mgv: Path | None = None  # same, device encoding

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.rows)

    def to_dict(self) -> dict[str, object]:
        return {
            "passed": self.passed,
            "atol": self.atol,
            "rtol": self.rtol,
            "rows": [r.to_dict() for r in self.rows],
        }


@dataclass(frozen=True)
class OrtModel:
    path: Path
    config_path: Path  # required_operators.config
    optimization_style: str  # "Runtime" or "Fixed"
    optimization_level: str  # "basic", "extended", "all"
    ort_format_version: int
    converter_version: str  # onnxruntime version that wrote it
    max_opset: int  # highest ai.onnx since_version any node needs


# Shown wherever NNAPI is chosen (CLI, project READMEs, report).
NNAPI_DEPRECATION = (
    "NNAPI is deprecated as of Android 15 (API 35): it keeps working on current devices, but vendors no "
    "longer improve their drivers; keep the CPU/XNNPACK path tested too."
)


# Float16 keeps ~3 significant decimal digits: the floor of the accelerated tolerances when an
# accelerator may compute in fp16 (NNAPI's USE_FP16, CoreML on the GPU / Neural Engine).
FP16_TOLERANCE = 1e-2


@dataclass(frozen=True)
class ProjectSpec:
    """Everything a project renderer (Android / iOS) needs; built by the pipeline, fixed in golden tests."""

    model_name: str  # display name (file stem or --name); raw text, escape before use in code
    io: IOSpec  # shapes of the shipped .ort
    model_file: Path  # the .ort to ship
    golden_mgv: Path  # device golden vectors
    atol: float
    rtol: float
    accel_atol: float | None = None  # tolerance of the accelerated device tests; None = atol (renderers fill it)
    accel_rtol: float | None = None  # None = rtol

    def accelerated_tolerances(self, fp16: bool) -> tuple[float, float]:
        """(atol, rtol) for an accelerated device run: ``accel_*`` when set; else, when the accelerator may
        compute in float16 (~3 significant digits), the build-time ones widened to FP16_TOLERANCE; else
        the build-time ones."""
        atol = self.accel_atol if self.accel_atol is not None else (max(self.atol, FP16_TOLERANCE) if fp16 else self.atol)
        rtol = self.accel_rtol if self.accel_rtol is not None else (max(self.rtol, FP16_TOLERANCE) if fp16 else self.rtol)
        return float(atol), float(rtol)
    coverage: tuple[CoverageReport, ...] = ()  # the chosen EPs' coverage
    ort_version: str = ""  # mobile runtime version pinned in the project
    mobilegen_version: str = ""
    notes: tuple[str, ...] = ()  # warnings to surface in the generated README


@dataclass(frozen=True)
class BuildResult:
    """What ``mobilegen android|ios|package`` produced; the package writer and report read only this."""

    out_dir: Path  # final folder (after the atomic rename)
    model_name: str
    loaded: LoadedModel
    onnx: OnnxModel
    verification: VerificationReport
    ort: OrtModel
    coverage: tuple[CoverageReport, ...]  # per analysed EP/format
    targets: tuple[str, ...]  # "android", "ios"
    options: dict[str, JSONValue]  # JSON-able: EPs and flags, opset, optimization style, tolerances...
    runtimes: dict[str, str]  # channel ("maven", "swiftpm") -> pinned onnxruntime version
    warnings: tuple[Notice, ...] = ()  # every warning, computed once (mobilegen.warnings.collect)
    zip_path: Path | None = None


# Fixed layout of the output folder (relative to its root). Only the pipeline creates these paths;
# renderers and the package writer read them from here.
MODEL_ONNX = "model/model.onnx"
MODEL_ORT = "model/model.ort"
MODEL_OPS_CONFIG = "model/required_operators.config"
GOLDEN_NPZ = "golden/golden.npz"  # every verification case (first case = device case)
GOLDEN_MGV = "golden/golden.mgv"  # device case, binary format of mobilegen.golden
GOLDEN_TOLERANCES = "golden/tolerances.json"
ANDROID_DIR = "android"
IOS_DIR = "ios"
REPORT_DIR = "report"
MANIFEST = "manifest.json"
README = "README.md"
