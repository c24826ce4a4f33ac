"""One frozen object per pipeline stage. Each carries the paths it owns; no later stage guesses a name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen.infra.json_types import JSONValue as JSONValue  # what the manifest can hold
from mobilegen.spec import IOSpec, TensorSpec

if TYPE_CHECKING:
    import onnx

    from mobilegen.coverage.model import CoverageReport
    from mobilegen.quantize.records import QuantizationRecord
    from mobilegen.tasks.spec import TaskSpec


if TYPE_CHECKING:
    from mobilegen.infra.notice import Notice

Scalar = bool | int | float
Recorded = Scalar | str | None  # what a .pt2 may record for a constant argument


def value_dtype(value: Recorded) -> str:
    """The dtype a constant argument's value is fed as."""
    return "bool" if isinstance(value, bool) else "int64" if isinstance(value, int) else "float32"


@dataclass(frozen=True)
class BoundConst:
    """An input bound to a value (``--const``; :mod:`mobilegen.export.const_inputs` resolves it against the
    model): ``kind`` is ``scalar`` (a Python int/float/bool argument), ``tensor`` (a tensor input, of
    ``dtype`` and ``shape``) or ``recorded`` (a ``.pt2`` argument the program was exported with as a
    constant)."""

    name: str
    value: Recorded  # a str or None only for kind "recorded"
    kind: str
    dtype: str | None = None
    shape: tuple[int, ...] = ()

    def array(self) -> Any:
        """The value as a numpy array of ``dtype`` and ``shape``."""
        import numpy as np

        return np.full(self.shape, self.value, dtype=self.dtype or value_dtype(self.value))

    def torch_value(self) -> Any:
        if self.kind != "tensor":
            return self.value
        import torch

        return torch.from_numpy(self.array())


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
    consts: tuple[BoundConst, ...] = ()  # inputs bound to a value (--const; mobilegen.export.const_inputs), not model inputs
    # A traced TorchScript file's example inputs (mobilegen.load.traced_inputs): for the --input hint only, never used as shapes.
    traced_inputs: tuple[TensorSpec, ...] = ()


@dataclass(frozen=True)
class OnnxModel:
    path: Path  # a single self-contained .onnx (weights inlined)
    io: IOSpec  # as the graph declares it (named dims for dynamic axes)
    opset: int
    exporter: str  # "dynamo", "torchscript" or "passthrough"
    fallback_reason: str | None = None  # set only for a real fallback (never for a TorchScript file)
    example_sizes: dict[str, int] = field(default_factory=dict)  # example size per named dim
    notes: tuple[str, ...] = ()
    fallback_cause: str = ""  # the fallback's known cause (mobilegen.export.errors.KnownCause.key), or ""
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
    unverified: bool = False  # the output's reference is degenerate, accepted with --allow-degenerate

    @property
    def status(self) -> str:
        """``pass``, ``fail``, or ``unverified``: within tolerance, but of a reference that could not fail."""
        if not self.passed:
            return "fail"
        return "unverified" if self.unverified else "pass"

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
            "status": self.status,
            "note": self.note,
        }


