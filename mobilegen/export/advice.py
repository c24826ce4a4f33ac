"""The exporter advisor: when the build's model came out of one exporter and splits into partitions on
the first provider, say what the other exporter gives for the same model — measured when mobilegen can
run it, else how to try it.

PyTorch has two ONNX exporters, and their graphs place differently: the TorchScript exporter writes the
attention mask of a traced BERT as ``Where(Equal(...), ConstantOfShape, ...)`` chains the graph passes
cannot rewrite (a traced MiniLM: 8 partitions on an Android accelerator), the torch.export-based one a
graph they can (3).
Which exporter a build used depends on the input, not on the user's choice:

- a TorchScript file (``.pt``/``.jit``) goes to the TorchScript exporter: it has no Python module, and
  neither ``torch.export.export`` nor ``torch.onnx.export(dynamo=True)`` takes a ScriptModule. torch's
  converter ``torch._export.converter.TS2EPConverter`` (private, experimental) turns it into an
  ExportedProgram; the advisor measures the build's path for that program (prepare, graph passes,
  coverage of the first provider) and, when it places better, gives the command that saves it as a
  ``.pt2`` — and the better route when the Python model is at hand, ``torch.export.export``;
- a pickled module (or a state_dict with ``--model-class``) went through torch.export; the advisor measures the TorchScript exporter on the same
  module and, when that places better, says how to export the ``.onnx`` with it;
- a pickled module that fell back to the TorchScript exporter (torch.export failed, said by the
  ``exporter-fallback`` notice) and a ``.pt2`` (no TorchScript form) have nothing to compare.

Triggered when some provider of the build gets more than one partition (a build whole everywhere pays
nothing). The other exporter's model goes through the build's own ``passes.stage.prepare`` and ``passes.stage.fix``
(fixed dims, graph passes per target) and is analysed for every target's providers; a ``--task``
wrapper and ``--quantize`` are not applied to it, so the build's side of the comparison is its fp32
model before them too (the fix stage's outcome). The other exporter's inputs get the build's export shapes
first (:func:`_shaped_as`). The notice is given when the other exporter places better on some provider
(at least as many nodes in at most as many partitions, one strictly: losing nodes is never better) and
better or the same on every other (:attr:`Comparison.verdict`). Not measured: ``--no-compare-exporters`` (the comparison costs one more export and fix
stage), ``--const`` bindings (the converted program would need them re-bound), or an
other exporter that fails — then the notice says how to try it by hand, without numbers.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen.errors import first_line
from mobilegen.export.const_inputs import bind_consts
from mobilegen.export.exporter import example_arrays, resolve_inputs
from mobilegen.infra import progress
from mobilegen.infra.quiet import quiet
from mobilegen.load.loader import _exported_io_hint, load_model
from mobilegen.notices import Notice
from mobilegen.passes import stage as fix_stage
from mobilegen.passes.stage import analyse_in_memory
from mobilegen.spec import onnx_io_spec
from mobilegen.targets.chosen import build_context

if TYPE_CHECKING:
    from mobilegen.artifacts import JSONValue, LoadedModel, OnnxModel
    from mobilegen.coverage.model import CoverageReport
    from mobilegen.options import BuildOptions
    from mobilegen.passes.stage import FixPlan
    from mobilegen.spec import TensorSpec
    from mobilegen.targets.chosen import Chosen

TORCH_EXPORT = "torch.export"
TORCHSCRIPT = "torchscript"
# the exporter names OnnxModel.exporter carries, as the advice names them
_SHOWN = {"dynamo": TORCH_EXPORT, "torchscript": TORCHSCRIPT}


@dataclass(frozen=True)
class Placement:
    """One exporter's model on one provider, after the build's prepare and graph passes."""

    exporter: str  # "torch.export" or "torchscript"
    supported: int
    total: int
    partitions: int

    def text(self) -> str:
        return f"{self.partitions} partition{'s' if self.partitions != 1 else ''} ({self.supported}/{self.total} nodes)"

    def to_dict(self) -> dict[str, JSONValue]:
        return {"exporter": self.exporter, "partitions": self.partitions, "supported_nodes": self.supported, "total_nodes": self.total}


@dataclass(frozen=True)
class Comparison:
    """One provider (a coverage label: ``<provider>`` or ``<provider>/<variant>``): the build's placement and
    the other exporter's, when measured."""

    provider: str
    built: Placement
    other: Placement | None

    @property
    def verdict(self) -> str:
        """``better``: the provider takes at least as many nodes in at most as many partitions, one of them
        strictly; ``worse``: the reverse; ``same``; ``mixed`` (more nodes in more partitions, or fewer in
        fewer — losing nodes on the provider is never better); ``""`` when not measured. When the provider
        takes every node of both graphs, only the partitions count: the two exporters' graphs differ in
        size, and a whole graph with fewer nodes is not a worse placement (a BERT on CoreML, 92/92 and 89/89
        nodes in one partition, is the same)."""
        o, b = self.other, self.built
        if o is None:
            return ""
        if o.supported == o.total and b.supported == b.total:
            return "same" if o.partitions == b.partitions else "better" if o.partitions < b.partitions else "worse"
        if (o.supported, o.partitions) == (b.supported, b.partitions):
            return "same"
        if o.supported >= b.supported and o.partitions <= b.partitions:
            return "better"
        if o.supported <= b.supported and o.partitions >= b.partitions:
            return "worse"
        return "mixed"

    @property
    def better(self) -> bool:
        return self.verdict == "better"

    @property
    def worse(self) -> bool:
        return self.verdict == "worse"

    def text(self) -> str:
        if self.other is None:
            return f"{self.provider} {self.built.text()}"
        return f"{self.provider} {self.built.text()} → {self.other.text()}"

    def to_dict(self) -> dict[str, JSONValue]:
        return {
            "provider": self.provider,
            "built": self.built.to_dict(),
            "other": None if self.other is None else self.other.to_dict(),
            "better": self.better,
            "verdict": self.verdict or None,
        }


