"""QNN: every rule has one accepted and one refused case, and every op builder too (the builder cases run
the whole analysis on one node: registration, general rules, op rules and the provider's refine hook)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import pytest
from cov_helpers import I32, I64, U8, F, K, T, node_model
from onnx import TensorProto, helper, numpy_helper

from mobilegen import providers
from mobilegen.coverage import EPTarget
from mobilegen.coverage.analyze import analyze, evaluate_rule, prepare

Q: dict[str, Any] = {"ep": "qnn"}
X4 = T((1, 3, 8, 8))
W = K(np.ones((4, 3, 3, 3)))
Model = Callable[[], onnx.ModelProto]
Case = tuple[dict[str, Any], Model]


def m(*args: Any, **kw: Any) -> Model:
    return lambda: node_model(*args, **kw)


def typed(model: Model, dtype: int, shape: tuple[int, ...]) -> Model:
    """``model`` with its output typed (contrib ops: onnx infers no shape for them)."""

    def build() -> onnx.ModelProto:
        out = model()
        out.graph.output[0].CopyFrom(helper.make_tensor_value_info("out0", dtype, shape))
        return out

    return build


CASES: dict[str, tuple[Case, Case]] = {
    # ---- general
    "qnn.shapes_known": ((Q, m("Relu", [X4])), (Q, m("Relu", [T(None)]))),
    "qnn.fixed_dims": ((Q, m("Relu", [X4])), (Q, m("Relu", [T(("batch", 3))]))),
    "qnn.dtype": ((Q, m("Abs", [X4])), (Q, m("Abs", [T((2, 3), TensorProto.DOUBLE)]))),
    # ---- op builders' own checks
    "qnn.two_inputs": ((Q, m("Max", [X4, X4])), (Q, m("Max", [X4, X4, X4]))),
    "qnn.lpnorm": ((Q, m("LpNormalization", [T((2, 4))])), (Q, m("LpNormalization", [T((2, 4))], {"p": 1}))),
    "qnn.gridsample": (
        (Q, m("GridSample", [X4, T((1, 4, 4, 2))], {"mode": "linear"}, opset=20)),
        (Q, m("GridSample", [X4, T((1, 4, 4, 2))], {"mode": "cubic"}, opset=20)),
    ),
    "qnn.scatter": (
        (Q, m("ScatterND", [T((4, 4)), K([[0], [1]], np.int64), T((2, 4))], opset=18)),
        (Q, m("ScatterND", [T((4, 4)), K([[0], [1]], np.int64), T((2, 4))], {"reduction": "max"}, opset=18)),
    ),
    "qnn.conv": ((Q, m("Conv", [X4, W])), (Q, m("Conv", [T((1, 3, 8, 8, 8, 8)), K(np.ones((4, 3, 3, 3, 3, 3)))]))),
    "qnn.gemm": ((Q, m("Gemm", [T((2, 4)), K(np.ones((4, 5)))])), (Q, m("Gemm", [T((2, 4)), K(np.ones((4, 5)))], {"alpha": 0.5}))),
    "qnn.softmax": ((Q, m("Softmax", [T((2, 5))])), (Q, m("Softmax", [K(np.ones((2, 5)))]))),
    "qnn.reduce": (
        (Q, m("ReduceMean", [T((2, 5))], {"axes": [1]}, opset=17)),
        (Q, m("ReduceSum", [T((2, 5)), T((1,), I64)], opset=17)),
    ),
    "qnn.reshape": (
        (Q, m("Reshape", [X4, K([1, -1], np.int64)], {"allowzero": 1})),
        (Q, m("Reshape", [X4, K([0, -1], np.int64)], {"allowzero": 1})),
    ),
    "qnn.gather": ((Q, m("Gather", [T((10, 4)), K([1, -2], np.int64)])), (Q, m("Gather", [T((10, 4)), K([12], np.int64)]))),
    "qnn.layernorm": (
        (Q, m("LayerNormalization", [T((2, 3, 8)), K(np.ones(8))])),
        (Q, m("LayerNormalization", [T((2, 3, 8)), K(np.ones((3, 8)))], {"axis": 1})),
    ),
    "qnn.pool": (
        (Q, m("MaxPool", [X4], {"kernel_shape": [2, 2]})),
        (Q, m("MaxPool", [T((1, 3, 4, 4, 4))], {"kernel_shape": [2, 2, 2]})),
    ),
    "qnn.slice": (
        (Q, m("Slice", [X4, K([0], np.int64), K([1], np.int64)])),
        (Q, m("Slice", [X4, T((1,), I64), K([1], np.int64)])),
    ),
    "qnn.expand": ((Q, m("Expand", [T((1, 4)), K([3, 4], np.int64)])), (Q, m("Expand", [T((1, 4)), T((2,), I64)]))),
    "qnn.pad": ((Q, m("Pad", [X4, K([0] * 8, np.int64)])), (Q, m("Pad", [X4, K([0] * 8, np.int64)], {"mode": "wrap"}, opset=19))),
    "qnn.resize": (
        (Q, m("Resize", [X4, None, K([1, 1, 2, 2])], {"mode": "linear"})),
        (Q, m("Resize", [X4, None, K([1, 1, 2, 2])], {"mode": "cubic"})),
    ),
    "qnn.instance_norm": (
        (Q, m("InstanceNormalization", [X4, K(np.ones(3)), K(np.zeros(3))])),
        (Q, m("InstanceNormalization", [T((1, 3, 4, 4, 4)), K(np.ones(3)), K(np.zeros(3))])),
    ),
    "qnn.batch_norm": (
        (Q, m("BatchNormalization", [X4, K([1] * 3), K([0] * 3), K([0] * 3), K([1] * 3)])),
        (Q, m("BatchNormalization", [X4, T((3,)), K([0] * 3), K([0] * 3), K([1] * 3)])),
    ),
    "qnn.tile": ((Q, m("Tile", [T((2, 3)), K([2, 1], np.int64)])), (Q, m("Tile", [T((2, 3)), T((2,), I64)]))),
    "qnn.clip": ((Q, m("Clip", [X4, K(0.0), K(6.0)])), (Q, m("Clip", [X4, T(()), K(6.0)]))),
    "qnn.argmax": ((Q, m("ArgMax", [T((2, 5))], {"axis": 1})), (Q, m("ArgMax", [T((2, 5))], {"axis": 1, "select_last_index": 1}))),
    "qnn.topk": ((Q, m("TopK", [T((2, 5)), K([2], np.int64)], n_out=2)), (Q, m("TopK", [T((2, 5)), T((1,), I64)], n_out=2))),
}


def test_every_qnn_rule_has_both_cases() -> None:
    ids = sorted(r.id for r in providers.get("qnn").rule_table().all_rules())
    assert sorted(CASES) == ids


def test_every_qnn_rule_and_builder_names_its_source() -> None:
    table = providers.get("qnn").rule_table()
    for rule in table.all_rules():
        assert rule.source.startswith("onnxruntime/core/providers/qnn/"), rule.id
    for spec in table.ops.values():
        assert spec.source.startswith("onnxruntime/core/providers/qnn/builder/"), spec.op_type
        assert all(rid in table.rules for rid in spec.rules), spec.op_type


def _run(case: Case, rule_id: str) -> list[Any] | None:
    target_kwargs, factory = case
    prepared = prepare(factory(), optimize=False)
    index = next(n.index for n in prepared.graph.nodes if n.name == "target")
    return evaluate_rule(rule_id, prepared.graph, index, EPTarget(**target_kwargs))


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_qnn_rule_accepts(rule_id: str) -> None:
    reasons = _run(CASES[rule_id][0], rule_id)
    assert reasons is not None, "rule does not apply to the accepting case"
    assert reasons == [], [r.text for r in reasons]


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_qnn_rule_refuses(rule_id: str) -> None:
    reasons = _run(CASES[rule_id][1], rule_id)
    assert reasons, "rule accepted its refusing case"
    assert all(r.rule == rule_id and r.text for r in reasons)


# ---- one accepted and one refused node per op builder (opbuilder/*.cc) --------------------------------

X3 = T((1, 4, 6))
DYN = T(("n", 4))  # a symbolic dim: every QNN builder refuses it (GetOnnxShape)


def lstm(dynamic: bool) -> Model:
    x = T(("s", 1, 3) if dynamic else (2, 1, 3))
    return m("LSTM", [x, K(np.ones((1, 8, 3))), K(np.ones((1, 8, 2)))], {"hidden_size": 2})


def matmul_nbits(shape: tuple[Any, ...]) -> Model:
    attrs = {"K": 16, "N": 8, "bits": 4, "block_size": 16}
    inputs = [T(shape), K(np.zeros((8, 1, 8)), np.uint8), K(np.ones((8, 1)))]
    return typed(m("MatMulNBits", inputs, attrs, domain="com.microsoft"), F, (1, 8))


BUILDERS: dict[str, tuple[Model, Model]] = {
    "simple_op_builder.cc": (m("Add", [X4, X4]), m("Sigmoid", [T(("b", 3))])),
    "conv_op_builder.cc": (m("Conv", [X4, W]), m("Conv", [T(("b", 3, 8, 8)), W])),
    "gemm_op_builder.cc": (m("Gemm", [T((2, 4)), K(np.ones((4, 5)))]), m("Gemm", [T((2, 4)), K(np.ones((4, 5)))], {"beta": 2.0})),
    "matmul_op_builder.cc": (m("MatMul", [T((2, 3, 4)), T((2, 4, 5))]), m("MatMul", [T(("b", 4)), K(np.ones((4, 5)))])),
    "softmax_op_builder.cc": (m("Softmax", [T((2, 5))]), m("LogSoftmax", [T(("b", 5))])),
    "reduce_op_builder.cc": (m("ReduceMax", [T((2, 5))], {"axes": [1]}), m("ReduceProd", [T((2, 5))], {"axes": [1]})),
    "reshape_op_builder.cc": (m("Flatten", [X4]), m("Unsqueeze", [T(("b", 4)), K([0], np.int64)])),
    "gather_op_builder.cc": (m("GatherElements", [T((3, 4)), T((3, 4), I64)]), m("Gather", [T((10, 4)), K([10], np.int64)])),
    "transpose_op_builder.cc": (m("Transpose", [X4], {"perm": [0, 2, 3, 1]}), m("Transpose", [DYN])),
    "layer_norm_op_builder.cc": (m("LayerNormalization", [X3, K(np.ones(6))]), m("LayerNormalization", [X3, K(np.ones(6))], n_out=2)),
    "pool_op_builder.cc": (m("GlobalAveragePool", [X4]), m("AveragePool", [X4], {"kernel_shape": [2, 2], "dilations": [2, 2]}, opset=19)),
    "slice_op_builder.cc": (m("Slice", [X4, K([0], np.int64), K([1], np.int64)]), m("Slice", [X4, K([0], np.int64), T((1,), I64)])),
    "split_op_builder.cc": (m("Split", [T((4, 6)), K([2, 2], np.int64)], n_out=2), m("Split", [T(("b", 6)), K([2, 2], np.int64)], n_out=2)),
    "concat_op_builder.cc": (m("Concat", [X4, X4], {"axis": 1}), m("Concat", [DYN, DYN], {"axis": 1})),
    "cast_op_builder.cc": (m("Cast", [X4], {"to": I32}), m("Cast", [X4], {"to": TensorProto.DOUBLE})),
    "clip_op_builder.cc": (m("Clip", [X4, K(0.0)]), m("Clip", [X4, K(0.0), T(())])),
    "expand_op_builder.cc": (m("Expand", [T((1, 4)), K([3, 4], np.int64)]), m("Expand", [T((1, 4)), T((2,), I64)])),
    "pad_op_builder.cc": (m("Pad", [X4, K([0, 0, 1, 1, 0, 0, 1, 1], np.int64)], {"mode": "reflect"}), m("Pad", [X4, T((8,), I64)])),
    "resize_op_builder.cc": (
        m("Resize", [X4, None, K([1, 1, 2, 2])], {"mode": "nearest"}),
        m("Resize", [X4, None, K([1, 1, 2, 2])], {"antialias": 1}, opset=18),
    ),
    "upsample_op_builder.cc": (m("Upsample", [X4, K([1, 1, 2, 2])], opset=9), m("Upsample", [T(("b", 3, 8, 8)), K([1, 1, 2, 2])], opset=9)),
    "instance_norm_op_builder.cc": (
        m("InstanceNormalization", [T((1, 3, 8)), K(np.ones(3)), K(np.zeros(3))]),
        m("InstanceNormalization", [T(("b", 3, 8)), K(np.ones(3)), K(np.zeros(3))]),
    ),
    "batch_norm_op_builder.cc": (
        m("BatchNormalization", [X4, K([1] * 3), K([0] * 3), K([0] * 3), K([1] * 3)]),
        m("BatchNormalization", [T((1, 3, 2, 2, 2, 2)), K([1] * 3), K([0] * 3), K([0] * 3), K([1] * 3)]),
    ),
    "tile_op_builder.cc": (m("Tile", [T((2, 3)), K([2, 1], np.int64)]), m("Tile", [T((2, 3)), T((2,), I64)])),
    "argmax_min_op_builder.cc": (m("ArgMin", [T((2, 5))], {"axis": 1}), m("ArgMin", [T((2, 5))], {"axis": 1, "select_last_index": 1})),
    "topk.cc": (m("TopK", [T((2, 5)), K([2], np.int64)], n_out=2), m("TopK", [T((2, 5)), T((1,), I64)], n_out=2)),
    "reciprocal_op_builder.cc": (m("Reciprocal", [X4]), m("Reciprocal", [DYN])),
    "einsum_op_builder.cc": (m("Einsum", [T((2, 3)), T((3, 4))], {"equation": "ij,jk->ik"}), m("Einsum", [T(("b", 3)), T((3, 4))], {"equation": "ij,jk->ik"})),
    "mean_op_builder.cc": (m("Mean", [X4, X4]), m("Mean", [DYN, DYN])),
    "lstm_op_builder.cc": (lstm(False), lstm(True)),
    "cumsum_op_builder.cc": (m("CumSum", [T((2, 5)), K(1, np.int64)]), m("CumSum", [T((2, 5), TensorProto.DOUBLE), K(1, np.int64)])),
    "random_uniform_like_op_builder.cc": (m("RandomUniformLike", [T((2, 5))]), m("RandomUniformLike", [DYN])),
    "gather_nd_op_builder.cc": (m("GatherND", [T((3, 4)), K([[0], [2]], np.int64)]), m("GatherND", [DYN, K([[0]], np.int64)])),
    "mod_op_builder.cc": (m("Mod", [T((2, 3), I32), T((2, 3), I32)]), m("Mod", [T((2, 3), TensorProto.DOUBLE), T((2, 3), TensorProto.DOUBLE)], {"fmod": 1})),
    "thresholdedrelu_op_builder.cc": (m("ThresholdedRelu", [X4]), m("ThresholdedRelu", [DYN])),
    "rms_norm_op_builder.cc": (m("RMSNormalization", [X3, K(np.ones(6))], opset=23), m("RMSNormalization", [T(("b", 4, 6)), K(np.ones(6))], opset=23)),
    "lrn_op_builder.cc": (m("LRN", [X4], {"size": 3}), m("LRN", [T(("b", 3, 8, 8))], {"size": 3})),
    "inverse_op_builder.cc": (
        typed(m("Inverse", [T((2, 3, 3))], domain="com.microsoft"), F, (2, 3, 3)),
        m("Inverse", [T((2, 3, 3))], domain="com.microsoft"),  # output shape unknown
    ),
    "quick_gelu_op_builder.cc": (
        typed(m("QuickGelu", [T((2, 4))], domain="com.microsoft"), F, (2, 4)),
        typed(m("QuickGelu", [T((2, 4), TensorProto.DOUBLE)], domain="com.microsoft"), TensorProto.DOUBLE, (2, 4)),
    ),
    "fused_matmul_op_builder.cc": (
        typed(m("FusedMatMul", [T((2, 4)), T((4, 5))], domain="com.microsoft"), F, (2, 5)),
        typed(m("FusedMatMul", [T(("b", 4)), T((4, 5))], domain="com.microsoft"), F, (2, 5)),
    ),
    "matmulnbits_op_builder.cc": (matmul_nbits((1, 16)), matmul_nbits(("b", 16))),
    "stft_op_builder.cc": (
        m("STFT", [T((1, 16, 1)), K(4, np.int64), None, K(8, np.int64)], opset=17),
        m("STFT", [T((1, 16, 1), TensorProto.DOUBLE), K(4, np.int64), None, K(8, np.int64)], opset=17),
    ),
}


def test_every_builder_file_has_cases() -> None:
    table = providers.get("qnn").rule_table()
    files = {s.source.rsplit("/", 1)[1] for s in table.ops.values() if "/opbuilder/" in s.source}
    assert sorted(files) == sorted(BUILDERS)


def _taken(model: onnx.ModelProto, **settings: Any) -> tuple[bool, tuple[str, ...]]:
    report = analyze(model, EPTarget("qnn", **settings), optimize=False)
    node = next(n for n in report.nodes if n.name == "target")
    return node.supported, node.reasons


@pytest.mark.parametrize("builder", sorted(BUILDERS))
def test_qnn_builder_accepts_and_refuses(builder: str) -> None:
    accepted, refused = BUILDERS[builder]
    ok, reasons = _taken(accepted())
    assert ok, reasons
    ok, reasons = _taken(refused())
    assert not ok and reasons


# ---- what the provider hook adds: fusions, QDQ units, the HTP generation -------------------------------


def _graph(nodes: list[onnx.NodeProto], inputs: list[tuple[str, int, tuple[int, ...]]], outputs: list[str], inits: dict[str, Any], opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(o, 0, None) for o in outputs],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def gelu_erf(tail: bool = True) -> onnx.ModelProto:
    n = [
        helper.make_node("Div", ["x", "sqrt2"], ["d"], name="div"),
        helper.make_node("Erf", ["d"], ["e"], name="target"),
        helper.make_node("Add", ["e", "one"], ["a"], name="add"),
    ]
    if tail:
        n += [helper.make_node("Mul", ["x", "a"], ["m"], name="mul"), helper.make_node("Mul", ["m", "half"], ["y"], name="mul2")]
    out = "y" if tail else "a"
    inits = {"sqrt2": np.float32(1.4142135), "one": np.float32(1.0), "half": np.float32(0.5)}
    return _graph(n, [("x", F, (2, 8))], [out], inits)


def test_erf_is_taken_only_inside_a_decomposed_gelu() -> None:
    assert _taken(gelu_erf())[0]
    ok, reasons = _taken(gelu_erf(tail=False))
    assert not ok and "only inside a decomposed Gelu" in reasons[0]


def qdq_relu(per_channel_lone_dq: bool = False) -> onnx.ModelProto:
    """x → Q → DQ → Relu → Q → DQ → y: Relu's unit is DQ → Relu → Q."""
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q0"),
        helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq0"),
        helper.make_node("Relu", ["xd"], ["r"], name="target"),
        helper.make_node("QuantizeLinear", ["r", "s", "z"], ["rq"], name="q1"),
        helper.make_node("DequantizeLinear", ["rq", "s", "z"], ["y"], name="dq1"),
        helper.make_node("Sigmoid", ["x"], ["sg"], name="float_op"),
    ]
    inits: dict[str, Any] = {"s": np.float32(0.1), "z": np.uint8(128)}
    return _graph(nodes, [("x", F, (1, 4))], ["y", "sg"], inits)


