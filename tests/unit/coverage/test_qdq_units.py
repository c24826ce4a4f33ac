"""QDQ node units as ORT's selectors form them, and units claimed/refused and partitioned as a whole."""

from __future__ import annotations

import numpy as np

from mobilegen.coverage.analyze import prepare
from mobilegen.coverage.qdq import units_of
from tests.unit.coverage.qdq_helpers import U8, G, qdq_conv, qdq_unary, report


def _unit_ops(model, optimize: bool = False) -> list[tuple[str, list[str]]]:
    graph = prepare(model, optimize=optimize).graph
    units = units_of(graph)
    if units is None:
        return []
    return [(graph.nodes[u.target].op_type, [graph.nodes[m].op_type for m in u.members]) for u in units.units]


def test_float_graph_has_no_units() -> None:
    g = G()
    y = g.node("Relu", [g.input((1, 4))])
    assert units_of(prepare(g.model(y), optimize=False).graph) is None


def test_conv_unit_takes_its_dqs_and_q() -> None:
    assert _unit_ops(qdq_conv()) == [("Conv", ["DequantizeLinear"] * 3 + ["Conv", "QuantizeLinear"])]


def test_relu_made_redundant_by_the_q_joins_the_unit() -> None:
    def model(zp: int):
        g = G()
        x = g.qdq(g.input((1, 3, 8, 8)))
        c = g.node("Conv", [x, g.weight((4, 3, 3, 3))])
        r = g.node("Relu", [c], name="relu")
        return g.model(g.dq(g.q(r, U8, 0.05, zp)))

    assert _unit_ops(model(0)) == [("Conv", ["DequantizeLinear", "DequantizeLinear", "Conv", "Relu", "QuantizeLinear"])]
    assert _unit_ops(model(10)) == []  # the Q does not clip at 0: no unit at all (GetQDQSelection)


def test_shared_dq_forms_no_unit_until_ort_makes_it_unique() -> None:
    g = G()
    x = g.qdq(g.input((1, 4, 8, 8)))
    a = g.node("Sigmoid", [x], name="a")
    b = g.node("Tanh", [x], name="b")
    model = g.model(g.dq(g.q(a)), g.dq(g.q(b)))
    assert _unit_ops(model) == []  # a DQ feeding two nodes belongs to neither (CanCreateNodeGroup)
    # ORT's EnsureUniqueDQForNodeUnit (level 1, before the EPs partition) duplicates the DQ
    assert sorted(op for op, _ in _unit_ops(model, optimize=True)) == ["Sigmoid", "Tanh"]


def test_maxpool_unit_only_at_since_version_12() -> None:
    assert [op for op, _ in _unit_ops(qdq_unary("MaxPool", kernel_shape=[2, 2]))] == ["MaxPool"]
    assert _unit_ops(qdq_unary("MaxPool", kernel_shape=[2, 2], opset=22)) == []  # GetMiscOpVersionsMap: {12}


def test_drop_qdq_needs_equal_scales() -> None:
    def model(out_scale: float):
        g = G()
        x = g.qdq(g.input((1, 4, 2, 2)))
        y = g.node("Reshape", [x, g.const([1, 16], np.int64)])
        return g.model(g.dq(g.q(y, U8, out_scale), U8, out_scale))

    assert [op for op, _ in _unit_ops(model(0.05))] == ["Reshape"]
    assert _unit_ops(model(0.1)) == []


def test_refused_unit_is_one_verdict_and_splits_the_partition() -> None:
    # conv unit -> MaxPool unit (NNAPI refuses) -> conv unit
    g = G()
    x = g.qdq(g.input((1, 3, 8, 8)))
    c1 = g.node("Conv", [x, g.weight((3, 3, 1, 1))], name="conv1")
    p = g.node("MaxPool", [g.qdq(c1)], name="pool", kernel_shape=[2, 2])
    c2 = g.node("Conv", [g.qdq(p), g.weight((3, 3, 1, 1))], name="conv2")
    rep = report(g.model(g.dq(g.q(c2))), "nnapi")
    refused = [n for n in rep.nodes if not n.supported]
    assert [n.op_type for n in refused] == ["DequantizeLinear", "MaxPool", "QuantizeLinear"]
    assert len({n.reasons for n in refused}) == 1  # one verdict for the unit
    assert all(r.rule == "nnapi.qdq.unit_op" for n in refused for r in n.refusals)
    assert len(rep.partitions) == 2
    # every unit sits whole in one partition; the weight DQs (graph roots) are not partitions of their own
    op = {n.name: n.op_type for n in rep.nodes}
    assert [[op[name] for name in part] for part in rep.partitions] == [
        ["QuantizeLinear", "DequantizeLinear", "DequantizeLinear", "Conv", "QuantizeLinear"],
        ["DequantizeLinear", "DequantizeLinear", "Conv", "QuantizeLinear", "DequantizeLinear"],
    ]


def test_stop_op_refuses_the_whole_unit() -> None:
    # ORT checks only a unit's target against the stop ops; its upstream DQs go with it
    rep = report(qdq_conv(), "nnapi", nnapi_stop_ops=("Conv",))
    assert [n.op_type for n in rep.nodes if n.supported] == ["QuantizeLinear"]  # the input's Q, before the unit
    dqs = [n for n in rep.nodes if n.op_type == "DequantizeLinear"]
    assert len(dqs) == 4 and all(n.refusals[0].rule == "nnapi.stop_ops" for n in dqs)
    assert len(rep.partitions) == 1 and len(rep.partitions[0]) == 1  # the lone Q: NNAPI keeps such a partition
