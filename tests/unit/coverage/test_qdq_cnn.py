"""A small CNN quantized by onnxruntime.quantization.quantize_static (QDQ format, per-tensor) through the
whole analysis (ORT's level-1 optimisation first), on NNAPI, XNNPACK and CoreML.

What ORT's sources say (ORT main 28a4cfe and the 1.25-dev mirror agree):
- NNAPI takes uint8 QDQ units of Conv/Gemm/Reshape, but no QDQ MaxPool unit (pool_op_builder.cc:
  ``IsNodeUnitTypeSupported`` is true only for QDQ AveragePool). ORT groups DQ → MaxPool → Q into a unit
  only at MaxPool's since_version 12 (shared/utils.cc), so the CNN reaches 100 % in one NNAPI partition
  from opset 22 on (MaxPool-22: DQ, float MaxPool and Q are taken one by one), not at opset 17.
- int8 (QInt8) activations: refused by NNAPI (op_builder_helpers.cc ``IsQuantizedIOSupported``: uint8,
  int8 only as a Conv/Gemm/MatMul weight).
- CoreML has no QuantizeLinear/DequantizeLinear builder: every Q/DQ stays on the CPU and splits the graph.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mobilegen.coverage import CoverageReport, EPTarget, analyze_all


def _cnn(opset: int) -> onnx.ModelProto:
    rng = np.random.default_rng(0)

    def init(name: str, shape: tuple[int, ...], scale: float) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2], name="pool2"),
        helper.make_node("Reshape", ["p2", "shape"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1, name="fc"),
    ]
    inits = [
        init("w1", (8, 3, 3, 3), 0.3), init("b1", (8,), 0.1), init("w2", (16, 8, 3, 3), 0.2), init("b2", (16,), 0.1),
        numpy_helper.from_array(np.array([1, 256], np.int64), "shape"), init("wf", (10, 256), 0.1), init("bf", (10,), 0.1),
    ]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def _quantized(tmp_path: Path, opset: int, int8: bool) -> onnx.ModelProto:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(1)
            self._data = iter([{"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)} for _ in range(4)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._data, None)

    src, dst = tmp_path / "fp32.onnx", tmp_path / "qdq.onnx"
    onnx.save(_cnn(opset), src)
    qt = QuantType.QInt8 if int8 else QuantType.QUInt8
    quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QDQ, activation_type=qt, weight_type=qt,
                    per_channel=False)
    return onnx.load(str(dst))


def _reports(tmp_path: Path, opset: int, int8: bool = False) -> dict[str, CoverageReport]:
    model = _quantized(tmp_path, opset, int8)
    assert sum(n.op_type == "DequantizeLinear" for n in model.graph.node) >= 10  # really a QDQ model
    targets = [EPTarget("nnapi"), EPTarget("xnnpack"), EPTarget("coreml", coreml_format="mlprogram")]
    return {r.ep: r for r in analyze_all(model, targets)}


def _refused(rep: CoverageReport) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for n in rep.nodes:
        if not n.supported:
            out.setdefault(n.op_type, set()).update(n.reasons)
    return out


@pytest.fixture(scope="module")
def u8_opset22(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CoverageReport]:
    return _reports(tmp_path_factory.mktemp("u8_22"), 22)


def test_uint8_qdq_cnn_is_all_nnapi_in_one_partition(u8_opset22: dict[str, CoverageReport]) -> None:
    rep = u8_opset22["nnapi"]
    assert rep.settings["optimized"] is True
    assert rep.supported_nodes == rep.total_nodes > 20
    assert len(rep.partitions) == 1 and rep.verdict == "yes"


def test_nnapi_refuses_the_qdq_maxpool_units_below_opset_22(tmp_path: Path) -> None:
    rep = _reports(tmp_path, 17)["nnapi"]
    refused = [n for n in rep.nodes if not n.supported]
    assert sorted(n.op_type for n in refused) == ["DequantizeLinear"] * 2 + ["MaxPool"] * 2 + ["QuantizeLinear"] * 2
    assert {r.rule for n in refused for r in n.refusals} == {"nnapi.qdq.unit_op"}
    assert all("NNAPI's pool builder takes a QDQ unit only for AveragePool (pool_op_builder.cc), not MaxPool" in n.reasons[0]
               for n in refused)
    assert len(rep.partitions) == 3  # conv1 | conv2 | reshape + gemm, the pools between them on the CPU


def test_int8_qdq_cnn_is_refused_by_nnapi(tmp_path: Path) -> None:
    rep = _reports(tmp_path, 22, int8=True)["nnapi"]
    refused = _refused(rep)
    assert any(r.endswith("is int8: NNAPI Conv takes uint8") for r in refused["Conv"])
    assert any(r.endswith("is int8: NNAPI Gemm takes uint8") for r in refused["Gemm"])
    assert refused["QuantizeLinear"] >= {"QuantizeLinear output is int8: NNAPI quantizes only to uint8"}
    assert rep.supported_nodes == 2  # only the float MaxPools between the units
    assert rep.verdict == "no"


def test_coreml_refuses_every_q_and_dq(u8_opset22: dict[str, CoverageReport]) -> None:
    rep = u8_opset22["coreml"]
    refused = _refused(rep)
    assert refused["QuantizeLinear"] == {"op QuantizeLinear has no CoreML builder"}
    assert refused["DequantizeLinear"] == {"op DequantizeLinear has no CoreML builder"}
    assert len(rep.partitions) >= 2 and rep.verdict == "no"


def test_xnnpack_takes_the_conv_units_not_reshape_or_gemm(tmp_path: Path) -> None:
    rep = _reports(tmp_path, 17)["xnnpack"]
    taken = {n.op_type for n in rep.nodes if n.supported}
    assert {"Conv", "MaxPool"} <= taken
    refused = _refused(rep)
    assert any("XNNPACK's Gemm kernel takes a float32/float16 A only" in r for r in refused["Gemm"])
    assert any("XNNPACK has no kernel for Reshape" in r for r in refused["Reshape"])
    assert refused["QuantizeLinear"] >= {"op QuantizeLinear has no XNNPACK builder"}  # the input's own Q
