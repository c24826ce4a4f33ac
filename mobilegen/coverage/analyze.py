"""The coverage analysis: optimize like ORT does at load, evaluate the EP tables, partition, judge.

``analyze(model, target)`` / ``analyze_all(model, targets)`` are the public entry points. The model is
first optimized in-process by onnxruntime at ORT_ENABLE_BASIC with the CPU EP (what the device sees
before the EP's GetCapability: constant folding, function inlining such as HardSwish -> HardSigmoid +
Mul), then shape-inferred. A Fixed/"all"-level graph is never analysed: its fused contrib ops would be
reported as refused although the device never sees them.
"""

from __future__ import annotations

import logging
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import onnx

from mobilegen.coverage import coreml, nnapi, xnnpack
from mobilegen.coverage.graph import CONTROL_FLOW_OPS, GraphInfo, build_graph_info
from mobilegen.coverage.model import CoverageReport, NodeVerdict
from mobilegen.coverage.partition import group_nodes, only_constant_inputs
from mobilegen.coverage.rules import DYNAMIC, OP, OTHER, EPTable, NodeContext, Reason
from mobilegen.coverage.target import EPTarget
from mobilegen.errors import first_line

log = logging.getLogger(__name__)

TABLES: dict[str, EPTable] = {"nnapi": nnapi.TABLE, "coreml": coreml.TABLE, "xnnpack": xnnpack.TABLE}
EP_NAMES = {"nnapi": "NNAPI", "coreml": "CoreML", "xnnpack": "XNNPACK"}
API = "api"
STOP = "stop"
GROUP = "partition"
# Contrib ops that ORT's NNAPI/CoreML builders look up by op type only (the domain is not checked).
_DOMAIN_BLIND = ("com.microsoft",)
_TWO_GB = 2_000_000_000


@dataclass
class Prepared:
    """A model as the EPs see it, shared by every target of one ``analyze_all`` call."""

    graph: GraphInfo
    optimized: bool
    notes: tuple[str, ...]


# --- preparation -----------------------------------------------------------------------------------


def _optimize(model: onnx.ModelProto) -> tuple[onnx.ModelProto | None, str | None]:
    import onnxruntime as ort  # lazy: heavy import

    with tempfile.TemporaryDirectory(prefix="mobilegen-coverage-") as tmp:
        src = Path(tmp) / "model.onnx"
        dst = Path(tmp) / "model.basic.onnx"
        large = model.ByteSize() > _TWO_GB
        onnx.save_model(model, str(src), save_as_external_data=large, location="model.onnx.data")
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        so.optimized_model_filepath = str(dst)
        so.log_severity_level = 3
        if large:
            so.add_session_config_entry(
                "session.optimized_model_external_initializers_file_name", "model.basic.onnx.data"
            )
        try:
            ort.InferenceSession(str(src), so, providers=["CPUExecutionProvider"])
        except Exception as err:  # noqa: BLE001 — ORT refuses the model (custom op, bad graph): analyse as given
            first = first_line(err)
            return None, f"onnxruntime could not load the model on CPU ({first}); analysed the graph as given"
        return onnx.load(str(dst)), None


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
        if model.ByteSize() > _TWO_GB:
            with tempfile.TemporaryDirectory(prefix="mobilegen-shapes-") as tmp:
                p = Path(tmp) / "m.onnx"
                onnx.save_model(model, str(p), save_as_external_data=True)
                onnx.shape_inference.infer_shapes_path(str(p))
                return onnx.load(str(p)), None
        return onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True), None
    except Exception as err:  # noqa: BLE001 — keep going with whatever shapes the model carries
        return model, f"shape inference failed ({type(err).__name__}: {err}); shapes may be missing"


def prepare(model: onnx.ModelProto, *, optimize: bool = True) -> Prepared:
    notes: list[str] = []
    optimized = False
    if optimize:
        opt, note = _optimize(model)
        if opt is not None:
            model, optimized = opt, True
        if note:
            notes.append(note)
    model, note = _infer_shapes(model)
    if note:
        notes.append(note)
    return Prepared(build_graph_info(model), optimized, tuple(notes))


# --- per-node rules ------------------------------------------------------------------------------


def _lookup(table: EPTable, ep: str, domain: str, op_type: str):  # type: ignore[no-untyped-def]
    spec = table.spec(domain, op_type)
    if spec is None and ep in ("nnapi", "coreml") and domain in _DOMAIN_BLIND:
        spec = table.spec("", op_type)  # the builder registry is keyed by op type only
    return spec


