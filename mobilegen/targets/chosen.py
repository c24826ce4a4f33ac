"""The targets a build chose: each with its validated options and pinned runtime, in registry order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mobilegen import targets
from mobilegen.errors import InternalError, UsageError
from mobilegen.runtimes import check_loadable
from mobilegen.targets.base import BuildContext

if TYPE_CHECKING:
    from mobilegen.artifacts import OnnxModel, ShippedModel
    from mobilegen.options import BuildOptions
    from mobilegen.runtimes import RuntimeRelease


@dataclass(frozen=True)
class Chosen:
    """One target of a build with its options (validated) and its pinned runtime."""

    target: targets.Target[Any]
    opts: object  # the target's own options type (Target[Opts])
    runtime: RuntimeRelease

    @property
    def channel(self) -> str:
        """The channel ``runtime`` is published on (the manifest's ``mobile_runtimes`` key)."""
        return self.target.runtime_channel(self.opts)


def choose_targets(opts: BuildOptions) -> list[Chosen]:
    """The build's targets in registry order, each validated, with its runtime; refuses an empty build."""
    unknown = [n for n in opts.targets if n not in targets.names()]
    if unknown:
        targets.get(unknown[0])  # raises the UsageError listing the known targets
    chosen = []
    for name in targets.names():
        if name in opts.targets:
            target = targets.get(name)
            target.validate(opts.targets[name])
            why = target.task_refusal(opts.task) if opts.task is not None else None
            if opts.task is not None and why is not None:
                raise UsageError(
                    f"the {target.display_name} target has no --task {opts.task.kind} API for this build: {why}",
                    hint="build it without --task (its typed run() is generated), and the task for the other targets in a run of its own",
                )
            chosen.append(Chosen(target, opts.targets[name], target.runtime(opts.targets[name])))
    if not chosen:
        raise UsageError("nothing to build", hint="pass --android and/or --ios")
    return chosen


def build_context(model: OnnxModel, chosen: Sequence[Chosen]) -> BuildContext:
    return BuildContext(io=model.io, static=model.io.is_static, targets=tuple(c.target.name for c in chosen))


def model_of(models: Sequence[ShippedModel], c: Chosen) -> ShippedModel:
    """The shipped model the target ``c`` gets."""
    for m in models:
        if c.target.name in m.targets:
            return m
    raise InternalError(f"no model for the {c.target.name} target")


def check_io(chosen: Sequence[Chosen], model: OnnxModel) -> None:
    """Every target can carry the model's input and output dtypes in its generated wrappers."""
    for c in chosen:
        c.target.check_io(model.io)


def check_runtimes(chosen: Sequence[Chosen], models: Sequence[ShippedModel]) -> None:
    """Every target's pinned mobile runtime can load its .ort (format version, opset)."""
    for c in chosen:
        ort = model_of(models, c).converted()
        check_loadable(c.runtime, max_opset=ort.max_opset, ort_format_version=ort.ort_format_version, channel=c.channel)
