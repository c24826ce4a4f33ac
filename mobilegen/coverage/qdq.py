"""QDQ node units: DequantizeLinear → op → QuantizeLinear groups that an EP claims or refuses as a whole.

Grouping follows ONNX Runtime's QDQ selectors as ``QDQ::GetAllNodeUnits`` uses them (every selector with
its defaults: int8 and 16-bit types allowed, MatMul only with a trailing Q), read from
onnxruntime/core/optimizer/qdq_transformer/selectors_actions/qdq_selectors.cc (the checks),
.../selectors_actions/shared/utils.cc (which op types each selector registers; MaxPool only at
since_version 12) and onnxruntime/core/framework/node_unit.cc (``NodeGroup::CanCreateNodeGroup``: each
DQ feeds only the target, a target output goes either to Q nodes only or to none). A provider whose
table has a :class:`QdqTable` (``EPTable.qdq``) checks a unit by its target op seen through the unit
(inputs are the DQs' inputs, outputs the Qs' outputs); ``QLinear*`` ops are one-node units with the same
view. A provider without one checks every node on its own.

Selectors not modelled here (their nodes are analysed one by one, unless a table adds them as
``QdqTable.selectors``, as some providers' do): Einsum, Reciprocal, Instance/Layer/RMS/BatchNormalization, the
comparisons, Where, Pad, TopK, CumSum, ScatterElements.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from mobilegen.coverage.graph import GraphInfo, NodeInfo
from mobilegen.coverage.qdq_params import clip_made_redundant, qdq_pair_supported
from mobilegen.coverage.rules import EPTable, NodeContext, Reason, Rule, dtype_name
from mobilegen.coverage.target import EPTarget
from mobilegen.providers.base import OP, OTHER

SEL = "onnxruntime/core/optimizer/qdq_transformer/selectors_actions/"
SELECTORS = SEL + "qdq_selectors.cc"
REGISTRY = SEL + "shared/utils.cc"
NODE_UNIT = "onnxruntime/core/framework/node_unit.cc"

Q, DQ = "QuantizeLinear", "DequantizeLinear"
I8, U16, I16 = 3, 4, 5  # onnx.TensorProto codes (INT8, UINT16, INT16)

# op type -> selector kind (shared/utils.cc, SelectorManager::CreateSelectors)
_KINDS: dict[str, str] = {
    **dict.fromkeys(("Gather", "GatherElements", "Reshape", "Expand", "Flatten", "Transpose", "MaxPool", "Resize",
                     "Squeeze", "Unsqueeze", "Tile"), "drop_qdq"),
    **dict.fromkeys(("ArgMax", "ArgMin"), "drop_dq"),
    **dict.fromkeys(("AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LeakyRelu", "ReduceMean", "ReduceMin",
                     "ReduceMax", "ReduceProd", "ReduceSum", "Relu", "Gelu", "Elu", "HardSigmoid", "HardSwish",
                     "Sigmoid", "Slice", "LogSoftmax", "Softmax", "Sqrt", "Atan", "Asin", "Sin", "Cos", "Sign",
                     "Tanh", "Exp", "Log", "LRN", "Ceil", "Floor", "Round", "Abs", "Neg", "DepthToSpace",
                     "SpaceToDepth", "LpNormalization"), "unary"),
    "Clip": "clip",
    **dict.fromkeys(("Add", "Div", "Mul", "Pow", "Sub", "PRelu", "GridSample"), "binary"),
    **dict.fromkeys(("Concat", "Max", "Min"), "variadic"),
    "Split": "split",
    "Conv": "conv",
    "ConvTranspose": "conv",
    "MatMul": "matmul",
    "Gemm": "gemm",
}
_ONLY_VERSIONS = {"MaxPool": (12,)}  # GetMiscOpVersionsMap
# SelectorManager::GetQDQSelections (shared/utils.cc): ONNX, com.ms.internal.nhwc (after the layout
# transformation), com.microsoft; Node::Init reads "ai.onnx" as "" (include/onnxruntime/core/graph/constants.h).
_DOMAINS = ("", "ai.onnx", "com.microsoft", "com.ms.internal.nhwc")

# QLinear ops: (domain, op) -> per-input (data, scale, zero point) positions, then the output's (scale, zp).
QLINEAR: dict[tuple[str, str], tuple[tuple[tuple[int, int, int], ...], tuple[int, int], tuple[int, ...]]] = {
    ("", "QLinearConv"): (((0, 1, 2), (3, 4, 5)), (6, 7), (8,)),  # plain inputs after: bias
    ("", "QLinearMatMul"): (((0, 1, 2), (3, 4, 5)), (6, 7), ()),
    ("com.microsoft", "QLinearAdd"): (((0, 1, 2), (3, 4, 5)), (6, 7), ()),
    ("com.microsoft", "QLinearMul"): (((0, 1, 2), (3, 4, 5)), (6, 7), ()),
    ("com.microsoft", "QLinearAveragePool"): (((0, 1, 2),), (3, 4), ()),
    ("com.microsoft", "QLinearSigmoid"): (((0, 1, 2),), (3, 4), ()),
    ("com.microsoft", "QLinearSoftmax"): (((0, 1, 2),), (3, 4), ()),
}
_QUANT_OPS = frozenset({Q, DQ, *(op for _, op in QLINEAR)})


@dataclass(frozen=True)
class QParam:
    """A quantized tensor of a unit and its quantization parameters ("" zero point: none given)."""

    tensor: str
    scale: str
    zero_point: str


@dataclass(frozen=True)
class Unit:
    target: int
    dqs: tuple[int, ...]  # in the target's input order
    qs: tuple[int, ...]
    clip: int | None  # a Relu/Clip the trailing Q makes redundant
    node: NodeInfo  # the target as the EP sees it: the DQs' inputs, the Qs' outputs
    inputs: tuple[QParam | None, ...]  # per input of ``node``: its quantization, None if not quantized
    outputs: tuple[QParam | None, ...]
    qlinear: bool = False  # a QLinear* node (a unit of one node)

    @property
    def members(self) -> tuple[int, ...]:
        """Its nodes in the order ORT puts them into a partition: DQs, target, clip, Qs."""
        return (*self.dqs, self.target, *(() if self.clip is None else (self.clip,)), *self.qs)

    def label(self, graph: GraphInfo) -> str:
        n = graph.nodes[self.target]
        if self.qlinear:
            return f"{n.op_type} '{n.name}'"
        return f"QDQ node unit of {n.op_type} '{n.name}' ({len(self.dqs)} DQ → {n.op_type} → {len(self.qs)} Q)"


@dataclass
class Units:
    units: list[Unit]
    by_node: dict[int, Unit] = field(default_factory=dict)  # every member -> its unit


# --- grouping --------------------------------------------------------------------------------------


# A selector beyond the ones above: (graph, target, redundant clip, DQs, Qs) -> whether they form a unit.
SelectorFn = Callable[[GraphInfo, NodeInfo, NodeInfo | None, list[int], list[int]], bool]


def units_of(graph: GraphInfo, extra: Mapping[str, SelectorFn] | None = None) -> Units | None:
    """The graph's node units (made once per graph and set of ``extra`` selectors, op type -> check);
    None when it has no Q/DQ/QLinear node."""
    cache = graph.qdq_units if isinstance(graph.qdq_units, dict) else {}
    key = tuple(sorted(extra or ()))
    if key in cache:
        return cache[key] or None
    found = _find(graph, extra or {}) if any(n.op_type in _QUANT_OPS for n in graph.nodes) else None
    cache[key] = found or False
    graph.qdq_units = cache
    return found


def _find(graph: GraphInfo, extra: Mapping[str, SelectorFn]) -> Units | None:
    units: list[Unit] = []
    by_node: dict[int, Unit] = {}
    for node in graph.nodes:
        unit = _select(graph, node, extra)
        if unit is None or any(m in by_node for m in unit.members):
            continue  # GetAllNodeUnits keeps the first unit a node joins
        units.append(unit)
        for m in unit.members:
            by_node[m] = unit
    return Units(units, by_node) if units else None


def _elem(graph: GraphInfo, name: str) -> int | None:
    info = graph.info(name)
    return None if info is None else info.elem_type


def _edges_out(graph: GraphInfo, node: NodeInfo) -> list[int]:
    """The consumers of every output, once per consuming input slot (ORT's output edges)."""
    return [c for o in node.outputs if o for c in graph.consumers.get(o, ())]


def _produces_output(graph: GraphInfo, node: NodeInfo) -> bool:
    return any(o and o in graph.graph_outputs for o in node.outputs)


def _const_scalar(graph: GraphInfo, name: str) -> float | None:
    v = graph.const_value(name) if name else None
    return None if v is None or np.asarray(v).size != 1 else float(np.asarray(v).reshape(-1)[0])


def _select(graph: GraphInfo, node: NodeInfo, extra: Mapping[str, SelectorFn]) -> Unit | None:
    if node.domain not in _DOMAINS:
        return None
    layout = QLINEAR.get(("" if node.domain == "ai.onnx" else node.domain, node.op_type))
    if layout is not None:
        return _qlinear_unit(node, layout)
    kind = _KINDS.get(node.op_type)
    more = extra.get(node.op_type) if kind is None else None
    if (kind is None and more is None) or node.op_type in (Q, DQ):
        return None
    versions = _ONLY_VERSIONS.get(node.op_type)
    if versions is not None and node.since_version not in versions:
        return None
    dqs = [p for t in node.inputs if t and (p := graph.producer.get(t)) is not None and graph.nodes[p].op_type == DQ]
    out_edges = _edges_out(graph, node)
    clip = None
    if len(out_edges) == 1:
        nxt = graph.nodes[out_edges[0]]
        if nxt.op_type in ("Relu", "Clip") and len(_edges_out(graph, nxt)) == 1 and not _produces_output(graph, nxt):
            clip = nxt
    tail = clip or node
    qs = [c for c in _edges_out(graph, tail) if graph.nodes[c].op_type == Q]
    if clip is not None and (len(qs) != 1 or not clip_made_redundant(graph, clip, graph.nodes[qs[0]])):
        return None
    if not (more(graph, node, clip, dqs, qs) if more is not None else _check(graph, node, kind or "", clip, dqs, qs)):
        return None
    return _qdq_unit(graph, node, dqs, qs, clip)


def _can_group(graph: GraphInfo, node: NodeInfo, clip: NodeInfo | None, dqs: Sequence[int], qs: Sequence[int]) -> bool:
    """NodeGroup::CanCreateNodeGroup (node_unit.cc)."""
    for d in dqs:
        dq = graph.nodes[d]
        if _produces_output(graph, dq) or _edges_out(graph, dq) != [node.index]:
            return False
    if clip is not None:
        return True  # the clip was checked when it was found
    if qs:
        for o in node.outputs:
            kinds = {graph.nodes[c].op_type == Q for c in graph.consumers.get(o, ())} if o else set()
            if len(kinds) > 1:
                return False
    return True


def _check_qdq(graph: GraphInfo, node: NodeInfo, clip: NodeInfo | None, dqs: Sequence[int], qs: Sequence[int],
               num_dq: int = -1, empty_q_ok: bool = False) -> bool:
    """NodeGroupSelector::CheckQDQNodes."""
    if num_dq == -1:
        num_dq = sum(1 for t in node.inputs if t)
    if num_dq != len(dqs) or not _can_group(graph, node, clip, dqs, qs):
        return False
    if not qs:
        return empty_q_ok
    n_out = sum(1 for o in node.outputs if o)
    return n_out == len(qs) and len(qs) == len(_edges_out(graph, clip or node)) and not _produces_output(graph, node)


def _check(graph: GraphInfo, node: NodeInfo, kind: str, clip: NodeInfo | None, dqs: list[int], qs: list[int]) -> bool:
    def dt_in(i: int) -> int | None:
        return _elem(graph, graph.nodes[dqs[i]].inputs[0])

    def dt_out(i: int = 0) -> int | None:
        return _elem(graph, graph.nodes[qs[i]].outputs[0])

    if kind in ("drop_qdq", "drop_dq", "split") and clip is not None:
        return False
    if kind == "drop_qdq":
        if not _check_qdq(graph, node, None, dqs, qs, 1) or dt_in(0) != dt_out():
            return False
        dq, q = graph.nodes[dqs[0]], graph.nodes[qs[0]]
        return qdq_pair_supported(graph, dq, q)
    if kind == "drop_dq":
        return len(dqs) == 1 and _can_group(graph, node, None, dqs, qs) and _params_const(graph, graph.nodes[dqs[0]])
    if kind in ("unary", "clip", "split"):
        n = len(dqs) if kind == "clip" and 1 <= len(dqs) <= 3 else 1
        if not _check_qdq(graph, node, clip, dqs, qs, n):
            return False
        return all(dt_in(0) == dt_out(i) for i in range(len(qs))) if kind == "split" else dt_in(0) == dt_out()
    if kind in ("binary", "variadic"):
        if not _check_qdq(graph, node, clip, dqs, qs):
            return False
        return len({dt_in(i) for i in range(len(dqs))} | {dt_out(i) for i in range(len(qs))}) == 1
    if kind == "conv":
        if not _check_qdq(graph, node, clip, dqs, qs) or len(dqs) < 2 or dt_in(0) != dt_out():
            return False
        if dt_in(0) == I8 and dt_in(1) != I8:
            return False
        return len(dqs) < 3 or dt_in(2) == 6  # bias int32
    if kind == "matmul":  # MatMulIntegerToFloat (no trailing Q) is off by default
        if len(dqs) != 2 or (dt_in(0) == I8 and dt_in(1) != I8) or not qs:
            return False
        return _check_qdq(graph, node, clip, dqs, qs) and dt_in(0) == dt_out()
    if kind == "gemm":
        if not _check_qdq(graph, node, clip, dqs, qs, -1, True) or len(dqs) < 2:
            return False
        if (dt_in(0) == I8 and dt_in(1) != I8) or (qs and dt_out() != dt_in(0)):
            return False
        beta = node.attrs.get("beta")
        return len(dqs) < 3 or ((beta is None or float(beta) == 1.0) and dt_in(2) == 6)
    return False


def _params_const(graph: GraphInfo, qnode: NodeInfo) -> bool:
    """IsDQSupported: scale (and zero point) constant scalars."""
    scale = qnode.inputs[1] if len(qnode.inputs) > 1 else ""
    zp = qnode.inputs[2] if len(qnode.inputs) > 2 else ""
    return _const_scalar(graph, scale) is not None and (not zp or _const_scalar(graph, zp) is not None)


_same_params = qdq_pair_supported  # IsQDQPairSupported; the TopK selector (qdq_selectors) imports it under this name


def _qparam(node: NodeInfo, data: str, scale: int = 1, zp: int = 2) -> QParam:
    get = node.inputs
    return QParam(data, get[scale] if len(get) > scale else "", get[zp] if len(get) > zp else "")


def _qdq_unit(graph: GraphInfo, node: NodeInfo, dqs: list[int], qs: list[int], clip: NodeInfo | None) -> Unit:
    by_out = {graph.nodes[d].outputs[0]: graph.nodes[d] for d in dqs}
    inputs = tuple(by_out[t].inputs[0] if t in by_out else t for t in node.inputs)
    in_q = tuple(_qparam(by_out[t], by_out[t].inputs[0]) if t in by_out else None for t in node.inputs)
    q_of = {graph.nodes[q].inputs[0]: graph.nodes[q] for q in qs}
    produced = (clip.outputs[0],) if clip is not None else node.outputs
    outputs = tuple(q_of[o].outputs[0] if o in q_of else o for o in produced)
    out_q = tuple(_qparam(q_of[o], q_of[o].outputs[0]) if o in q_of else None for o in produced)
    view = replace(node, inputs=inputs, outputs=outputs)
    return Unit(node.index, tuple(dqs), tuple(qs), None if clip is None else clip.index, view, in_q, out_q)


def _qlinear_unit(node: NodeInfo, layout: tuple[tuple[tuple[int, int, int], ...], tuple[int, int], tuple[int, ...]]) -> Unit:
    quantized, (ys, yzp), plain = layout
    ins = node.inputs

    def at(i: int) -> str:
        return ins[i] if i < len(ins) else ""

    qin = tuple(QParam(at(d), at(s), at(z)) for d, s, z in quantized)
    view_inputs = (*(q.tensor for q in qin), *(at(i) for i in plain if at(i)))
    view = replace(node, inputs=view_inputs)
    out = QParam(node.outputs[0] if node.outputs else "", at(ys), at(yzp))
    return Unit(node.index, (), (), None, view, (*qin, *(None for i in plain if at(i))), (out,), qlinear=True)


# --- what an EP says about a unit ------------------------------------------------------------------


@dataclass(frozen=True)
class QdqOp:
    """How an EP takes a QDQ unit (or QLinear op) whose target is ``op_type``: the float op's builder
    rules apply to the unit's view, input 0 may have ``input0_dtypes``, and the ``rules`` (ids in
    ``QdqTable.rules``) check the quantization."""

    op_type: str  # the op whose float rules apply ("Conv" for QLinearConv)
    source: str
    input0_dtypes: tuple[int, ...]
    rules: tuple[str, ...] = ()


RefuseFn = Callable[[GraphInfo, Unit], str]


@dataclass(frozen=True)
class QdqTable:
    """An EP's node-unit rules: the ops it takes as QDQ units / QLinear ops, and why it refuses the rest."""

    ep: str
    units: dict[str, QdqOp]  # target op type of a QDQ unit
    qlinear: dict[str, QdqOp]  # QLinear op type
    rules: dict[str, Rule]
    refuse: RefuseFn  # the text for a unit whose op the EP takes in no quantized form
    refuse_source: str
    selectors: Mapping[str, SelectorFn] = field(default_factory=dict)  # selectors beyond the shared ones


def table_units(table: EPTable, graph: GraphInfo) -> Units | None:
    """The node units the table's EP checks (None: it takes nodes one by one, or the graph has none)."""
    qdq: QdqTable | None = table.qdq
    return None if qdq is None else units_of(graph, qdq.selectors)


def evaluate_unit(table: EPTable, graph: GraphInfo, unit: Unit, target: EPTarget) -> list[Reason]:
    """Why the EP refuses the unit as a whole (empty: taken). Texts name the unit."""
    qdq: QdqTable = table.qdq
    view = unit.node
    op = (qdq.qlinear if unit.qlinear else qdq.units).get(view.op_type)
    label = unit.label(graph)
    if op is None:  # OP only when the EP has no builder for the op at all: else a limit of its builder
        category = OP if table.lookup(view.domain, view.op_type) is None else OTHER
        return [Reason(f"{label}: {qdq.refuse(graph, unit)}", category, f"{qdq.ep}.qdq.unit_op")]
    spec = table.lookup(view.domain, op.op_type)
    if spec is None:
        return [Reason(f"{label}: mobilegen does not model the float {op.op_type} limits it shares (counted as refused)",
                       OP, f"{qdq.ep}.registered")]
    spec = replace(spec, input0_dtypes=op.input0_dtypes)
    ctx = NodeContext(view, graph, target, spec, unit=unit)
    reasons: list[Reason] = []
    for rule in (*table.general, *(table.rules[r] for r in spec.rules if r in table.rules), *(qdq.rules[r] for r in op.rules)):
        reasons.extend(rule.evaluate(ctx))
    return [replace(r, text=f"{label}: {r.text}") for r in reasons]


def evaluate_units(table: EPTable, graph: GraphInfo, units: Units, target: EPTarget, out: list[list[Reason]]) -> None:
    """Fill ``out`` (per node reasons) for every member of every unit: the unit's verdict."""
    for unit in units.units:
        reasons = evaluate_unit(table, graph, unit, target)
        for m in unit.members:
            out[m] = list(reasons)


def follow_targets(units: Units, taken: list[bool], reasons: list[list[Reason]]) -> None:
    """A unit is taken or refused as a whole: what the hooks decided for its target (ORT checks only the
    target, e.g. for a provider's stop ops) holds for every member."""
    for unit in units.units:
        t = unit.target
        for m in unit.members:
            if m == t:
                continue
            taken[m] = taken[t]
            if not taken[t] and not reasons[m]:
                reasons[m] = list(reasons[t])


def unit_edges(graph: GraphInfo, units: Units) -> tuple[list[int], list[list[int]]]:
    """In-degrees and consumers over units (each stands at its target; other members never get ready)."""
    n = len(graph.nodes)
    rep = list(range(n))
    for m, u in units.by_node.items():
        rep[m] = u.target
    indeg = [0] * n
    for m, u in units.by_node.items():
        if m != u.target:
            indeg[m] = 1  # never reaches 0: only the target is walked
    out: list[list[int]] = [[] for _ in range(n)]
    _, consumers = graph.edges()
    for i in range(n):
        for c in consumers[i]:
            a, b = rep[i], rep[c]
            if a != b:
                out[a].append(b)
                indeg[b] += 1
    return indeg, out


def expand(units: Units, group: list[int]) -> list[int]:
    """A group of unit targets as the nodes ORT puts into the partition."""
    out: list[int] = []
    for i in group:
        u = units.by_node.get(i)
        out.extend(u.members if u is not None and u.target == i else (i,))
    return out


# --- helpers for the EPs' quantization rules -------------------------------------------------------


def quant(ctx: NodeContext, i: int, output: bool = False) -> QParam | None:
    unit: Unit | None = ctx.unit
    if unit is None:
        return None
    seq = unit.outputs if output else unit.inputs
    return seq[i] if i < len(seq) else None


def qtype(ctx: NodeContext, qp: QParam) -> int | None:
    return _elem(ctx.graph, qp.tensor)


def param_size(ctx: NodeContext, name: str) -> int | None:
    """Elements of a scale/zero point (1 for a scalar); None when it is not a constant."""
    if not name or not ctx.graph.is_const(name):
        return None
    info = ctx.graph.info(name)
    if info is None or info.shape is None:
        return None
    n = 1
    for d in info.shape:
        if not isinstance(d, int):
            return None
        n *= d
    return n


def param_values(ctx: NodeContext, name: str) -> np.ndarray | None:
    v = ctx.graph.const_value(name) if name else None
    return None if v is None else np.asarray(v).reshape(-1)


def type_text(code: int | None) -> str:
    return dtype_name(code)
