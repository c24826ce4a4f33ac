"""Every warning a build gives, as typed :class:`Notice` objects computed once.

The pipeline collects them as the build goes (:func:`export_notices`, a provider's own notices,
:func:`dims_fixed`, :func:`coverage_notices`) and finishes the list with :func:`collect`, which adds the
facts read off the finished result. ``BuildResult.warnings`` holds that one list; the CLI, the project
READMEs, the package README, the report and the manifest all read it and nothing re-derives a warning
from another one's text.

Two scopes keep today's outputs: ``build`` notices are said by the CLI and in every README;
``package`` notices (facts only the package documents list: report, package README, manifest) come
after them there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

from mobilegen import providers
from mobilegen.infra.notice import Notice as Notice
from mobilegen.infra.notice import Scope as Scope
from mobilegen.infra.notice import Severity as Severity

if TYPE_CHECKING:
    from mobilegen.artifacts import LoadedModel, OnnxModel
    from mobilegen.coverage.model import CoverageReport

_GENERIC_OUTPUT = re.compile(r"output(_\d+)?")


def texts(notices: Iterable[Notice]) -> list[str]:
    """Every notice's text, in order (the manifest's ``warnings``)."""
    return [n.text for n in notices]


def build_notices(notices: Iterable[Notice]) -> tuple[Notice, ...]:
    """The notices said at build time: by the CLI and in the generated projects' READMEs."""
    return tuple(n for n in notices if n.scope == "build")


# ---------------------------------------------------------------------------------------------------
# Builders, in the order the pipeline meets them


def export_notices(loaded: LoadedModel, onnx_model: OnnxModel, *, output_names_given: bool, task_names_outputs: bool = False) -> list[Notice]:
    """What the export said (its notes), the output-name hint, and an exporter fallback (a module that
    torch.export failed on; a TorchScript file takes the TorchScript exporter by design, which is no
    fallback and no warning: its ``fallback_reason`` is None). No output-name hint when the task's
    post-processing names the shipped outputs (``--top-k``: scores, indices)."""
    out = [Notice("export-note", "warning", note) for note in onnx_model.notes]
    generic = all(_GENERIC_OUTPUT.fullmatch(o.name) for o in onnx_model.io.outputs)
    if onnx_model.exporter != "passthrough" and not output_names_given and not task_names_outputs and not generic:
        names = ", ".join(o.name for o in onnx_model.io.outputs)
        out.append(
            Notice(
                "output-names",
                "warning",
                f"output names come from the exporter ({names}) and name the wrappers' properties; to choose them, re-run mobilegen with --output-name",
            )
        )
    if onnx_model.fallback_reason and loaded.kind != "torchscript":
        out.append(_exporter_fallback(onnx_model, onnx_model.fallback_reason, "build"))
    return out


def dims_fixed_text(fixed: Mapping[str, int], wanted_by: Sequence[str]) -> str:
    """The note ``fix_dynamic_dims`` leaves on the model (dim name → the size it was fixed to), for the
    providers that declare ``fixed-dims`` (``wanted_by``: display names)."""
    dims = ", ".join(f"{d}={n}" for d, n in fixed.items())
    who = " and ".join(wanted_by) or "the providers"
    takes = "takes" if len(wanted_by) == 1 else "take"
    return (
        f"dynamic dims fixed for {who} (which {takes} no symbolic dims): {dims}; to choose the sizes (a text model's"
        " length in tokens), re-run mobilegen with --input NAME:DIMS for each input; to keep them, re-run mobilegen with --keep-dynamic"
    )


def dims_fixed(note: str, *, shipped_by: Sequence[str] = ()) -> Notice:
    """The fixed-dims note; targets of the same build that did not ask for fixed dims (``shipped_by``,
    display names) ship that model too."""
    also = "".join(f" (the {name} package ships the same fixed-size model)" for name in shipped_by)
    return Notice("dims-fixed", "warning", note + also)


def coverage_notices(coverage: Sequence[CoverageReport]) -> list[Notice]:
    """Per analysed EP: nothing taken by a provider that says so is severe (``severe_if_none_taken``), or
    nodes left to the CPU EP / a split graph."""
    out: list[Notice] = []
    for rep in coverage:
        provider = providers.get(rep.ep)
        if provider.severe_if_none_taken and rep.supported_nodes == 0:
            text = f"{provider.display_name} takes 0 nodes of this model: everything runs on the CPU (see the coverage report)"
            out.append(Notice(f"{rep.ep}-no-nodes", "severe", text, subject=rep.shown))
        elif rep.supported_nodes < rep.total_nodes or len(rep.partitions) > 1:
            cpu = rep.total_nodes - rep.supported_nodes
            parts = len(rep.partitions)
            text = (
                f"{rep.shown}: {cpu} of {rep.total_nodes} nodes fall back to the CPU EP; "
                f"{parts} partition{'s' if parts != 1 else ''} (verdict {rep.verdict})"
            )
            out.append(Notice("cpu-fallback", "warning", text, subject=rep.shown))
    return out


