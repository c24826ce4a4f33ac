"""The coverage analysis: optimize like ORT does at load, evaluate the provider's rules, partition, judge.

``analyze(model, target)`` / ``analyze_all(model, targets)`` are the public entry points. The model is
first optimized in-process by onnxruntime at ORT_ENABLE_BASIC with the CPU EP (what the device sees
before the EP's GetCapability: constant folding, function inlining such as HardSwish -> HardSigmoid +
Mul), then shape-inferred. A Fixed/"all"-level graph is never analysed: its fused contrib ops would be
reported as refused although the device never sees them.

Everything provider-specific (rule table, display name, settings, partition and suggestion hooks) comes
from the provider registry (``mobilegen.providers``) through ``target.provider``.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx

from mobilegen.coverage import qdq, subgraphs
from mobilegen.coverage.graph import CONTROL_FLOW_OPS, GraphInfo, build_graph_info
from mobilegen.coverage.model import CoverageReport, NodeVerdict
from mobilegen.coverage.partition import Support, group_nodes
from mobilegen.coverage.provider_view import (
    claimed_by,
    for_providers,  # the graph before partitioning (issue 18)
)
from mobilegen.coverage.rewrites import op_suggestions
from mobilegen.coverage.rules import EPTable, NodeContext
from mobilegen.coverage.target import EPTarget
from mobilegen.errors import InternalError, first_line
from mobilegen.infra.onnx_size import model_bytes, stored_bytes, surely_under
from mobilegen.infra.outputs import temp_dir  # a full TMPDIR is named as such, never blamed on -o
from mobilegen.providers.base import DYNAMIC, GROUP, OP, ExecutionProvider, Reason

log = logging.getLogger(__name__)

_TWO_GB = 2_000_000_000


@dataclass
class Prepared:
    """A model as the EPs see it, shared by every target of one ``analyze_all`` call."""

    graph: GraphInfo
    optimized: bool
    notes: tuple[str, ...]
    _taken: list[NodeVerdict] | None = None
    # Function nodes the CPU session inlined (provider_view.Refolder): a target whose provider has a
    # builder for one sees it whole (issue 18); one view per set of such ops.
    refolder: Any = None
    _views: dict[frozenset[str], Prepared] = field(default_factory=dict)
    # the If/Loop/Scan bodies (each judged and partitioned on its own: mobilegen.coverage.subgraphs)
    bodies: tuple[subgraphs.Body, ...] = ()

    def for_ops(self, claimed: frozenset[str]) -> Prepared:
        """This model as a provider with builders for ``claimed`` sees it (self when no inlined op is one)."""
        if self.refolder is None:
            return self
        key = claimed & self.refolder.ops()
        if not key:
            return self
        if key not in self._views:
            model = self.refolder.view(key)
            self._views[key] = (
                self
                if model is None
                else Prepared(build_graph_info(_infer_shapes(model)[0]), self.optimized, self.notes, bodies=self.bodies)
            )
        return self._views[key]

    def taken(self, index: int) -> NodeVerdict:
        """Node ``index``'s "supported" verdict, one object shared by every target's report."""
        if self._taken is None:
            self._taken = [NodeVerdict(n.name, n.op_type, n.domain, True) for n in self.graph.nodes]
        return self._taken[index]


# --- preparation -----------------------------------------------------------------------------------


# Initializers at least this big are left in an external file when ORT writes the optimized model and
# are not read back: the rules read only small constants (GraphInfo.const_value: <= 4096 elements,
# 32 KiB), and a large model's weights would otherwise be written, read and shape-inferred again.
_EXTERNAL_MIN_BYTES = 64 * 1024


def _optimize(model: onnx.ModelProto | None, source: Path | None = None) -> tuple[onnx.ModelProto | None, str | None]:
    """``model`` as ORT sees it after ORT_ENABLE_BASIC. ``source``: a file holding exactly ``model``,
    which ORT then reads instead of a copy written here."""
    import onnxruntime as ort  # lazy: heavy import


    with temp_dir("coverage") as tmp:
        src = source if source is not None and source.is_file() else Path(tmp) / "model.onnx"
        dst = Path(tmp) / "model.basic.onnx"
        if src != source:
            if model is None:
                raise InternalError(f"the model file {source} is missing")
            save_weightless(model, src)
        if model is not None and _nested_if(model.graph):
            # onnxruntime (1.32) may crash the process instead of raising when it cannot inline a nested If
            # (silero-vad with fixed dims: Graph::InlineIfSubgraph): try the load in a child process first
            problem = _probe_in_child(src)
            if problem is not None:
                return None, f"onnxruntime could not load the model on CPU ({problem}); analysed the graph as given"
        # The optimized graph's large initializers are never read back (onnx.load below leaves external
        # data alone): ORT writes them to the null device, not a model's size of disk per analysis.
        # Where no such link can be made (Windows without the privilege) ORT writes the file as before.
        with contextlib.suppress(OSError, NotImplementedError):
            os.symlink(os.devnull, Path(tmp) / _OPTIMIZED_DATA)
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        so.optimized_model_filepath = str(dst)
        so.log_severity_level = 3
        so.add_session_config_entry("session.optimized_model_external_initializers_file_name", _OPTIMIZED_DATA)
        so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", str(_EXTERNAL_MIN_BYTES))
        so.add_session_config_entry("session.disable_prepacking", "1")  # never run: no packed copy of the weights
        so.enable_cpu_mem_arena = False  # nor an arena (its memory would outlive the session in this process)
        try:
            ort.InferenceSession(str(src), so, providers=["CPUExecutionProvider"])
        except Exception as err:  # noqa: BLE001 — ORT refuses the model (custom op, bad graph): analyse as given
            first = first_line(err)
            return None, f"onnxruntime could not load the model on CPU ({first}); analysed the graph as given"
        return onnx.load(str(dst), load_external_data=False), None


_ZEROS = "zeros.bin"
_OPTIMIZED_DATA = "model.basic.onnx.data"


def save_weightless(model: onnx.ModelProto, path: Path) -> None:
    """Write ``model`` for onnxruntime to optimize, without its weights: every initializer of the main
    graph of at least :data:`_EXTERNAL_MIN_BYTES` becomes external data at offset 0 of one sparse file of
    zeros beside it (made by ``truncate``: nothing is written, every tensor maps the same zero pages).

    What the analysis reads of the optimized graph does not depend on those values: the rules read only
    small constants (``GraphInfo.const_value``: <= 4096 elements, 32 KiB, far below the cut), and
    ORT_ENABLE_BASIC decides by structure, shapes and such small constants (constant folding of a large
    weight gives a tensor of the same shape, left in an external file and never read back). What it saves,
    per analysis of an in-memory model: serializing, writing and parsing a copy of the weights (a 300M-
    parameter model's 1.2 GB, once per graph pass the fix stage tries), and the session's copy of them."""
    from onnx.external_data_helper import uses_external_data

    from mobilegen.infra.onnx_size import tensor_nbytes

    light = onnx.ModelProto()
    for fd, value in model.ListFields():
        if fd.name != "graph":
            _copy_field(light, fd, value)
    graph = light.graph
    largest = 0
    for fd, value in model.graph.ListFields():
        if fd.name != "initializer":
            _copy_field(graph, fd, value)
            continue
        for t in value:
            n = tensor_nbytes(t)
            if n is None or n < _EXTERNAL_MIN_BYTES or uses_external_data(t) or stored_bytes(t) < _EXTERNAL_MIN_BYTES:
                graph.initializer.add().CopyFrom(t)
                continue
            e = graph.initializer.add(name=t.name, data_type=t.data_type, dims=t.dims, data_location=onnx.TensorProto.EXTERNAL)
            for key, val in (("location", _ZEROS), ("offset", "0"), ("length", str(n))):
                e.external_data.add(key=key, value=val)
            largest = max(largest, n)
    with (path.parent / _ZEROS).open("wb") as f:
        f.truncate(largest)
    large = not surely_under(light, _TWO_GB) and model_bytes(light) > _TWO_GB  # not ByteSize(): it raises EncodeError past 2 GiB
    onnx.save_model(light, str(path), save_as_external_data=large, location="model.onnx.data")


def _copy_field(dst: Any, fd: Any, value: Any) -> None:
    """Set protobuf field ``fd`` of ``dst`` to ``value`` (a scalar, a message or a repeated field)."""
    if fd.is_repeated:
        getattr(dst, fd.name).extend(value)
    elif fd.type == fd.TYPE_MESSAGE:
        getattr(dst, fd.name).CopyFrom(value)
    else:
        setattr(dst, fd.name, value)


_PROBE = """
import sys
import onnxruntime as ort
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
so.log_severity_level = 3
try:
    ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
except Exception as err:
    print(str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__)
    sys.exit(3)
"""


def _probe_in_child(src: Path) -> str | None:
    """None when onnxruntime loads ``src`` (ORT_ENABLE_BASIC) in a child process; else why not, including a crash."""
    import subprocess
    import sys

    try:
        done = subprocess.run([sys.executable, "-c", _PROBE, str(src)], capture_output=True, text=True, timeout=600, check=False)
    except subprocess.TimeoutExpired:
        return "it did not finish loading within 10 minutes"
    if done.returncode == 0:
        return None
    if done.returncode == 3:
        return done.stdout.strip() or "it refused the model"
    return f"it crashed loading the model (exit status {done.returncode})"


def _nested_if(graph: onnx.GraphProto, inside: bool = False) -> bool:
    """Whether an If sits inside the body of a control-flow node."""
    for node in graph.node:
        if inside and node.op_type == "If":
            return True
        for a in node.attribute:
            for sub in (a.g,) if a.type == onnx.AttributeProto.GRAPH else tuple(a.graphs):
                if _nested_if(sub, True):
                    return True
    return False


def _infer_shapes(model: onnx.ModelProto) -> tuple[onnx.ModelProto, str | None]:
    ir_version = model.ir_version
    if ir_version < 4:
        # onnx shape inference ignores initializers that are not graph inputs before IR 4 (ORT's saved
        # optimized models drop them from the inputs): infer as IR 4, keep the original for constness.
        model = onnx.ModelProto.FromString(model.SerializeToString())
        model.ir_version = 4
    inferred, note = _infer_shapes_inner(model)
    inferred.ir_version = ir_version
    return inferred, note


def _infer_shapes_inner(model: onnx.ModelProto) -> tuple[onnx.ModelProto, str | None]:
    try:
        if model_bytes(model) > _TWO_GB:
            with temp_dir("shapes") as tmp:
                p = tmp / "m.onnx"
                onnx.save_model(model, str(p), save_as_external_data=True)
                onnx.shape_inference.infer_shapes_path(str(p))
                return onnx.load(str(p)), None
        return onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True), None
    except Exception as err:  # noqa: BLE001 — keep going with whatever shapes the model carries
        return model, f"shape inference failed ({type(err).__name__}: {err}); shapes may be missing"


def prepare(model: onnx.ModelProto | None, *, optimize: bool = True, source: Path | None = None) -> Prepared:
    """``model``, or the file ``source`` holding it (None: read from ``source`` only when ORT cannot
    optimize it and the graph is analysed as given)."""
    notes: list[str] = []
    optimized = False
    opt: onnx.ModelProto | None = None
    refolder = None
    if optimize:
        opt, note = _optimize(model, source)
        if note:
            notes.append(note)
    if opt is not None:
        opt, refolder = for_providers(opt, model, source)
        model, optimized = opt, True
    elif model is None:
        if source is None:
            raise InternalError("nothing to analyse: neither a model nor its file")
        model = onnx.load(str(source))
    model, note = _infer_shapes(model)
    if note:
        notes.append(note)
    info = build_graph_info(model)
    return Prepared(info, optimized, tuple(notes), refolder=refolder, bodies=subgraphs.bodies(model, info))


# --- per-node rules ------------------------------------------------------------------------------


def evaluate_node(
    provider: ExecutionProvider, table: EPTable, graph: GraphInfo, index: int, target: EPTarget
) -> list[Reason]:
    """Every reason the provider's builder/kernel would refuse this node for (empty: supported on its own)."""
    node = graph.nodes[index]
    ep, name = provider.name, provider.display_name
    if node.op_type in CONTROL_FLOW_OPS and node.is_onnx_domain and node.op_type not in provider.control_flow_kernels:
        if provider.takes_subgraphs:
            body = f"its {node.subgraph_nodes} body node(s) are judged on their own, each body partitioned separately"
        else:
            body = f"its {node.subgraph_nodes} body node(s) stay on CPU ({name} takes no node inside a subgraph)"
        return [Reason(f"{node.op_type} has no {name} builder; {body}", OP, f"{ep}.registered")]
    known_domain = node.is_onnx_domain or node.domain in ("com.microsoft", "ai.onnx.ml")
    if not known_domain:
        return [Reason(f"op {node.qualified} is from custom domain '{node.domain}': no {name} builder", OP, f"{ep}.registered")]
    spec = table.lookup(node.domain, node.op_type)
    if spec is None:
        if node.op_type in table.unmodelled:
            text = f"{name} has a {node.op_type} builder, but mobilegen does not model its limits yet (counted as refused)"
        else:
            text = f"op {node.qualified} has no {name} builder" + _later_builder(provider, target, node.domain, node.op_type)
        return [Reason(text, OP, f"{ep}.registered")]
    variant = target.variant
    if variant is not None and spec.formats is not None and variant not in spec.formats:
        other = ", ".join(spec.formats)
        return [Reason(f"{node.op_type} has no {name} {variant} builder (only {other})", OP, f"{ep}.format")]
    ctx = NodeContext(node, graph, target, spec)
    reasons: list[Reason] = []
    for rule in table.general:
        reasons.extend(rule.evaluate(ctx))
    for rid in spec.rules:
        reasons.extend(table.rules[rid].evaluate(ctx))
    return reasons


def evaluate_nodes(provider: ExecutionProvider, table: EPTable, graph: GraphInfo, target: EPTarget) -> list[list[Reason]]:
    """``evaluate_node`` for every node. A node whose key (``graph.node_keys()``) matches one already
    found supported is supported without running the rules again (a 10,000-node graph repeats a few
    dozen kinds of node); refused nodes are always evaluated, since their reasons quote tensor names."""
    supported: set[int] = set()
    out: list[list[Reason]] = []
    units = qdq.table_units(table, graph)
    in_unit = units.by_node if units is not None else {}
    for i, key in enumerate(graph.node_keys()):
        if key in supported or i in in_unit:  # a unit's members get its verdict below
            out.append([])
            continue
        reasons = evaluate_node(provider, table, graph, i, target)
        if not reasons:
            supported.add(key)
        out.append(reasons)
    if units is not None:
        qdq.evaluate_units(table, graph, units, target, out)
    return out


def _later_builder(provider: ExecutionProvider, target: EPTarget, domain: str, op_type: str) -> str:
    """`` in ONNX Runtime 1.24.2 (releases from 1.27.0 have one)`` when a later release has the builder the
    analysed one lacks; "" otherwise."""
    spec = provider.rule_table().lookup(domain, op_type)
    if spec is None or not spec.since_ort:
        return ""
    return f" in ONNX Runtime {target.str_value('ort_version')} (releases from {spec.since_ort} have one)"


def rules_for(target: EPTarget) -> EPTable:
    """The provider's table as the ONNX Runtime release the target pins (or ``--ort-version``) has it."""
    return target.provider.rule_table().for_version(target.str_value("ort_version"))


def evaluate_rule(rule_id: str, graph: GraphInfo, index: int, target: EPTarget) -> list[Reason] | None:
    """One rule on one node (for tests): its reasons, or None if the rule does not apply to the node."""
    table = rules_for(target)
    node = graph.nodes[index]
    spec = table.lookup(node.domain, node.op_type)
    if spec is None:
        return None
    rule = next((r for r in table.general if r.id == rule_id), None)
    if rule is None:
        if rule_id not in spec.rules:
            return None
        rule = table.rules[rule_id]
    return rule.evaluate(NodeContext(node, graph, target, spec))


# --- partitioning ----------------------------------------------------------------------------------


@dataclass
class _Outcome:
    supported: list[bool]
    reasons: list[list[Reason]]
    groups: list[list[int]]


def _partition(
    graph: GraphInfo,
    provider: ExecutionProvider,
    target: EPTarget,
    rule_ok: Sequence[bool],
    rule_reasons: Sequence[Sequence[Reason]],
) -> _Outcome:
    """Group the nodes as ORT's GetCapability does, with the provider's hooks on top."""
    support = Support(graph, list(rule_ok), [list(r) for r in rule_reasons], target.str_value("ort_version"))
    provider.refine(support, target)
    units = qdq.table_units(rules_for(target), graph)
    if units is not None:
        qdq.follow_targets(units, support.taken, support.reasons)
    group_outputs: set[str] = set()
    taken = support.taken
    if type(provider).refuse_in_group is ExecutionProvider.refuse_in_group:  # no hook: no bookkeeping

        def is_supported(i: int) -> bool:
            return taken[i]
    else:

        def is_supported(i: int) -> bool:
            return _in_group(i)

    def _in_group(i: int) -> bool:
        if not taken[i]:
            return False
        refusal = provider.refuse_in_group(support, i, group_outputs)
        if refusal is not None:
            support.reasons[i].append(refusal)
            return False
        group_outputs.update(o for o in graph.nodes[i].outputs if o)
        return True

    dropped: list[tuple[list[int], Reason]] = []

    def on_closed(group: list[int]) -> bool:
        group_outputs.clear()
        if units is not None:  # a group of unit targets: the hooks see every node of its units
            group = qdq.expand(units, group)
        refusal = provider.drop_group(support, group)
        if refusal is not None:
            dropped.append((group, refusal))
            return False
        return True

    if units is None:
        groups = group_nodes(graph, is_supported, on_closed)
    else:
        edges = qdq.unit_edges(graph, units)
        groups = [qdq.expand(units, g) for g in group_nodes(graph, is_supported, on_closed, edges)]
    in_group = [False] * len(graph.nodes)
    for g in groups:
        for i in g:
            in_group[i] = True
    for g, refusal in dropped:
        for i in g:
            support.reasons[i].append(refusal)
    return _Outcome(in_group, support.reasons, groups)


def verdict(partitions: int, supported: int, total: int) -> str:
    """ORT's usability_checker thresholds (PartitioningInfo.suitability)."""
    pct = 100.0 * supported / total if total else 0.0
    if partitions == 1 and pct > 75:
        return "yes"
    if partitions == 1 and pct > 50:
        return "maybe"
    if partitions == 2 and pct > 75:
        return "maybe"
    return "no"


# --- suggestions -----------------------------------------------------------------------------------

_Summary = tuple[int, int, str]  # partitions, supported nodes, verdict
_RANK = {"no": 0, "maybe": 1, "yes": 2}
# What the If/Loop/Scan bodies add to a report's counts (partitions, supported nodes, nodes): suggestions
# change only the main graph, but their numbers read like the report's, bodies included.
_Extra = tuple[int, int, int]


def _summary(out: _Outcome, total: int, extra: _Extra = (0, 0, 0)) -> _Summary:
    s = sum(out.supported) + extra[1]
    p = len(out.groups) + extra[0]
    return p, s, verdict(p, s, total)


def _fmt_change(before: _Summary, after: _Summary, total: int) -> str:
    (p0, s0, v0), (p1, s1, v1) = before, after

    def pct(s: int) -> str:
        return f"{100.0 * s / total:.0f}%" if total else "0%"

    text = f"{p0} partition{'s' if p0 != 1 else ''} → {p1}, {pct(s0)} → {pct(s1)} of nodes"
    if v0 != v1:
        text += f", verdict {v0} → {v1}"
    return text


class WhatIf:
    """What a suggestion hook may ask: each node's rule reasons, and what taking more nodes would change."""

    def __init__(
        self,
        graph: GraphInfo,
        provider: ExecutionProvider,
        target: EPTarget,
        rule_reasons: Sequence[Sequence[Reason]],
        now: _Summary,
        extra: _Extra = (0, 0, 0),
    ) -> None:
        self.graph = graph
        self.rule_reasons = rule_reasons
        self._provider = provider
        self._target = target
        self._now = now
        self._extra = extra

    def change_if_taken(self, nodes: Sequence[bool]) -> str | None:
        """How the partitions would change ("4 partitions → 2, 86% → 93% of nodes…") if the rules also took
        the marked nodes, when that is an improvement; None when it is not."""
        n = len(self.graph.nodes)
        total = n + self._extra[2]
        make_ok = [not self.rule_reasons[i] or bool(nodes[i]) for i in range(n)]
        trimmed = [[] if make_ok[i] else self.rule_reasons[i] for i in range(n)]
        after = _summary(_partition(self.graph, self._provider, self._target, make_ok, trimmed), total, self._extra)
        return _fmt_change(self._now, after, total) if self._better(after) else None

    def _better(self, after: _Summary) -> bool:
        # Only what a user would act on: fewer partitions (each costs a copy), a better verdict, or the EP
        # taking anything at all where it took nothing; more nodes in as many partitions is not shown.
        now = self._now
        if _RANK[after[2]] > _RANK[now[2]] or (now[1] == 0 and after[1] > 0):
            return True
        return after[0] < now[0] and after[1] >= now[1]


def _suggestions(
    graph: GraphInfo,
    provider: ExecutionProvider,
    target: EPTarget,
    rule_reasons: list[list[Reason]],
    base: _Outcome,
    extra: _Extra = (0, 0, 0),
) -> list[str]:
    if not graph.nodes:
        return []
    total = len(graph.nodes) + extra[2]
    whatif = WhatIf(graph, provider, target, rule_reasons, _summary(base, total, extra), extra)
    out: list[str] = []
    dyn = [bool(r) and all(x.category == DYNAMIC for x in r) for r in rule_reasons]
    if any(dyn):
        change = whatif.change_if_taken(dyn)
        if change:
            out.append(f"fix the dynamic dims (export with static shapes / make_dynamic_shape_fixed): {change}")
    out.extend(provider.suggest(whatif, target))
    out.extend(op_suggestions(whatif, rules_for(target), target, provider.display_name))
    return out


# --- public API ------------------------------------------------------------------------------------


def _report(prepared: Prepared, target: EPTarget) -> CoverageReport:
    provider = target.provider
    table = rules_for(target)
    prepared = prepared.for_ops(claimed_by(table))
    graph = prepared.graph
    rule_reasons = evaluate_nodes(provider, table, graph, target)
    outcome = _partition(graph, provider, target, [not r for r in rule_reasons], rule_reasons)
    total = len(graph.nodes)
    nodes = tuple(
        prepared.taken(node.index)
        if outcome.supported[node.index]
        else NodeVerdict.refused(node.name, node.op_type, node.domain, _dedupe(outcome.reasons[node.index]))
        for node in graph.nodes
    )
    partitions = tuple(tuple(graph.nodes[i].name for i in g) for g in outcome.groups)
    supported = sum(outcome.supported)
    settings = target.settings()
    settings["optimized"] = prepared.optimized
    notes = list(prepared.notes)
    extra: _Extra = (0, 0, 0)
    if prepared.bodies:
        body_nodes, body_partitions, note = _judge_bodies(prepared.bodies, provider, table, target)
        extra = (len(body_partitions), sum(1 for n in body_nodes if n.supported), len(body_nodes))
        nodes += body_nodes
        partitions += body_partitions
        supported += extra[1]
        total += extra[2]
        notes.append(note)
    if notes:
        settings["notes"] = notes
    return CoverageReport(
        ep=target.ep,
        format=target.variant,
        total_nodes=total,
        supported_nodes=supported,
        partitions=partitions,
        verdict=verdict(len(partitions), supported, total),
        nodes=nodes,
        suggestions=tuple(_suggestions(graph, provider, target, rule_reasons, outcome, extra)),
        settings=settings,
        estimate=provider.estimate,
    )


def subgraph_refusal(provider: ExecutionProvider) -> Reason:
    """Why a provider that takes no node inside a subgraph refuses a body's node."""
    source = f" ({provider.subgraph_source}: GetCapability returns nothing for a subgraph)" if provider.subgraph_source else ""
    return Reason(
        f"inside an If/Loop/Scan body: {provider.display_name} takes no node of a subgraph{source}",
        GROUP,
        f"{provider.name}.subgraph",
    )


def _judge_bodies(
    bodies: Sequence[subgraphs.Body], provider: ExecutionProvider, table: EPTable, target: EPTarget
) -> tuple[tuple[NodeVerdict, ...], tuple[tuple[str, ...], ...], str]:
    """The verdicts of every body's nodes (named ``<body path>/<node>``), the partitions formed in the
    bodies, and the note saying how many nodes are inside bodies and what the provider does with them."""
    verdicts: list[NodeVerdict] = []
    partitions: list[tuple[str, ...]] = []
    refusal = None if provider.takes_subgraphs else subgraph_refusal(provider)
    for body in bodies:
        g = body.graph
        if refusal is not None:
            verdicts.extend(NodeVerdict.refused(body.qualified(n.name), n.op_type, n.domain, (refusal,), body.path) for n in g.nodes)
            continue
        reasons = evaluate_nodes(provider, table, g, target)
        outcome = _partition(g, provider, target, [not r for r in reasons], reasons)
        for n in g.nodes:
            if outcome.supported[n.index]:
                verdicts.append(NodeVerdict(body.qualified(n.name), n.op_type, n.domain, True, graph=body.path))
            else:
                refused = _dedupe(outcome.reasons[n.index])
                verdicts.append(NodeVerdict.refused(body.qualified(n.name), n.op_type, n.domain, refused, body.path))
        partitions.extend(tuple(body.qualified(g.nodes[i].name) for i in grp) for grp in outcome.groups)
    inside = len(verdicts)
    where = ", ".join(b.path for b in bodies[:3]) + (f" and {len(bodies) - 3} more" if len(bodies) > 3 else "")
    if refusal is not None:
        what = (
            f"{provider.display_name} takes none of them ({provider.subgraph_source or 'not modelled: counted as refused'}); "
            "an If whose condition is constant (--const, fixed dims) is inlined by the builds' fold-if pass"
        )
    else:
        taken = sum(1 for v in verdicts if v.supported)
        what = f"{provider.display_name} judges them like the others, each body partitioned on its own: {taken} taken"
    note = f"{inside} node(s) are inside If/Loop/Scan bodies ({where}), counted in the totals; {what}"
    return tuple(verdicts), tuple(partitions), note


def _dedupe(reasons: list[Reason]) -> tuple[Reason, ...]:
    """The first reason of each distinct text, in order."""
    seen: dict[str, Reason] = {}
    for r in reasons:
        seen.setdefault(r.text, r)
    return tuple(seen.values()) or (Reason("not taken by the EP"),)


def analyze(model: onnx.ModelProto, target: EPTarget, *, optimize: bool = True) -> CoverageReport:
    """Coverage of ``model`` on one EP target. ``optimize=False`` analyses the graph as given (tests)."""
    with _gc_paused():
        return _report(prepare(model, optimize=optimize), target)


def analyze_all(
    model: onnx.ModelProto | None, targets: Sequence[EPTarget], *, optimize: bool = True, source: Path | None = None
) -> tuple[CoverageReport, ...]:
    """Optimize and shape-infer once, then analyse every target. ``source``: a file holding exactly
    ``model`` (saves writing a copy for onnxruntime to optimize)."""
    with _gc_paused():
        prepared = prepare(model, optimize=optimize, source=source)
        return tuple(_report(prepared, t) for t in targets)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """The analysis makes hundreds of thousands of small objects and no reference cycles: the cyclic
    collector would scan them again and again (a third of a 10,000-node analysis). Reference counting
    still frees everything; the collector resumes afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
