"""Every rule of every EP table has one case it accepts and one it refuses (parametrized by rule id)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from cov_helpers import BOOL, I32, I64, U8, F, K, T, node_model
from onnx import helper

from mobilegen import providers
from mobilegen.coverage import EPTarget
from mobilegen.coverage.analyze import evaluate_rule, prepare

Case = tuple[dict[str, Any], Callable[[], Any]]  # (target kwargs, model factory)

X4 = T((1, 3, 8, 8))
NN: dict[str, Any] = {"ep": "nnapi"}
NN27: dict[str, Any] = {"ep": "nnapi", "android_api": 27}
ML: dict[str, Any] = {"ep": "coreml", "coreml_format": "mlprogram"}
NW: dict[str, Any] = {"ep": "coreml", "coreml_format": "neuralnetwork"}
XP: dict[str, Any] = {"ep": "xnnpack"}
ML27: dict[str, Any] = {**ML, "ort_version": "1.27.0"}  # builders added in 1.27/1.28 (coreml/releases.py)
ML28: dict[str, Any] = {**ML, "ort_version": "1.28.0"}
WG: dict[str, Any] = {"ep": "webgpu"}
W = K(np.ones((4, 3, 3, 3)))
W1 = K(np.ones((4, 3, 3)))


def m(*args: Any, **kw: Any) -> Callable[[], Any]:
    return lambda: node_model(*args, **kw)


def conv_then(op: str, extra: list[Any] | None = None) -> Callable[[], Any]:
    conv = helper.make_node("Conv", ["x", "w"], ["c"], name="conv")
    w = helper.make_tensor("w", F, (4, 3, 3, 3), np.ones(108).tolist())
    x = helper.make_tensor_value_info("x", F, (1, 3, 8, 8))

    def build() -> Any:
        model = node_model(op, ["c", *(extra or [])], pre=[conv], pre_inputs=[x])
        model.graph.initializer.append(w)
        return model

    return build


def argmax_then_cast() -> Any:
    am = helper.make_node("ArgMax", ["x"], ["a"], name="am", axis=1)
    x = helper.make_tensor_value_info("x", F, (1, 10))
    return node_model("Cast", ["a"], {"to": I32}, pre=[am], pre_inputs=[x])


# rule id -> (accepting case, refusing case)
CASES: dict[str, tuple[Case, Case]] = {
    # ---- NNAPI general
    "nnapi.min_api": ((NN, m("Sub", [X4, X4])), (NN27, m("Sub", [X4, X4]))),
    "nnapi.shapes_known": ((NN, m("Relu", [X4])), (NN, m("Relu", [T(None)]))),
    "nnapi.fixed_dims": ((NN, m("Relu", [X4])), (NN, m("Relu", [T(("batch", 3))])),),
    "nnapi.input0_dtype": ((NN, m("Relu", [X4])), (NN, m("Relu", [T((1, 3), I64)]))),
    "nnapi.opset": ((NN, m("Relu", [X4], opset=14)), (NN, m("Add", [X4, X4], opset=6))),
    # ---- NNAPI ops
    "nnapi.clip.range": ((NN, m("Clip", [X4, K(0), K(6)])), (NN, m("Clip", [X4, K(0), K(10)]))),
    "nnapi.conv.weight": ((NN, m("Conv", [X4, W])), (NN, m("Conv", [X4, T((4, 3, 3, 3))]))),
    "nnapi.conv.dilations": (
        (NN, m("Conv", [X4, W], {"dilations": [2, 2]})),
        (NN27, m("Conv", [X4, W], {"dilations": [2, 2]})),
    ),
    "nnapi.batchnorm": (
        (NN, m("BatchNormalization", [X4, K([1] * 3), K([0] * 3), K([0] * 3), K([1] * 3)])),
        (NN, m("BatchNormalization", [X4, T((3,)), K([0] * 3), K([0] * 3), K([1] * 3)])),
    ),
    "nnapi.rank_1_4": ((NN, m("Sigmoid", [X4])), (NN, m("Sigmoid", [T((1, 2, 3, 4, 5))]))),
    "nnapi.binary.rank": ((NN, m("Add", [X4, X4])), (NN, m("Add", [T((1, 1, 2, 3, 4)), X4]))),
    "nnapi.pow.dtype": ((NN, m("Pow", [X4, K(2.0)])), (NN, m("Pow", [X4, K(2, np.int64)]))),
    "nnapi.minmax.inputs": ((NN, m("Max", [X4, X4])), (NN, m("Max", [X4, X4, X4]))),
    "nnapi.matmul": ((NN, m("MatMul", [T((2, 4)), K(np.ones((4, 5)))])), (NN, m("MatMul", [T((2, 4)), T((4, 5))]))),
    "nnapi.gemm.attrs": (
        (NN, m("Gemm", [T((2, 4)), K(np.ones((4, 5)))])),
        (NN, m("Gemm", [T((2, 4)), K(np.ones((4, 5)))], {"alpha": 0.5})),
    ),
    "nnapi.gemm.rank": ((NN, m("Gemm", [T((2, 4)), K(np.ones((4, 5)))])), (NN, m("Gemm", [T((2, 4)), K(np.ones((4,)))]))),
    "nnapi.gemm.b_const": (
        (NN, m("Gemm", [T((2, 4)), T((5, 4))], {"transB": 1})),
        (NN, m("Gemm", [T((2, 4)), T((4, 5))])),
    ),
    "nnapi.gemm.bias": (
        (NN, m("Gemm", [T((2, 4)), K(np.ones((4, 5))), K(np.ones(5))])),
        (NN, m("Gemm", [T((2, 4)), K(np.ones((4, 5))), K(np.ones(3))])),
    ),
    "nnapi.reshape.shape_const": (
        (NN, m("Reshape", [X4, K([1, -1], np.int64)])),
        (NN, m("Reshape", [X4, T((2,), I64)])),
    ),
    "nnapi.reshape.zero": (
        (NN, m("Reshape", [X4, K([0, -1], np.int64)])),
        (NN, m("Reshape", [X4, K([0, -1], np.int64)], {"allowzero": 1})),
    ),
    "nnapi.softmax": ((NN, m("Softmax", [T((1, 5))])), (NN, m("Softmax", [T((1, 2, 3, 4, 5))]))),
    "nnapi.pool.rank4": ((NN, m("GlobalAveragePool", [X4])), (NN, m("GlobalAveragePool", [T((1, 3, 8))]))),
    "nnapi.pool.attrs": (
        (NN, m("MaxPool", [X4], {"kernel_shape": [2, 2]})),
        (NN, m("MaxPool", [X4], {"kernel_shape": [2, 2], "ceil_mode": 1})),
    ),
    "nnapi.resize": (
        (NN, m("Resize", [X4, None, K([1, 1, 2, 2])], {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"})),
        (NN, m("Resize", [X4, None, K([1, 1, 2, 2])], {"mode": "cubic"})),
    ),
    "nnapi.pad": ((NN, m("Pad", [X4, K([0] * 8, np.int64)])), (NN, m("Pad", [X4, K([0] * 8, np.int64)], {"mode": "reflect"}))),
    "nnapi.axes_const": ((NN, m("Squeeze", [T((1, 3)), K([0], np.int64)])), (NN, m("Squeeze", [T((1, 3)), T((1,), I64)]))),
    "nnapi.slice": (
        (NN, m("Slice", [X4, K([0], np.int64), K([1], np.int64)])),
        (NN, m("Slice", [X4, T((1,), I64), K([1], np.int64)])),
    ),
    "nnapi.gather": (
        (NN, m("Gather", [T((10, 4)), T((3,), I32)])),
        (NN, m("Gather", [T((10, 4)), T((3,), I64)])),
    ),
    "nnapi.split": (
        (NN, m("Split", [T((4, 6)), K([2, 2], np.int64)], n_out=2)),
        (NN, m("Split", [T((4, 6)), K([1, 3], np.int64)], n_out=2)),
    ),
    "nnapi.cast.to": ((NN, m("Cast", [X4], {"to": I32})), (NN, m("Cast", [X4], {"to": I64}))),
    "nnapi.reducemean": ((NN, m("ReduceMean", [X4], {"axes": [1]}, opset=13)), (NN, m("ReduceMean", [T((1, 1, 1, 1, 2))], {"axes": [1]}, opset=13))),
    "nnapi.depthtospace": ((NN, m("DepthToSpace", [T((1, 4, 2, 2))], {"blocksize": 2})), (NN, m("DepthToSpace", [T((1, 4, 2, 2))], {"blocksize": 2, "mode": "CRD"}))),
    "nnapi.qdq.params": (
        (NN, m("QuantizeLinear", [X4, K(0.1), K(0, np.uint8)])),
        (NN, m("QuantizeLinear", [X4, T((1,)), K(0, np.uint8)])),
    ),
    "nnapi.quantize.out": (
        (NN, m("QuantizeLinear", [X4, K(0.1), K(0, np.uint8)])),
        (NN, m("QuantizeLinear", [X4, K(0.1), K(0, np.int8)])),
    ),
    # ---- CoreML general
    "coreml.opset": ((ML, m("Relu", [X4], opset=14)), (ML, m("Relu", [X4], opset=1))),
    "coreml.shapes_known": ((ML, m("Relu", [X4])), (ML, m("Relu", [T(None)]))),
    "coreml.static_shapes": (
        ({**ML, "require_static_shapes": False}, m("Relu", [T(("batch", 3))])),
        ({**ML, "require_static_shapes": True}, m("Relu", [T(("batch", 3))])),
    ),
    "coreml.zero_dims": ((ML, m("Relu", [X4])), (ML, m("Relu", [T((0, 3))]))),
    "coreml.rank": ((ML, m("Relu", [X4])), (ML, m("Relu", [T((1, 1, 1, 1, 1, 2))]))),
    "coreml.input0_dtype": ((ML, m("Relu", [T((1, 3), 10)])), (NW, m("Relu", [T((1, 3), 10)]))),
    # ---- CoreML ops
    "coreml.conv": ((ML, m("Conv", [X4, W])), (ML, m("Conv", [X4, W, T((4,))]))),
    "coreml.convtranspose": ((ML, m("ConvTranspose", [X4, K(np.ones((3, 4, 3, 3)))])), (ML, m("ConvTranspose", [X4, K(np.ones((3, 4, 3, 3)))], {"output_padding": [1, 1], "strides": [2, 2]}))),
    "coreml.batchnorm": (
        (ML, m("BatchNormalization", [X4, K([1] * 3), K([0] * 3), K([0] * 3), K([1] * 3)])),
        (ML, m("BatchNormalization", [T((1, 3, 8)), K([1] * 3), K([0] * 3), K([0] * 3), K([1] * 3)])),
    ),
    "coreml.prelu": ((ML, m("PRelu", [X4, K(np.ones((3, 1, 1)))])), (ML, m("PRelu", [X4, T((3, 1, 1))]))),
    "coreml.clip": ((ML, m("Clip", [X4, K(0), K(10)])), (ML, m("Clip", [X4, T(()), K(10)]))),
    "coreml.binary.dtype": ((ML, m("Add", [T((2,), I64), T((2,), I64)])), (NW, m("Add", [T((2,), I64), T((2,), I64)]))),
    "coreml.pow": ((ML, m("Pow", [X4, K(2.0)])), (ML, m("Pow", [X4, K(2, np.int64)]))),
    "coreml.max.binary": ((ML, m("Max", [X4, X4])), (ML, m("Max", [X4, X4, X4]))),
    "coreml.matmul": ((NW, m("MatMul", [T((2, 4)), K(np.ones((4, 5)))])), (NW, m("MatMul", [T((2, 4)), T((4, 5))]))),
    "coreml.gemm": ((ML, m("Gemm", [T((2, 4)), K(np.ones((4, 5)))])), (ML, m("Gemm", [T((2, 4)), T((4, 5))]))),
    "coreml.reshape": ((ML, m("Reshape", [X4, K([1, -1], np.int64)])), (ML, m("Reshape", [T(("b", 3)), K([1, -1], np.int64)]))),
    "coreml.concat": ((NW, m("Concat", [X4, X4], {"axis": 1})), (NW, m("Concat", [X4, X4], {"axis": 2}))),
    "coreml.split": ((ML, m("Split", [T((4, 6)), K([3, 3], np.int64)], {"axis": 1}, n_out=2)), (ML, m("Split", [T((4, 6)), T((2,), I64)], {"axis": 1}, n_out=2))),
    "coreml.slice": ((ML, m("Slice", [X4, K([0], np.int64), K([1], np.int64)])), (ML, m("Slice", [T(("b", 4)), K([0], np.int64), K([1], np.int64)]))),
    "coreml.gather": ((ML, m("Gather", [T((10, 4)), T((3,), I64)])), (ML, m("Gather", [T((10, 4)), T((), I64)]))),
    "coreml.shape": ((NW, m("Shape", [X4], opset=15)), (NW, m("Shape", [X4], {"start": 1}, opset=15))),
    "coreml.softmax": ((ML, m("Softmax", [T(("b", 5))], opset=13)), (ML, m("Softmax", [T(("b", 5))], opset=11))),
    "coreml.norm": ((ML, m("LayerNormalization", [X4, K(np.ones(8)), K(np.zeros(8))])), (ML, m("LayerNormalization", [X4, T((8,)), K(np.zeros(8))]))),
    "coreml.reduce": ((ML, m("ReduceSum", [X4, K([1], np.int64)])), (ML, m("ReduceSum", [X4, T((1,), I64)]))),
    "coreml.argmax": ((ML, m("ArgMax", [X4])), (ML, m("ArgMax", [X4], {"select_last_index": 1}))),
    "coreml.pool.rank4": ((ML, m("GlobalMaxPool", [X4])), (ML, m("GlobalMaxPool", [T((1, 3, 8))]))),
    "coreml.pool.attrs": ((ML, m("MaxPool", [X4], {"kernel_shape": [2, 2]})), (ML, m("MaxPool", [X4], {"kernel_shape": [2, 2], "dilations": [2, 2]}))),
    "coreml.resize": (
        (ML, m("Resize", [X4, None, K([1, 1, 2, 2])], {"mode": "linear"})),
        (ML, m("Resize", [X4, None, K([1, 2, 2, 2])], {"mode": "linear"})),
    ),
    "coreml.pad": ((NW, m("Pad", [X4, K([0, 0, 1, 1, 0, 0, 1, 1], np.int64)])), (NW, m("Pad", [X4, K([0, 1, 0, 0, 0, 1, 0, 0], np.int64)]))),
    "coreml.axes_const": ((ML, m("Squeeze", [T((1, 3)), K([0], np.int64)])), (ML, m("Squeeze", [T((1, 3)), T((1,), I64)]))),
    "coreml.unsqueeze.rank": ((ML, m("Unsqueeze", [X4, K([0], np.int64)])), (ML, m("Unsqueeze", [X4, K([0, 1], np.int64)]))),
    "coreml.cast": ((NW, argmax_then_cast), (NW, m("Cast", [X4], {"to": I32}))),
    # cast_op_builder.cc IsOpSupportedImpl: "Cast has no preceding nodes" (a graph input has no input edge)
    "coreml.cast.producer": ((ML, argmax_then_cast), (ML, m("Cast", [T((2,), I64)], {"to": F}))),
    "coreml.depthtospace": ((NW, m("DepthToSpace", [T((1, 4, 2, 2))], {"blocksize": 2})), (NW, m("DepthToSpace", [T((1, 4, 2, 2))], {"blocksize": 2, "mode": "CRD"}))),
    "coreml.lrn": ((NW, m("LRN", [X4], {"size": 3})), (NW, m("LRN", [T((1, 3))], {"size": 3}))),
    "coreml.where": ((ML28, m("Where", [T((2,), BOOL), T((2,)), T((2,))])), (ML28, m("Where", [T((2,), BOOL), T((2,), I32), T((2,), I32)]))),
    "coreml.and": ((ML28, m("And", [T((2,), BOOL), T((2,), BOOL)])), (ML28, m("And", [T((2,), BOOL), T((2,), U8)]))),
    "coreml.gathernd": ((ML28, m("GatherND", [T((2, 3)), T((2, 1), I64)])), (ML28, m("GatherND", [T((2, 3)), T((2, 1), I64)], {"batch_dims": 1}))),
    "coreml.tile": ((ML27, m("Tile", [X4, K([1, 1, 1, 1], np.int64)])), (ML27, m("Tile", [T((1, 1, 1, 1, 1, 2)), K([1] * 6, np.int64)]))),
    "coreml.fusedconv": (
        (ML27, m("FusedConv", [X4, W], {"activation": "LeakyRelu"}, domain="com.microsoft")),
        (ML27, m("FusedConv", [X4, W], {"activation": "Elu"}, domain="com.microsoft")),
    ),
    "coreml.pad.mlprogram": ((NW, m("Pad", [X4, K([0, 0, 1, 1, 0, 0, 1, 1], np.int64)])), (ML, m("Pad", [X4, K([0, 0, 1, 1, 0, 0, 1, 1], np.int64)]))),
    # ---- XNNPACK
    "xnnpack.opset": ((XP, m("MaxPool", [X4], {"kernel_shape": [2, 2]})), (XP, m("MaxPool", [X4], {"kernel_shape": [2, 2]}, opset=7))),
    "xnnpack.input0_dtype": ((XP, m("MatMul", [T((2, 4)), K(np.ones((4, 5)))])), (XP, m("MatMul", [T((2, 4), I32), K(np.ones((4, 5)), np.int32)]))),
    "xnnpack.conv": ((XP, m("Conv", [X4, W])), (XP, m("Conv", [T((1, 3, "h", 8)), W]))),
    "xnnpack.maxpool": ((XP, m("MaxPool", [X4], {"kernel_shape": [2, 2]})), (XP, m("MaxPool", [X4], {"kernel_shape": [1, 1]}))),
    "xnnpack.softmax": ((XP, m("Softmax", [T((2, 5))])), (XP, m("Softmax", [T((2, 5))], {"axis": 0}))),
    "xnnpack.gemm": ((XP, m("Gemm", [T((2, 4)), K(np.ones((4, 5)))])), (XP, m("Gemm", [T((2, 4)), T((4, 5))]))),
    "xnnpack.matmul": ((XP, m("MatMul", [T((2, 2, 4)), K(np.ones((4, 5)))])), (XP, m("MatMul", [T((2, 4)), K(np.ones((2, 4, 5)))]))),
    "xnnpack.avgpool": ((XP, m("AveragePool", [X4], {"kernel_shape": [2, 2]})), (XP, m("AveragePool", [X4], {"kernel_shape": [2, 2], "count_include_pad": 1}))),
    "xnnpack.resize": (
        (XP, m("Resize", [X4, None, K([1, 1, 0.5, 0.5])], {"mode": "linear"})),
        (XP, m("Resize", [X4, None, K([1, 1, 0.75, 0.75])], {"mode": "linear"})),
    ),
    "xnnpack.fusion": ((XP, conv_then("Relu")), (XP, m("Relu", [X4]))),
    "xnnpack.gemm.c": ((XP, m("Gemm", [T((2, 4)), K(np.ones((4, 5))), K(np.ones(5))])), (XP, m("Gemm", [T((2, 4)), K(np.ones((4, 5)))]))),
    # ---- WebGPU (onnxruntime-web's JSEP): exact since-versions, registered dtypes, opset >= 7
    "webgpu.model_opset": ((WG, m("Relu", [X4], opset=7)), (WG, m("Relu", [X4], opset=6))),
    "webgpu.since": ((WG, m("Conv", [X4, W], opset=21)), (WG, m("Conv", [X4, W], opset=22))),
    "webgpu.types": ((WG, m("Add", [T((2, 3), I32), T((2, 3), I32)])), (WG, m("Add", [T((2, 3), I64), T((2, 3), I64)]))),
}


# QNN's rule and builder cases are in test_qnn_rules.py.
BUILTIN_TABLES = [providers.get(name).rule_table() for name in providers.BUILTIN if name != "qnn"]


def _all_rule_ids() -> list[str]:
    return sorted(r.id for table in BUILTIN_TABLES for r in table.all_rules())


def test_every_rule_has_both_cases() -> None:
    missing = [rid for rid in _all_rule_ids() if rid not in CASES]
    extra = [rid for rid in CASES if rid not in _all_rule_ids()]
    assert not missing, f"rules without accept/refuse cases: {missing}"
    assert not extra, f"cases for unknown rules: {extra}"


def test_every_rule_names_a_source() -> None:
    for table in BUILTIN_TABLES:
        for rule in table.all_rules():
            assert rule.source.startswith("onnxruntime/core/providers/"), rule.id
        for spec in table.ops.values():
            assert spec.source.startswith("onnxruntime/core/providers/"), spec.op_type
            for rid in spec.rules:
                assert rid in table.rules, (spec.op_type, rid)


def _run(case: Case, rule_id: str) -> list[Any] | None:
    target_kwargs, factory = case
    target = EPTarget(**target_kwargs)
    prepared = prepare(factory(), optimize=False)
    index = next(n.index for n in prepared.graph.nodes if n.name == "target")
    return evaluate_rule(rule_id, prepared.graph, index, target)


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_accepts(rule_id: str) -> None:
    reasons = _run(CASES[rule_id][0], rule_id)
    assert reasons is not None, "rule does not apply to the accepting case"
    assert reasons == [], [r.text for r in reasons]


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_refuses(rule_id: str) -> None:
    reasons = _run(CASES[rule_id][1], rule_id)
    assert reasons, "rule accepted its refusing case"
    assert all(r.rule == rule_id and r.text for r in reasons)
