"""The Runtime-style conversion reads the operators of a second, Fixed-style conversion only to write
``required_operators.config``; that one converts the model without its large weights (issue 27). Oracle:
the same conversion of the whole model, as onnxruntime's own converter does it — float and QDQ models,
whose large weights ORT folds, fuses and (QDQ) rewrites."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mobilegen import convert


def _dense(path: Path) -> Path:
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n) for n, s in (("w1", (512, 256)), ("b1", (512,)), ("w2", (512, 128)))]
    nodes = [
        helper.make_node("Transpose", ["w1"], ["w1t"], perm=[1, 0]),
        helper.make_node("MatMul", ["x", "w1t"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "dense", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 128])], inits,
    )  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    return path


def _qdq(path: Path, tmp: Path) -> Path:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    src = _dense(tmp / "float.onnx")

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self.data = iter([{"x": np.random.default_rng(i).standard_normal((1, 256)).astype(np.float32)} for i in range(4)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.data, None)

    quantize_static(str(src), str(path), Reader(), quant_format=QuantFormat.QDQ, weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8)
    return path


@pytest.mark.parametrize("kind", ["float", "qdq"])
def test_same_operators_as_the_whole_model(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _dense(tmp_path / "m.onnx") if kind == "float" else _qdq(tmp_path / "m.onnx", tmp_path)
    made: list[Path] = []
    real = convert._weightless_copy

    def spy(src: Path, folder: Path) -> Path:
        made.append(real(src, folder))
        return made[-1]

    monkeypatch.setattr(convert, "_weightless_copy", spy)
    (tmp_path / "a").mkdir()
    light = convert._convert(model, tmp_path / "a" / "m.ort", tmp_path / "a", runtime=True)
    assert made and made[0] != model and made[0].stat().st_size < model.stat().st_size // 10
    monkeypatch.setattr(convert, "_weightless_copy", lambda src, folder: src)
    (tmp_path / "b").mkdir()
    whole = convert._convert(model, tmp_path / "b" / "m.ort", tmp_path / "b", runtime=True)
    assert light == whole