def test_qdq_units_run_on_old_htps_and_float_nodes_do_not() -> None:
    report = analyze(qdq_relu(), EPTarget("qnn", qnn_htp_arch="69"), optimize=False)
    by_name = {n.name: n for n in report.nodes}
    assert by_name["target"].supported and by_name["dq0"].supported and by_name["q1"].supported
    assert not by_name["float_op"].supported and "HTP v69 has no fp16" in by_name["float_op"].reasons[0]
    # offload_graph_io_quantization: the Q of a graph input and the DQ to a graph output stay on the CPU
    assert not by_name["q0"].supported and "graph input" in by_name["q0"].reasons[0]
    assert not by_name["dq1"].supported and "graph output" in by_name["dq1"].reasons[0]
    on_v75 = analyze(qdq_relu(), EPTarget("qnn", qnn_htp_arch="75"), optimize=False)
    assert {n.name: n.supported for n in on_v75.nodes}["float_op"]


def test_a_unit_is_refused_as_a_whole() -> None:
    model = qdq_relu()
    model.graph.node[2].op_type = "ReduceProd"  # a unary selector op the HTP refuses: its DQ and Q go with it
    report = analyze(model, EPTarget("qnn"), optimize=False)
    by_name = {n.name: n for n in report.nodes}
    for name in ("target", "dq0", "q1"):
        assert not by_name[name].supported
        assert by_name[name].reasons[0] == (
            "QDQ node unit of ReduceProd 'target' (1 DQ → ReduceProd → 1 Q): ReduceProd is not supported by the QNN HTP backend"
        )


