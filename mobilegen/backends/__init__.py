"""The inference-runtime registry (``--runtime``): which runtime a generated project runs its model on.

``mobilegen.runtimes`` is something else: the table of pinned ONNX Runtime *releases*. A backend here is a
whole runtime behind the generated wrapper API — ONNX Runtime (``ort``, the default and the pipeline's own
export → convert → verify path), LiteRT on Android (``litert``), and, later, Core AI on iOS (``coreai``).

Each entry is data (:class:`Backend`): its name, the platforms it renders for, the optional extra that
installs its converter, the mobilegen module that implements it (imported on first use, never at CLI
start), its artifact's suffix, its template fragment and its limits. The implementation module provides
(:class:`BackendImpl`): ``convert`` (the PyTorch module → the runtime's model file), ``host_runner`` (run
that file on this host, for the verification gate) and ``quantize`` (int8 where it has it).

Nothing here imports torch, numpy or a runtime: a missing optional dependency is found with
``importlib.util.find_spec`` and refused in one line naming the extra (``pip install 'mobilegen[litert]'``).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol

from mobilegen.errors import UsageError

if TYPE_CHECKING:
    import numpy as np

    from mobilegen.artifacts import ProjectSpec
    from mobilegen.spec import IOSpec, TensorSpec

Runner = Callable[[dict[str, "np.ndarray"]], list["np.ndarray"]]

DEFAULT = "ort"


@dataclass(frozen=True)
class Requirement:
    """One optional dependency: the import name checked with ``find_spec``, the distribution pip installs."""

    module: str  # "litert_torch"
    distribution: str  # "litert-torch"


@dataclass(frozen=True)
class Backend:
    """One inference runtime a generated project can run on."""

    name: str  # the --runtime value and the manifest's key
    display_name: str  # "LiteRT"
    platforms: tuple[str, ...]  # the targets (mobilegen.targets names) it renders a wrapper for
    module: str  # the mobilegen module implementing BackendImpl (imported on first use)
    suffix: str  # the model file it ships (".tflite")
    extra: str | None = None  # the pyproject extra that installs it: pip install 'mobilegen[<extra>]'
    convert_requires: tuple[Requirement, ...] = ()  # what its conversion imports
    host_requires: tuple[Requirement, ...] = ()  # what running its model on this host imports (the gate)
    template: str = ""  # template fragment, templates/backends/<template>/<platform>/ ("" : the target's own templates)
    static_shapes_only: bool = False  # its converter takes fixed input shapes only
    needs_pytorch: bool = False  # it converts the PyTorch module, not the ONNX model (no .onnx input)
    named_io: bool = False  # its convert() takes io= and names the model's inputs/outputs as the ONNX model does
    beside_ort: bool = False  # its platform's project keeps the ORT build too and picks one at run time (Core AI: iOS < 27)
    task_api: bool = True  # its wrapper has the --task API (classify, embed, ...)
    quantize_modes: tuple[str, ...] = ()  # the --quantize modes its own quantizer has
    maven: tuple[str, ...] = ()  # pinned Maven coordinates (group:artifact:version) of its Android runtime
    note: str = ""  # one line for the docs and the report
    # What it can accelerate, for the report's Runtimes table. ``accelerates_from_coverage``: its execution
    # providers are the ones the coverage analysis judged (the report shows their counts, this text when none was).
    accelerates: str = ""
    accelerates_from_coverage: bool = False

    @property
    def host_runtime(self) -> str:
        """The distribution that runs its model on this host for the verification gate ("onnxruntime")."""
        return self.host_requires[0].distribution if self.host_requires else "none"

    def extra_hint(self) -> str:
        """How to install the extra: mobilegen is installed from its clone, with the extra's own lock there."""
        if not self.extra:
            return "reinstall mobilegen"
        return f"pip install 'mobilegen[{self.extra}]' (in mobilegen's clone: pip install -c requirements-{self.extra}.lock -e '.[{self.extra}]', or make test-{self.extra})"


class BackendImpl(Protocol):
    """What a backend's module provides (``mobilegen.backends.<name>``)."""

    def convert(
        self, module: Any, example: Sequence[np.ndarray], out: Path, *, io: IOSpec | None = None, quantize_calibration: Sequence[Sequence[np.ndarray]] | None = None
    ) -> Path:
        """The PyTorch ``module`` (called positionally with ``example``) → the runtime's model at ``out``;
        ``io`` only for a ``named_io`` backend; with ``quantize_calibration`` (cases of positional inputs),
        its int8 model calibrated on them."""

    def host_runner(self, path: Path) -> Runner:
        """Runs the model file on this host: named inputs (the ONNX model's names, in order) → outputs in order."""


