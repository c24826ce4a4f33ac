"""``surely_under``: a model's size bound told from its tensors' dims, never above what model_bytes measures."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from mobilegen.infra.onnx_size import model_bytes, surely_under


def _model(weights: list[onnx.TensorProto]) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    node = helper.make_node("Identity", ["x"], ["y"])
    return helper.make_model(helper.make_graph([node], "g", [x], [y], weights), opset_imports=[helper.make_opsetid("", 17)])


def test_surely_under_is_a_safe_bound() -> None:
    raw = numpy_helper.from_array(np.zeros((1024, 1024), np.float32), "w")  # 4 MiB of raw_data
    listed = helper.make_tensor("v", TensorProto.INT64, [4096], [-1] * 4096)  # varints: 10 bytes each, 8 by dims
    for m in (_model([raw]), _model([listed]), _model([raw, listed])):
        size = model_bytes(m)
        assert surely_under(m, 1 << 31)
        assert not surely_under(m, size)  # never claims "under" a limit the model reaches
        assert not surely_under(m, (256 << 20) + 1)  # the graph's own allowance counts too


def test_external_or_string_tensors_are_measured() -> None:
    s = helper.make_tensor("s", TensorProto.STRING, [1], [b"a"])
    assert not surely_under(_model([s]), 1 << 31)
    ext = numpy_helper.from_array(np.zeros(4, np.float32), "e")
    ext.data_location = TensorProto.EXTERNAL
    ext.external_data.add(key="location", value="w.bin")
    ext.ClearField("raw_data")
    assert not surely_under(_model([ext]), 1 << 31)


def test_stored_bytes_sizes_raw_data_by_its_length_and_the_rest_by_serializing() -> None:
    """The cheap size the fix stage and the coverage analysis ask of every weight: raw data by its length
    (never ``ByteSize()``, which upb computes by serializing the message), typed fields and strings by the
    message's size; a tensor whose dims claim more than it stores is sized by what it stores."""
    from mobilegen.infra.onnx_size import stored_bytes

    raw = numpy_helper.from_array(np.ones((256, 64), np.float32), "w")
    assert stored_bytes(raw) == 256 * 64 * 4 == len(raw.raw_data)
    typed = helper.make_tensor("t", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])
    strings = helper.make_tensor("s", TensorProto.STRING, [2], [b"ab", b"cd"])
    for t in (typed, strings):
        assert not t.HasField("raw_data") and stored_bytes(t) == t.ByteSize()
    liar = TensorProto(name="x", data_type=TensorProto.FLOAT, dims=[1 << 30], raw_data=b"\0" * 8)  # dims claim 4 GiB
    assert stored_bytes(liar) == 8