def test_erf_between_dq_and_q_forms_no_unit() -> None:
    """ORT registers no QDQ selector for Erf (selectors_actions/shared/utils.cc), so its DQ and Q are
    standalone nodes: QNN takes the DQ, refuses Erf (no builder outside a Gelu) and drops the Q, left alone
    in its partition."""
    model = qdq_relu()
    model.graph.node[2].op_type = "Erf"
    by_name = {n.name: n for n in analyze(model, EPTarget("qnn"), optimize=False).nodes}
    assert not by_name["target"].supported and "only inside a decomposed Gelu" in by_name["target"].reasons[0]
    assert by_name["dq0"].supported and not by_name["q1"].supported
    assert by_name["q1"].reasons == ("a partition of a lone QuantizeLinear is dropped by QNN",)


def qdq_layernorm(out_zero_point: Any) -> onnx.ModelProto:
    """x → Q → DQ → LayerNormalization(·, DQ(w)) → Q → DQ → y: a unit only through QNN's extra selectors."""
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q0"),
        helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq0"),
        helper.make_node("DequantizeLinear", ["w", "s", "z"], ["wd"], name="dq_w"),
        helper.make_node("LayerNormalization", ["xd", "wd"], ["n"], name="target"),
        helper.make_node("QuantizeLinear", ["n", "s", "zo"], ["nq"], name="q1"),
        helper.make_node("DequantizeLinear", ["nq", "s", "zo"], ["y"], name="dq1"),
    ]
    inits = {"s": np.float32(0.1), "z": np.uint8(128), "zo": out_zero_point, "w": np.full(8, 138, np.uint8)}
    return _graph(nodes, [("x", F, (1, 4, 8))], ["y"], inits)