@dataclass(frozen=True)
class Advice:
    """What the advisor found: per provider of the build, its placement with the build's exporter and with
    the other one (when measured, else ``why_not``), and the commands that get the other one's model."""

    built_exporter: str
    other_exporter: str
    comparisons: tuple[Comparison, ...]
    why_not: str  # why the other exporter was not measured ("" when it was)
    commands: tuple[str, ...]

    @property
    def measured(self) -> bool:
        return not self.why_not

    @property
    def better(self) -> bool:
        """The other exporter places better on some provider and worse on none; a mixed provider (fewer
        nodes in fewer partitions, or more in more) counts against it too: the advice must not cost a
        provider the nodes it takes."""
        return any(c.better for c in self.comparisons) and all(c.verdict in ("better", "same") for c in self.comparisons)

    def to_dict(self) -> dict[str, JSONValue]:
        return {
            "built_exporter": self.built_exporter,
            "other_exporter": self.other_exporter,
            "providers": [c.to_dict() for c in self.comparisons],
            "better": self.better,
            "not_measured": self.why_not or None,
            "commands": list(self.commands),
        }


def may_apply(loaded: LoadedModel, exported: OnnxModel) -> bool:
    """Whether this build has another exporter to compare (the rest of :func:`advise` decides whether it
    is compared)."""
    return _other_exporter(loaded, exported) is not None


def _other_exporter(loaded: LoadedModel, exported: OnnxModel) -> str | None:
    if exported.exporter not in _SHOWN:
        return None
    if loaded.kind == "torchscript":
        return TORCH_EXPORT
    if loaded.kind in ("pickle", "state_dict") and exported.exporter == "dynamo":
        return TORCHSCRIPT
    return None


def advise(
    opts: BuildOptions, loaded: LoadedModel, exported: OnnxModel, coverage: Sequence[CoverageReport], chosen: Sequence[Chosen], fix_plan: FixPlan
) -> Advice | None:
    """The advice for this build, or None (nothing to compare, or every provider takes the model whole).
    ``exported``: the build's model as the export wrote it (its input shapes go to the other exporter's);
    ``coverage``: the build's fp32 models' (before ``--quantize``: the comparison quantizes neither side)."""
    other_exporter = _other_exporter(loaded, exported)
    if other_exporter is None or not coverage:
        return None
    shown = _SHOWN[exported.exporter]
    built = [(r, _built_placement(shown, r, fix_plan)) for r in coverage]
    if all(b.partitions <= 1 for _r, b in built):
        return None
    why_not = ""
    others: dict[tuple[str, str], Placement] = {}
    if opts.model_opts.consts:
        why_not = "not measured with --const (the other exporter's model would need the values bound again)"
    elif not opts.compare_exporters:
        why_not = "not measured: --no-compare-exporters"
    else:
        progress.step("comparing exporters")
        try:
            others = _measure(opts, chosen, other_exporter, exported)
        except Exception as err:  # noqa: BLE001 — the other exporter is optional advice: any failure only means no numbers

            why_not = f"the {other_exporter} exporter failed on it here: {first_line(err)}"
    comparisons = tuple(Comparison(r.shown, b, others.get((r.target, r.label))) for r, b in built)
    commands = _commands(opts.model, other_exporter, _export_specs(opts, loaded))
    return Advice(shown, other_exporter, comparisons, why_not, commands)


