"""Small, real graph passes and models for the fix-stage tests (the pass library's own passes are tested
in tests/unit/passes; these exercise the machinery around them, whatever passes exist).

- ``test-sum2-add``: Sum of two inputs -> Add (exact; NNAPI has no Sum builder, so it helps NNAPI);
- ``test-mul2-sum``: x * 2 -> Sum(x, x) (exact, but NNAPI refuses Sum: always worse for NNAPI);
- ``test-relu-max``: Relu(x) -> Max(x, 0) (exact; NNAPI takes both: no provider gains);
- ``test-erf-tanh``: Erf(x) -> Tanh(2/sqrt(pi) x) (approximate, ``--approximate erf-test``; helps NNAPI);
- ``test-boom``: raises; ``test-drops-weights``: removes an initializer (breaks the pass contract).

``nnapi_with(*passes)`` is NNAPI (rules, partitioning) declaring only the given passes, registered under
its own name for the unit tests, or put in place of ``nnapi`` with ``patched_fixes`` for builds.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from mobilegen import providers
from mobilegen.passes import registry
from mobilegen.passes.base import GraphPass


def _onnx_nodes(model: onnx.ModelProto, op: str) -> list[onnx.NodeProto]:
    return [n for n in model.graph.node if n.op_type == op and n.domain in ("", "ai.onnx")]


def _sum2_add(model: onnx.ModelProto) -> int:
    nodes = [n for n in _onnx_nodes(model, "Sum") if len(n.input) == 2]
    for n in nodes:
        n.op_type = "Add"
    return len(nodes)


def _mul2_sum(model: onnx.ModelProto) -> int:
    twos = {i.name for i in model.graph.initializer if numpy_helper.to_array(i).size == 1 and float(numpy_helper.to_array(i).ravel()[0]) == 2.0}
    nodes = [n for n in _onnx_nodes(model, "Mul") if n.input[1] in twos]
    for n in nodes:
        n.op_type = "Sum"
        n.input[1] = n.input[0]
    return len(nodes)


def _relu_max(model: onnx.ModelProto) -> int:
    nodes = _onnx_nodes(model, "Relu")
    if nodes:
        model.graph.initializer.append(numpy_helper.from_array(np.zeros((), np.float32), "test_relu_zero"))
    for n in nodes:
        n.op_type = "Max"
        n.input.append("test_relu_zero")
    return len(nodes)


def _erf_tanh(model: onnx.ModelProto) -> int:
    graph = model.graph
    nodes = _onnx_nodes(model, "Erf")
    if not nodes:
        return 0
    graph.initializer.append(numpy_helper.from_array(np.array(2 / math.sqrt(math.pi), np.float32), "test_erf_k"))
    out = []
    for n in graph.node:
        if n in nodes:
            scaled = f"{n.output[0]}_scaled"
            out.append(helper.make_node("Mul", [n.input[0], "test_erf_k"], [scaled], name=f"{n.name}_mul"))
            out.append(helper.make_node("Tanh", [scaled], [n.output[0]], name=f"{n.name}_tanh"))
        else:
            out.append(n)
    copies = [onnx.NodeProto.FromString(n.SerializeToString()) for n in out]
    del graph.node[:]
    graph.node.extend(copies)
    return len(nodes)


def _boom(model: onnx.ModelProto) -> int:
    model.graph.node[0].op_type = "Half-done"
    raise RuntimeError("boom: this pass cannot handle the graph")


def _drops_weights(model: onnx.ModelProto) -> int:
    del model.graph.initializer[0]
    return 1


SUM2_ADD = GraphPass("test-sum2-add", "Sum of two inputs -> Add", _sum2_add)
MUL2_SUM = GraphPass("test-mul2-sum", "x * 2 -> Sum(x, x)", _mul2_sum)
RELU_MAX = GraphPass("test-relu-max", "Relu -> Max(x, 0)", _relu_max)
ERF_TANH = GraphPass("test-erf-tanh", "Erf -> Tanh (approximate)", _erf_tanh, exact=False, approximate_as="erf-test")
BOOM = GraphPass("test-boom", "fails", _boom)
DROPS_WEIGHTS = GraphPass("test-drops-weights", "breaks the contract", _drops_weights)
ALL = (SUM2_ADD, MUL2_SUM, RELU_MAX, ERF_TANH, BOOM, DROPS_WEIGHTS)


@contextmanager
def registered(*passes: GraphPass) -> Iterator[None]:
    for p in passes:
        registry.register(p)
    try:
        yield
    finally:
        for p in passes:
            registry.unregister(p.name)


def nnapi_with(*fixes: str, name: str = "nnapi") -> providers.ExecutionProvider:
    """NNAPI as it is, declaring ``fixes`` (pass names) only."""
    return replace(providers.get("nnapi"), name=name, fixes=fixes)


@contextmanager
def patched_fixes(monkeypatch, **fixes: tuple[str, ...]) -> Iterator[None]:  # noqa: ANN001 — pytest.MonkeyPatch
    """The built-in providers named by keyword declare only the given passes while the block runs."""
    for ep, names in fixes.items():
        monkeypatch.setitem(providers._loaded, ep, replace(providers.get(ep), fixes=names))  # noqa: SLF001
    yield


def model(*, erf: bool = False, opset: int = 17, dynamic: bool = False) -> onnx.ModelProto:
    """x[1,4,8] -> Mul(x, 2) -> Relu -> Sum(., x) [-> Erf] -> y: NNAPI refuses Sum (and Erf)."""
    batch: int | str = "batch" if dynamic else 1
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4, 8])
    nodes = [
        helper.make_node("Mul", ["x", "two"], ["m"], name="mul"),
        helper.make_node("Relu", ["m"], ["r"], name="relu"),
        helper.make_node("Sum", ["r", "x"], ["s" if erf else "y"], name="sum"),
    ]
    if erf:
        nodes.append(helper.make_node("Erf", ["s"], ["y"], name="erf"))
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    m = helper.make_model(helper.make_graph(nodes, "fixtest", [x], [y], [two]), opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    onnx.checker.check_model(m, full_check=True)
    return m


def run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {"x": x})[0])


def example_input() -> np.ndarray:
    return ((np.arange(32, dtype=np.float32) - 16.0) / 8.0).reshape(1, 4, 8)
