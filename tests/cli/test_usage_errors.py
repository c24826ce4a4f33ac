"""Usage errors a new user ran into: each case gets one line, its documented exit code, and nothing left behind."""

from __future__ import annotations

from pathlib import Path

import onnx
from cli_helpers import assert_fails, invoke
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parents[2]
CNN = ROOT / "examples" / "mobilenet_tiny.pt"


def _custom_op_model(path: Path) -> Path:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Foo", ["h"], ["y"], domain="my.custom")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my.custom", 1)])
    model.ir_version = 8
    onnx.save_model(model, str(path))
    return path


def test_custom_op_onnx_is_a_load_error_not_a_bug(tmp_path: Path) -> None:
    model = _custom_op_model(tmp_path / "custom.onnx")
    line = assert_fails(invoke("export", model, "-o", tmp_path / "c.onnx"), 3, "onnxruntime cannot run custom.onnx", "custom")
    assert "mobilegen-" not in line  # no internal staging path in the message
    assert_fails(invoke("package", model, "--android", "-o", tmp_path / "pkg"), 3, "onnxruntime cannot run")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["custom.onnx"]


def test_convert_output_must_be_an_ort_file(tmp_path: Path) -> None:
    for name in ("noext", "x.onnx"):
        assert_fails(invoke("convert", CNN, "--input", "image:1x3x64x64", "-o", tmp_path / name), 2, "does not name an .ort file")
    assert list(tmp_path.iterdir()) == []


def test_zip_path_given_as_the_output_folder(tmp_path: Path) -> None:
    assert_fails(invoke("android", CNN, "--input", "image:1x3x64x64", "--zip", "-o", tmp_path / "pk.zip"), 2, "names the zip", f"-o {tmp_path / 'pk'} with --zip")
    assert list(tmp_path.iterdir()) == []


def test_android_api_needs_nnapi(tmp_path: Path) -> None:
    assert_fails(invoke("android", CNN, "--input", "image:1x3x64x64", "--android-api", "30", "-o", tmp_path / "a"), 2, "--android-api given without --nnapi")
    assert list(tmp_path.iterdir()) == []


def test_output_name_count_is_said_in_good_english(tmp_path: Path) -> None:
    # "the model has 1 outputs"
    model = tmp_path / "relu.onnx"
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(model))
    line = assert_fails(invoke("export", model, "-o", tmp_path / "o.onnx", "--output-name", "a", "--output-name", "b"), 2)
    assert line.startswith("error: --output-name given 2 times, the model has 1 output — name every output"), line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["relu.onnx"]
