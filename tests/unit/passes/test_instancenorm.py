"""``instancenorm``: InstanceNormalization -> ReduceMean/Sub/Mul/ReduceMean/Add/Sqrt/Div (+ per-channel Mul/Add),
equal to onnxruntime's own InstanceNormalization, taken whole by NNAPI, not fused back on the way to it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from transformer_checks import (
    all_taken,
    coreml,
    device_ops,
    nnapi,
    ops,
    optimized_ops,
    refused_ops,
    rewritten,
    run,
    unchanged_by,
)

from mobilegen.passes.instancenorm import PASS

F = TensorProto.FLOAT
RNG = np.random.default_rng(27)
NORM = ["ReduceMean", "Sub", "Mul", "ReduceMean", "Add", "Sqrt", "Div"]


def in_model(shape: tuple[int, ...] = (1, 6, 40), *, opset: int = 17, scale: str = "random", bias: str = "random",
             dtype: int = F) -> onnx.ModelProto:
    """x -> InstanceNormalization(scale, bias) -> Relu (NNAPI takes the Relu). ``scale``/``bias``: "random"
    constants, "unit" (1 and 0, torch's GroupNorm form), or "input" (graph inputs)."""
    c = shape[1]
    np_type = np.float16 if dtype == TensorProto.FLOAT16 else np.float32
    inits, inputs = [], [helper.make_tensor_value_info("x", dtype, list(shape))]
    for name, kind, unit in (("scale", scale, 1.0), ("bias", bias, 0.0)):
        if kind == "input":
            inputs.append(helper.make_tensor_value_info(name, dtype, [c]))
        else:
            value = np.full(c, unit) if kind == "unit" else RNG.normal(unit, 0.5, c)
            inits.append(numpy_helper.from_array(value.astype(np_type), name))
    nodes = [
        helper.make_node("InstanceNormalization", ["x", "scale", "bias"], ["n"], name="in", epsilon=1e-5),
        helper.make_node("Relu", ["n"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", dtype, list(shape))], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def group_norm(groups: int = 2, channels: int = 6, length: int = 40) -> onnx.ModelProto:
    """torch's GroupNorm as the dynamo exporter writes it: Reshape [N, G, -1], InstanceNormalization with
    unit scale and zero bias, Reshape back, the affine Mul/Add per channel; then a Conv NNAPI takes."""
    shape = [1, channels, length]
    inits = [
        numpy_helper.from_array(np.array([1, groups, -1], np.int64), "grouped"),
        numpy_helper.from_array(np.array(shape, np.int64), "back"),
        numpy_helper.from_array(np.ones(groups, np.float32), "ones"),
        numpy_helper.from_array(np.zeros(groups, np.float32), "zeros"),
        numpy_helper.from_array(RNG.normal(1, 0.5, (channels, 1)).astype(np.float32), "gamma"),
        numpy_helper.from_array(RNG.normal(0, 0.5, (channels, 1)).astype(np.float32), "beta"),
        numpy_helper.from_array(RNG.normal(0, 0.3, (channels, channels, 1, 1)).astype(np.float32), "w"),
        numpy_helper.from_array(np.array([2], np.int64), "axis2"),
    ]
    nodes = [
        helper.make_node("Reshape", ["x", "grouped"], ["g"]),
        helper.make_node("InstanceNormalization", ["g", "ones", "zeros"], ["gn"], epsilon=1e-5),
        helper.make_node("Reshape", ["gn", "back"], ["n"]),
        helper.make_node("Mul", ["n", "gamma"], ["s"]),
        helper.make_node("Add", ["s", "beta"], ["a"]),
        helper.make_node("Unsqueeze", ["a", "axis2"], ["a4"]),
        helper.make_node("Conv", ["a4", "w"], ["c4"]),
        helper.make_node("Squeeze", ["c4", "axis2"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, shape)], [helper.make_tensor_value_info("y", F, shape)], inits)
    return onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))


def feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    out = {}
    for i in model.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        out[i.name] = RNG.normal(2.0, 3.0, shape).astype(np.float32)  # off-centre: the mean matters
    return out


@pytest.mark.parametrize(("shape", "opset"), [((1, 6, 40), 17), ((1, 6, 40), 18), ((2, 3, 5, 7), 17), ((2, 3, 5, 7), 18)])
def test_instancenorm_becomes_ops_nnapi_takes(shape: tuple[int, ...], opset: int) -> None:
    model = in_model(shape, opset=opset)
    after, count = rewritten(PASS, model)
    assert count == 1
    assert ops(after) == [*NORM, "Mul", "Add", "Relu"]
    means = [n for n in after.graph.node if n.op_type == "ReduceMean"]
    assert all(len(n.input) == (2 if opset >= 18 else 1) for n in means)  # axes: an input from opset 18
    x = feeds(model)
    np.testing.assert_allclose(run(after, x)[0], run(model, x)[0], rtol=1e-5, atol=1e-5)
    assert refused_ops(nnapi(model)) == {"InstanceNormalization"}  # no NNAPI builder
    assert all_taken(nnapi(after)), refused_ops(nnapi(after))


def test_per_channel_inputs_are_unsqueezed() -> None:
    model = in_model(scale="input", bias="input")
    after, count = rewritten(PASS, model)
    assert count == 1
    assert ops(after).count("Unsqueeze") == 2
    x = feeds(model)
    np.testing.assert_allclose(run(after, x)[0], run(model, x)[0], rtol=1e-5, atol=1e-5)


def test_groupnorm_form_leaves_out_the_unit_affine_and_goes_whole_to_nnapi() -> None:
    model = group_norm()
    after, count = rewritten(PASS, model)
    assert count == 1
    assert ops(after) == ["Reshape", *NORM, "Reshape", "Mul", "Add", "Unsqueeze", "Conv", "Squeeze"]
    x = feeds(model)
    np.testing.assert_allclose(run(after, x)[0], run(model, x)[0], rtol=1e-5, atol=1e-5)
    before = nnapi(model)
    # the Reshape before it: a partition of a lone Reshape, which NNAPI drops
    assert refused_ops(before) == {"InstanceNormalization", "Reshape"} and before.supported_nodes == 6
    assert all_taken(nnapi(after)), refused_ops(nnapi(after))
    assert all_taken(coreml(model))  # CoreML takes InstanceNormalization whole: the iOS model keeps it


def test_the_decomposition_reaches_the_device_unfused(tmp_path: Path) -> None:
    after, _ = rewritten(PASS, in_model())
    in_ort, in_app = device_ops(after, tmp_path)
    assert in_ort == in_app == [*NORM, "Mul", "Add", "Relu"]
    for level in (ort.GraphOptimizationLevel.ORT_ENABLE_BASIC, ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
        optimized = optimized_ops(after, tmp_path, level)
        assert "InstanceNormalization" not in optimized and "LayerNormalization" not in optimized


def test_what_nnapi_cannot_take_anyway_is_left_alone() -> None:
    assert unchanged_by(PASS, in_model((1, 2, 3, 4, 5)))  # rank 5: beyond NNAPI's ReduceMean
    assert unchanged_by(PASS, in_model(dtype=TensorProto.FLOAT16))
