"""``gelu``: exact GELU without Erf, for providers with no Erf and no Gelu builder (their ``fix_reasons``).

Matched: the ONNX ``Gelu`` op (opset 20; ``approximate="none"`` or ``"tanh"``), ``com.microsoft:Gelu``,
and the exported pattern ``x * 0.5 * (1 + Erf(x / sqrt(2)))`` in any of the three orders exporters write
its products (TorchScript: Div, Erf, Add, Mul(x, .), Mul(., 0.5); Hugging Face: Mul(x, 0.5) first).

Exact GELU is rewritten with the identity ``x * Phi(x) = Relu(x) - a * Phi(-a)``, ``a = |x|``, which has
no cancellation for negative x (``0.5 * x * (1 + erf)`` loses all digits there), and

    a * Phi(-a) = exp(-a^2 / 2) * a * t * P(t),   t = 1 / (1 + 0.296875 a),

with P the degree-9 polynomial below: a minimax fit (Lawson-weighted least squares over a in [0, 16],
float32 coefficients rounded one at a time and the rest refitted). Its relative error on a * Phi(-a),
evaluated in float64 with the float32 coefficients, is below 1.1e-8 for every a >= 0 (checked against
mpmath); so GELU's absolute error is below 1.1e-8 * max(a * Phi(-a)) = 1.9e-9, and its relative error
below 1.1e-8, under half a float32 ulp (6e-8). In float32 the rounding of the ops dominates: measured
under onnxruntime over [-20, 20] (tests/unit/passes/test_gelu.py), the rewritten graph is within 2.4e-7
of float64 GELU (half an ulp of the output, at |x| ~ 4.4), the exported Erf graph within 4.5e-7; for x
in (-10, -1) its relative error is 2.1e-6 (exp's rounding), the Erf graph's 100 % (1 + erf cancels).
``a`` is clamped to 16 (a * Phi(-a) < 1e-55 there: 0 in float32), so x = +inf gives +inf and -inf 0,
not NaN.

The Gelu op's ``approximate="tanh"`` form is the tanh formula itself, so rewriting it is exact too:
``0.5 x (1 + tanh(w)) = x * Sigmoid(2 w)``, w = sqrt(2/pi) (x + 0.044715 x^3) (see :func:`tanh_form`).

Neither form is fused back by onnxruntime (graph_transformer_utils.cc): Level1 ``GeluFusion`` (every EP,
at opset >= 20) needs an Erf node; Level2 ``FastGeluFusion`` (CPU/CUDA/DML) needs Tanh after a Mul by
0.044715 or a Pow(x, 3), and ``QuickGeluFusion`` (CPU/ACL/CUDA/DML) a Sigmoid of x or of x times a
constant, multiplied by that same x; Level2 does not run for nodes assigned to a provider other than
those, nor at the ``.ort`` conversion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper

from mobilegen.passes.base import GraphPass
from mobilegen.passes.graph_util import (
    Constants,
    GraphIndex,
    Names,
    Rewrite,
    TensorType,
    attr,
    is_op,
    tensor_types,
)

ERF = "erf"
TANH = "tanh"

# t = 1 / (1 + P_SCALE * a); a * Phi(-a) * exp(a^2 / 2) = a * t * sum(COEFFS[i] * t**i)
P_SCALE = 0.296875  # 19/64: exact in float32
COEFFS = (
    0.11844170093536377,
    0.1182856410741806,
    0.1097104549407959,
    0.07601413130760193,
    0.10384732484817505,
    -0.09268318116664886,
    0.21111588180065155,
    -0.23724770545959473,
    0.11251987516880035,
    -0.020004119724035263,
)
A_MAX = 16.0
TANH_SCALE = math.sqrt(2.0 / math.pi)
TANH_CUBIC = 0.044715


@dataclass(frozen=True)
class GeluMatch:
    x: str
    y: str
    nodes: tuple[onnx.NodeProto, ...]  # the source nodes this GELU replaces
    kind: str  # ERF (exact GELU) or TANH (the model's own tanh approximation)


def _near(value: float | None, target: float, rel: float = 1e-6) -> bool:
    return value is not None and abs(value - target) <= rel * abs(target)


def _exact(value: float | None, target: float) -> bool:
    return value is not None and float(np.float32(value)) == target


def _other(node: onnx.NodeProto, name: str) -> str | None:
    """The input of a binary node that is not ``name`` (None unless ``name`` is exactly one of two)."""
    if len(node.input) != 2 or list(node.input).count(name) != 1:
        return None
    return str(node.input[1] if node.input[0] == name else node.input[0])


def _erf_pattern(erf: onnx.NodeProto, index: GraphIndex) -> GeluMatch | None:
    """x * 0.5 * (1 + Erf(x / sqrt(2))) around this Erf, in any order of the two products."""
    scaled = erf.input[0]
    div = index.producer.get(scaled)
    if div is None or index.only_use(scaled) is not erf:
        return None
    if is_op(div, "Div") and _near(index.scalar(div.input[1]), math.sqrt(2.0)):
        x = div.input[0]
    elif is_op(div, "Mul"):
        found = [(div.input[1 - i], v) for i in (0, 1) if (v := index.scalar(div.input[i])) is not None]
        if len(found) != 1 or not _near(found[0][1], math.sqrt(0.5)):
            return None
        x = found[0][0]
    else:
        return None
    add = index.only_use(erf.output[0])
    if add is None or not is_op(add, "Add") or not _exact(index.scalar(_other(add, erf.output[0]) or ""), 1.0):
        return None
    m1 = index.only_use(add.output[0])
    if m1 is None or not is_op(m1, "Mul"):
        return None
    other = _other(m1, add.output[0])
    if other is None:
        return None
    m2: onnx.NodeProto | None
    if other == x:  # (x * (1 + erf)) * 0.5
        m2 = index.only_use(m1.output[0])
        if m2 is None or not is_op(m2, "Mul") or not _exact(index.scalar(_other(m2, m1.output[0]) or ""), 0.5):
            return None
        return GeluMatch(x, m2.output[0], (div, erf, add, m1, m2), ERF)
    if _exact(index.scalar(other), 0.5):  # x * ((1 + erf) * 0.5)
        m2 = index.only_use(m1.output[0])
        if m2 is None or not is_op(m2, "Mul") or _other(m2, m1.output[0]) != x:
            return None
        return GeluMatch(x, m2.output[0], (div, erf, add, m1, m2), ERF)
    half = index.producer.get(other)  # (x * 0.5) * (1 + erf)
    if half is None or not is_op(half, "Mul") or index.only_use(other) is not m1:
        return None
    if _other(half, x) is None or not _exact(index.scalar(_other(half, x) or ""), 0.5):
        return None
    return GeluMatch(x, m1.output[0], (half, div, erf, add, m1), ERF)


def find(model: onnx.ModelProto, index: GraphIndex, types: dict[str, TensorType]) -> list[GeluMatch]:
    """Every float32 GELU of the main graph: Gelu ops and Erf patterns, in graph order."""
    out: list[GeluMatch] = []
    for node in model.graph.node:
        match: GeluMatch | None = None
        if is_op(node, "Gelu") and len(node.input) == 1 and node.input[0] and node.output[0]:
            mode = attr(node, "approximate", b"none")
            kind = {b"none": ERF, b"tanh": TANH}.get(mode if isinstance(mode, bytes) else b"")
            if kind is not None:
                match = GeluMatch(node.input[0], node.output[0], (node,), kind)
        elif is_op(node, "Gelu", ("com.microsoft",)) and len(node.input) == 1 and node.input[0]:
            match = GeluMatch(node.input[0], node.output[0], (node,), ERF)
        elif is_op(node, "Erf"):
            match = _erf_pattern(node, index)
        if match is not None:
            t = types.get(match.x)
            if t is not None and t.elem_type == TensorProto.FLOAT:
                out.append(match)
    return out


class _Builder:
    def __init__(self, names: Names, consts: Constants, base: str) -> None:
        self.names, self.consts, self.base = names, consts, base
        self.nodes: list[onnx.NodeProto] = []

    def op(self, op: str, *inputs: str, out: str = "") -> str:
        out = out or self.names.new(f"{self.base}/{op.lower()}")
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=self.names.new(f"{self.base}/{op}")))
        return out

    def c(self, value: float) -> str:
        return self.consts.scalar(value, np.float32)


def erf_free_form(x: str, y: str, names: Names, consts: Constants) -> list[onnx.NodeProto]:
    """y = Relu(x) - a * Phi(-a), a = min(|x|, 16), with the polynomial above (no Erf)."""
    b = _Builder(names, consts, f"{y}/gelu")
    a = b.op("Min", b.op("Abs", x), b.c(A_MAX))
    t = b.op("Div", b.c(1.0), b.op("Add", b.op("Mul", a, b.c(P_SCALE)), b.c(1.0)))
    poly = b.op("Mul", t, b.c(COEFFS[-1]))
    for i, coeff in enumerate(reversed(COEFFS[:-1])):
        poly = b.op("Add", poly, b.c(coeff))
        if i < len(COEFFS) - 2:
            poly = b.op("Mul", poly, t)
    tail = b.op("Mul", b.op("Mul", a, t), poly)  # a * Phi(-a) * exp(a^2 / 2)
    gauss = b.op("Exp", b.op("Mul", b.op("Mul", a, a), b.c(-0.5)))
    b.op("Sub", b.op("Relu", x), b.op("Mul", gauss, tail), out=y)
    return b.nodes


def tanh_form(x: str, y: str, names: Names, consts: Constants) -> list[onnx.NodeProto]:
    """y = x * Sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)) == 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    b = _Builder(names, consts, f"{y}/gelu_tanh")
    inner = b.op("Add", b.op("Mul", b.op("Mul", x, x), b.c(2 * TANH_SCALE * TANH_CUBIC)), b.c(2 * TANH_SCALE))
    b.op("Mul", x, b.op("Sigmoid", b.op("Mul", x, inner)), out=y)
    return b.nodes


def rewrite(model: onnx.ModelProto, *, approximate: bool) -> int:
    """Replace every GELU: exact ones by :func:`erf_free_form` (or :func:`tanh_form` when
    ``approximate``), tanh ones by :func:`tanh_form`. Returns the source nodes replaced."""
    graph = model.graph
    if not any(n.op_type in ("Gelu", "Erf") for n in graph.node):
        return 0
    index = GraphIndex(graph)
    matches = find(model, index, tensor_types(model))
    if not matches:
        return 0
    names = Names(graph)
    consts = Constants(graph, names, "gelu_tanh" if approximate else "gelu")
    edit = Rewrite(graph)
    for m in matches:
        if edit.claimed(m.nodes):
            continue
        form = tanh_form if approximate or m.kind == TANH else erf_free_form
        edit.replace(m.nodes, form(m.x, m.y, names, consts))
    return edit.commit()


def apply(model: onnx.ModelProto) -> int:
    return rewrite(model, approximate=False)


PASS = GraphPass(
    name="gelu",
    summary="GELU (Gelu op or Erf pattern) -> Relu(x) - exp(-x^2/2) * polynomial, no Erf (approximation error < 2e-9)",
    apply=apply,
)