def test_qnn_groups_the_selectors_the_shared_grouping_lacks() -> None:
    on_v69 = EPTarget("qnn", qnn_htp_arch="69")
    by_name = {n.name: n for n in analyze(qdq_layernorm(np.uint8(128)), on_v69, optimize=False).nodes}
    assert all(by_name[n].supported for n in ("dq0", "dq_w", "target", "q1")), by_name
    # InstanceAndLayerNormalizationNodeGroupSelector: input and output of one type; an int8 output breaks the unit
    by_name = {n.name: n for n in analyze(qdq_layernorm(np.int8(0)), on_v69, optimize=False).nodes}
    assert not by_name["target"].supported and "float LayerNormalization outside a QDQ unit" in by_name["target"].reasons[0]


def test_a_unit_with_a_float_output_needs_fp16_compute() -> None:
    """GemmNodeGroupSelector forms a unit without a trailing Q: its float output needs v73+."""
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q0"),
        helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq0"),
        helper.make_node("DequantizeLinear", ["w", "s", "z"], ["wd"], name="dq_w"),
        helper.make_node("Gemm", ["xd", "wd"], ["y"], name="target"),
    ]
    inits = {"s": np.float32(0.1), "z": np.uint8(128), "w": np.full((4, 5), 130, np.uint8)}
    model = _graph(nodes, [("x", F, (2, 4))], ["y"], inits)
    by_name = {n.name: n for n in analyze(model, EPTarget("qnn", qnn_htp_arch="69"), optimize=False).nodes}
    for name in ("dq0", "dq_w", "target"):
        assert not by_name[name].supported
        assert "(2 DQ → Gemm → 0 Q): float output 'y' (no QuantizeLinear after it): HTP v69" in by_name[name].reasons[0]
    on_v73 = {n.name: n.supported for n in analyze(model, EPTarget("qnn"), optimize=False).nodes}
    assert on_v73["target"] and on_v73["dq0"] and on_v73["dq_w"]


