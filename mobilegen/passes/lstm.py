"""``lstm``: a one-step LSTM (sequence length 1, as a streaming model such as silero-vad runs it) -> the
cell's arithmetic: two Gemms, Add, four Slices, Sigmoid/Tanh, Mul/Add, Reshapes.

For providers with no LSTM builder in ONNX Runtime (their ``fix_reasons`` cite the builder factories),
where the LSTM stays on the CPU and splits the model in two partitions. One step of it is, with ONNX's
gate order i, o, f, c (``onnx/defs/rnn/defs.cc``) and the default activations::

    gates = X·Wᵀ + (Wb + Rb) + H0·Rᵀ
    i, o, f = σ(gates[i]), σ(gates[o]), σ(gates[f]);  c~ = tanh(gates[c])
    C = f·C0 + i·c~;   H = o·tanh(C);   Y = H as [1, 1, B, hidden], Y_h = H, Y_c = C as [1, B, hidden]

Only the plain case is rewritten: one direction (``forward``), ``layout`` 0, no ``clip``, no
``input_forget``, the default activations, no ``sequence_lens`` and no peepholes, a static input of
sequence length 1, and constant W, R and B (initializers, or computed from constants as silero-vad's
Unsqueezes are). The weights become new initializers ``W[0]``, ``R[0]`` and ``Wb + Rb``; the originals are
left as they are (the pass contract). Exact up to fp32 rounding (the bias sum is added once, not twice).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper

from mobilegen.passes.base import GraphPass
from mobilegen.passes.const_view import const_view
from mobilegen.passes.graph_util import Constants, GraphIndex, Names, Rewrite, attr, is_op, opset


@dataclass(frozen=True)
class _Plan:
    batch: int
    hidden: int
    w: np.ndarray  # [4H, I]
    r: np.ndarray  # [4H, H]
    bias: np.ndarray  # [4H]


def _plain(node: onnx.NodeProto) -> bool:
    direction = attr(node, "direction", b"forward")
    if direction not in (b"forward", "forward"):
        return False
    if int(attr(node, "layout", 0)) != 0 or int(attr(node, "input_forget", 0)) != 0:  # type: ignore[call-overload]
        return False
    if attr(node, "clip") is not None or attr(node, "activation_alpha") is not None or attr(node, "activation_beta") is not None:
        return False
    acts = attr(node, "activations")
    if acts is not None and [a.decode() if isinstance(a, bytes) else a for a in acts] != ["Sigmoid", "Tanh", "Tanh"]:  # type: ignore[attr-defined]
        return False
    extra = list(node.input[4:5]) + list(node.input[7:8])  # sequence_lens, P
    return not any(extra) and len(node.input) >= 3


def _plan(node: onnx.NodeProto, value, shape_of) -> _Plan | None:  # type: ignore[no-untyped-def]
    if not is_op(node, "LSTM") or not _plain(node):
        return None
    hidden = attr(node, "hidden_size")
    x_shape = shape_of(node.input[0])
    if not isinstance(hidden, int) or x_shape is None or len(x_shape) != 3 or x_shape[0] != 1:
        return None
    w, r = value(node.input[1]), value(node.input[2])
    b = value(node.input[3]) if len(node.input) > 3 and node.input[3] else np.zeros((1, 8 * hidden), np.float32)
    if w is None or r is None or b is None or w.dtype != np.float32 or r.dtype != np.float32:
        return None
    if w.shape != (1, 4 * hidden, x_shape[2]) or r.shape != (1, 4 * hidden, hidden) or b.shape != (1, 8 * hidden):
        return None
    bias = (b[0, : 4 * hidden] + b[0, 4 * hidden :]).astype(np.float32)
    return _Plan(int(x_shape[1]), hidden, np.ascontiguousarray(w[0]), np.ascontiguousarray(r[0]), bias)


def apply(model: onnx.ModelProto) -> int:
    graph = model.graph
    lstms = [n for n in graph.node if is_op(n, "LSTM")]
    if not lstms or opset(model) < 7:
        return 0

    index = GraphIndex(graph)
    view = const_view(model, index)

    def value(name: str) -> np.ndarray | None:
        v = index.const(name)
        return v if v is not None else view.value(name)

    names = Names(graph)
    consts = Constants(graph, names, "lstm")
    edit = Rewrite(graph)
    version = opset(model)
    for node in lstms:
        plan = _plan(node, value, view.static_shape)
        if plan is None or not any(node.output):
            continue
        edit.replace([node], _cell(node, plan, names, consts, version))
    return edit.commit()


def _cell(node: onnx.NodeProto, p: _Plan, names: Names, consts: Constants, version: int) -> list[onnx.NodeProto]:
    base = f"{next(o for o in node.output if o)}/lstm"
    h, b = p.hidden, p.batch

    def t(label: str) -> str:
        return names.new(f"{base}/{label}")

    def mk(op: str, inputs: list[str], out: str, **attrs: Any) -> onnx.NodeProto:
        return helper.make_node(op, inputs, [out], name=names.new(f"{base}/{op}"), **attrs)

    nodes: list[onnx.NodeProto] = []
    x2 = t("x")
    nodes.append(mk("Reshape", [node.input[0], consts.ints([b, -1])], x2))

    def state(index: int, label: str) -> str:
        if len(node.input) > index and node.input[index]:
            out = t(label)
            nodes.append(mk("Reshape", [node.input[index], consts.ints([b, h])], out))
            return out
        return consts.add(np.zeros((b, h), np.float32), label)

    h0, c0 = state(5, "h0"), state(6, "c0")
    gx, gh, gates = t("gates_x"), t("gates_h"), t("gates")
    nodes += [
        mk("Gemm", [x2, consts.add(p.w, "W"), consts.add(p.bias, "B")], gx, transB=1),
        mk("Gemm", [h0, consts.add(p.r, "R"), consts.add(np.zeros(4 * h, np.float32), "zero_bias")], gh, transB=1),
        mk("Add", [gx, gh], gates),
    ]
    parts = {}
    for k, gate in enumerate("iofc"):
        raw, act = t(f"{gate}_in"), t(gate)
        if version >= 10:
            nodes.append(mk("Slice", [gates, consts.ints([k * h], "start"), consts.ints([(k + 1) * h], "end"), consts.ints([1], "axes")], raw))
        else:
            nodes.append(mk("Slice", [gates], raw, starts=[k * h], ends=[(k + 1) * h], axes=[1]))
        nodes.append(mk("Tanh" if gate == "c" else "Sigmoid", [raw], act))
        parts[gate] = act
    fc, ic, c, tc, hh = t("f_c0"), t("i_c"), t("C"), t("tanh_C"), t("H")
    nodes += [
        mk("Mul", [parts["f"], c0], fc),
        mk("Mul", [parts["i"], parts["c"]], ic),
        mk("Add", [fc, ic], c),
        mk("Tanh", [c], tc),
        mk("Mul", [parts["o"], tc], hh),
    ]
    outputs = list(node.output) + [""] * (3 - len(node.output))
    for out, src, shape in ((outputs[0], hh, [1, 1, b, h]), (outputs[1], hh, [1, b, h]), (outputs[2], c, [1, b, h])):
        if out:
            nodes.append(mk("Reshape", [src, consts.ints(shape)], out))
    return nodes


PASS = GraphPass(
    name="lstm",
    summary="one-step LSTM -> Gemm, Add, Slice, Sigmoid/Tanh, Mul (the cell's arithmetic)",
    apply=apply,
)
