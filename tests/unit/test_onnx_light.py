"""Checking and shape inference with the large weights lifted out give what onnx gives on the whole model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mobilegen import passes
from mobilegen.artifacts import OnnxModel
from mobilegen.export import onnx_io as onnx_light
from mobilegen.spec import IOSpec


def _model(big: int = 600) -> onnx.ModelProto:
    w = numpy_helper.from_array(np.random.default_rng(0).random((big, big), dtype=np.float32), "W")  # > 1 MiB
    shape = numpy_helper.from_array(np.array([1, -1], dtype=np.int64), "S")  # small: data propagation reads it
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"]), helper.make_node("Reshape", ["y", "S"], ["z"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, big])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["a", "b"])],
        [w, shape],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_same_bytes_as_onnx_on_the_whole_model() -> None:
    model = _model()
    expected = onnx.shape_inference.infer_shapes(model, data_prop=True).SerializeToString()
    got, _ = onnx_light.check_and_infer(model, model.ir_version)
    assert got.SerializeToString() == expected
    assert len(got.graph.initializer[0].raw_data) == 600 * 600 * 4


def test_a_broken_graph_is_refused_and_the_model_left_whole() -> None:
    model = _model()
    model.graph.node[0].input[1] = "missing"
    before = model.SerializeToString()
    with pytest.raises(onnx.checker.ValidationError):
        onnx_light.check_and_infer(model, model.ir_version)
    assert model.SerializeToString() == before  # the weights are back after the failure


def test_cache_key_bytes_are_what_protobuf_writes() -> None:
    model = _model(big=8)
    om = OnnxModel(path=Path("unused.onnx"), io=IOSpec(inputs=()), opset=17, exporter="passthrough", proto=model)
    assert passes.cache_keys() == ("COREML_CACHE_KEY",)  # the CoreML provider's
    data = b"".join(passes.serialized_with_cache_keys(om, passes.cache_keys()))
    assert data == model.SerializeToString()  # the key was appended where protobuf puts it
    key = {p.key: p.value for p in onnx.load_from_string(data).metadata_props}["COREML_CACHE_KEY"]
    assert len(key) == 32
    assert b"".join(passes.serialized_with_cache_keys(om, passes.cache_keys())) == data  # idempotent: the old key is replaced
    two = b"".join(passes.serialized_with_cache_keys(om, ("A_KEY", "B_KEY")))
    assert two == model.SerializeToString()  # two keys: both appended as protobuf writes them
    meta = {p.key: p.value for p in onnx.load_from_string(two).metadata_props}
    assert "COREML_CACHE_KEY" in meta and meta["A_KEY"] == meta["B_KEY"] and len(meta["A_KEY"]) == 32


def test_check_and_infer_lowers_the_ir_version_like_before() -> None:
    model = _model()
    model.ir_version = 10
    expected = onnx.ModelProto.FromString(model.SerializeToString())
    expected.ir_version = 8  # opset 17 needs IR 8
    want = onnx.shape_inference.infer_shapes(expected, data_prop=True).SerializeToString()
    inferred, size = onnx_light.check_and_infer(model, 8)
    assert inferred.SerializeToString() == want
    assert abs(size - len(want)) < 1024  # measured without serializing the weights
    broken = _model()
    broken.graph.node[0].input[1] = "missing"
    with pytest.raises(onnx.checker.ValidationError):
        onnx_light.check_and_infer(broken, 8)


def test_digest_is_the_sha256_of_the_bytes_written() -> None:
    import hashlib

    model = _model(big=8)
    om = OnnxModel(path=Path("unused.onnx"), io=IOSpec(inputs=()), opset=17, exporter="passthrough", proto=model)
    for keys in (passes.cache_keys(), ("A_KEY", "B_KEY")):
        chunks, digest = passes.serialized_with_digest(om, keys)
        assert digest == hashlib.sha256(b"".join(chunks)).hexdigest()
    model.functions.add(name="f", domain="local")  # a field after metadata_props: serialized whole instead
    chunks, digest = passes.serialized_with_digest(om, passes.cache_keys())
    assert len(chunks) == 1
    assert digest == hashlib.sha256(chunks[0]).hexdigest()
