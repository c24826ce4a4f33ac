"""Tiny graph builders for the coverage tests (onnx.helper only, no torch)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64
I32 = TensorProto.INT32
U8 = TensorProto.UINT8
BOOL = TensorProto.BOOL


def T(shape: tuple[Any, ...] | None, dtype: int = F) -> tuple[int, tuple[Any, ...] | None]:
    """A graph input of this shape (str dims are symbolic; None shape: rank unknown)."""
    return (dtype, shape)


def K(value: Any, dtype: Any = np.float32) -> np.ndarray:
    """A constant initializer."""
    return np.asarray(value, dtype=dtype)


def node_model(
    op: str,
    inputs: list[Any],
    attrs: dict[str, Any] | None = None,
    *,
    opset: int = 17,
    n_out: int = 1,
    domain: str = "",
    out_dtype: int | None = None,
    pre: list[onnx.NodeProto] | None = None,
    pre_inputs: list[onnx.ValueInfoProto] | None = None,
) -> onnx.ModelProto:
    graph_inputs = list(pre_inputs or [])
    inits = []
    names = []
    for i, spec in enumerate(inputs):
        name = f"in{i}"
        if spec is None:
            names.append("")
        elif isinstance(spec, str):  # an existing tensor (from ``pre``)
            names.append(spec)
        elif isinstance(spec, np.ndarray):
            inits.append(numpy_helper.from_array(spec, name))
            names.append(name)
        else:
            dtype, shape = spec
            graph_inputs.append(helper.make_tensor_value_info(name, dtype, shape))
            names.append(name)
    outs = [f"out{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, name="target", domain=domain, **(attrs or {}))
    graph = helper.make_graph(
        list(pre or []) + [node],
        "g",
        graph_inputs,
        [helper.make_tensor_value_info(o, out_dtype or 0, None) for o in outs],
        initializer=inits,
    )
    opsets = [helper.make_opsetid("", opset)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)
