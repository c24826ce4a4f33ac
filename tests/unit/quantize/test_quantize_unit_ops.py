"""int8 recipes quantize only the ops whose QDQ node units their provider takes (read from its QdqTable),
and the engine leaves float the consumer that would wrap a float op into a unit the provider refuses."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mobilegen.coverage import EPTarget, analyze
from mobilegen.quantize import QuantizeOptions, Recipe, load_calibration, quantize, recipe_for
from mobilegen.quantize.recipes import REMOVABLE, unit_ops
from mobilegen.spec import IOSpec, TensorSpec


def _recipe(chain: tuple[str, ...]) -> Recipe:
    r = recipe_for("int8", chain)
    assert isinstance(r, Recipe)
    return r


def test_nnapi_recipe_quantizes_its_unit_ops_only() -> None:
    from mobilegen.providers.nnapi.qdq import UNIT_OPS

    r = _recipe(("nnapi", "xnnpack"))
    assert r.op_types == (*(op for op in UNIT_OPS if op != "Softmax"), *REMOVABLE)
    assert not {"GlobalAveragePool", "ReduceMean", "MaxPool", "Sigmoid", "Softmax"} & set(r.op_types)
    # QA: a calibrated Softmax output never has NNAPI's fixed 1/256 scale, so its unit went to the CPU
    left = dict(unit_ops("nnapi", "uint8").left_float)
    assert "nnapi.qdq.fixed_output" in left["Softmax"] and "Softmax" in r.reason
    assert "every other op stays float" in r.reason and "IsNodeUnitTypeSupported" in r.reason


def test_xnnpack_recipe_leaves_gemm_softmax_and_resize_float() -> None:
    r = _recipe(("xnnpack",))
    assert r.op_types == ("Conv", "MaxPool", "ConvTranspose", *REMOVABLE)
    left = dict(unit_ops("xnnpack", "int8").left_float)
    assert set(left) == {"Softmax", "Resize"}
    assert "uint8 only" in left["Softmax"] and "xnnpack.qdq.resize" in left["Resize"]
    assert "Gemm/MatMul stay float" in r.reason and "Resize" in r.reason and "Softmax" in r.reason


def test_cpu_keeps_the_default_set_and_never_taken_rules_exist() -> None:
    from mobilegen.providers.nnapi.qdq import RULES as NNAPI_RULES
    from mobilegen.providers.xnnpack.qdq import RULES

    assert _recipe(()).op_types == ()
    from mobilegen.providers import get

    assert get("xnnpack").never_taken_qdq_rules <= set(RULES)
    assert get("nnapi").never_taken_qdq_rules <= set(NNAPI_RULES)
    # a uint8 XNNPACK recipe would take Softmax: the filter reads the table's types, not a list
    assert "Softmax" in unit_ops("xnnpack", "uint8").taken


def _toy(path: Path, pool: str, *, named: bool = True) -> Path:
    """x [1,3,16,16] → Conv → Relu → (ReduceMean over H,W | GlobalAveragePool → Flatten) → Gemm → y [1,4]."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(np.zeros(8, np.float32), "b"),
        numpy_helper.from_array(rng.normal(0, 0.3, (4, 8)).astype(np.float32), "gw"),
        numpy_helper.from_array(np.zeros(4, np.float32), "gb"),
    ]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu")]  # fmt: skip
    if pool == "reducemean":
        inits.append(numpy_helper.from_array(np.array([2, 3], np.int64), "axes"))
        nodes.append(helper.make_node("ReduceMean", ["r", "axes"], ["m"], name="mean", keepdims=0))
    else:
        nodes += [helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"), helper.make_node("Flatten", ["g"], ["m"], name="flat")]
    nodes.append(helper.make_node("Gemm", ["m", "gw", "gb"], ["y"], name="fc", transB=1))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    if not named:
        for node in nodes:
            node.name = ""
    model = helper.make_model(helper.make_graph(nodes, "toy", [x], [y], inits), opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    onnx.save(model, str(path))
    return path


def _quantize(src: Path, chain: tuple[str, ...], tmp_path: Path) -> onnx.ModelProto:
    io = IOSpec((TensorSpec("x", "float32", (1, 3, 16, 16)),), (TensorSpec("y", "float32", (1, 4)),))
    opts = QuantizeOptions(mode="int8", calibration="random")
    dest = tmp_path / f"{src.stem}.{chain[0]}.onnx"
    q = quantize(src, _recipe(chain), load_calibration(opts, io), dest)
    assert q.quantized_nodes >= 1 and not list(tmp_path.glob("*.tmp"))
    return onnx.load(str(dest))


@pytest.mark.parametrize(("pool", "named"), [("reducemean", True), ("gap", True), ("reducemean", False)])
def test_nnapi_takes_the_whole_quantized_model(pool: str, named: bool, tmp_path: Path) -> None:
    """Before: the pool was quantized (or wrapped in a unit by the Gemm's input Q, which ORT's QDQ propagation
    moves across the Flatten's Reshape): NNAPI refused it with its DQ and Q, 2 partitions. Unnamed nodes get
    names, so the Gemm can be left float."""
    model = _quantize(_toy(tmp_path / f"{pool}.onnx", pool, named=named), ("nnapi",), tmp_path)
    report = analyze(model, EPTarget("nnapi", android_api=29))
    assert (report.supported_nodes, len(report.partitions)) == (report.total_nodes, 1), [
        (n.name, n.reasons) for n in report.nodes if n.reasons
    ]
    ops = [n.op_type for n in model.graph.node]
    assert "QuantizeLinear" in ops and ops.count("DequantizeLinear") >= 2  # the Conv stays quantized
    gemm = next(n for n in model.graph.node if n.op_type == "Gemm")
    producers = {o: n.op_type for n in model.graph.node for o in n.output}
    assert producers.get(gemm.input[1]) is None  # the Gemm was left float: its weight is the float initializer


@pytest.mark.parametrize("pool", ["reducemean", "gap"])
def test_xnnpack_takes_at_least_what_fp32_takes(pool: str, tmp_path: Path) -> None:
    src = _toy(tmp_path / f"{pool}.onnx", pool)
    fp32 = analyze(onnx.load(str(src)), EPTarget("xnnpack"))
    model = _quantize(src, ("xnnpack",), tmp_path)
    report = analyze(model, EPTarget("xnnpack"))
    assert report.supported_nodes >= fp32.supported_nodes, [(n.name, n.reasons) for n in report.nodes if n.reasons]
    assert {n.op_type for n in model.graph.node if n.op_type in ("Gemm", "MatMul")} == {"Gemm"}  # float Gemm
    assert {"conv", "fc"} <= {name for part in report.partitions for name in part}


def test_qnn_fp16_takes_every_htp_arch_the_flag_takes() -> None:
    """--qnn-htp-arch takes 79 and 81 (mobilegen.providers.qnn.HTP_ARCHS); the recipe refused them (exit 2)."""
    from mobilegen.providers.qnn import HTP_ARCHS
    from mobilegen.quantize import Refusal

    for arch in HTP_ARCHS:
        r = recipe_for("fp16", ("qnn",), qnn_htp_arch=arch)
        assert isinstance(r, Recipe if int(arch) >= 73 else Refusal), arch
    assert isinstance(recipe_for("int8", ("qnn",), qnn_htp_arch="81"), Recipe)
