"""``gelu-tanh``: the approximate GELU, only on request; its measured error against exact GELU."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import helper
from test_gelu import TANH_OPS, _model, exact_gelu, feeds, gelu_op, half_first, torchscript_erf
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

from mobilegen.passes.gelu_tanh import PASS

SIGMOID_FORM = ["Mul", "Mul", "Add", "Mul", "Sigmoid", "Mul"]


def test_it_is_approximate_and_asked_for_as_gelu() -> None:
    assert (PASS.name, PASS.exact, PASS.approximate_as) == ("gelu-tanh", False, "gelu")


def test_exact_gelu_becomes_the_tanh_approximation() -> None:
    for build, source_nodes in ((torchscript_erf, 5), (half_first, 5), (gelu_op, 1)):
        model = build()
        after, count = rewritten(PASS, model)
        assert count == source_nodes
        assert [n.op_type for n in after.graph.node] == SIGMOID_FORM
        assert len(SIGMOID_FORM) == TANH_OPS
        assert refused_ops(nnapi(model)) & {"Erf", "Gelu"}
        assert all_taken(nnapi(after))


def test_it_computes_onnxruntimes_tanh_gelu() -> None:
    """The same function as the Gelu op's approximate="tanh" (so the error below is the approximation's)."""
    after, _ = rewritten(PASS, torchscript_erf())
    x = feeds()
    np.testing.assert_allclose(run(after, x)[0], run(gelu_op("tanh"), x)[0], rtol=1e-6, atol=1e-6)


def test_measured_error_against_exact_gelu() -> None:
    x = np.linspace(-10.0, 10.0, 200_001).astype(np.float32)
    after, _ = rewritten(PASS, torchscript_erf(shape=["n"]))
    got = run(after, {"x": x})[0].astype(np.float64)
    err = np.abs(got - exact_gelu(x))
    assert 4.6e-4 < err.max() < 4.8e-4  # at |x| ~ 2.7: beyond the default gate (atol 1e-4)
    assert abs(abs(float(x[err.argmax()])) - 2.7) < 0.05
    assert math.isclose(float(np.abs(run(after, {"x": np.array([-30.0], np.float32)})[0][0])), 0.0, abs_tol=1e-30)


def test_tanh_form_reaches_the_device_unfused(tmp_path: Path) -> None:
    after, _ = rewritten(PASS, torchscript_erf())
    in_ort, in_app = device_ops(after, tmp_path)
    assert in_ort == in_app == SIGMOID_FORM
    fused = {"FastGelu", "QuickGelu", "Gelu", "BiasGelu"}
    assert not fused & set(optimized_ops(after, tmp_path, ort.GraphOptimizationLevel.ORT_ENABLE_ALL))


def test_graphs_without_a_gelu_are_left_alone() -> None:
    assert unchanged_by(PASS, _model([helper.make_node("Relu", ["x"], ["y"])]))
