"""What a target platform is to mobilegen: the plug-in contract of ``mobilegen.targets``.

A :class:`Target` declares its name, the folder it renders into, the runtime channel it pins, the
execution providers it can use, and the hooks the pipeline calls in order: validate the options, check
the model's IO dtypes, pick the runtime, say which providers to analyse (with their settings), render
the project, and say what tolerance its accelerated device tests assert. ``pipeline.build`` loops over
the chosen targets; it never asks which one it runs.

Nothing here imports torch, onnx or onnxruntime.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from mobilegen.artifacts import JSONValue, ProjectSpec
    from mobilegen.coverage.target import EPTarget
    from mobilegen.notices import Notice
    from mobilegen.runtimes import RuntimeRelease
    from mobilegen.spec import IOSpec
    from mobilegen.targets.commands import TargetCommand
    from mobilegen.tasks.spec import TaskSpec

Opts = TypeVar("Opts")  # the target's own frozen options type


@dataclass(frozen=True)
class BuildContext:
    """What a target may read about the build it is part of (beyond its own options)."""

    io: IOSpec  # the shipped model's IO (after fixed dims)
    static: bool  # every input dim is fixed
    targets: tuple[str, ...]  # every target of this build, in order


class Target(ABC, Generic[Opts]):
    """One platform mobilegen renders a project for."""

    name: str  # "android": the key of BuildOptions.targets, the manifest's targets entry
    display_name: str  # "Android", "iOS": how messages and READMEs name it
    folder: str  # the package folder it renders into (artifacts.ANDROID_DIR...)
    channel: str  # the runtime channel pinned in mobile_runtimes ("maven", "swiftpm")
    tolerance_key: str  # its key in the manifest's options.device_tolerances
    task_api: bool = True  # it generates the --task API (classify, embed, ...); False: refused with --task
    # folders that building or installing inside the rendered project creates (``mobilegen verify`` names
    # their files as made by a build, not as tampering)
    build_made: tuple[str, ...] = ()
    # Its build command: ``mobilegen <name>`` and ``package --<name>`` (mobilegen.targets.commands); None:
    # the CLI gives a registered target no command. The built-ins' are in ``mobilegen.targets.commands``.
    command: TargetCommand | None = None

    @abstractmethod
    def validate(self, opts: Opts) -> None:
        """Refuse bad options (UsageError, exit 2) before any heavy work."""

    @abstractmethod
    def runtime(self, opts: Opts) -> RuntimeRelease:
        """The onnxruntime release the project pins."""

    def runtime_channel(self, opts: Opts) -> str:
        """The channel ``runtime(opts)`` is published on: ``channel`` unless options change the artifact
        (a chosen provider's own runtime build: its ``RuntimeArtifact``). The manifest's ``mobile_runtimes`` key."""
        return self.channel

    @abstractmethod
    def check_io(self, io: IOSpec) -> None:
        """Refuse model inputs/outputs the platform's runtime API cannot carry (UsageError)."""

    @abstractmethod
    def providers(self, opts: Opts, ctx: BuildContext) -> list[EPTarget]:
        """The execution providers (with settings) to analyse for this target, in report order. Their
        declared ``fixes`` are the graph passes this target's model may get (``fixed-dims`` among them:
        then every input dim is fixed, unless ``--keep-dynamic``)."""

    def reported_providers(self, opts: Opts, ctx: BuildContext) -> list[EPTarget]:
        """The providers the coverage report and its gates analyse for this target: ``providers`` (the default),
        or more when the target's runtime picks a provider the build does not fix or quantize for (the Web
        package's GPU provider, tried before WASM at run time)."""
        return self.providers(opts, ctx)

    @abstractmethod
    def render(self, spec: ProjectSpec, opts: Opts, dest: Path) -> None:
        """Write the project into ``dest`` (which must not exist)."""

    @abstractmethod
    def model_pin(self, spec: ProjectSpec, opts: Opts) -> str:
        """The project file (relative to ``folder``) that pins the model's size and sha256 when the project
        copies its model from the package folder at build time (``spec.model_link`` set); ``""`` when the
        project always holds its own copy (the npm packages: ``npm pack`` and Metro need the file inside)."""

    @abstractmethod
    def device_tolerances(self, spec: ProjectSpec, opts: Opts) -> tuple[float, float]:
        """(atol, rtol) the generated accelerated device tests assert."""

    def task_refusal(self, task: TaskSpec) -> str | None:
        """Why this target cannot generate ``task``'s API, in one line (None: it can; the default when
        ``task_api``). A build with that task and this target is refused before any work."""
        return None if self.task_api else "its package would take raw tensors only"

    def notices(self, opts: Opts) -> tuple[Notice, ...]:
        """What the target says about its options wherever it is built (none by default)."""
        return ()

    @abstractmethod
    def options_record(self, opts: Opts) -> Mapping[str, JSONValue]:
        """The options as recorded in the manifest's ``options.<name>``."""
