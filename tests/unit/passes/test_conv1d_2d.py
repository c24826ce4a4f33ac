"""``conv1d-2d``: a 1-D Conv becomes Unsqueeze, Conv 2-D with a new 4-D weight, Squeeze."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from transformer_checks import all_taken, device_ops, nnapi, ops, refused_ops, rewritten, run, unchanged_by

from mobilegen.passes.conv1d_2d import PASS

RNG = np.random.default_rng(3)
F = TensorProto.FLOAT


def conv_model(attrs: dict[str, Any], *, c_in: int = 4, c_out: int = 8, k: int = 3, length: int = 32,
               bias: bool = True, opset: int = 17, twice: bool = False) -> onnx.ModelProto:
    group = int(attrs.get("group", 1))
    inits = {"w": RNG.standard_normal((c_out, c_in // group, k)).astype(np.float32)}
    inputs = ["x", "w"]
    if bias:
        inits["b"] = RNG.standard_normal(c_out).astype(np.float32)
        inputs.append("b")
    nodes = [helper.make_node("Conv", inputs, ["y"], name="conv", **attrs)]
    if twice:  # a second Conv on the same weight (c_in == c_out)
        nodes = [helper.make_node("Conv", inputs, ["h"], name="conv0", **attrs), helper.make_node("Conv", ["h", *inputs[1:]], ["y"], **attrs)]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, [1, c_in, length])],
        [helper.make_tensor_value_info("y", F, None)],
        [numpy_helper.from_array(v, n) for n, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    return onnx.shape_inference.infer_shapes(model)


CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "padded-strided": ({"pads": [1, 2], "strides": [2], "kernel_shape": [3]}, {}),
    "dilated": ({"dilations": [2], "pads": [2, 2]}, {}),
    "grouped": ({"group": 2}, {}),
    "depthwise": ({"group": 4, "pads": [1, 1]}, {"c_out": 4}),
    "same-upper": ({"auto_pad": "SAME_UPPER", "strides": [2]}, {"bias": False}),
    "opset-11": ({"pads": [1, 1]}, {"opset": 11}),  # Unsqueeze/Squeeze axes as attributes
}


@pytest.mark.parametrize("case", list(CASES))
def test_conv1d_becomes_conv2d(case: str) -> None:
    attrs, kw = CASES[case]
    before = conv_model(attrs, **kw)
    after, count = rewritten(PASS, before)
    assert count == 1
    assert ops(after) == ["Unsqueeze", "Conv", "Squeeze"]
    conv = after.graph.node[1]
    new_weight = next(t for t in after.graph.initializer if t.name == conv.input[1])
    assert len(new_weight.dims) == 4 and new_weight.dims[2] == 1
    x = {"x": RNG.standard_normal((1, 4, 32)).astype(np.float32)}
    np.testing.assert_allclose(run(after, x)[0], run(before, x)[0], rtol=1e-5, atol=1e-5)
    assert refused_ops(nnapi(before)) == {"Conv"}  # "Only conv 2d is supported"
    assert all_taken(nnapi(after)), refused_ops(nnapi(after))


def test_existing_weight_is_kept_and_a_shared_one_converted_once() -> None:
    before = conv_model({"pads": [1, 1]}, c_in=8, c_out=8, twice=True)
    after, count = rewritten(PASS, before)
    assert count == 2
    old = {t.name: t.SerializeToString() for t in before.graph.initializer}
    assert {t.name: t.SerializeToString() for t in after.graph.initializer if t.name in old} == old
    convs = [n for n in after.graph.node if n.op_type == "Conv"]
    assert convs[0].input[1] == convs[1].input[1] != "w"
    assert len(after.graph.initializer) == len(before.graph.initializer) + 2  # the 4-D weight, the axes
    x = {"x": RNG.standard_normal((1, 8, 32)).astype(np.float32)}
    np.testing.assert_allclose(run(after, x)[0], run(before, x)[0], rtol=1e-5, atol=1e-5)


def test_conv2d_reaches_the_device(tmp_path: Path) -> None:
    after, _ = rewritten(PASS, conv_model({"pads": [1, 1]}))
    in_ort, _ = device_ops(after, tmp_path)
    assert in_ort == ["Unsqueeze", "Conv", "Squeeze"]


def test_other_convs_are_left_alone() -> None:
    conv2d = helper.make_model(
        helper.make_graph(
            [helper.make_node("Conv", ["x", "w"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", F, [1, 4, 8, 8])],
            [helper.make_tensor_value_info("y", F, None)],
            [numpy_helper.from_array(RNG.standard_normal((8, 4, 3, 3)).astype(np.float32), "w")],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    assert unchanged_by(PASS, conv2d)
    weight_input = helper.make_model(
        helper.make_graph(
            [helper.make_node("Conv", ["x", "w"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", F, [1, 4, 8]), helper.make_tensor_value_info("w", F, [8, 4, 3])],
            [helper.make_tensor_value_info("y", F, None)],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    assert unchanged_by(PASS, weight_input)  # no constant weight to convert


def test_a_weight_computed_from_constants_gets_an_unsqueeze_onnxruntime_folds() -> None:
    """Weight normalization (wav2vec2's positional conv, dynamo export): the weight is Mul(v, g)."""
    before = conv_model({"pads": [1, 1]})
    before.graph.initializer.append(numpy_helper.from_array(np.array(0.5, np.float32), "g"))
    conv = before.graph.node[0]
    conv.input[1] = "w_normed"
    before.graph.node.insert(0, helper.make_node("Mul", ["w", "g"], ["w_normed"]))
    before = onnx.shape_inference.infer_shapes(before)
    after, count = rewritten(PASS, before)
    assert count == 1
    assert ops(after) == ["Mul", "Unsqueeze", "Unsqueeze", "Conv", "Squeeze"]
    x = {"x": RNG.standard_normal((1, 4, 32)).astype(np.float32)}
    np.testing.assert_allclose(run(after, x)[0], run(before, x)[0], rtol=1e-5, atol=1e-5)
    assert refused_ops(nnapi(before)) == {"Conv"}
    assert all_taken(nnapi(after))  # the Mul and the weight's Unsqueeze are folded before partitioning
