"""mobilegen.tasks.graph: the wrapper's standard ONNX nodes compute what mobilegen.tasks.reference
defines; names stay unique (a model whose own names are the wrapper's IO names still works)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from mobilegen.errors import UsageError
from mobilegen.tasks.graph import wrap
from mobilegen.tasks.reference import normalize, pcm_to_float, postprocess_outputs
from mobilegen.tasks.spec import TaskSpec


def classifier(inp: str = "x", out: str = "y", *, opset: int = 17, nhwc: bool = False, inner: str = "pooled") -> onnx.ModelProto:
    """[batch,3,4,6] (or [batch,4,6,3]) → mean over pixels → MatMul → [batch,5]."""
    shape = ["batch", 4, 6, 3] if nhwc else ["batch", 3, 4, 6]
    axes = [1, 2] if nhwc else [2, 3]
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32), "w")
    ax = numpy_helper.from_array(np.array(axes, dtype=np.int64), "axes")
    nodes = [
        helper.make_node("ReduceMean", [inp, "axes"], [inner], keepdims=0) if opset >= 18 else helper.make_node("ReduceMean", [inp], [inner], axes=axes, keepdims=0),
        helper.make_node("MatMul", [inner, "w"], [out]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(inp, TensorProto.FLOAT, shape)], [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["batch", 5])],
                          [w, ax] if opset >= 18 else [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


SPEC = TaskSpec("image-classification", tuple("abcde"), crop=(4, 6), mean=(0.5, 0.4, 0.3), std=(0.2, 0.25, 0.3), scale=1 / 255, softmax=True, top_k=3)


def run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    onnx.checker.check_model(model, full_check=True)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.parametrize(
    "spec",
    [SPEC, replace(SPEC, channels="bgr"), replace(SPEC, top_k=None), replace(SPEC, softmax=False), replace(SPEC, softmax=False, top_k=None), replace(SPEC, layout="nhwc")],
)
def test_wrapped_graph_computes_the_reference(spec: TaskSpec) -> None:
    model = classifier(nhwc=spec.layout == "nhwc")
    wrapped = wrap(model, spec)
    assert wrapped.opset_import == model.opset_import
    assert [(i.name, i.type.tensor_type.elem_type) for i in wrapped.graph.input] == [("image", TensorProto.UINT8)]
    names = [n.name for n in wrapped.graph.node if n.name]
    assert len(names) == len(set(names))
    image = np.random.default_rng(1).integers(0, 256, size=(1, 4, 6, 3), dtype=np.uint8)
    original = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = postprocess_outputs(original.run(None, {"x": normalize(image, spec)}), spec)
    got = run(wrapped, {"image": image})
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.abs(g.astype(np.float64) - w).max() <= 1e-6
    expected_names = ["scores", "indices"] if spec.top_k else ["y"]
    assert [o.name for o in wrapped.graph.output] == expected_names


def test_model_names_that_collide_with_the_wrapper_io() -> None:
    model = classifier(inp="image", out="scores", inner="indices")  # every wrapper IO name taken by the model
    wrapped = wrap(model, SPEC)
    assert [i.name for i in wrapped.graph.input] == ["image"] and [o.name for o in wrapped.graph.output] == ["scores", "indices"]
    image = np.full((1, 4, 6, 3), 200, dtype=np.uint8)
    want = postprocess_outputs(ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"image": normalize(image, SPEC)}), SPEC)
    got = run(wrapped, {"image": image})
    assert got[1].tolist() == want[1].tolist() and np.allclose(got[0], want[0], atol=1e-6)


def test_audio_wrapper() -> None:
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((16, 3)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["wave", "w"], ["y"])], "g", [helper.make_tensor_value_info("wave", TensorProto.FLOAT, ["batch", 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])], [w])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    spec = TaskSpec("audio", sample_rate=16000, softmax=True)
    wrapped = wrap(model, spec)
    pcm_input = wrapped.graph.input[0]
    assert pcm_input.name == "pcm" and pcm_input.type.tensor_type.elem_type == TensorProto.FLOAT
    assert [d.dim_value for d in pcm_input.type.tensor_type.shape.dim] == [1, 16]
    pcm = np.random.default_rng(2).integers(-32768, 32768, size=(1, 16)).astype(np.int16)
    want = postprocess_outputs(ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"wave": pcm_to_float(pcm)}), spec)
    got = run(wrapped, {"pcm": pcm.astype(np.float32)})
    assert np.abs(got[0] - want[0]).max() <= 1e-6


def test_old_opset_refused() -> None:
    with pytest.raises(UsageError, match="--task needs opset 11 or later, the model is opset 10"):
        wrap(classifier(opset=10), SPEC)