@dataclass(frozen=True)
class VerificationReport:
    rows: tuple[VerifyRow, ...]
    atol: float
    rtol: float
    golden_npz: Path | None = None  # first case: inputs + PyTorch outputs
    golden_mgv: Path | None = None  # same, device encoding
    notices: tuple[str, ...] = ()  # outputs accepted unverified (--allow-degenerate): said as build warnings
    golden_cases: tuple[Path, ...] = ()  # every case's .npz, the first one golden_npz (golden_case1.npz, ... after it)

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.rows)

    @property
    def unverified(self) -> tuple[str, ...]:
        """The outputs accepted unverified (--allow-degenerate), in order."""
        return tuple(dict.fromkeys(r.output for r in self.rows if r.unverified))

    def to_dict(self) -> dict[str, object]:
        return {
            "passed": self.passed,
            "atol": self.atol,
            "rtol": self.rtol,
            "unverified": list(self.unverified),
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
    sha256: str = ""  # of the file at ``path``, when the conversion wrote it ("": not known)


# Float16 keeps ~3 significant decimal digits: the floor of the accelerated tolerances when an
# accelerator may compute in fp16 (a provider's fp16 option, or its GPU / NPU compute units: each
# provider's ``fp16_reason`` says when).
FP16_TOLERANCE = 1e-2


@dataclass(frozen=True)
class ModelLink:
    """A project that does not hold its model (``mobilegen package``: one copy of each model file): the
    package-relative file its build copies in, and the size and sha256 that copy must have."""

    path: str  # package-relative POSIX path, e.g. "model/model.ort" or "model/android/model.ort"
    size: int
    sha256: str

    def to_dict(self) -> dict[str, object]:
        return {"model": self.path, "size": self.size, "sha256": self.sha256}


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
    task: TaskSpec | None = None  # --task (mobilegen.tasks.spec): the task-level wrapper API; None: flat arrays only
    labels_file: Path | None = None  # --task image-classification: the labels (UTF-8, one per line) to ship as data
    tokenizer_file: Path | None = None  # text tasks: the tokenizer asset (mobilegen.tasks.text.asset.to_asset) to ship as data
    task_golden: Path | None = None  # --task: the task golden folder (cases.json, NAME.rgba|.pcm, NAME.mgv; mobilegen.tasks.golden)
    quantization: str = ""  # the shipped model's --quantize mode ("int8", "dynamic", "fp16"); "" for a float32 model
    # None: the project holds its own copy of the model (a standalone project). Set: the project's build
    # copies ``model_file`` from the package folder (``ModelLink.path``), checking its size and sha256.
    model_link: ModelLink | None = None
    onnx_file: Path | None = None  # the verified .onnx the .ort was converted from (the Web target ships it)
    # --runtime (mobilegen.backends): the runtime the wrapper runs on, and its model file when not ORT's .ort
    runtime: str = "ort"
    runtime_model: Path | None = None


@dataclass(frozen=True)
class CoverageCounts:
    """A provider's coverage in three numbers (the ``before`` of a coverage entry)."""

    supported_nodes: int
    total_nodes: int
    partitions: int

    @classmethod
    def of(cls, report: CoverageReport) -> CoverageCounts:
        return cls(report.supported_nodes, report.total_nodes, len(report.partitions))

    @property
    def cpu_nodes(self) -> int:
        return self.total_nodes - self.supported_nodes

    @property
    def percent(self) -> float:
        return 100.0 * self.supported_nodes / self.total_nodes if self.total_nodes else 0.0

    def to_dict(self) -> dict[str, int]:
        return {"supported_nodes": self.supported_nodes, "total_nodes": self.total_nodes, "partitions": self.partitions}


@dataclass(frozen=True)
class AppliedFix:
    """A graph pass the fix stage kept: its name and how many nodes it rewrote."""

    name: str
    nodes: int
    exact: bool = True
    approximate_as: str = ""  # for an approximate pass: the --approximate word that allowed it

    def to_dict(self) -> dict[str, object]:
        return {"pass": self.name, "nodes": self.nodes}


@dataclass(frozen=True)
class ProviderFixes:
    """One provider of one target: its coverage before the fix stage and the passes its model got."""

    label: str  # the coverage report's label: the provider's name, "/<variant>" added for a variant setting
    target: str  # the target whose model it runs ("android"); "" outside a build
    before: CoverageCounts
    fixes: tuple[AppliedFix, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"before": self.before.to_dict(), "fixes": [f.to_dict() for f in self.fixes]}


@dataclass(frozen=True)
class ShippedModel:
    """One model a build ships, and the targets shipping it: one for every target when their graphs are
    the same (``folder`` "model"), else one per target ("model/android", "model/ios")."""

    targets: tuple[str, ...]
    folder: str  # package-relative folder holding model.onnx, model.ort, required_operators.config
    onnx: OnnxModel
    ort: OrtModel | None = None  # None until converted
    fixes: tuple[AppliedFix, ...] = ()  # the passes applied to it, in order
    # --quantize: what it did to this model (mobilegen.quantize.records.QuantizationRecord), None without it
    quantization: QuantizationRecord | None = None
    golden: str = "golden"  # package folder of the golden vectors it reproduces (golden/<target> for its own)

    @property
    def golden_npz(self) -> str:
        return f"{self.golden}/golden.npz"

    @property
    def golden_mgv(self) -> str:
        return f"{self.golden}/golden.mgv"

    def golden_case_files(self, cases: Sequence[Path]) -> tuple[str, ...]:
        """The package paths of the cases after the first that this model reproduces (``cases``: the
        verification's ``golden_cases``; a model's golden folder holds a file of the same name for each)."""
        return tuple(f"{self.golden}/{p.name}" for p in cases[1:])

    @property
    def onnx_file(self) -> str:
        return f"{self.folder}/{MODEL_ONNX_NAME}"

    @property
    def ort_file(self) -> str:
        return f"{self.folder}/{MODEL_ORT_NAME}"

    @property
    def ops_config_file(self) -> str:
        return f"{self.folder}/{MODEL_OPS_CONFIG_NAME}"

    def files(self) -> tuple[str, str, str]:
        return (self.onnx_file, self.ort_file, self.ops_config_file)

    def converted(self) -> OrtModel:
        if self.ort is None:
            from mobilegen.errors import InternalError

            raise InternalError(f"the model in {self.folder}/ was not converted")
        return self.ort


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
    warnings: tuple[Notice, ...] = ()  # every warning, computed once (mobilegen.notices.collect)
    zip_path: Path | None = None
    # Every model shipped (``onnx``/``ort`` above are the first one's); empty: one model, ``onnx``/``ort``.
    models: tuple[ShippedModel, ...] = ()
    fixes: tuple[ProviderFixes, ...] = ()  # per analysed provider: coverage before the fix stage, passes kept
    channels: dict[str, str] = field(default_factory=dict)  # target -> its key of ``runtimes`` (empty: Target.channel)
    # The projects that copy their model from the package's model/ folder at build time (one copy of each
    # model file): (target, package-relative file that pins the model, the link); empty: self-contained projects.
    model_links: tuple[tuple[str, str, ModelLink], ...] = ()

    @property
    def shipped(self) -> tuple[ShippedModel, ...]:
        """Every model the package holds, with the targets that ship it."""
        return self.models or (ShippedModel(self.targets, MODEL_DIR, self.onnx, self.ort),)

    @property
    def per_target(self) -> bool:
        """Whether the targets ship models of their own (``model/<target>/``)."""
        return len(self.shipped) > 1

    def model_of(self, target: str) -> ShippedModel:
        return next((m for m in self.shipped if target in m.targets), self.shipped[0])

    def fixes_of(self, label: str, target: str = "") -> ProviderFixes | None:
        """The fix stage's record of the provider whose coverage report is labelled ``label`` (for
        ``target``'s model, when given: a provider two targets chose has a record per target)."""
        return next((f for f in self.fixes if f.label == label and (not target or f.target == target)), None)


# Fixed layout of the output folder (relative to its root). Only the pipeline creates these paths;
# renderers and the package writer read them from here. When targets ship different graphs, each has
# its own model folder (``model_folder(target)``: model/android/model.ort...).
MODEL_DIR = "model"
MODEL_ONNX_NAME = "model.onnx"
MODEL_ORT_NAME = "model.ort"
MODEL_OPS_CONFIG_NAME = "required_operators.config"
MODEL_ONNX = f"{MODEL_DIR}/{MODEL_ONNX_NAME}"  # one model for every target
MODEL_ORT = f"{MODEL_DIR}/{MODEL_ORT_NAME}"
MODEL_OPS_CONFIG = f"{MODEL_DIR}/{MODEL_OPS_CONFIG_NAME}"
GOLDEN_NPZ = "golden/golden.npz"  # every verification case (first case = device case)
GOLDEN_MGV = "golden/golden.mgv"  # device case, binary format of mobilegen.verify.golden
GOLDEN_TOLERANCES = "golden/tolerances.json"
ANDROID_DIR = "android"
IOS_DIR = "ios"
REPORT_DIR = "report"
MANIFEST = "manifest.json"
README = "README.md"


def model_folder(target: str | None) -> str:
    """The package folder of a model: ``model`` when every target ships it, ``model/<target>`` else."""
    return MODEL_DIR if target is None else f"{MODEL_DIR}/{target}"


# Every .ort a package of the built-in targets may hold: the shared one, or one per target.
MODEL_ORTS = (MODEL_ORT, *(f"{model_folder(t)}/{MODEL_ORT_NAME}" for t in (ANDROID_DIR, IOS_DIR)))
# A quantized model's own golden vectors, next to another target's model (golden/<target>/...).
GOLDEN_PER_TARGET = tuple(f"golden/{t}/{n}" for t in (ANDROID_DIR, IOS_DIR) for n in ("golden.npz", "golden.mgv"))
