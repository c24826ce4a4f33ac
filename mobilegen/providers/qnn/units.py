"""How the QNN EP groups nodes before it asks its builders: QDQ node units and its own fusions.

Read from onnxruntime/core/providers/qnn/qnn_execution_provider.cc (``GetCapability``: node units from
``GetQDQNodeUnits``, then ``qnn_node_group/qnn_node_group.cc`` fusions, a whole group taken or refused;
a partition of one lone QuantizeLinear/DequantizeLinear is dropped) and
onnxruntime/core/optimizer/qdq_transformer/selectors_actions/shared/utils.cc (the unit selectors).

An own, simplified model of those selectors: a node is the target of a QDQ unit when each of its
non-constant inputs comes from a DequantizeLinear that feeds nothing else, and each output feeds exactly
one QuantizeLinear and is not a graph output. Nothing here imports onnx.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mobilegen.coverage.graph import GraphInfo

Q = "QuantizeLinear"
DQ = "DequantizeLinear"
QDQ_OPS = (Q, DQ)
_QDQ_DOMAINS = ("", "ai.onnx", "com.microsoft")  # 16-bit Q/DQ use com.microsoft below opset 21


@dataclass(frozen=True)
class Unit:
    """One QDQ node unit: the target op with the DequantizeLinear nodes feeding it and the
    QuantizeLinear nodes after it (indices into ``GraphInfo.nodes``)."""

    target: int
    dqs: tuple[int, ...]
    qs: tuple[int, ...]

    @property
    def members(self) -> tuple[int, ...]:
        return (*self.dqs, self.target, *self.qs)


def is_qdq(graph: GraphInfo, index: int) -> bool:
    node = graph.nodes[index]
    return node.op_type in QDQ_OPS and node.domain in _QDQ_DOMAINS


def _only_consumer(graph: GraphInfo, tensor: str) -> int | None:
    users = graph.consumers.get(tensor, [])
    return users[0] if len(users) == 1 and tensor not in graph.graph_outputs else None


def unit_of(graph: GraphInfo, index: int) -> Unit | None:
    """The QDQ unit whose target is node ``index``, or None when it is not one."""
    if is_qdq(graph, index):
        return None
    node = graph.nodes[index]
    dqs: list[int] = []
    for t in node.inputs:
        if not t or graph.is_const(t):
            continue
        p = graph.producer.get(t)
        if p is None or not is_qdq(graph, p) or graph.nodes[p].op_type != DQ or _only_consumer(graph, t) != index:
            return None
        if p not in dqs:
            dqs.append(p)
    qs: list[int] = []
    for t in node.outputs:
        if not t:
            continue
        c = _only_consumer(graph, t)
        if c is None or not is_qdq(graph, c) or graph.nodes[c].op_type != Q:
            return None
        qs.append(c)
    if not dqs or not qs:
        return None
    return Unit(index, tuple(dqs), tuple(qs))


def qdq_units(graph: GraphInfo) -> dict[int, Unit]:
    """Every QDQ unit of the graph, keyed by each of its members' indices."""
    out: dict[int, Unit] = {}
    for node in graph.nodes:
        unit = unit_of(graph, node.index)
        if unit is not None:
            for i in unit.members:
                out.setdefault(i, unit)
    return out


# --- the QNN EP's own fusions (qnn_node_group/) ----------------------------------------------------


def _single_consumer_op(graph: GraphInfo, index: int, op: str) -> int | None:
    outs = [o for o in graph.nodes[index].outputs if o]
    if len(outs) != 1:
        return None
    c = _only_consumer(graph, outs[0])
    return c if c is not None and graph.nodes[c].op_type == op else None


def gelu_group(graph: GraphInfo, erf: int) -> tuple[int, ...] | None:
    """The nodes of the decomposed Gelu around Erf ``erf``: Div(x, √2) → Erf → Add(1) → Mul(x) → Mul(0.5)
    (or x → Mul(0.5) feeding the last Mul), as ``gelu_fusion.cc`` matches it; None when Erf is not inside one."""
    node = graph.nodes[erf]
    div = graph.producer.get(node.inputs[0]) if node.inputs else None
    if div is None or graph.nodes[div].op_type != "Div":
        return None
    add = _single_consumer_op(graph, erf, "Add")
    if add is None:
        return None
    mul1 = _single_consumer_op(graph, add, "Mul")
    if mul1 is None:
        return None
    group = [div, erf, add, mul1]
    mul2 = _single_consumer_op(graph, mul1, "Mul")
    if mul2 is not None:  # pattern 2: ... → Mul(x) → Mul(0.5)
        group.append(mul2)
    else:  # pattern 1: x → Mul(0.5) feeding the last Mul
        halves = [p for t in graph.nodes[mul1].inputs if (p := graph.producer.get(t)) is not None and graph.nodes[p].op_type == "Mul"]
        if not halves:
            return None
        group.append(halves[0])
    return tuple(group)


def hardswish_group(graph: GraphInfo, hardsigmoid: int) -> tuple[int, ...] | None:
    """HardSigmoid(x) → Mul(x, ·): fused into QNN's HardSwish (``hardsigmoid_mul_fusion.cc``)."""
    mul = _single_consumer_op(graph, hardsigmoid, "Mul")
    x = graph.nodes[hardsigmoid].inputs[0] if graph.nodes[hardsigmoid].inputs else ""
    if mul is None or not x or x not in graph.nodes[mul].inputs:
        return None
    return (hardsigmoid, mul)
