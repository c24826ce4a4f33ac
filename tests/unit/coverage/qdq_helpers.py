"""Tiny QDQ graphs for the node-unit tests (onnx.helper only)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from mobilegen.coverage import EPTarget, analyze
from mobilegen.coverage.model import CoverageReport

F = TensorProto.FLOAT
U8 = TensorProto.UINT8
I8 = TensorProto.INT8
U16 = TensorProto.UINT16
I32 = TensorProto.INT32
_NP = {U8: np.uint8, I8: np.int8, U16: np.uint16, I32: np.int32}


class G:
    """A graph under construction: float inputs, Q/DQ pairs, quantized constants, plain nodes."""

    def __init__(self, opset: int = 17) -> None:
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self._n = 0

    def _name(self, base: str) -> str:
        self._n += 1
        return f"{base}{self._n}"

    def const(self, value: Any, dtype: Any = np.float32, name: str | None = None) -> str:
        name = name or self._name("k")
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def input(self, shape: tuple[int, ...], dtype: int = F, name: str = "x") -> str:
        self.inputs.append(helper.make_tensor_value_info(name, dtype, shape))
        return name

    def params(self, dtype: int, scale: Any = 0.05, zp: Any = 0) -> tuple[str, str]:
        return self.const(scale), self.const(zp, _NP[dtype])

    def q(self, src: str, dtype: int = U8, scale: Any = 0.05, zp: Any = 0, name: str | None = None) -> str:
        s, z = self.params(dtype, scale, zp)
        out = self._name("q")
        self.nodes.append(helper.make_node("QuantizeLinear", [src, s, z], [out], name=name or self._name("Q")))
        return out

    def dq(self, src: str, dtype: int = U8, scale: Any = 0.05, zp: Any = 0, axis: int | None = None,
           name: str | None = None) -> str:
        s, z = self.params(dtype, scale, zp)
        out = self._name("dq")
        attrs = {} if axis is None else {"axis": axis}
        self.nodes.append(helper.make_node("DequantizeLinear", [src, s, z], [out], name=name or self._name("DQ"), **attrs))
        return out

    def qdq(self, src: str, dtype: int = U8, scale: Any = 0.05, zp: Any = 0) -> str:
        """src (float) -> Q -> DQ: a float tensor carrying quantization."""
        return self.dq(self.q(src, dtype, scale, zp), dtype, scale, zp)

    def weight(self, shape: tuple[int, ...], dtype: int = U8, scale: Any = 0.02, zp: Any = 0,
               axis: int | None = None) -> str:
        """A quantized constant and its DQ."""
        values = np.random.default_rng(0).integers(0, 100, size=shape)
        return self.dq(self.const(values, _NP[dtype]), dtype, scale, zp, axis)

    def node(self, op: str, inputs: list[str], name: str = "target", n_out: int = 1, domain: str = "",
             **attrs: Any) -> str:
        outs = [self._name("t") for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, domain=domain, **attrs))
        return outs[0]

    def model(self, *outputs: str, out_type: int = F) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, "g", self.inputs,
                                  [helper.make_tensor_value_info(o, out_type, None) for o in outputs], initializer=self.inits)
        opsets = [helper.make_opsetid("", self.opset), helper.make_opsetid("com.microsoft", 1)]
        return helper.make_model(graph, opset_imports=opsets, ir_version=9)


def qdq_conv(act: int = U8, wt: int = U8, *, w_scale: Any = 0.02, w_zp: Any = 0, axis: int | None = None,
             bias: bool = True, opset: int = 17, out: int | None = None) -> onnx.ModelProto:
    """x -> Q -> DQ -> Conv(DQ weight, DQ bias) -> Q -> DQ -> y."""
    g = G(opset)
    x = g.qdq(g.input((1, 3, 8, 8)), act)
    w = g.weight((4, 3, 3, 3), wt, w_scale, w_zp, axis)
    ins = [x, w]
    if bias:
        ins.append(g.dq(g.const([1, 2, 3, 4], np.int32), I32, 0.001, 0))
    y = g.node("Conv", ins, pads=[1, 1, 1, 1])
    return g.model(g.dq(g.q(y, out or act), out or act))


def qdq_unary(op: str, act: int = U8, *, out_scale: float = 0.05, out_zp: int = 0, opset: int = 17,
              shape: tuple[int, ...] = (1, 4, 8, 8), **attrs: Any) -> onnx.ModelProto:
    g = G(opset)
    x = g.qdq(g.input(shape), act)
    y = g.node(op, [x], **attrs)
    return g.model(g.dq(g.q(y, act, out_scale, out_zp), act, out_scale, out_zp))


def report(model: onnx.ModelProto, ep: str, optimize: bool = False, **settings: Any) -> CoverageReport:
    return analyze(model, EPTarget(ep, **settings), optimize=optimize)


def verdict_of(rep: CoverageReport, name: str = "target") -> tuple[bool, tuple[str, ...], tuple[str, ...]]:
    """(supported, reasons, rule ids) of the named node."""
    n = next(n for n in rep.nodes if n.name == name)
    return n.supported, n.reasons, tuple(r.rule for r in n.refusals)
