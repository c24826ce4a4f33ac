"""``layernorm``: LayerNormalization -> ReduceMean/Sub/Mul/ReduceMean/Add/Sqrt/Div/Mul/Add, and a form that
onnxruntime does not fuse back before NNAPI sees it."""

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

from mobilegen.passes.layernorm import PASS

DECOMPOSED = ["ReduceMean", "Sub", "Mul", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Add"]
RNG = np.random.default_rng(12)


def ln_model(
    *,
    opset: int = 17,
    shape: tuple[int, ...] = (2, 5, 16),
    axis: int = -1,
    bias: bool = True,
    dtype: int = TensorProto.FLOAT,
    mean_out: bool = False,
) -> onnx.ModelProto:
    norm = shape[axis:] if axis < 0 else shape[axis:]
    np_type = np.float16 if dtype == TensorProto.FLOAT16 else np.float32
    inits = [numpy_helper.from_array(RNG.normal(1, 0.5, norm).astype(np_type), "scale")]
    inputs = ["x", "scale"]
    if bias:
        inits.append(numpy_helper.from_array(RNG.normal(0, 0.5, norm).astype(np_type), "bias"))
        inputs.append("bias")
    outputs = ["y", "mean"] if mean_out else ["y"]
    node = helper.make_node("LayerNormalization", inputs, outputs, name="ln", axis=axis, epsilon=1e-5)
    graph_outputs = [helper.make_tensor_value_info("y", dtype, list(shape))]
    if mean_out:
        graph_outputs.append(helper.make_tensor_value_info("mean", TensorProto.FLOAT, None))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", dtype, list(shape))], graph_outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def pow_form(opset: int) -> onnx.ModelProto:
    """The textbook decomposition with Pow (what TorchScript exports at opset < 17): ORT fuses it back."""
    def reduce_mean(src: str, out: str) -> onnx.NodeProto:
        if opset >= 18:
            return helper.make_node("ReduceMean", [src, "axes"], [out], keepdims=1)
        return helper.make_node("ReduceMean", [src], [out], axes=[-1], keepdims=1)

    nodes = [
        reduce_mean("x", "m"),
        helper.make_node("Sub", ["x", "m"], ["d"]),
        helper.make_node("Pow", ["d", "two"], ["d2"]),
        reduce_mean("d2", "v"),
        helper.make_node("Add", ["v", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["s"]),
        helper.make_node("Div", ["d", "s"], ["n"]),
        helper.make_node("Mul", ["n", "scale"], ["ns"]),
        helper.make_node("Add", ["ns", "bias"], ["y"]),
    ]
    inits = [
        *([numpy_helper.from_array(np.array([-1], np.int64), "axes")] if opset >= 18 else []),
        numpy_helper.from_array(np.array(2, np.float32), "two"),
        numpy_helper.from_array(np.array(1e-5, np.float32), "eps"),
        numpy_helper.from_array(np.ones(16, np.float32), "scale"),
        numpy_helper.from_array(np.zeros(16, np.float32), "bias"),
    ]
    shape = [2, 5, 16]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)], [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def feeds(shape: tuple[int, ...] = (2, 5, 16)) -> dict[str, np.ndarray]:
    return {"x": (RNG.normal(3.0, 2.0, shape)).astype(np.float32)}  # off-centre: the mean matters


@pytest.mark.parametrize("opset", [17, 18])  # ReduceMean's axes: an attribute at 17, an input from 18
def test_layernorm_becomes_ops_nnapi_takes(opset: int) -> None:
    model = ln_model(opset=opset)
    after, count = rewritten(PASS, model)
    assert count == 1
    assert ops(after) == DECOMPOSED
    assert all(not n.input[1:] for n in after.graph.node if n.op_type == "ReduceMean") == (opset == 17)
    x = feeds()
    np.testing.assert_allclose(run(after, x)[0], run(model, x)[0], rtol=1e-5, atol=1e-5)

    before_nnapi, after_nnapi = nnapi(model), nnapi(after)
    assert refused_ops(before_nnapi) == {"LayerNormalization"}
    assert all_taken(after_nnapi), refused_ops(after_nnapi)
    assert all_taken(coreml(after))  # CoreML takes the decomposition too (it needed no fix)


@pytest.mark.parametrize("opset", [17, 18])
def test_decomposition_reaches_the_device_unfused(opset: int, tmp_path: Path) -> None:
    after, _ = rewritten(PASS, ln_model(opset=opset))
    in_ort, in_app = device_ops(after, tmp_path)
    assert in_ort == DECOMPOSED  # the .ort mobilegen ships (Level1 applied at conversion)
    assert in_app == DECOMPOSED  # and what the app's session holds after loading it
    for level in (ort.GraphOptimizationLevel.ORT_ENABLE_BASIC, ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
        assert "LayerNormalization" not in optimized_ops(after, tmp_path, level)


def test_the_pow_form_is_fused_back(tmp_path: Path) -> None:
    """What the pass avoids (issue 12): at opset >= 17 the Pow decomposition comes back as one
    LayerNormalization in the shipped .ort, and NNAPI refuses it; at opset 16 it stays."""
    in_ort, _ = device_ops(pow_form(17), tmp_path)
    assert in_ort == ["LayerNormalization"]
    assert refused_ops(nnapi(pow_form(17))) == {"LayerNormalization"}
    assert "LayerNormalization" not in device_ops(pow_form(16), tmp_path)[0]


def test_axis_from_the_front_normalizes_the_trailing_dims() -> None:
    model = ln_model(axis=1)  # over [5, 16], scale and bias [5, 16]
    after, count = rewritten(PASS, model)
    assert count == 1
    assert [list(a.ints) for n in after.graph.node if n.op_type == "ReduceMean" for a in n.attribute if a.name == "axes"] == [[-2, -1]] * 2
    x = feeds()
    np.testing.assert_allclose(run(after, x)[0], run(model, x)[0], rtol=1e-5, atol=1e-5)
    assert all_taken(nnapi(after))


def test_without_bias_there_is_no_last_add() -> None:
    model = ln_model(bias=False)
    after, count = rewritten(PASS, model)
    assert count == 1
    assert ops(after) == DECOMPOSED[:-1]
    x = feeds()
    np.testing.assert_allclose(run(after, x)[0], run(model, x)[0], rtol=1e-5, atol=1e-5)


def test_existing_initializers_stay_as_they_were() -> None:
    model = ln_model()
    after, _ = rewritten(PASS, model)
    old = {t.name: t.SerializeToString() for t in model.graph.initializer}
    new = {t.name: t.SerializeToString() for t in after.graph.initializer}
    assert {k: new[k] for k in old} == old
    assert [i.name for i in after.graph.input] == ["x"] and [o.name for o in after.graph.output] == ["y"]


def test_graphs_without_a_plain_layernorm_are_left_alone() -> None:
    relu = helper.make_model(
        helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16])],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    assert unchanged_by(PASS, relu)
    assert unchanged_by(PASS, ln_model(mean_out=True))  # its Mean output is read: no counterpart
    assert unchanged_by(PASS, ln_model(dtype=TensorProto.FLOAT16))  # computed in float32 inside the op
