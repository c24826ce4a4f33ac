"""``bool-mask``: a boolean mask made from an integer tensor -> float 0/1 arithmetic.

Hugging Face's attention masks (transformers >= 5, ``masking_utils``) reach the ONNX graph as
``Cast(attention_mask -> bool)``, data movement (Flatten/Gather/Reshape from TorchScript, GatherND from
torch.export), ``And`` with a constant, and ``Where(mask, 0, finfo.min)`` into each attention block. A
provider that takes no bool tensor (nor And or Where) leaves the mask on the CPU, and everything that
reads it (the declaring providers' ``fix_reasons`` say which, and from which builders).

The rewrite gives every boolean tensor of the mask a twin of integer or float data:

- an integer twin as long as only data movement separates it from the integer source (Flatten, Reshape,
  Gather, GatherND, GatherElements, Expand, Unsqueeze, Squeeze, Transpose, Slice, Tile, on the integer
  tensor itself): ``b == (v != 0)`` element by element, since moving data commutes with ``!= 0``;
- a float twin of 0/1 where logic needs one: ``Clip(Cast(v -> float)^2, 0, 1)`` of an integer twin
  (exact: an integer other than 0 squares to at least 1, and int64's largest squares to 8.5e37, far from
  float32's overflow), ``Mul`` for And, ``Max`` for Or, ``1 - a`` for Not; a constant bool operand
  becomes a constant 0/1.

It ends where the mask is used: ``Where(b, X, Y)`` with constant, finite float32 ``X`` and ``Y`` becomes
``b*X + (1-b)*Y`` (a term dropped when its constant is a single 0), exact for b in {0, 1}; a ``Shape``
reads the twin. A mask that reaches anything else (a graph output, a subgraph, another op, a -inf ``Y``:
``softmax-mask`` first) is left as it is, with every boolean tensor connected to it.

Moving the Cast after the data movement also keeps it off a graph input, where a Cast builder may
refuse a Cast no node feeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from mobilegen.passes.base import GraphPass
from mobilegen.passes.const_view import ConstView, const_view
from mobilegen.passes.graph_util import Constants, GraphIndex, Names, Rewrite, attr, is_op, opset

_MOVE = frozenset(
    {"Flatten", "Reshape", "Gather", "GatherND", "GatherElements", "Expand", "Unsqueeze", "Squeeze", "Transpose", "Slice", "Tile"}
)
_INTS = frozenset({TensorProto.INT32, TensorProto.INT64})


@dataclass(frozen=True)
class _Step:
    node: onnx.NodeProto
    kind: str  # root | alias | move | and | or | not | where | shape
    group: int


class _Groups:
    """Union-find over the masks (one group per integer source, merged where logic joins two)."""

    def __init__(self) -> None:
        self.parent: list[int] = []

    def new(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, g: int) -> int:
        while self.parent[g] != g:
            self.parent[g] = self.parent[self.parent[g]]
            g = self.parent[g]
        return g

    def union(self, groups: list[int]) -> int:
        roots = sorted({self.find(g) for g in groups})
        for r in roots[1:]:
            self.parent[r] = roots[0]
        return roots[0]


def _finite_f32(view: ConstView, name: str) -> np.ndarray | None:
    value = view.value(name)
    if value is None or value.dtype != np.float32 or not bool(np.isfinite(value).all()):
        return None
    return value


def _const_bool(view: ConstView, name: str) -> np.ndarray | None:
    value = view.value(name)
    return value if value is not None and value.dtype == np.bool_ else None


def _classify(node: onnx.NodeProto, form: dict[str, str], view: ConstView) -> tuple[str, str] | None:
    """(kind, form of the output: "int", "float" or "" for an end) of a node reading a mask, or None
    when the mask may not go there."""
    op, ins = node.op_type, list(node.input)
    if node.domain not in ("", "ai.onnx") or len(node.output) != 1 or not node.output[0]:
        return None
    if op == "Cast" and attr(node, "to") == TensorProto.BOOL and ins[0] in form:
        return "alias", form[ins[0]]
    if op in ("Identity", *_MOVE) and ins and ins[0] in form and not any(i in form for i in ins[1:]):
        if op == "Identity":
            return "alias", form[ins[0]]
        if op == "Expand":
            a, b = view.static_shape(ins[0]), view.static_shape(node.output[0])
            if a is not None and a == b:
                return "alias", form[ins[0]]
        return "move", form[ins[0]]
    if op in ("And", "Or") and len(ins) == 2 and all(i in form or _const_bool(view, i) is not None for i in ins):
        return op.lower(), "float"
    if op == "Not" and len(ins) == 1:
        return "not", "float"
    if op == "Where" and len(ins) == 3 and ins[0] in form and ins[1] not in form and ins[2] not in form:
        if _finite_f32(view, ins[1]) is not None and _finite_f32(view, ins[2]) is not None:
            return "where", ""
        return None
    if op == "Shape" and ins[0] in form:
        return "shape", ""
    return None


def _plan(model: onnx.ModelProto, index: GraphIndex, view: ConstView) -> tuple[list[_Step], dict[str, str]]:
    form: dict[str, str] = {}  # a mask tensor -> the form of its twin
    group_of: dict[str, int] = {}
    groups = _Groups()
    bad: set[int] = set()
    steps: list[_Step] = []
    for node in model.graph.node:
        if is_op(node, "Cast") and attr(node, "to") == TensorProto.BOOL and node.input and node.input[0] not in form:
            src = node.input[0]
            t = view.types.get(src)
            if t is not None and t.elem_type in _INTS and view.value(src) is None and node.output and node.output[0]:
                g = groups.new()
                form[node.output[0]], group_of[node.output[0]] = "int", g
                steps.append(_Step(node, "root", g))
            continue
        read = [i for i in node.input if i in form]
        if not read:
            continue
        g = groups.union([group_of[i] for i in read])
        got = _classify(node, form, view)
        if got is None:
            bad.add(g)
            continue
        kind, out_form = got
        if out_form:
            form[node.output[0]], group_of[node.output[0]] = out_form, g
        steps.append(_Step(node, kind, g))
    for name, g in group_of.items():
        if not index.internal(name):  # a graph output or read by a subgraph: its type must stay
            bad.add(groups.find(g))
    bad = {groups.find(g) for g in bad}
    return [s for s in steps if groups.find(s.group) not in bad], form


class _Emit:
    def __init__(self, graph: onnx.GraphProto, view: ConstView, form: dict[str, str]) -> None:
        self.view = view
        self.form = form
        self.names = Names(graph)
        self.consts = Constants(graph, self.names, "bool_mask")
        self.twin: dict[str, str] = {}
        self.floats: dict[str, str] = {}

    def node(self, op: str, inputs: list[str], base: str, **attrs: Any) -> onnx.NodeProto:
        return helper.make_node(op, inputs, [self.names.new(f"{base}/{op.lower()}")], name=self.names.new(f"{base}/{op}"), **attrs)

    def as_float(self, name: str, out: list[onnx.NodeProto]) -> str:
        """The 0/1 float32 twin of mask ``name`` (a constant one for a constant mask)."""
        if name not in self.form:
            value = _const_bool(self.view, name)
            assert value is not None  # _classify let only masks and constant bools through
            return self.consts.add(value.astype(np.float32), "mask")
        twin = self.twin[name]
        if self.form[name] == "float":
            return twin
        if twin not in self.floats:
            cast = self.node("Cast", [twin], twin, to=TensorProto.FLOAT)
            square = self.node("Mul", [cast.output[0], cast.output[0]], twin)
            clip = self.node("Clip", [square.output[0], self.consts.scalar(0.0), self.consts.scalar(1.0)], twin)
            out.extend((cast, square, clip))
            self.floats[twin] = clip.output[0]
        return self.floats[twin]

    def step(self, step: _Step) -> list[onnx.NodeProto]:
        node, kind = step.node, step.kind
        ins, out_name = list(node.input), node.output[0]
        base = node.name or out_name
        if kind == "root":
            self.twin[out_name] = ins[0]
            return []
        if kind == "alias":
            self.twin[out_name] = self.twin[ins[0]]
            return []
        if kind in ("move", "shape"):
            new = onnx.NodeProto()
            new.CopyFrom(node)
            new.input[0] = self.twin[ins[0]]
            if kind == "move":
                new.output[0] = self.twin[out_name] = self.names.new(f"{out_name}/{self.form[out_name]}")
            new.name = self.names.new(f"{base}/twin")
            return [new]
        out: list[onnx.NodeProto] = []
        if kind in ("and", "or"):
            a, b = (self.as_float(i, out) for i in ins)
            out.append(self.node("Mul" if kind == "and" else "Max", [a, b], base))
        elif kind == "not":
            out.append(self.node("Sub", [self.consts.scalar(1.0), self.as_float(ins[0], out)], base))
        else:  # where
            out.extend(self._where(node, self.as_float(ins[0], out), base))
            return out
        self.twin[out_name] = out[-1].output[0]
        return out

    def _where(self, node: onnx.NodeProto, c: str, base: str) -> list[onnx.NodeProto]:
        x, y = (_finite_f32(self.view, i) for i in node.input[1:])
        assert x is not None and y is not None
        rank = len(self.view.static_shape(node.input[0]) or ()) or None
        out: list[onnx.NodeProto] = []

        def droppable(v: np.ndarray, other: np.ndarray) -> bool:  # 0, and no dims that would widen the result
            return v.size == 1 and float(v.reshape(-1)[0]) == 0.0 and (v.ndim <= other.ndim or (rank is not None and v.ndim <= rank))

        terms = []
        if not droppable(x, y):
            terms.append(self.node("Mul", [c, node.input[1]], base))
        if not droppable(y, x):
            inv = self.node("Sub", [self.consts.scalar(1.0), c], base)
            out.append(inv)
            terms.append(self.node("Mul", [inv.output[0], node.input[2]], base))
        if not terms:  # both 0: b*0 + (1-b)*0
            terms.append(self.node("Mul", [c, node.input[1]], base))
        out.extend(terms)
        if len(terms) == 2:
            out.append(self.node("Add", [terms[0].output[0], terms[1].output[0]], base))
        out[-1].output[0] = node.output[0]
        return out


def apply(model: onnx.ModelProto) -> int:
    graph = model.graph
    if opset(model) < 11 or not any(is_op(n, "Cast") and attr(n, "to") == TensorProto.BOOL for n in graph.node):
        return 0  # Clip's bounds are inputs from opset 11
    index = GraphIndex(graph)
    view = const_view(model, index)
    steps, form = _plan(model, index, view)
    if not any(s.kind == "where" for s in steps):
        return 0
    emit = _Emit(graph, view, form)
    edit = Rewrite(graph)
    for step in steps:
        edit.replace([step.node], emit.step(step))
    return edit.commit()


PASS = GraphPass(
    name="bool-mask",
    summary="a bool mask from Cast(int -> bool) through data movement/And/Or/Not into Where(m, X, Y) -> float 0/1 arithmetic",
    apply=apply,
)