def evaluate_node(table: EPTable, graph: GraphInfo, index: int, target: EPTarget) -> list[Reason]:
    """Every reason the EP's builder/kernel would refuse this node for (empty: supported on its own)."""
    node = graph.nodes[index]
    name = EP_NAMES[target.ep]
    if node.op_type in CONTROL_FLOW_OPS and node.is_onnx_domain:
        return [
            Reason(
                f"{node.op_type} has no {name} builder; its {node.subgraph_nodes} body node(s) stay on CPU "
                f"({name} does not take subgraphs)",
                OP,
                f"{target.ep}.registered",
            )
        ]
    known_domain = node.is_onnx_domain or node.domain in ("com.microsoft", "ai.onnx.ml")
    if not known_domain:
        return [
            Reason(
                f"op {node.qualified} is from custom domain '{node.domain}': no {name} builder",
                OP,
                f"{target.ep}.registered",
            )
        ]
    spec = _lookup(table, target.ep, node.domain, node.op_type)
    if spec is None:
        if node.op_type in table.extra.get("unmodelled", ()):
            text = f"{name} has a {node.op_type} builder, but mobilegen does not model its limits yet (counted as refused)"
        else:
            text = f"op {node.qualified} has no {name} builder"
        return [Reason(text, OP, f"{target.ep}.registered")]
    if target.ep == "coreml" and target.coreml_format not in spec.formats:
        other = ", ".join(spec.formats)
        return [Reason(f"{node.op_type} has no CoreML {target.coreml_format} builder (only {other})", OP, "coreml.format")]
    ctx = NodeContext(node, graph, target, spec)
    reasons: list[Reason] = []
    for rule in table.general:
        found = rule.evaluate(ctx)
        if rule.id == "nnapi.min_api":
            found = [Reason(r.text, API, r.rule) for r in found]
        reasons.extend(found)
    for rid in spec.rules:
        reasons.extend(table.rules[rid].evaluate(ctx))
    return reasons


def evaluate_rule(rule_id: str, graph: GraphInfo, index: int, target: EPTarget) -> list[Reason] | None:
    """One rule on one node (for tests): its reasons, or None if the rule does not apply to the node."""
    table = TABLES[target.ep]
    node = graph.nodes[index]
    spec = _lookup(table, target.ep, node.domain, node.op_type)
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


def _partition(graph: GraphInfo, target: EPTarget, rule_ok: Sequence[bool], rule_reasons: Sequence[list[Reason]]) -> _Outcome:
    n = len(graph.nodes)
    reasons = [list(r) for r in rule_reasons]
    ok = list(rule_ok)

    if target.ep == "xnnpack":
        # Clip/Relu are taken only when fused into a producer XNNPACK takes (node_support_checker.cc).
        for node in graph.nodes:
            if node.op_type in ("Clip", "Relu") and ok[node.index]:
                p = graph.producer.get(node.inputs[0])
                if p is None or not ok[p]:
                    ok[node.index] = False
                    reasons[node.index].append(
                        Reason(f"{node.op_type} has no preceding XNNPACK node to fuse into", OTHER, "xnnpack.fusion")
                    )

    if target.ep == "nnapi":
        stops = [node.index for node in graph.nodes if node.op_type in target.nnapi_stop_ops]
        if stops:
            from mobilegen.coverage.partition import downstream_of

            for idx, root in downstream_of(graph, stops).items():
                rn = graph.nodes[root]
                text = (
                    f"{rn.op_type} is an NNAPI partitioning stop op"
                    if idx == root
                    else f"downstream of {rn.op_type} '{rn.name}' (NNAPI stop op): kept on CPU"
                )
                reasons[idx].append(Reason(text, STOP, "nnapi.stop_ops"))
                ok[idx] = False

    current_outputs: set[str] = set()

    def is_supported(i: int) -> bool:
        if not ok[i]:
            return False
        node = graph.nodes[i]
        if target.ep == "nnapi" and node.op_type in nnapi.INTERNAL_QUANT_OPS:
            info = graph.info(node.inputs[0]) if node.inputs else None
            if info is not None and info.elem_type == 2 and node.inputs[0] not in current_outputs:
                reasons[i].append(
                    Reason(
                        f"uint8 {node.op_type} input '{node.inputs[0]}' is not produced inside the NNAPI partition",
                        GROUP,
                        "nnapi.uint8_internal",
                    )
                )
                return False
        current_outputs.update(o for o in node.outputs if o)
        return True

    dropped: list[tuple[list[int], str]] = []

    def on_closed(group: list[int]) -> bool:
        current_outputs.clear()
        if target.ep != "nnapi":
            return True
        if len(group) == 1 and graph.nodes[group[0]].op_type in nnapi.GROUP_DROP_OPS:
            op = graph.nodes[group[0]].op_type
            dropped.append((group, f"a partition of a lone {op} is dropped: not worth running on NNAPI"))
            return False
        return True

    groups = group_nodes(graph, is_supported, on_closed)
    if target.ep == "nnapi":
        kept = []
        for g in groups:
            if only_constant_inputs(graph, g):
                dropped.append((g, "partition fed only by constants is dropped by NNAPI"))
            else:
                kept.append(g)
        groups = kept
    in_group = [False] * n
    for g in groups:
        for i in g:
            in_group[i] = True
    for g, text in dropped:
        for i in g:
            reasons[i].append(Reason(text, GROUP, "nnapi.group"))
    supported = [in_group[i] for i in range(n)]
    return _Outcome(supported, reasons, groups)



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


def _summary(out: _Outcome, total: int) -> tuple[int, int, str]:
    s = sum(out.supported)
    p = len(out.groups)
    return p, s, verdict(p, s, total)


