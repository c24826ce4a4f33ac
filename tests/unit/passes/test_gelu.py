"""``gelu``: exact GELU without Erf, from the Gelu op and from the exported Erf patterns; its error bound;
and a form onnxruntime does not fuse back."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from transformer_checks import (
    all_taken,
    device_ops,
    nnapi,
    optimized_ops,
    refused_ops,
    rewritten,
    run,
    unchanged_by,
)

from mobilegen.passes import gelu
from mobilegen.passes.gelu import PASS

SHAPE = [2, 8, 32]
ERF_FREE_OPS = 31  # nodes per exact GELU
TANH_OPS = 6


def _const(name: str, value: float) -> onnx.NodeProto:
    """A scalar Constant node, as the TorchScript exporter writes them."""
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(value, np.float32)))


def _model(nodes: list[onnx.NodeProto], *, opset: int = 17, shape: list[object] | None = None,
           extra: list[onnx.OperatorSetIdProto] | None = None, outputs: tuple[str, ...] = ("y",)) -> onnx.ModelProto:
    shape = SHAPE if shape is None else shape
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, shape) for o in outputs],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), *(extra or [])], ir_version=8)


def torchscript_erf(opset: int = 17, shape: list[object] | None = None) -> onnx.ModelProto:
    """What torch.onnx.export(dynamo=False) writes for nn.GELU(): Div, Erf, Add, Mul(x, .), Mul(., 0.5)."""
    return _model(
        [
            _const("s2", math.sqrt(2.0)),
            helper.make_node("Div", ["x", "s2"], ["d"]),
            helper.make_node("Erf", ["d"], ["e"]),
            _const("one", 1.0),
            helper.make_node("Add", ["e", "one"], ["a"]),
            helper.make_node("Mul", ["x", "a"], ["m"]),
            _const("half", 0.5),
            helper.make_node("Mul", ["m", "half"], ["y"]),
        ],
        opset=opset,
        shape=shape,
    )


def half_first() -> onnx.ModelProto:
    """Hugging Face's x * 0.5 * (1 + erf(x * 1/sqrt(2))), constants as initializers."""
    model = _model(
        [
            helper.make_node("Mul", ["x", "half"], ["h"]),
            helper.make_node("Mul", ["inv_s2", "x"], ["d"]),
            helper.make_node("Erf", ["d"], ["e"]),
            helper.make_node("Add", ["one", "e"], ["a"]),
            helper.make_node("Mul", ["h", "a"], ["y"]),
        ]
    )
    for name, v in (("half", 0.5), ("inv_s2", math.sqrt(0.5)), ("one", 1.0)):
        model.graph.initializer.append(numpy_helper.from_array(np.array(v, np.float32), name))
    return model


def half_of_sum() -> onnx.ModelProto:
    """x * ((1 + erf(x / sqrt(2))) * 0.5)."""
    model = _model(
        [
            helper.make_node("Div", ["x", "s2"], ["d"]),
            helper.make_node("Erf", ["d"], ["e"]),
            helper.make_node("Add", ["e", "one"], ["a"]),
            helper.make_node("Mul", ["a", "half"], ["p"]),
            helper.make_node("Mul", ["p", "x"], ["y"]),
        ]
    )
    for name, v in (("half", 0.5), ("s2", math.sqrt(2.0)), ("one", 1.0)):
        model.graph.initializer.append(numpy_helper.from_array(np.array(v, np.float32), name))
    return model


def gelu_op(approximate: str = "none") -> onnx.ModelProto:
    """What torch.onnx.export(dynamo=True) writes at its default opset 20."""
    return _model([helper.make_node("Gelu", ["x"], ["y"], approximate=approximate)], opset=20)