def collect(
    notices: Iterable[Notice],
    onnx_model: OnnxModel,
    coverage: Sequence[CoverageReport],
    *,
    source_kind: str,
) -> tuple[Notice, ...]:
    """The build's notices, then the facts only the package documents add (``scope="package"``): an
    exporter fallback not said yet, what each analysed provider says wherever it is chosen (its ``notices``),
    inputs left with dynamic dims (naming the providers that need static shapes), and EPs that leave nodes
    outside every partition without a build notice of their own."""
    out = list(notices)
    codes = {n.code for n in out}
    if onnx_model.fallback_reason and "exporter-fallback" not in codes:
        out.append(_exporter_fallback(onnx_model, onnx_model.fallback_reason, "package"))
    for ep in dict.fromkeys(c.ep for c in coverage):  # what a provider says wherever it is chosen
        for n in providers.get(ep).notices:
            if n.code not in codes:
                out.append(replace(n, scope="package"))
                codes.add(n.code)
    static = [p.display_name for p in providers.all_providers() if p.static_shapes_only]
    for t in onnx_model.io.inputs:
        if t.dynamic_dims and static:
            text = (
                f"input {t.name} has dynamic dims ({', '.join(t.dynamic_dims)}): {' and '.join(static)} "
                f"need{'s' if len(static) == 1 else ''} static shapes and run such nodes on the CPU unless the dims are fixed"
            )
            out.append(Notice("dynamic-input", "warning", text, "package", subject=t.name))
    said = {n.subject for n in out if n.code == "cpu-fallback"}
    for c in coverage:
        placed = {name for names in c.partitions for name in names}
        cpu = c.total_nodes - sum(1 for n in c.nodes if n.name in placed)
        if cpu and c.shown not in said:
            parts = len(c.partitions)
            text = f"{c.shown}: {cpu} of {c.total_nodes} nodes fall back to the CPU EP ({parts} partition{'s' if parts != 1 else ''} on {c.ep})"
            out.append(Notice("cpu-fallback", "warning", text, "package", subject=c.shown))
            said.add(c.shown)
    return tuple(out)


def _exporter_fallback(onnx_model: OnnxModel, reason: str, scope: Scope) -> Notice:
    text = f"ONNX export fell back to the {onnx_model.exporter} exporter: {reason}"
    return Notice("exporter-fallback", "warning", text, scope)


def finish(notices: list[Notice], onnx_model: OnnxModel, coverage: Sequence[CoverageReport], loaded: LoadedModel) -> tuple[Notice, ...]:
    """The build's notices with the coverage's and the finished result's added (:func:`collect`)."""
    return collect([*notices, *coverage_notices(coverage)], onnx_model, coverage, source_kind=loaded.kind)


def notices_for(target: str, notices: Sequence[Notice], coverage: Sequence[CoverageReport], targets: set[str]) -> list[Notice]:
    """The notices a target's README lists: those about no target in particular, or about ``target``.
    A subject names targets ("ios", "android and ios") or a coverage label, whose report says its target
    ("<provider> (ios)", "<provider>"); the package README keeps every notice."""
    owners: dict[str, set[str]] = {}
    for r in coverage:
        if r.target:
            owners.setdefault(r.shown, set()).add(r.target)

    def concerns(n: Notice) -> bool:
        named = {t.strip() for t in n.subject.replace(",", " and ").split(" and ")} - {""}
        about = named if named and named <= targets else owners.get(n.subject)
        return not about or target in about

    return [n for n in notices if concerns(n)]


T = TypeVar("T")


@dataclass
class Notices:
    """A build's notices, collected in the order its stages give them; :meth:`finish` makes the one list."""

    items: list[Notice] = field(default_factory=list)

    def add(self, notices: Iterable[Notice]) -> None:
        self.items.extend(notices)

    def take(self, result: tuple[T, Sequence[Notice]]) -> T:
        """A stage's ``(artifact, notices)``: the notices kept here, the artifact returned."""
        artifact, notices = result
        self.items.extend(notices)
        return artifact

    def finish(self, onnx_model: OnnxModel, coverage: Sequence[CoverageReport], loaded: LoadedModel) -> tuple[Notice, ...]:
        return finish(self.items, onnx_model, coverage, loaded)