def test_the_extra_selectors_are_cached_apart_from_the_shared_units() -> None:
    from mobilegen.coverage.qdq import units_of
    from mobilegen.coverage.qdq_selectors import SELECTORS

    graph = prepare(qdq_layernorm(np.uint8(128)), optimize=False).graph
    target = next(n.index for n in graph.nodes if n.name == "target")
    qnn = units_of(graph, SELECTORS)
    assert qnn is not None and target in qnn.by_node
    assert units_of(graph) is None  # without the extra selectors (XNNPACK's table) LayerNormalization forms no unit
    assert units_of(graph, SELECTORS) is qnn


def test_qnn_has_no_qlinear_builder() -> None:
    inputs = [T((1, 3, 8, 8), U8), K(0.1), K(128, np.uint8), K(np.ones((4, 3, 3, 3)), np.uint8), K(0.1), K(128, np.uint8), K(0.2), K(128, np.uint8)]
    ok, reasons = _taken(typed(m("QLinearConv", inputs), U8, (1, 4, 6, 6))())
    assert not ok and reasons[0] == "QLinearConv 'target': QNN has no QLinearConv builder (op_builder_factory.cc), so it takes no such node unit"


def test_a_lone_dequantize_partition_is_dropped() -> None:
    nodes = [helper.make_node("DequantizeLinear", ["w", "s", "z"], ["wd"], name="target"), helper.make_node("Erf", ["wd"], ["y"], name="erf")]
    model = _graph(nodes, [("w", U8, (1, 4))], ["y"], {"s": np.float32(0.1), "z": np.uint8(128)})
    report = analyze(model, EPTarget("qnn"), optimize=False)
    assert report.partitions == ()
    assert "lone DequantizeLinear is dropped" in next(n for n in report.nodes if n.name == "target").reasons[-1]


def test_every_qnn_verdict_is_labelled_an_estimate() -> None:
    report = analyze(node_model("Relu", [X4]), EPTarget("qnn"), optimize=False)
    data = report.to_dict()
    assert data["estimate"] is True and "backendValidateOpConfig" in str(data["estimate_note"])
    assert all(n["estimate"] is True for n in data["nodes"])  # type: ignore[union-attr]
    nnapi = analyze(node_model("Relu", [X4]), EPTarget("nnapi"), optimize=False).to_dict()
    assert "estimate" not in nnapi and "estimate" not in nnapi["nodes"][0]  # type: ignore[index]


def test_the_htp_arch_setting_is_checked() -> None:
    from mobilegen.errors import UsageError

    with pytest.raises(UsageError, match="unknown QNN HTP architecture '70'"):
        EPTarget("qnn", qnn_htp_arch="70")