def ms_gelu() -> onnx.ModelProto:
    return _model([helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft")], extra=[helper.make_opsetid("com.microsoft", 1)])


def feeds(scale: float = 3.0) -> dict[str, np.ndarray]:
    return {"x": (np.random.default_rng(5).standard_normal(SHAPE) * scale).astype(np.float32)}


def exact_gelu(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    return np.array([0.5 * v * math.erfc(-v / math.sqrt(2.0)) if math.isfinite(v) else max(v, 0.0) for v in x64.ravel()]).reshape(x.shape)


EXACT: dict[str, tuple[Callable[[], onnx.ModelProto], int]] = {
    "torchscript": (torchscript_erf, 5),
    "half-first": (half_first, 5),
    "half-of-sum": (half_of_sum, 5),
    "gelu-op": (gelu_op, 1),
    "com.microsoft": (ms_gelu, 1),
}


@pytest.mark.parametrize("form", list(EXACT))
def test_exact_gelu_becomes_ops_nnapi_takes(form: str) -> None:
    build, source_nodes = EXACT[form]
    model = build()
    after, count = rewritten(PASS, model)
    assert count == source_nodes
    kinds = [n.op_type for n in after.graph.node]
    assert len(kinds) == ERF_FREE_OPS and "Erf" not in kinds and "Gelu" not in kinds
    x = feeds()
    got, ref = run(after, x)[0], run(model, x)[0]
    truth = exact_gelu(x["x"])
    assert np.abs(got - truth).max() <= 2.5e-7  # within half an ulp of float32 GELU at these |x|
    np.testing.assert_allclose(got, ref, rtol=0, atol=6e-7)

    before_report, after_report = nnapi(model), nnapi(after)
    assert refused_ops(before_report) & {"Erf", "Gelu"}
    assert all_taken(after_report), refused_ops(after_report)


def test_error_bound_over_the_float32_range() -> None:
    """The documented bounds: the polynomial's own error (float64) and the graph's under onnxruntime."""
    a = np.concatenate([np.linspace(0.0, 16.0, 160_001)[1:], np.geomspace(1e-9, 1e-1, 500)])
    t = 1.0 / (1.0 + gelu.P_SCALE * a)
    approx = a * t * np.polyval(np.array(gelu.COEFFS[::-1]), t)
    exact = np.array([v * 0.5 * math.erfc(v / math.sqrt(2.0)) * math.exp(v * v / 2.0) for v in a])
    assert np.max(np.abs(approx / exact - 1.0)) < 1.1e-8  # relative error of a * Phi(-a)

    x = np.concatenate([np.linspace(-20.0, 20.0, 400_001), [np.inf, -np.inf, 0.0, 1e30, -1e30]]).astype(np.float32)
    model = torchscript_erf(shape=["n"])
    after, _ = rewritten(PASS, model)
    got = run(after, {"x": x})[0].astype(np.float64)
    ref = run(model, {"x": x})[0].astype(np.float64)
    truth = exact_gelu(x)
    finite = np.isfinite(x)
    err_new = np.abs(got[finite] - truth[finite])
    err_old = np.abs(ref[finite] - truth[finite])
    assert err_new.max() <= 2.4e-7 < err_old.max()  # the Erf graph itself is off by 4.5e-7
    neg = (x[finite] > -10) & (x[finite] < -1)
    assert np.max(err_new[neg] / np.abs(truth[finite][neg])) < 5e-6  # no cancellation for x < 0
    assert got[~finite].tolist() == [np.inf, 0.0]  # the Erf graph gives NaN for -inf


def test_the_models_tanh_gelu_is_rewritten_exactly() -> None:
    model = gelu_op("tanh")
    after, count = rewritten(PASS, model)
    assert count == 1
    assert [n.op_type for n in after.graph.node] == ["Mul", "Mul", "Add", "Mul", "Sigmoid", "Mul"]
    x = feeds()
    np.testing.assert_allclose(run(after, x)[0], run(model, x)[0], rtol=1e-6, atol=1e-6)
    assert refused_ops(nnapi(model)) == {"Gelu"}
    assert all_taken(nnapi(after))


@pytest.mark.parametrize("build", [torchscript_erf, gelu_op], ids=["opset17-erf", "opset20-gelu"])
def test_rewritten_gelu_reaches_the_device_unfused(build: Callable[[], onnx.ModelProto], tmp_path: Path) -> None:
    after, _ = rewritten(PASS, build())
    in_ort, in_app = device_ops(after, tmp_path)
    assert len(in_ort) == len(in_app) == ERF_FREE_OPS
    fused = {"Erf", "Gelu", "FastGelu", "BiasGelu", "QuickGelu"}
    assert not fused & set(in_ort) and not fused & set(in_app)
    assert not fused & set(optimized_ops(after, tmp_path, ort.GraphOptimizationLevel.ORT_ENABLE_ALL))
    tanh_after, _ = rewritten(PASS, gelu_op("tanh"))
    assert not fused & set(optimized_ops(tanh_after, tmp_path, ort.GraphOptimizationLevel.ORT_ENABLE_ALL))


def test_the_erf_pattern_is_fused_at_opset_20(tmp_path: Path) -> None:
    """Why the rewrite must not keep an Erf: at opset >= 20 Level1 GeluFusion makes it a Gelu again."""
    in_ort, _ = device_ops(torchscript_erf(opset=20), tmp_path)
    assert in_ort == ["Gelu"]


def test_graphs_without_a_gelu_are_left_alone() -> None:
    plain = _model([helper.make_node("Relu", ["x"], ["y"])])
    assert unchanged_by(PASS, plain)
    other_erf = _model([helper.make_node("Div", ["x", "two"], ["d"]), helper.make_node("Erf", ["d"], ["y"])])
    other_erf.graph.initializer.append(numpy_helper.from_array(np.array(2.0, np.float32), "two"))
    assert unchanged_by(PASS, other_erf)  # an Erf, but no GELU around it
    shared = torchscript_erf()
    shared.graph.output.append(helper.make_tensor_value_info("e", TensorProto.FLOAT, SHAPE))
    assert unchanged_by(PASS, shared)  # the erf value is also a graph output: it must stay
