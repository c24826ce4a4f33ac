"""The analysis of an in-memory model hands onnxruntime the graph without its large weights (issue 27:
a 300M-parameter build wrote, parsed and held a copy of 1.2 GB per graph pass tried). Oracle: the same
analysis of the model written whole (``source=``), on graphs where ORT_ENABLE_BASIC folds and fuses
large weights (Transpose of a weight, Conv + BatchNormalization, MatMul + Add), with dynamic dims."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mobilegen.coverage import analyze_all
from mobilegen.coverage.analyze import _EXTERNAL_MIN_BYTES, save_weightless
from mobilegen.coverage.target import EPTarget

TARGETS = [
    EPTarget("nnapi", android_api=29),
    EPTarget("coreml", coreml_format="mlprogram"),
    EPTarget("coreml", coreml_format="neuralnetwork"),
    EPTarget("xnnpack"),
]


def _w(name: str, *shape: int, seed: int = 0) -> onnx.TensorProto:
    return numpy_helper.from_array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), name)


def _dense(batch: str | int) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Transpose", ["w1"], ["w1t"], perm=[1, 0]),  # folded by constant folding: a new large initializer
        helper.make_node("MatMul", ["x", "w1t"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["h2"]),
        helper.make_node("Mul", ["h2", "one"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 128])],
        [_w("w1", 512, 256), _w("b1", 512, seed=1), _w("w2", 512, 128, seed=2), numpy_helper.from_array(np.array(1.0, np.float32), "one")],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def _conv_bn() -> onnx.ModelProto:
    c = 128
    nodes = [
        helper.make_node("Conv", ["x", "k", "kb"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"]),  # fused into the Conv's weights
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["y"]),
    ]
    scale = numpy_helper.from_array(np.full(c, 0.5, np.float32), "s")
    var = numpy_helper.from_array(np.full(c, 2.0, np.float32), "v")
    graph = helper.make_graph(
        nodes, "convbn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 1, 1])],
        [_w("k", c, 64, 3, 3), _w("kb", c, seed=1), scale, _w("bb", c, seed=2), _w("m", c, seed=3), var],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


@pytest.mark.parametrize("make", [lambda: _dense(1), lambda: _dense("batch"), _conv_bn], ids=["dense-static", "dense-dynamic", "conv-bn"])
def test_same_reports_as_the_whole_model(make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model = make()
    whole = tmp_path / "whole.onnx"
    onnx.save(model, str(whole))
    from_file = analyze_all(None, TARGETS, source=whole)
    in_memory = analyze_all(model, TARGETS)
    assert in_memory == from_file
    assert any(r.total_nodes < len(model.graph.node) for r in from_file)  # ORT did fold or fuse something


def test_large_weights_are_not_written(tmp_path: Path) -> None:
    model = _dense("batch")
    path = tmp_path / "model.onnx"
    save_weightless(model, path)
    large = sum(t.ByteSize() for t in model.graph.initializer if t.ByteSize() >= _EXTERNAL_MIN_BYTES)
    assert large > 500_000 and path.stat().st_size < 20_000
    zeros = tmp_path / "zeros.bin"
    assert zeros.stat().st_size == 512 * 256 * 4  # the largest weight's bytes: every one maps its start
    if os.name == "posix":
        assert zeros.stat().st_blocks * 512 < zeros.stat().st_size  # sparse: nothing was written
    light = onnx.load(str(path), load_external_data=False)
    assert [t.name for t in light.graph.initializer] == [t.name for t in model.graph.initializer]
    assert [list(t.dims) for t in light.graph.initializer] == [list(t.dims) for t in model.graph.initializer]