def _fmt_change(before: tuple[int, int, str], after: tuple[int, int, str], total: int) -> str:
    (p0, s0, v0), (p1, s1, v1) = before, after

    def pct(s: int) -> str:
        return f"{100.0 * s / total:.0f}%" if total else "0%"

    text = f"{p0} partition{'s' if p0 != 1 else ''} → {p1}, {pct(s0)} → {pct(s1)} of nodes"
    if v0 != v1:
        text += f", verdict {v0} → {v1}"
    return text


def _suggestions(graph: GraphInfo, target: EPTarget, rule_reasons: list[list[Reason]], base: _Outcome) -> list[str]:
    total = len(graph.nodes)
    if total == 0:
        return []
    now = _summary(base, total)
    out: list[str] = []
    rule_ok = [not r for r in rule_reasons]

    rank = {"no": 0, "maybe": 1, "yes": 2}

    def better(after: tuple[int, int, str]) -> bool:
        if rank[after[2]] > rank[now[2]] or (now[1] == 0 and after[1] > 0):
            return True
        return after[0] <= now[0] and after[1] >= now[1] and after[:2] != now[:2]

    def what_if(make_ok: list[bool]) -> tuple[int, int, str]:
        trimmed = [[] if make_ok[i] else rule_reasons[i] for i in range(total)]
        return _summary(_partition(graph, target, make_ok, trimmed), total)

    dyn = [bool(r) and all(x.category == DYNAMIC for x in r) for r in rule_reasons]
    if any(dyn):
        after = what_if([rule_ok[i] or dyn[i] for i in range(total)])
        if better(after):
            out.append(f"fix the dynamic dims (export with static shapes / make_dynamic_shape_fixed): {_fmt_change(now, after, total)}")
    if target.ep == "nnapi":
        api = [bool(r) and all(x.category in (API, DYNAMIC) for x in r) and any(x.category == API for x in r) for r in rule_reasons]
        if any(api):
            needed = max(
                int(x.text.split("needs Android API ")[1].split(",")[0])
                for r in rule_reasons
                for x in r
                if x.category == API and "needs Android API " in x.text
            )
            after = what_if([rule_ok[i] or api[i] for i in range(total)])
            if better(after):
                out.append(f"target Android API {needed}+ (--android-api {needed}): {_fmt_change(now, after, total)}")
    counts = Counter(
        graph.nodes[i].qualified
        for i in range(total)
        if rule_reasons[i] and not all(x.category == DYNAMIC for x in rule_reasons[i])
    )
    if counts:
        op, count = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        after = what_if([rule_ok[i] or graph.nodes[i].qualified == op for i in range(total)])
        if better(after):
            out.append(f"replace {op} ({count} node{'s' if count != 1 else ''}) with supported ops: {_fmt_change(now, after, total)}")
    return out


# --- public API ------------------------------------------------------------------------------------


def _report(prepared: Prepared, target: EPTarget) -> CoverageReport:
    graph = prepared.graph
    table = TABLES[target.ep]
    rule_reasons = [evaluate_node(table, graph, i, target) for i in range(len(graph.nodes))]
    outcome = _partition(graph, target, [not r for r in rule_reasons], rule_reasons)
    total = len(graph.nodes)
    nodes = tuple(
        NodeVerdict(
            name=node.name,
            op_type=node.op_type,
            domain=node.domain,
            supported=outcome.supported[node.index],
            reasons=() if outcome.supported[node.index] else _dedupe(outcome.reasons[node.index]),
        )
        for node in graph.nodes
    )
    partitions = tuple(tuple(graph.nodes[i].name for i in g) for g in outcome.groups)
    supported = sum(outcome.supported)
    settings = target.settings()
    settings["optimized"] = prepared.optimized
    if prepared.notes:
        settings["notes"] = list(prepared.notes)
    return CoverageReport(
        ep=target.ep,
        format=target.coreml_format,
        total_nodes=total,
        supported_nodes=supported,
        partitions=partitions,
        verdict=verdict(len(partitions), supported, total),
        nodes=nodes,
        suggestions=tuple(_suggestions(graph, target, rule_reasons, outcome)),
        settings=settings,
    )


def _dedupe(reasons: list[Reason]) -> tuple[str, ...]:
    seen: list[str] = []
    for r in reasons:
        if r.text not in seen:
            seen.append(r.text)
    return tuple(seen) or ("not taken by the EP",)


def analyze(model: onnx.ModelProto, target: EPTarget, *, optimize: bool = True) -> CoverageReport:
    """Coverage of ``model`` on one EP target. ``optimize=False`` analyses the graph as given (tests)."""
    return _report(prepare(model, optimize=optimize), target)


def analyze_all(
    model: onnx.ModelProto, targets: Sequence[EPTarget], *, optimize: bool = True
) -> tuple[CoverageReport, ...]:
    """Optimize and shape-infer once, then analyse every target."""
    prepared = prepare(model, optimize=optimize)
    return tuple(_report(prepared, t) for t in targets)
