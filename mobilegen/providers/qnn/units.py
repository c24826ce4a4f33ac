"""How the QNN EP groups nodes before it asks its builders: ORT's QDQ node units, and its own fusions.

``QNNExecutionProvider::GetCapability`` (onnxruntime/core/providers/qnn/qnn_execution_provider.cc) takes
its node units from ``GetQDQNodeUnits`` (ort_api.h: ``QDQ::GetAllNodeUnits``, the same selectors as every
other EP, grouped by :mod:`mobilegen.coverage.qdq`), wraps each in a ``QnnNodeUnitWrapper`` that asks the
target op's builder about the whole unit, or fuses units first (builder/qnn_node_group/qnn_node_group.cc;
the Gelu fusion around a float Erf is modelled, not its DQ → Erf → Q form), and drops a partition of one
lone QuantizeLinear/DequantizeLinear.

:data:`~mobilegen.coverage.qdq_selectors.SELECTORS` adds ORT's selectors the shared table leaves out
(QNN's builders take these ops quantized, so without them a QDQ LayerNormalization would be judged as a
float node). :func:`qdq_table` is
QNN's node-unit description (``TABLE.qdq``): a unit whose target op has a QNN builder is taken when that
builder's checks pass on the unit's view; QNN has no QLinear* builder.
"""

from __future__ import annotations

from collections.abc import Iterable

from onnx import TensorProto

from mobilegen.coverage.graph import GraphInfo

# the shared selector checks: CheckQDQNodes, CanCreateNodeGroup and their helpers
from mobilegen.coverage.qdq import QdqOp, QdqTable, Unit
from mobilegen.coverage.qdq_selectors import SELECTORS
from mobilegen.coverage.rules import OpSpec
from mobilegen.providers.qnn.facts import EP_SOURCE

Q = "QuantizeLinear"
DQ = "DequantizeLinear"
QDQ_OPS = (Q, DQ)
_QDQ_DOMAINS = ("", "ai.onnx", "com.microsoft")  # 16-bit Q/DQ use com.microsoft below opset 21


def is_qdq(graph: GraphInfo, index: int) -> bool:
    node = graph.nodes[index]
    return node.op_type in QDQ_OPS and node.domain in _QDQ_DOMAINS


# --- QNN's node-unit description -------------------------------------------------------------------------

# A unit's quantized input 0 (qnn_utils.cc: 8/16-bit fixed point, 4-bit). QNN's rules do not check
# input0_dtypes: its general dtype rule (every tensor has a QNN data type) applies to the unit's view.
QUANT_DTYPES = (TensorProto.UINT8, TensorProto.INT8, TensorProto.UINT16, TensorProto.INT16, TensorProto.INT4, TensorProto.UINT4)


def _refuse(graph: GraphInfo, unit: Unit) -> str:
    return f"QNN has no {unit.node.op_type} builder (op_builder_factory.cc), so it takes no such node unit"


def qdq_table(builders: Iterable[OpSpec]) -> QdqTable:
    """QNN's QdqTable: a unit whose target op has a QNN builder (``builders``) is checked by that builder's
    rules on the unit's view (QnnNodeUnitWrapper::IsSupported asks the target op's builder)."""
    ops = {s.op_type: QdqOp(s.op_type, s.source, QUANT_DTYPES) for s in builders}
    return QdqTable("qnn", ops, {}, {}, _refuse, EP_SOURCE, SELECTORS)


# --- the QNN EP's own fusions (qnn_node_group/) ----------------------------------------------------------


def _only_consumer(graph: GraphInfo, tensor: str) -> int | None:
    users = graph.consumers.get(tensor, [])
    return users[0] if len(users) == 1 and tensor not in graph.graph_outputs else None


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