def notices(advice: Advice | None) -> list[Notice]:
    """One ``exporter-advice`` notice: the measured comparison and the commands when the other exporter
    places better, or (not measured) how to try it by hand; nothing when it measured no better."""
    if advice is None or (advice.measured and not advice.better):
        return []
    todo = "; ".join(advice.commands)
    if advice.measured:
        changes = ", ".join(c.text() for c in advice.comparisons)
        text = (
            f"the {advice.other_exporter} exporter places this model better than the {advice.built_exporter} exporter "
            f"(measured, same graph passes): {changes}; {todo} (--no-compare-exporters skips this measurement)"
        )
    else:
        split = ", ".join(c.text() for c in advice.comparisons if c.built.partitions > 1)
        text = (
            f"with the {advice.built_exporter} exporter: {split}; {advice.other_exporter} graphs often partition differently "
            f"({advice.why_not}): {todo}"
        )
    return [Notice("exporter-advice", "warning", text)]


def record(advice: Advice | None) -> dict[str, JSONValue]:
    """The manifest's and ``--json``'s ``exporter_advice`` (nothing without advice)."""
    return {} if advice is None else {"exporter_advice": advice.to_dict()}


# ---------------------------------------------------------------------------------------------------


def _built_placement(exporter: str, report: CoverageReport, fix_plan: FixPlan) -> Placement:
    """The build's model on ``report``'s provider before a task wrapper or quantization changed it: the
    fix stage's outcome for that target and provider (its ``after``; ``before`` when no pass rewrote
    anything, else the shipped model's coverage)."""
    for t in fix_plan.targets:
        if report.target and t.target and t.target != report.target:
            continue
        for reps in (t.after, t.before):
            for r in reps or ():
                if r.label == report.label:
                    return Placement(exporter, r.supported_nodes, r.total_nodes, len(r.partitions))
    return Placement(exporter, report.supported_nodes, report.total_nodes, len(report.partitions))


def _measure(opts: BuildOptions, chosen: Sequence[Chosen], other: str, built: OnnxModel) -> dict[tuple[str, str], Placement]:
    """Export ``opts.model`` with the other exporter (in memory), give its inputs the shapes of the build's
    export (``built``: the ``--input`` shapes and example sizes, :func:`_shaped_as`), prepare and fix it as
    the build does (``passes.stage.prepare``, ``passes.stage.fix``), and analyse every target's providers: (target,
    label) → placement."""
    import tempfile

    export_opts = opts.model_opts.export_options()
    with tempfile.TemporaryDirectory(prefix="mobilegen-advice-") as tmp:
        # the loaded model is held by _export_with alone, which lets a TorchScript module go once converted
        model = _export_with(bind_consts(load_model(opts.model, opts.model_opts.load), export_opts.consts), export_opts, Path(tmp) / "other.onnx", other)
    model = _shaped_as(model, built)
    model, _ = fix_stage.prepare(model, chosen, keep_dynamic=opts.keep_dynamic)
    fixes, _notices = fix_stage.fix(model, chosen, opts)
    ctx = build_context(model, chosen)
    out: dict[tuple[str, str], Placement] = {}
    for c, outcome in zip(chosen, fixes.targets, strict=True):
        reps = outcome.after or outcome.before
        if reps is None:  # no pass rewrote anything: the prepared model as it is
            if model.proto is None:
                raise RuntimeError("the export kept no model in memory")
            reps = tuple(analyse_in_memory(model.proto, c.target.providers(c.opts, ctx)))
        for r in reps:
            out[(c.target.name, r.label)] = Placement(other, r.supported_nodes, r.total_nodes, len(r.partitions))
    return out


def _shaped_as(model: OnnxModel, built: OnnxModel) -> OnnxModel:
    """``model`` (the other exporter's) with the input shapes of the build's export, input by input in
    order: a named dim where the build's is a number is fixed to it (TS2EPConverter's program leaves H
    and W of an image named even when ``--input`` gave them), and a named dim where the build's is named
    too gets the build's example size, so ``passes.stage.prepare`` fixes it (or not) as it did the build's.
    Inputs of another count or rank are left as they are."""
    ins, theirs = model.io.inputs, built.io.inputs
    if len(ins) != len(theirs):
        return model
    fixed: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for mine, ref in zip(ins, theirs, strict=True):
        if len(mine.shape) != len(ref.shape):
            continue
        for d, r in zip(mine.shape, ref.shape, strict=True):
            if isinstance(d, str) and isinstance(r, int):
                fixed.setdefault(d, r)
            elif isinstance(d, str) and isinstance(r, str) and r in built.example_sizes:
                sizes.setdefault(d, built.example_sizes[r])
    if not fixed and not sizes:
        return model
    if fixed:
        from onnxruntime.tools.onnx_model_utils import fix_output_shapes, make_dim_param_fixed


        if model.proto is None:
            raise RuntimeError("the export kept no model in memory")
        for d, size in fixed.items():
            make_dim_param_fixed(model.proto.graph, d, size)
        fix_output_shapes(model.proto)
        model = replace(model, io=onnx_io_spec(model.proto))
    kept = {d: n for d, n in model.example_sizes.items() if d not in fixed}
    return replace(model, example_sizes=kept | {d: n for d, n in sizes.items() if d not in fixed})


