"""The fix stage: per target, the graph passes its execution providers declare, each kept only if the
coverage analysis says it helps.

For one target (its providers as ``EPTarget``s) the passes are tried in registry order on the in-memory
model. After a pass that rewrote something the target's providers are analysed again, and the pass is
kept when it is better for some provider and worse for none, and onnxruntime still loads the graph;
otherwise it is undone. Per provider (:func:`judge`):

- better: fewer partitions, or fewer refused nodes (total - supported) — more supported nodes with as many
  refused is only a bigger graph;
- worse: more partitions (from none to some is not), or fewer supported nodes *and* more refused ones.

Within a build target the providers are the app session's chain, first one first (the order the
generated wrapper asks them in, ``ExecutionProvider.rank``), and a later provider only gets the nodes the
earlier ones leave: there the first provider whose numbers move decides; a provider that would take the
same coverage in more nodes refuses the pass (one that takes LayerNormalization whole gains only a bigger
graph from the decomposition another provider declares), and one that takes every node before and after
ends the judging, since nothing reaches the providers after it (a LayerNorm rewrite the first provider
takes whole is kept even if a later one, which only sees what the first leaves, would form more
partitions on the whole graph). ``mobilegen fix`` judges its providers, which may belong to different
platforms, by the rule above.

The passes undone for making some provider worse are tried once more after the last one, all together,
and kept together when that helps (:func:`_together`): two rewrites of alternating neighbours can each
split what the other joins (Conv1d and GELU in wav2vec2's feature extractor, where one provider refuses
both).

Nodes left on the CPU alone never make a pass worse: a rewrite into several ops one provider takes and
another does not (LayerNorm decomposed for one provider, next to another of the same target) adds
refused nodes for the other without costing it a partition. Supported nodes alone do not either: a
pass that removes nodes the provider took and lets onnxruntime merge others (``pad`` on Swin: 624/638
nodes in 13 partitions -> 617/619 in 1) takes fewer nodes and is still better.

Undoing is cheap because a pass never touches an existing initializer (:mod:`mobilegen.passes.base`): a
:class:`Snapshot` keeps the nodes, value_info, inputs, outputs, opsets and functions, and only the
*number* of initializers, so a large model's weights are never copied.

A build decides every target on the same base model (undoing after each), then writes one model per
distinct list of kept passes (:func:`materialize`): one ``model/`` when the targets agree, else
``model/<target>/`` each. A target never gets a rewrite that only another target's provider needed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen import notices as build_notices
from mobilegen import providers
from mobilegen.artifacts import (
    MODEL_ONNX_NAME,
    AppliedFix,
    CoverageCounts,
    OnnxModel,
    ProviderFixes,
    ShippedModel,
    model_folder,
)
from mobilegen.coverage import analyze_all
from mobilegen.errors import InternalError, MobilegenError, UsageError, first_line
from mobilegen.export.exporter import opset_of
from mobilegen.notices import Notice
from mobilegen.passes import registry
from mobilegen.passes.base import GraphPass
from mobilegen.passes.bodies import apply_everywhere
from mobilegen.passes.dims import fix_dynamic_dims, folded_nodes
from mobilegen.passes.fold_if import fold_unjudged
from mobilegen.passes.graph_util import GraphIndex
from mobilegen.passes.snapshot import Snapshot
from mobilegen.targets.chosen import build_context

if TYPE_CHECKING:
    import onnx

    from mobilegen.coverage.model import CoverageReport
    from mobilegen.coverage.target import EPTarget
    from mobilegen.options import BuildOptions
    from mobilegen.targets import BuildContext
    from mobilegen.targets.chosen import Chosen

Analyse = Callable[["onnx.ModelProto", Sequence["EPTarget"]], Sequence["CoverageReport"]]


def analyse_in_memory(proto: onnx.ModelProto, eps: Sequence[EPTarget]) -> Sequence[CoverageReport]:
    return analyze_all(proto, eps)





# --- judging -----------------------------------------------------------------------------------------


def counts_text(c: CoverageCounts) -> str:
    """``79/91 nodes, 3 partitions``."""
    return f"{c.supported_nodes}/{c.total_nodes} nodes, {c.partitions} partition{'s' if c.partitions != 1 else ''}"


def judge(before: Sequence[CoverageReport], after: Sequence[CoverageReport], *, in_order: bool = False) -> tuple[bool, str]:
    """Whether the change from ``before`` to ``after`` (the same providers, in order) helps: better for
    some provider, worse for none (see the module's docstring), and onnxruntime still loads the graph.
    ``in_order``: the providers are one app session's chain, first one first (by ``rank``): a
    later provider only gets the nodes the earlier ones leave, so the first provider whose numbers move
    decides. Returns (keep, why)."""
    if in_order:
        return _judge_in_order(before, after)
    gains: list[str] = []
    losses: list[str] = []
    for b, a in zip(before, after, strict=True):
        if a.settings.get("optimized") is False and b.settings.get("optimized") is not False:
            losses.append(f"{a.label}: onnxruntime cannot load the rewritten graph")
            continue
        cb, ca = CoverageCounts.of(b), CoverageCounts.of(a)
        change = f"{a.label}: {counts_text(cb)} → {counts_text(ca)}"
        if worse(cb, ca):
            losses.append(change)
        elif better(cb, ca):
            gains.append(change)
    if losses:
        return False, "worse for " + "; ".join(losses)
    if not gains:
        return False, "no provider gained"
    return True, "; ".join(gains)


def _judge_in_order(before: Sequence[CoverageReport], after: Sequence[CoverageReport]) -> tuple[bool, str]:
    for b, a in zip(before, after, strict=True):
        if a.settings.get("optimized") is False and b.settings.get("optimized") is not False:
            return False, f"worse for {a.label}: onnxruntime cannot load the rewritten graph"
    for b, a in zip(before, after, strict=True):
        cb, ca = CoverageCounts.of(b), CoverageCounts.of(a)
        change = f"{a.label}: {counts_text(cb)} → {counts_text(ca)}"
        if worse(cb, ca):
            return False, f"worse for {change}"
        if better(cb, ca):
            return True, change
        if inflated(cb, ca):  # the same coverage in more nodes: a cost for the provider that runs first
            return False, f"worse for {a.label}: the same coverage in more nodes ({counts_text(cb)} → {counts_text(ca)})"
        if cb.total_nodes and not cb.cpu_nodes and not ca.cpu_nodes:
            # it takes every node either way: the providers after it get none, so what they gain is moot
            return False, f"{a.label} takes every node already ({counts_text(cb)}): the providers after it get none"
    return False, "no provider gained"


def better(before: CoverageCounts, after: CoverageCounts) -> bool:
    """Fewer partitions, or fewer refused nodes. More supported nodes alone, with as many refused, is a
    bigger graph, not more coverage (for a provider that takes LayerNorm and Gelu whole, their
    decompositions add nodes it takes, and nothing more)."""
    return after.partitions < before.partitions or after.cpu_nodes < before.cpu_nodes


def inflated(before: CoverageCounts, after: CoverageCounts) -> bool:
    """More nodes taken with as many refused and as many partitions: the provider runs a bigger graph for
    nothing (a LayerNorm decomposition on a provider that takes LayerNormalization whole)."""
    return after.supported_nodes > before.supported_nodes and after.cpu_nodes == before.cpu_nodes and after.partitions == before.partitions


def worse(before: CoverageCounts, after: CoverageCounts) -> bool:
    """More partitions (a provider that took nothing may gain some), or fewer supported nodes and more
    refused ones."""
    more_parts = after.partitions > before.partitions and before.partitions > 0
    return more_parts or (after.supported_nodes < before.supported_nodes and after.cpu_nodes > before.cpu_nodes)


# --- one target ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tried:
    """A pass the stage ran: how many nodes it rewrote, whether it was kept, and why."""

    name: str
    nodes: int
    kept: bool
    why: str

    def to_dict(self) -> dict[str, object]:
        return {"pass": self.name, "nodes": self.nodes, "kept": self.kept, "why": self.why}


@dataclass(frozen=True)
class TargetFix:
    """The fix stage's outcome for one target (``target`` "" outside a build)."""

    target: str
    eps: tuple[EPTarget, ...]
    applied: tuple[AppliedFix, ...]
    tried: tuple[Tried, ...]
    # coverage of the target's providers before the first pass that rewrote something, and after the
    # last kept one; None when no pass rewrote anything (nothing was analysed)
    before: tuple[CoverageReport, ...] | None = None
    after: tuple[CoverageReport, ...] | None = None
    notices: tuple[Notice, ...] = ()

    @property
    def key(self) -> tuple[str, ...]:
        """Equal keys, equal graphs: the passes applied, in order (passes are deterministic)."""
        return tuple(f.name for f in self.applied)

    def provider_fixes(self, final: Sequence[CoverageReport]) -> tuple[ProviderFixes, ...]:
        """Per provider of this target (labels of ``final``, the shipped model's coverage): its coverage
        before the fix stage and the passes its model got."""
        labels = {ep.label for ep in self.eps}
        before = {r.label: CoverageCounts.of(r) for r in self.before or ()}
        return tuple(
            ProviderFixes(r.label, self.target, before.get(r.label, CoverageCounts.of(r)), self.applied)
            for r in final
            if r.label in labels
        )


def improve(
    proto: onnx.ModelProto,
    eps: Sequence[EPTarget],
    candidates: Sequence[GraphPass],
    *,
    target: str = "",
    analyse: Analyse = analyse_in_memory,
    before: Callable[[], Sequence[CoverageReport]] | None = None,
    in_order: bool = False,
) -> TargetFix:
    """Try ``candidates`` on ``proto`` in order, keeping each only if it helps ``eps``; ``proto`` is left
    with the kept passes applied. ``before``: the coverage of ``proto`` as given, when the caller has it
    (computed on first need otherwise). ``in_order``: ``eps`` are one app session's provider chain
    (see :func:`judge`)."""
    applied: list[AppliedFix] = []
    tried: list[Tried] = []
    notices: list[Notice] = []
    first: tuple[CoverageReport, ...] | None = None
    current: tuple[CoverageReport, ...] | None = None
    held: list[GraphPass] = []  # undone because they made some provider worse: tried together at the end
    for graph_pass in candidates if eps else ():
        snap = Snapshot(proto)
        nodes, error = _apply(graph_pass, proto, snap)
        if error is not None:
            tried.append(Tried(graph_pass.name, 0, False, f"failed: {error}"))
            notices.append(_failed_notice(graph_pass.name, target, error))
            continue
        if nodes <= 0:
            snap.restore(proto)  # 0 means unchanged; restoring costs little and makes sure of it
            continue
        if current is None:  # the coverage as given, measured only once some pass rewrites something
            snap.restore(proto)
            current = first = tuple(before()) if before is not None else tuple(analyse(proto, eps))
            nodes, error = _apply(graph_pass, proto, snap)
            if error is not None or nodes <= 0:
                raise InternalError(f"graph pass '{graph_pass.name}' gave a different result on the same graph")
        try:
            after = tuple(analyse(proto, eps))
        except MobilegenError:
            raise  # a full TMPDIR and the like: not the pass's fault
        except Exception as err:  # noqa: BLE001 — the rewritten graph cannot even be analysed: not kept
            snap.restore(proto)
            tried.append(Tried(graph_pass.name, nodes, False, f"failed: the rewritten graph cannot be analysed ({first_line(err, 200)})"))
            notices.append(_failed_notice(graph_pass.name, target, f"the rewritten graph cannot be analysed ({first_line(err, 200)})"))
            continue
        keep, why = judge(current, after, in_order=in_order)
        tried.append(Tried(graph_pass.name, nodes, keep, why))
        if keep:
            applied.append(AppliedFix(graph_pass.name, nodes, graph_pass.exact, graph_pass.approximate_as))
            current = after
        else:
            if _made_worse(current, after):
                held.append(graph_pass)
            snap.restore(proto)
    if len(held) > 1 and current is not None:  # passes that only help together (see _together)
        together = _together(proto, eps, held, current, analyse, in_order)
        if together is not None:
            kept, current = together
            tried.extend(kept)
            applied.extend(AppliedFix(t.name, t.nodes, p.exact, p.approximate_as) for t, p in zip(kept, held, strict=True) if t.nodes)
    return TargetFix(target, tuple(eps), tuple(applied), tuple(tried), first, current if applied else first, tuple(notices))


def _made_worse(before: Sequence[CoverageReport], after: Sequence[CoverageReport]) -> bool:
    """Some provider is worse after the pass (:func:`worse`) on a graph onnxruntime still loads."""
    return all(a.settings.get("optimized") is not False for a in after) and any(
        worse(CoverageCounts.of(b), CoverageCounts.of(a)) for b, a in zip(before, after, strict=True)
    )


def _together(
    proto: onnx.ModelProto,
    eps: Sequence[EPTarget],
    held: Sequence[GraphPass],
    current: tuple[CoverageReport, ...],
    analyse: Analyse,
    in_order: bool,
) -> tuple[list[Tried], tuple[CoverageReport, ...]] | None:
    """Apply ``held`` (passes each undone for making a provider worse) one after the other and judge them
    as one change; kept together when that helps: (a Tried per pass, the coverage after), else None with
    ``proto`` as it was. Two rewrites of neighbouring ops can each split a partition the other then
    joins: in wav2vec2's feature extractor Conv1d and GELU alternate, and one provider refused both; rewriting
    only the GELUs (or only the Convs) turns every other node of the chain into its own partition (7 → 10
    partitions on wav2vec2-base), rewriting both puts the chain in one (→ 1)."""
    snap = Snapshot(proto)
    counts = []
    for graph_pass in held:
        nodes, error = _apply(graph_pass, proto, snap)
        if error is not None:
            return None  # _apply restored the graph; the pass's failure was reported when it ran alone
        counts.append(nodes)
    try:
        after = tuple(analyse(proto, eps))
    except MobilegenError:
        raise
    except Exception:  # noqa: BLE001 — each pass alone was analysed: the combination is simply not kept
        snap.restore(proto)
        return None
    keep, why = judge(current, after, in_order=in_order)
    if not keep:
        snap.restore(proto)
        return None
    names = ", ".join(p.name for p in held)
    return [Tried(p.name, n, True, f"kept together with the others of {names}: {why}") for p, n in zip(held, counts, strict=True)], after


def _apply(graph_pass: GraphPass, proto: onnx.ModelProto, snap: Snapshot) -> tuple[int, str | None]:
    """Run one pass: (nodes rewritten, None), or (0, the error) with ``proto`` restored when it raised."""
    try:
        nodes = apply_everywhere(graph_pass, proto)  # the main graph, then If/Loop/Scan bodies
    except Exception as err:  # noqa: BLE001 — a pass that fails on this graph is skipped, the model kept as it was
        snap.restore(proto)
        return 0, first_line(err, 200)
    snap.check(proto, graph_pass.name)
    return nodes, None


def _failed_notice(name: str, target: str, error: str) -> Notice:
    where = f" on the {target} model" if target else ""
    return Notice("fix-failed", "warning", f"graph pass {name} failed{where} and was skipped: {error}", subject=name)


# --- a whole build ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PassOptions:
    """``enabled``: run the passes (``--no-fix`` turns it off); ``approximate``: the ``--approximate``
    words allowing inexact passes."""

    enabled: bool = True
    approximate: tuple[str, ...] = ()


@dataclass(frozen=True)
class FixPlan:
    """Per target of a build, the passes that help it (decided on the same base model)."""

    targets: tuple[TargetFix, ...]
    notices: tuple[Notice, ...] = field(default=())
    # passes already applied to the base before any target was judged (fold-if on constant Ifs): at the
    # head of every target's ``applied``, not applied again when the models are written
    pre: tuple[AppliedFix, ...] = ()

    def groups(self) -> list[tuple[tuple[str, ...], TargetFix]]:
        """(targets, the first one's outcome) per distinct list of kept passes, in target order."""
        out: dict[tuple[str, ...], list[TargetFix]] = {}
        for t in self.targets:
            out.setdefault(t.key, []).append(t)
        return [(tuple(t.target for t in fixes), fixes[0]) for fixes in out.values()]

    def provider_fixes(self, coverage: Sequence[CoverageReport]) -> tuple[ProviderFixes, ...]:
        return tuple(p for t in self.targets for p in t.provider_fixes(coverage))


def plan(
    base: OnnxModel,
    targets: Sequence[tuple[str, Sequence[EPTarget]]],
    opts: PassOptions,
    *,
    analyse: Analyse = analyse_in_memory,
) -> FixPlan:
    """Decide, for each (target name, its providers), which passes help it. The base model's graph is
    the same afterwards, but for the Ifs on a constant, folded first for every target (``fold-if``,
    unjudged: first in each target's ``applied`` and ``tried``, :attr:`FixPlan.pre`)."""
    proto = _proto(base)
    all_eps = [ep for _name, eps in targets for ep in eps]
    cache: list[tuple[CoverageReport, ...]] = []
    # Ifs on a constant (a static model's shape tests; fixed-dims folded those of the dims it fixed):
    # onnxruntime inlines them itself when it loads the model, and crashes on nested ones (silero-vad
    # saved with static shapes), so they are folded for every target before the first analysis, unjudged
    folded, fold_error = fold_unjudged(proto) if opts.enabled and all_eps else (0, None)
    folded += folded_nodes(base)  # those fixed-dims folded (the same rewrite, for the same reason)
    pre = (AppliedFix("fold-if", folded),) if folded else ()

    def base_reports(eps: Sequence[EPTarget]) -> Callable[[], Sequence[CoverageReport]]:
        def get() -> Sequence[CoverageReport]:
            if not cache:  # one analysis of the base for every provider of the build
                cache.append(tuple(analyse(proto, all_eps)))
            wanted = [ep.label for ep in eps]
            by_label = {r.label: r for r in cache[0]}
            return [by_label[label] for label in wanted]

        return get

    outcomes: list[TargetFix] = []
    snap = Snapshot(proto)
    for name, eps in targets:
        declared = [f for ep in eps for f in providers.get(ep.ep).fixes]
        candidates = registry.candidates(declared, opts.approximate) if opts.enabled else ()
        outcome = improve(proto, eps, candidates, target=name, analyse=analyse, before=base_reports(eps), in_order=True)
        if pre:
            why = "an If on a constant: onnxruntime would inline it when it loads the model (not judged)"
            tried = (Tried("fold-if", folded, True, why), *outcome.tried)
            outcome = replace(outcome, applied=(*pre, *outcome.applied), tried=tried)
        outcomes.append(outcome)
        snap.restore(proto)
    notices = tuple(n for o in outcomes for n in o.notices)
    if fold_error is not None:
        notices = (_failed_notice("fold-if", "", fold_error), *notices)
    return FixPlan(tuple(outcomes), notices, pre)


def materialize(base: OnnxModel, fix_plan: FixPlan, root: Path, write: Callable[[OnnxModel], OnnxModel]) -> tuple[ShippedModel, ...]:
    """The models to ship: per distinct list of kept passes, the base with those passes applied, written
    by ``write`` (which returns the model without its in-memory proto) into ``root/model/`` when every
    target agrees, else ``root/model/<target>/`` per group of targets."""
    proto = _proto(base)
    groups = fix_plan.groups()
    snap = Snapshot(proto) if len(groups) > 1 else None
    shipped: list[ShippedModel] = []
    for index, (names, outcome) in enumerate(groups):
        folder = model_folder(None if len(groups) == 1 else names[0])
        (root / folder).mkdir(parents=True, exist_ok=True)
        for applied in outcome.applied[len(fix_plan.pre) :]:  # the plan's own are in the base already
            graph_pass = registry.get(applied.name)
            if apply_everywhere(graph_pass, proto) != applied.nodes:
                raise InternalError(f"graph pass '{applied.name}' gave a different result on the same graph")
        dropped = drop_unused_initializers(proto) if outcome.applied else []
        model = replace(base, path=root / folder / MODEL_ONNX_NAME, opset=opset_of(proto))
        shipped.append(ShippedModel(names, folder, write(model), fixes=outcome.applied))
        if snap is not None and index < len(groups) - 1:
            put_back(proto, dropped)
            snap.restore(proto)  # the next group starts from the base again
    return tuple(shipped)


def drop_unused_initializers(proto: onnx.ModelProto) -> list[tuple[int, onnx.TensorProto]]:
    """Remove the initializers no node reads (nor a subgraph, nor the graph as an input or output): the
    weights a pass left behind, e.g. conv1d-2d's 3-D kernel next to its 4-D one. A pass may not remove
    them itself (that would make undoing it cost a copy of the weights); this runs once per written
    model. Returns (index, initializer) of each one removed, for :func:`put_back`."""
    g = proto.graph
    index = GraphIndex(g)
    used = set(index.consumers) | index.used_in_subgraphs | index.graph_inputs | index.graph_outputs
    unused = [i for i, t in enumerate(g.initializer) if t.name not in used]
    return [(i, g.initializer.pop(i)) for i in reversed(unused)][::-1]


def put_back(proto: onnx.ModelProto, dropped: Sequence[tuple[int, onnx.TensorProto]]) -> None:
    """Undo :func:`drop_unused_initializers`: every initializer back in its place."""
    for i, tensor in dropped:
        proto.graph.initializer.insert(i, tensor)


def _proto(model: OnnxModel) -> onnx.ModelProto:
    if model.proto is None:
        raise InternalError("the fix stage needs the in-memory model; the export stage did not keep it")
    return model.proto


# --- the fix stage of a build: prepare (fixed dims) and the per-target plan -----------------------


def check_fix_options(opts: BuildOptions) -> None:
    """``--approximate`` names approximate passes, and is not given with ``--no-fix`` (before heavy work)."""
    if opts.approximate and not opts.fix:
        raise UsageError("--approximate has no effect with --no-fix", hint="drop one of them")
    registry.check_approximate(opts.approximate)


def prepare(exported: OnnxModel, chosen: Sequence[Chosen], *, keep_dynamic: bool) -> tuple[OnnxModel, list[Notice]]:
    """What every target's model gets, in memory: the providers' notices, and ``fixed-dims`` when a
    target's provider declares it (unless ``keep_dynamic``) — for the whole build, as the inputs change.
    (The providers' cache keys are stamped when a model is written: they hash the bytes written.)"""
    notices: list[Notice] = []
    model = exported

    ctx = build_context(model, chosen)
    for c in chosen:
        notices.extend(c.target.notices(c.opts))
        for ep in c.target.providers(c.opts, ctx):
            # about the target that chose the provider: its README lists it, the other target's does not
            notices.extend(replace(n, subject=n.subject or c.target.name) for n in providers.get(ep.ep).notices)
        if _wants_fixed_dims(c, ctx) and not model.io.is_static and not keep_dynamic:
            model, fixed = fix_dynamic_dims(model)
            if fixed:
                also = [o.target.display_name for o in chosen if o is not c and not _wants_fixed_dims(o, ctx)]
                wanted_by = [providers.get(ep.ep).display_name for ep in c.target.providers(c.opts, ctx) if registry.wants_fixed_dims((ep.ep,))]
                notices.append(build_notices.dims_fixed(build_notices.dims_fixed_text(fixed, wanted_by), shipped_by=also))
    return model, notices


def _wants_fixed_dims(c: Chosen, ctx: BuildContext) -> bool:
    return registry.wants_fixed_dims(ep.ep for ep in c.target.providers(c.opts, ctx))


def fix(base: OnnxModel, chosen: Sequence[Chosen], opts: BuildOptions) -> tuple[FixPlan, tuple[Notice, ...]]:
    """Per target, the graph passes that help its providers (decided on ``base``, which is unchanged), and
    the plan's notices."""
    ctx = build_context(base, chosen)
    per_target = [(c.target.name, c.target.providers(c.opts, ctx)) for c in chosen]
    fix_plan = plan(base, per_target, PassOptions(enabled=opts.fix, approximate=opts.approximate))
    return fix_plan, fix_plan.notices

