"""``pad``: Pad becomes Concat/Slice forms CoreML MLProgram takes (it has no Pad builder in the runtime
the apps ship); a Pad that pads nothing goes."""

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

from mobilegen.passes.pad import PASS

RNG = np.random.default_rng(9)
F = TensorProto.FLOAT
SHAPE = [1, 3, 5, 6]


def pad_model(pads: list[int], *, mode: str = "constant", value: float | None = None, axes: list[int] | None = None,
              opset: int = 17, shape: list[object] | None = None, computed: bool = False) -> onnx.ModelProto:
    inits = [numpy_helper.from_array(np.array(pads, np.int64), "pads_c" if computed else "pads")]
    nodes = []
    if computed:  # pads produced at run time from constants (how TorchScript exports Swin's maybe_pad)
        nodes.append(helper.make_node("Identity", ["pads_c"], ["pads"]))
    inputs = ["x", "pads", ""]
    if value is not None:
        inits.append(numpy_helper.from_array(np.array(value, np.float32), "value"))
        inputs[2] = "value"
    if axes is not None:
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
        inputs.append("axes")
    nodes += [helper.make_node("Pad", inputs, ["p"], name="pad", mode=mode), helper.make_node("Relu", ["p"], ["y"])]
    x_shape = shape or SHAPE
    y_shape = list(x_shape)
    padded = axes if axes is not None else list(range(len(x_shape)))
    for i, a in enumerate(padded):
        if isinstance(y_shape[a], int):
            y_shape[a] += pads[i] + pads[i + len(padded)]  # type: ignore[operator]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", F, x_shape)], [helper.make_tensor_value_info("y", F, y_shape)], inits
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def feeds() -> dict[str, np.ndarray]:
    return {"x": RNG.standard_normal(SHAPE).astype(np.float32)}


CASES = {
    "constant-hw": ([0, 0, 1, 2, 0, 0, 2, 1], {"value": 0.5}),
    "constant-default-zero": ([0, 0, 0, 3, 0, 0, 1, 0], {}),
    "constant-channels": ([0, 1, 0, 0, 0, 2, 0, 0], {"value": -1.0}),  # NN/C pads: MLProgram's pad could not either
    "constant-crop-and-pad": ([0, 0, -1, 2, 0, 0, 1, -2], {"value": 2.0}),
    "constant-axes": ([1, 2, 2, 1], {"axes": [-2, 3], "opset": 18}),
    "reflect": ([0, 0, 2, 1, 0, 0, 1, 4], {"mode": "reflect"}),
    "reflect-full": ([0, 0, 4, 5, 0, 0, 4, 5], {"mode": "reflect"}),  # pad = dim - 1: the Slice to index 0
    "edge": ([0, 0, 2, 0, 0, 0, 1, 3], {"mode": "edge"}),
    "wrap": ([0, 0, 2, 1, 0, 0, 3, 6], {"mode": "wrap", "opset": 19}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_pad_becomes_concat_and_slices(case: str) -> None:
    pads, kw = CASES[case]
    before = pad_model(pads, **kw)  # type: ignore[arg-type]
    after, count = rewritten(PASS, before)
    assert count == 1
    assert "Pad" not in ops(after) and "Concat" in ops(after)
    x = feeds()
    np.testing.assert_array_equal(run(after, x)[0], run(before, x)[0])
    assert refused_ops(coreml(before)) == {"Pad"}  # no MLProgram builder
    assert all_taken(coreml(after)), refused_ops(coreml(after))


@pytest.mark.parametrize("mode", ["reflect", "edge"])
def test_nnapi_takes_the_modes_its_pad_refuses(mode: str) -> None:
    before = pad_model([0, 0, 1, 2, 0, 0, 2, 1], mode=mode)
    after, _ = rewritten(PASS, before)
    assert refused_ops(nnapi(before)) == {"Pad"}  # pad_op_builder.cc: constant mode only
    assert all_taken(nnapi(after)), refused_ops(nnapi(after))


def test_a_pad_of_nothing_goes(tmp_path: Path) -> None:
    before = pad_model([0] * 8, computed=True)  # Swin's maybe_pad when the window divides the map
    after, count = rewritten(PASS, before)
    assert count == 1 and ops(after) == ["Identity", "Identity", "Relu"]
    x = feeds()
    np.testing.assert_array_equal(run(after, x)[0], run(before, x)[0])
    assert device_ops(after, tmp_path)[0] == ["Relu"]  # onnxruntime removes the Identity
    assert all_taken(coreml(after))


def test_computed_pads_are_read_from_the_folded_view() -> None:
    before = pad_model([0, 0, 1, 1, 0, 0, 1, 1], computed=True)
    after, count = rewritten(PASS, before)
    assert count == 1
    x = feeds()
    np.testing.assert_array_equal(run(after, x)[0], run(before, x)[0])
    assert all_taken(coreml(after))


def test_the_concat_form_reaches_the_device(tmp_path: Path) -> None:
    pads, kw = CASES["reflect"]
    after, _ = rewritten(PASS, pad_model(pads, **kw))  # type: ignore[arg-type]
    in_ort, in_app = device_ops(after, tmp_path)
    basic = optimized_ops(after, tmp_path, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)
    for seen in (in_ort, in_app, basic):
        assert "Pad" not in seen and "Concat" in seen and "Slice" in seen, seen


def test_what_cannot_be_written_without_pad_is_left_alone() -> None:
    assert unchanged_by(PASS, pad_model([0, 0, 1, 1, 0, 0, 1, 1], shape=[1, 3, "h", 6]))  # block size unknown
    assert unchanged_by(PASS, pad_model([0, 0, 5, 0, 0, 0, 0, 0], mode="reflect"))  # pad >= dim
    assert unchanged_by(PASS, pad_model([0, 0, -1, 0, 0, 0, 0, 0], mode="edge"))  # crop in a non-constant mode
    runtime = pad_model([0, 0, 1, 1, 0, 0, 1, 1])
    runtime.graph.initializer.pop()
    runtime.graph.input.append(helper.make_tensor_value_info("pads", TensorProto.INT64, [8]))
    assert unchanged_by(PASS, runtime)  # pads given at run time
    relu = helper.make_model(
        helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", F, SHAPE)],
            [helper.make_tensor_value_info("y", F, SHAPE)],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    assert unchanged_by(PASS, relu)