def _export_with(loaded: LoadedModel, export_opts: Any, out: Path, other: str) -> OnnxModel:
    from mobilegen.export.stage import export_onnx

    if other == TORCHSCRIPT:  # the same module through the TorchScript exporter
        return export_onnx(loaded, export_opts, out, write=False, torchscript_only=True)
    # torch's converter is private and experimental: the caller catches its failures
    import torch
    from torch._export.converter import TS2EPConverter

    specs, sizes = resolve_inputs(loaded, export_opts.inputs, dict(export_opts.example_sizes))
    arrays = example_arrays(specs, {**{d: 1 for s in specs for d in s.shape if isinstance(d, str)}, **sizes})
    with quiet():
        program = TS2EPConverter(loaded.module, tuple(torch.from_numpy(arrays[s.name]) for s in specs), {}).convert()
    hint, hint_sizes = _exported_io_hint(program)
    converted = replace(loaded, kind="exported_program", module=program, io_hint=hint, example_sizes=hint_sizes)
    del loaded  # the ScriptModule: the program holds what the export needs
    # the program's inputs carry the converter's names (input_ids_1): the user's --input shapes by position
    names = [t.name for t in hint.inputs] if hint is not None else []
    user = tuple(replace(s, name=n) for s, n in zip(export_opts.inputs, names, strict=False)) if len(names) == len(export_opts.inputs) else ()
    return export_onnx(converted, replace(export_opts, inputs=user, output_names=()), out, write=False)


def _export_specs(opts: BuildOptions, loaded: LoadedModel) -> list[TensorSpec]:
    """The input specs the build exported with (for the commands' example inputs)."""
    if loaded.module is None:  # let go after the reference: the specs come from the flags alone
        return list(opts.model_opts.export_options().inputs)
    export_opts = opts.model_opts.export_options()
    try:
        return resolve_inputs(loaded, export_opts.inputs, dict(export_opts.example_sizes))[0]
    except Exception:  # noqa: BLE001 — only for the command's text
        return list(export_opts.inputs)


def _commands(model: Path, other: str, specs: Sequence[TensorSpec]) -> tuple[str, ...]:
    args = _example_args(specs)
    if other == TORCH_EXPORT:
        program = _free_name(model, ".pt2")
        code = (
            f"import torch; from torch._export.converter import TS2EPConverter as C; m = torch.jit.load({json.dumps(str(model))}); "
            f"torch.export.save(C(m, {args}, {{}}).convert(), {json.dumps(str(program))})"
        )
        convert = f"python -c {shlex.quote(code)}"
        return (
            f"with the Python model at hand, save it with torch.export.save(torch.export.export(model, {args}), {json.dumps(str(program))})",
            f"from this TorchScript file: {convert}",
            f"then run the same mobilegen command on {program} (the converter renames the inputs and may leave dims named: "
            f"mobilegen inspect {program} shows the shapes the program records)",
        )
    onnx_path = _free_name(model, ".onnx")
    return (
        f"export it with torch.onnx.export(model, {args}, {json.dumps(str(onnx_path))}, dynamo=False, input_names={json.dumps([s.name for s in specs])})",
        f"then run the same mobilegen command on {onnx_path.name}",
    )


def _free_name(model: Path, suffix: str) -> Path:
    """``model`` with ``suffix``, or ``<stem>-<n>`` + ``suffix`` when that file exists (a command to copy
    must not overwrite the user's own ``.pt2``/``.onnx``)."""
    path = model.with_suffix(suffix)
    n = 2
    while path.exists() and n < 100:
        path = model.with_name(f"{model.stem}-{n}{suffix}")
        n += 1
    return path


def _example_args(specs: Sequence[TensorSpec]) -> str:
    def one(s: TensorSpec) -> str:
        shape = ", ".join(str(d if isinstance(d, int) else 1) for d in s.shape)
        return f"torch.zeros({shape}{',' if len(s.shape) == 1 else ''}, dtype=torch.{s.dtype})"

    items = [one(s) for s in specs]
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


__all__ = ["Advice", "Placement", "advise", "notices", "record"]
