"""Node kinds: nodes that look alike to every rule share a "supported" verdict; nothing else is shared."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from mobilegen.coverage import EPTarget
from mobilegen.coverage.analyze import evaluate_node, evaluate_nodes, prepare


def _two_reshapes(first: list[int], second: list[int], *, big_weights: bool = False, seq: int | str = "s") -> object:
    """x [1, s, 4] -> Reshape(first) and, separately, Reshape(second), with shape constants as given;
    plus two MatMuls whose weights differ only in value (big: keyed by name)."""
    inits = [numpy_helper.from_array(np.array(first, np.int64), "s1"), numpy_helper.from_array(np.array(second, np.int64), "s2")]
    nodes = [
        helper.make_node("Reshape", ["x", "s1"], ["r1"], name="r1"),
        helper.make_node("Reshape", ["x", "s2"], ["r2"], name="r2"),
    ]
    outputs = [helper.make_tensor_value_info("r1", TensorProto.FLOAT, None), helper.make_tensor_value_info("r2", TensorProto.FLOAT, None)]
    if big_weights:
        rng = np.random.default_rng(0)
        for k in ("w1", "w2"):
            inits.append(numpy_helper.from_array(rng.standard_normal((4, 100)).astype(np.float32), k))
            nodes.append(helper.make_node("MatMul", ["y", k], [f"m_{k}"], name=f"m_{k}"))
            outputs.append(helper.make_tensor_value_info(f"m_{k}", TensorProto.FLOAT, None))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, 4]), helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])],
        outputs,
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _both_ways(model: object, target: EPTarget) -> tuple[list[list[str]], list[list[str]]]:
    prepared = prepare(model, optimize=False)  # type: ignore[arg-type]
    graph, provider = prepared.graph, target.provider
    table = provider.rule_table()
    shared = evaluate_nodes(provider, table, graph, target)
    alone = [evaluate_node(provider, table, graph, i, target) for i in range(len(graph.nodes))]
    return [[r.text for r in rs] for rs in shared], [[r.text for r in rs] for rs in alone]


def _two_clips(first: float, second: float) -> object:
    """Two Clips of x with min 0 and the given max constants (same shapes, different values)."""
    inits = [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in (("lo", 0.0), ("hi1", first), ("hi2", second))]
    nodes = [helper.make_node("Clip", ["x", "lo", f"hi{i}"], [f"c{i}"], name=f"c{i}") for i in (1, 2)]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info(f"c{i}", TensorProto.FLOAT, [1, 8]) for i in (1, 2)],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_small_constant_enters_the_kind_by_value() -> None:
    # NNAPI takes Clip only as Relu6 (0..6) or Relu1 (-1..1): the two nodes differ only in the value
    # of their max constant, so the second must not share the first one's verdict.
    shared, alone = _both_ways(_two_clips(6.0, 5.0), EPTarget("nnapi"))
    assert shared == alone
    assert shared[0] == [] and shared[1], "the second Clip is refused on its own merits"


def test_refused_nodes_keep_their_own_names() -> None:
    shared, alone = _both_ways(_two_reshapes([1, 0, 4], [1, 0, 4]), EPTarget("nnapi"))
    assert shared == alone and shared[0] and shared[1]


def test_large_constants_are_told_apart_by_name() -> None:
    prepared = prepare(_two_reshapes([1, -1], [1, -1], big_weights=True, seq=3), optimize=False)  # type: ignore[arg-type]
    keys = dict(zip((n.name for n in prepared.graph.nodes), prepared.graph.node_keys(), strict=True))
    assert keys["r1"] == keys["r2"], "equal small constants: one kind"
    assert keys["m_w1"] != keys["m_w2"], "weights with different values must not be one kind"
    for ep in ("nnapi", "xnnpack", "coreml"):
        shared, alone = _both_ways(_two_reshapes([1, -1], [1, -1], big_weights=True, seq=3), EPTarget(ep))
        assert shared == alone