class HostSession(Protocol):
    """A model file loaded once on this host (``mobilegen bench`` times the load, then many runs)."""

    api: str  # what runs it, for the benchmark's record ("ai-edge-litert Interpreter, ...")

    def run(self, arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        """One case: named inputs (in the model's order) → its outputs in order."""

    def close(self) -> None:
        """Release the model."""


class BenchImpl(Protocol):
    """What a backend's module provides for ``mobilegen bench`` (a runtime other than ORT)."""

    def open_session(self, path: Path) -> HostSession:
        """The model file loaded and ready to run (the time this takes is the benchmark's session creation)."""

    def sample_inputs(self, path: Path) -> dict[str, np.ndarray]:
        """Deterministic inputs from the model file's own signature (for a bare model file: no golden inputs)."""


# One line per runtime. ORT's conversion is the pipeline's own stages (export → fix → convert); its host
# runner is onnxruntime. LiteRT: litert-torch 0.10.0 / ai-edge-litert 2.3.0 (the scout,
# ../research/runtimes-scout-2026-11-27.md §2; pins in pyproject.toml's [litert] extra and
# mobilegen.backends.litert.VERSIONS).
BUILTIN: tuple[Backend, ...] = (
    Backend(
        name="ort",
        display_name="ONNX Runtime",
        platforms=("android", "ios", "web", "react-native"),
        module="mobilegen.backends.ort",
        suffix=".ort",
        host_requires=(Requirement("onnxruntime", "onnxruntime"),),
        quantize_modes=("int8", "fp16", "int8-weights"),
        note="ONNX → ORT format; the execution providers registered in mobilegen.providers",
        accelerates="not analysed: no execution provider chosen (--ep)",
        accelerates_from_coverage=True,
    ),
    Backend(
        name="litert",
        display_name="LiteRT",
        platforms=("android",),
        module="mobilegen.backends.litert",
        suffix=".tflite",
        extra="litert",
        convert_requires=(Requirement("litert_torch", "litert-torch"), Requirement("ai_edge_litert", "ai-edge-litert")),
        host_requires=(Requirement("ai_edge_litert", "ai-edge-litert"),),
        template="litert",
        static_shapes_only=True,
        needs_pytorch=True,
        task_api=False,
        quantize_modes=("int8",),
        maven=("com.google.ai.edge.litert:litert:2.3.0", "com.google.ai.edge.litert:litert-gpu:2.3.0"),
        note="litert-torch → .tflite; CompiledModel with the accelerators GPU → NPU → CPU",
        accelerates="GPU → NPU → CPU chosen at run time, not analysed here",
    ),
    # Core AI: coreai-torch 0.4.3 / coreai-core 1.0.0b3 (a Linux CPU runtime) / coreai-opt 0.4.0 (the scout, §3;
    # pins in pyproject.toml's [coreai] extra and mobilegen.backends.coreai.facts). The .aimodel is a folder.
    Backend(
        name="coreai",
        display_name="Core AI",
        platforms=("ios",),
        module="mobilegen.backends.coreai",
        suffix=".aimodel",
        extra="coreai",
        convert_requires=(Requirement("coreai_torch", "coreai-torch"), Requirement("coreai_opt", "coreai-opt")),
        host_requires=(Requirement("coreai", "coreai-core"),),
        needs_pytorch=True,
        task_api=False,
        # coreai-opt int8 (W8 / W8A8) is there (mobilegen.backends.coreai.convert, judged by the int8 accuracy gate),
        # but this build stage converts fp32 only: --quantize with --runtime coreai is refused until it calls it
        quantize_modes=(),
        named_io=True,
        beside_ort=True,
        note="coreai-torch → .aimodel; AIModel on iOS / macOS 27+, the ORT build below 27 (chosen at run time)",
        accelerates="Neural Engine/GPU on iOS 27+, not analysed here",
    ),
)

_BY_NAME: dict[str, Backend] = {b.name: b for b in BUILTIN}


def names() -> tuple[str, ...]:
    return tuple(_BY_NAME)


def get(name: str) -> Backend:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UsageError(f"unknown runtime {name!r}", hint=f"--runtime takes {', '.join(names())} (comma-separated for package)") from None


def on_platform(platform: str) -> tuple[Backend, ...]:
    return tuple(b for b in BUILTIN if platform in b.platforms)


def by_suffix(suffix: str) -> Backend | None:
    """The backend whose model files end in ``suffix`` (".tflite"); ``.onnx`` and ``.ort`` are ORT's."""
    if suffix in (".onnx", ".ort"):
        return _BY_NAME[DEFAULT]
    return next((b for b in BUILTIN if b.suffix == suffix), None)


def parse_runtimes(text: str | None, platforms: Sequence[str]) -> tuple[str, ...]:
    """``--runtime ort,litert`` → ("ort", "litert"), registry order; every name known, each on at least one
    of the build's ``platforms``. ``None`` → ("ort",). ORT always stays: it is the verified ONNX path the
    golden vectors and the other targets come from."""
    if text is None:
        return (DEFAULT,)
    given = [t.strip() for t in text.split(",")]
    if not all(given):
        raise UsageError(f"--runtime {text!r} has an empty name", hint=f"give names separated by commas, e.g. --runtime {DEFAULT},litert")
    chosen = {get(n).name for n in given}
    for name in sorted(chosen):
        b = get(name)
        if not any(p in b.platforms for p in platforms):
            where = ", ".join(platforms) or "no target"
            raise UsageError(
                f"--runtime {name}: {b.display_name} runs on {', '.join(b.platforms)}, this build is for {where}",
                hint=f"add {' or '.join('--' + p for p in b.platforms)}, or drop {name} from --runtime",
            )
    return tuple(b.name for b in BUILTIN if b.name in chosen or b.name == DEFAULT)


def for_platform(runtimes: Sequence[str], platform: str) -> Backend:
    """The runtime a target's wrapper runs on: the first non-ORT runtime chosen for its platform, else ORT."""
    for name in runtimes:
        b = get(name)
        if b.name != DEFAULT and platform in b.platforms:
            return b
    return _BY_NAME[DEFAULT]


def missing(requirements: Sequence[Requirement]) -> list[Requirement]:
    """The requirements whose top-level module is not importable here (no import is made)."""
    return [r for r in requirements if importlib.util.find_spec(r.module) is None]


def check_available(backend: Backend, *, host_only: bool = False, what: str | None = None) -> None:
    """Refuse, in one line, a runtime whose optional dependency is not installed (``what`` needs it:
    "--runtime <name>" unless said)."""
    reqs = backend.host_requires if host_only else backend.convert_requires + backend.host_requires
    gone = missing(reqs)
    if gone:
        dists = ", ".join(dict.fromkeys(r.distribution for r in gone))
        raise UsageError(
            f"{what or f'--runtime {backend.name}'} needs {dists}, which {'is' if len(gone) == 1 else 'are'} not installed",
            hint=f"{backend.extra_hint()} (an optional extra: {backend.display_name}'s converter and host runtime)",
        )


def check_static(backend: Backend, specs: Sequence[TensorSpec], *, dynamic_flags: Sequence[str] = ()) -> None:
    """A static-shape runtime refuses named (dynamic) dims before anything converts."""
    if not backend.static_shapes_only:
        return
    if dynamic_flags:
        raise UsageError(
            f"--runtime {backend.name} converts fixed shapes only, --dynamic {dynamic_flags[0]} makes an axis dynamic",
            hint=f"drop --dynamic (give every dim a number with --input), or build {backend.display_name} in a run of its own",
        )
    for s in specs:
        if not s.is_static:
            raise UsageError(
                f"--runtime {backend.name} converts fixed shapes only, input {s.name!r} has the dynamic dim(s) {', '.join(s.dynamic_dims)} ({s.shape_str()})",
                hint=f"give every dim of {s.name!r} a number with --input {s.name}:" + "x".join("1" if isinstance(d, str) else str(d) for d in s.shape),
            )


def check_io(backend: Backend, io: IOSpec) -> None:
    """The model as prepared for the build: every input shape fixed (a .pt2 may carry its own dynamic dims)."""
    check_static(backend, io.inputs)


def implementation(backend: Backend) -> BackendImpl:
    """The backend's module, imported now (it may import its runtime lazily itself)."""
    check_available(backend, host_only=False)
    mod: BackendImpl = importlib.import_module(backend.module)
    return mod


def host_runner(path: Path) -> Runner:
    """A runner for any shipped model file, by its suffix: onnxruntime for .onnx/.ort, the backend's own
    host runtime otherwise (``ai-edge-litert`` for .tflite)."""
    backend = by_suffix(path.suffix)
    if backend is None:
        raise UsageError(f"{path.name}: no runtime runs {path.suffix or 'suffix-less'} model files", hint=f"give a model file ending in .onnx, .ort or {', '.join(b.suffix for b in BUILTIN)}")
    check_available(backend, host_only=True)
    impl = importlib.import_module(backend.module)
    runner: Runner = impl.host_runner(path)
    return runner


def bench_implementation(backend: Backend, what: str) -> BenchImpl:
    """The backend's benchmark hooks; refused in one line naming the extra when its host runtime is missing."""
    check_available(backend, host_only=True, what=what)
    mod: BenchImpl = importlib.import_module(backend.module)
    return mod


def render_fragment(name: str, platform: str, spec: ProjectSpec, context: Mapping[str, Any], dest: Path, written: list[PurePosixPath]) -> list[PurePosixPath]:
    """A target's project on another runtime: the backend's ``<module>.<platform>.render`` replaces the
    runtime-specific parts of the tree the target rendered (``templates/backends/<template>/<platform>/``)."""
    backend = get(name)
    mod = importlib.import_module(f"{backend.module}.{platform}")
    out: list[PurePosixPath] = mod.render(spec, context, dest, written)
    return out


def record(runtimes: Sequence[str]) -> Mapping[str, object]:
    """The manifest's record of the chosen runtimes."""
    return {n: {"platforms": list(get(n).platforms), "maven": list(get(n).maven)} for n in runtimes}
