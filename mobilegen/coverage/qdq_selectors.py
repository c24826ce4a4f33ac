"""ORT's QDQ selectors that :mod:`mobilegen.coverage.qdq`'s own table leaves out, for every EP.

onnxruntime/core/optimizer/qdq_transformer/selectors_actions/qdq_selectors.cc at d626b568e (defaults: int8,
16- and 4-bit allowed); shared/utils.cc registers them for every execution provider. A provider's
:class:`~mobilegen.coverage.qdq.QdqTable` passes :data:`SELECTORS` when its verdicts depend on them
(one whose builders take these ops quantized; or one whose base builder refuses any unit, so that a
QDQ Pad is refused whole, not node by node).
"""

from __future__ import annotations

from onnx import TensorProto

from mobilegen.coverage.graph import GraphInfo, NodeInfo
from mobilegen.coverage.qdq import SelectorFn, _can_group, _check_qdq, _elem, _same_params

I8, I32 = TensorProto.INT8, TensorProto.INT32


def _dt_in(graph: GraphInfo, dqs: list[int], i: int) -> int | None:
    return _elem(graph, graph.nodes[dqs[i]].inputs[0])


def _dt_out(graph: GraphInfo, qs: list[int]) -> int | None:
    return _elem(graph, graph.nodes[qs[0]].outputs[0])


def _same_types(n_dq: int) -> SelectorFn:
    """Where (2 DQs), ScatterElements (2 DQs), CumSum (1 DQ): inputs and output of one type."""

    def check(graph: GraphInfo, node: NodeInfo, clip: NodeInfo | None, dqs: list[int], qs: list[int]) -> bool:
        if not _check_qdq(graph, node, clip, dqs, qs, n_dq):
            return False
        return len({_dt_in(graph, dqs, i) for i in range(n_dq)} | {_dt_out(graph, qs)}) == 1

    return check


def _optional_q(graph: GraphInfo, node: NodeInfo, clip: NodeInfo | None, dqs: list[int], qs: list[int]) -> bool:
    """Einsum, Reciprocal: every input from a DQ, the Q optional; with a Q, input 0's type is the output's."""
    if not _check_qdq(graph, node, clip, dqs, qs, -1, True) or not dqs:
        return False
    return not qs or _dt_in(graph, dqs, 0) == _dt_out(graph, qs)


def _pad(graph: GraphInfo, node: NodeInfo, clip: NodeInfo | None, dqs: list[int], qs: list[int]) -> bool:
    """The data (and optionally constant_value) from DQs, all of one type with the output."""
    if not 1 <= len(dqs) <= 2 or not _check_qdq(graph, node, clip, dqs, qs, len(dqs)):
        return False
    return len({_dt_in(graph, dqs, i) for i in range(len(dqs))} | {_dt_out(graph, qs)}) == 1


def _norm(graph: GraphInfo, node: NodeInfo, clip: NodeInfo | None, dqs: list[int], qs: list[int]) -> bool:
    """Instance/Layer/RMSNormalization: every input from a DQ, input 0's type is the output's, a bias int32."""
    if not _check_qdq(graph, node, clip, dqs, qs) or not dqs:
        return False
    bias_ok = node.op_type == "RMSNormalization" or len(dqs) < 3 or _dt_in(graph, dqs, 2) == I32
    return _dt_in(graph, dqs, 0) == _dt_out(graph, qs) and bias_ok


def _batch_norm(graph: GraphInfo, node: NodeInfo, clip: NodeInfo | None, dqs: list[int], qs: list[int]) -> bool:
    if not 3 <= len(dqs) <= 5 or not _check_qdq(graph, node, clip, dqs, qs, len(dqs)):
        return False
    dt = _dt_in(graph, dqs, 0)
    return dt == _dt_out(graph, qs) and (dt != I8 or _dt_in(graph, dqs, 1) == I8)


def _compare(graph: GraphInfo, node: NodeInfo, clip: NodeInfo | None, dqs: list[int], qs: list[int]) -> bool:
    """Equal, Greater, Less...: both inputs from DQs of one type; the bool output has no Q."""
    return _check_qdq(graph, node, clip, dqs, qs, -1, True) and len(dqs) == 2 and _dt_in(graph, dqs, 0) == _dt_in(graph, dqs, 1)


def _topk(graph: GraphInfo, node: NodeInfo, clip: NodeInfo | None, dqs: list[int], qs: list[int]) -> bool:
    """One DQ and one Q (the indices are not quantized) with the same constant scale and zero point."""
    if clip is not None or len(dqs) != 1 or len(qs) != 1 or not _can_group(graph, node, None, dqs, qs):
        return False
    dq, q = graph.nodes[dqs[0]], graph.nodes[qs[0]]
    return _dt_in(graph, dqs, 0) == _dt_out(graph, qs) and _same_params(graph, dq, q)


SELECTORS: dict[str, SelectorFn] = {
    "Einsum": _optional_q,
    "Reciprocal": _optional_q,
    "InstanceNormalization": _norm,
    "LayerNormalization": _norm,
    "RMSNormalization": _norm,
    "BatchNormalization": _batch_norm,
    **dict.fromkeys(("Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"), _compare),
    "Where": _same_types(2),
    "Pad": _pad,
    "TopK": _topk,
    "CumSum": _same_types(1),
    "ScatterElements": _same_types(2),
}
