"""Units behind issue 9 items 7, 9, 11: message shortening, --input dims, tensor byte counts, model size."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from google.protobuf.message import EncodeError
from onnx import TensorProto, helper, numpy_helper

from mobilegen.errors import UsageError, first_line, shorten
from mobilegen.infra.onnx_size import model_bytes, tensor_nbytes
from mobilegen.spec import MAX_DIM, parse_dynamic_spec, parse_input_spec

ORT_OPSET_ERROR = (
    "[ONNXRuntimeError] : 1 : FAIL : Load model from /tmp/m.onnx failed:/onnxruntime_src/onnxruntime/core/graph/"
    "model_load_utils.h:46 void onnxruntime::model_load_utils::ValidateOpsetForDomain(const std::unordered_map"
    "<std::__cxx11::basic_string<char>, int>&, const onnxruntime::logging::Logger&, bool, const std::string&, int) "
    "ONNX Runtime only *guarantees* support for models stamped with official released onnx opset versions. "
    "Opset 99 is under development and support for this is limited. The operator schemas and or other "
    "functionality may change before next ONNX release.\nsecond line"
)


def test_first_line_drops_cxx_frames_and_cuts_at_a_sentence() -> None:
    text = first_line(RuntimeError(ORT_OPSET_ERROR))
    assert "model_load_utils.h" not in text and "std::" not in text
    assert text.startswith("[ONNXRuntimeError] : 1 : FAIL : Load model from /tmp/m.onnx failed: ONNX Runtime only")
    assert text.endswith("limited. …") and len(text) <= 300
    assert "second line" not in text


@pytest.mark.parametrize("text", ["word " * 100, "supercalifragilistic " * 30, "x" * 400])
def test_shorten_never_cuts_mid_word(text: str) -> None:
    out = shorten(text.strip(), 120)
    assert len(out) <= 122 and out.endswith("…")
    if " " in text.strip():
        body = out.removesuffix("…").rstrip()
        assert text.startswith(body) and text[len(body)] == " "


def test_short_text_is_kept_whole() -> None:
    assert first_line(ValueError("Incompatible dimensions")) == "Incompatible dimensions"
    assert first_line(ValueError("")) == "ValueError"


@pytest.mark.parametrize("spec", ["x:1x2147483648", "x:" + "1" * 5000, "x:1x\u0663", "x:\uff13", "x:3\u00b2", "x:1x\u0967"])
def test_input_dims_out_of_range_or_non_ascii(spec: str) -> None:
    with pytest.raises(UsageError):
        parse_input_spec(spec)


def test_largest_dim_and_leading_zeros_are_fine() -> None:
    assert parse_input_spec(f"x:1x{MAX_DIM}").shape == (1, MAX_DIM)
    assert parse_input_spec("x:001x3").shape == (1, 3)


@pytest.mark.parametrize("spec", ["x:\u0663", "x:" + "9" * 5000])
def test_dynamic_axis_must_be_small_ascii(spec: str) -> None:
    with pytest.raises(UsageError, match="malformed --dynamic"):
        parse_dynamic_spec(spec)


@pytest.mark.parametrize("name", ["a\x00", "a\tb", "\x7f", "a\x85"])
def test_input_names_with_control_characters(name: str) -> None:
    with pytest.raises(UsageError, match="control character"):
        parse_input_spec(f"{name}:1x3")


def test_tensor_nbytes() -> None:
    def t(dt: int, dims: list[int]) -> onnx.TensorProto:
        return onnx.TensorProto(name="t", data_type=dt, dims=dims)

    assert tensor_nbytes(t(TensorProto.FLOAT, [2, 3])) == 24
    assert tensor_nbytes(t(TensorProto.BFLOAT16, [3])) == 6
    assert tensor_nbytes(t(TensorProto.INT4, [3])) == 2
    assert tensor_nbytes(t(TensorProto.FLOAT6E2M3, [5])) == 4  # 30 bits
    assert tensor_nbytes(t(TensorProto.FLOAT, [])) == 4
    assert tensor_nbytes(t(TensorProto.STRING, [2])) is None


def _model(n: int) -> onnx.ModelProto:
    w = numpy_helper.from_array(np.zeros(n, np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])
    return helper.make_model(helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y], [w]))


def test_model_bytes_counts_external_data(tmp_path) -> None:
    model = _model(1000)
    inline = model_bytes(model)
    assert inline == model.ByteSize()
    onnx.save_model(model, str(tmp_path / "m.onnx"), save_as_external_data=True, size_threshold=0, location="w.bin")
    external = onnx.load_model(str(tmp_path / "m.onnx"), load_external_data=False)
    assert external.ByteSize() < 4000 <= model_bytes(external)


def test_model_bytes_when_protobuf_cannot_size_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: onnx.ModelProto) -> int:
        raise EncodeError("Failed to serialize proto")

    model = _model(10)
    monkeypatch.setattr(onnx.ModelProto, "ByteSize", refuse)
    assert model_bytes(model) >= 2**31  # past 2 GiB is the only reason protobuf refuses
