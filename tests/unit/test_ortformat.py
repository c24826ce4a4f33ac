"""The .ort canonicalizer: same logical content, same bytes whatever order ORT wrote the resolver in."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from mobilegen.artifacts import OnnxModel
from mobilegen.convert import convert_to_ort
from mobilegen.ortformat import canonicalize, resolver_entries
from mobilegen.spec import IOSpec


def small_model(path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3], np.random.default_rng(0).standard_normal(108).astype(np.float32))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Softmax", ["f"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def test_conversions_are_byte_identical_and_equivalent(tmp_path: Path) -> None:
    src = small_model(tmp_path / "m.onnx")
    model = OnnxModel(path=src, io=IOSpec(()), opset=17, exporter="passthrough")
    blobs = []
    for i in range(4):
        out = tmp_path / f"m{i}.ort"
        convert_to_ort(model, out, tmp_path / f"c{i}.config")
        blobs.append(out.read_bytes())
    assert all(b == blobs[0] for b in blobs)
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    ref = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = ort.InferenceSession(str(tmp_path / "m0.ort"), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_canonicalize_is_idempotent_and_keeps_content(tmp_path: Path) -> None:
    src = small_model(tmp_path / "m.onnx")
    out = tmp_path / "m.ort"
    convert_to_ort(OnnxModel(path=src, io=IOSpec(()), opset=17, exporter="passthrough"), out, tmp_path / "c.config")
    data = out.read_bytes()
    assert canonicalize(data) == data
    assert resolver_entries(canonicalize(data)) == resolver_entries(data)
    assert canonicalize(b"not an ort file") == b"not an ort file"
