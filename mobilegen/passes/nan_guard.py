"""``nan-guard``: ``Where(IsNaN(v), c, v)`` -> ``v`` where ``v`` cannot be NaN.

torch.export's lowering of scaled-dot-product attention guards the Softmax against fully masked rows
(all ``-inf``, whose Softmax is 0/0): ``Where(IsNaN(Softmax(s)), 0, Softmax(s))``. For a provider with
no IsNaN (or no Where) builder, every attention block leaves the accelerator for the CPU and comes back
(the declaring providers' ``fix_reasons`` say which, with the partitions it costs them).

When ``v`` is finite, IsNaN(v) is false everywhere and the Where returns ``v`` itself, bit for bit: the
rewrite removes the two nodes and lets the readers of the Where read ``v``. A form that keeps the
guard's meaning for NaN does not exist among common ops: Max/Min/Relu/Clip with a NaN operand are
unspecified on accelerators (and on onnxruntime's CPU they depend on the operand order).
So the pass only removes guards it can prove dead: ``v`` is finite whenever the model's inputs are, by
this check over everything ``v`` is computed from:

- constants (initializers, Constant, ConstantOfShape's value, a Pad's value) are all finite: a ``-inf``
  mask constant, the case the guard is for, keeps the guard;
- every op maps finite inputs to finite outputs (:data:`FINITE`): arithmetic that can only overflow
  (Add, Mul, MatMul, ...), data movement, bounded functions (Softmax, Sigmoid, Tanh, Erf, Relu...),
  LayerNormalization, InstanceNormalization and GroupNormalization (torch's GroupNorm) with
  ``epsilon > 0``, Div by a constant without zeros (or by a tensor computed from constants alone,
  evaluated: weight normalization's norm, :func:`evaluate_constant`). Anything else keeps the
  guard: Log, Sqrt, Pow, Exp, Div by a tensor computed from an input, means and pools (0/0 on an empty window), a
  subgraph, an unknown op;
- a float graph input counts as finite only behind a MatMul, Gemm, Conv or LayerNormalization (a
  feature, such as pixels or audio). A float input that reaches ``v`` by any other path is taken for
  an additive attention mask, which callers fill with ``-inf``: the guard stays;
- a guard itself, ``Where(IsNaN(p), c, p)`` with ``p`` a Softmax, is finite when ``c`` is, whatever the
  Softmax reads: a Softmax gives values in [0, 1] or NaN, and the guard replaces the NaN (so the layers
  after a guard that must stay, on a -inf mask, are still judged on their own).

Exact in the sense of :mod:`mobilegen.passes.base` for every input whose values are finite and whose
computation does not overflow float32 (the domain of every exact pass). Outside it -- a NaN or inf fed
to a feature input, or attention scores beyond 3.4e38 -- the original zeroes a Softmax row where the
rewritten graph gives NaN; both are then garbage, but not the same garbage.

onnxruntime's optimizations never put an IsNaN or Where back: none of its transformers creates them.
Run before ``layernorm`` and ``gelu`` (registry order), whose forms use Sqrt and Exp this check refuses.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import onnx

from mobilegen.infra.onnx_size import stored_bytes
from mobilegen.passes.base import GraphPass
from mobilegen.passes.graph_util import GraphIndex, Rewrite, TensorType, attr, is_op, tensor_types

ALL = None  # every input must be finite
# op -> the inputs that must be finite for the output to be (ALL: every one). Indices, shapes, axes and
# conditions are integers or bools, finite by their type; listing only the data inputs skips them.
FINITE: dict[str, tuple[int, ...] | None] = {
    # arithmetic: finite unless it overflows
    "Add": ALL, "Sub": ALL, "Mul": ALL, "Div": (0,), "Neg": ALL, "Abs": ALL, "MatMul": ALL, "Gemm": ALL, "Conv": ALL,
    "ReduceSum": (0,), "Sum": ALL, "Mean": ALL,
    # bounded, or bounded by their input
    "Softmax": ALL, "Sigmoid": ALL, "Tanh": ALL, "Erf": ALL, "Relu": ALL, "LeakyRelu": ALL, "Gelu": ALL,
    "HardSigmoid": ALL, "HardSwish": ALL, "Clip": ALL, "Max": ALL, "Min": ALL, "Sign": ALL, "Floor": ALL,
    "Ceil": ALL, "Round": ALL, "LayerNormalization": ALL, "InstanceNormalization": ALL, "GroupNormalization": ALL,
    # data movement
    "Identity": ALL, "Reshape": (0,), "Transpose": ALL, "Squeeze": (0,), "Unsqueeze": (0,), "Flatten": ALL,
    "Concat": ALL, "Split": (0,), "Slice": (0,), "Gather": (0,), "GatherElements": (0,), "GatherND": (0,),
    "Expand": (0,), "Tile": (0,), "Where": (1, 2), "Cast": ALL, "CastLike": (0,), "Pad": (0, 2),
    "Dropout": (0,), "DepthToSpace": ALL, "SpaceToDepth": ALL, "Range": ALL, "ConstantOfShape": (),
    # integer or boolean results, whatever the inputs
    "Shape": (), "Size": (), "Equal": (), "Greater": (), "GreaterOrEqual": (), "Less": (), "LessOrEqual": (),
    "Not": (), "And": (), "Or": (), "Xor": (), "IsNaN": (), "IsInf": (), "ArgMax": (), "ArgMin": (), "NonZero": (),
}
# the initializers evaluate_constant reads at most (a weight normalized in the graph: wav2vec2-base's
# positional conv weight is 19 MB)
EVALUATE_MAX_BYTES = 256 << 20
# behind one of these a float graph input is a feature, not an additive mask
MIXING = frozenset({"MatMul", "Gemm", "Conv", "LayerNormalization"})
_T = onnx.TensorProto
# graph inputs of these types are finite whatever the caller gives (a string one could Cast to NaN)
_EXACT_TYPES = frozenset({_T.BOOL, _T.INT8, _T.INT16, _T.INT32, _T.INT64, _T.UINT8, _T.UINT16, _T.UINT32, _T.UINT64})


class _Finite:
    """Whether tensors are finite whenever the model's inputs are (see the module's docstring)."""

    def __init__(self, index: GraphIndex, opsets: dict[str, int]) -> None:
        self.index = index
        self.opsets = opsets
        self.input_types = {i.name: i.type.tensor_type.elem_type for i in index.graph.input}
        self.memo: dict[tuple[str, bool], bool] = {}

    def __call__(self, name: str) -> bool:
        return self._check(name, False)

    def _check(self, root: str, root_mixed: bool) -> bool:
        """Depth-first over (tensor, behind a MIXING op) without recursion (graphs are deep)."""
        stack = [(root, root_mixed)]
        while stack:
            key = stack[-1]
            if key in self.memo:
                stack.pop()
                continue
            deps, verdict = self._deps(*key)
            todo = [d for d in deps if d not in self.memo]
            if verdict is not None or not todo:
                self.memo[key] = verdict if verdict is not None else all(self.memo[d] for d in deps)
                stack.pop()
            elif any(self.memo.get(d) is False for d in deps):
                self.memo[key] = False
                stack.pop()
            else:
                stack.extend(todo)
        return self.memo[(root, root_mixed)]

    def _deps(self, name: str, mixed: bool) -> tuple[list[tuple[str, bool]], bool | None]:
        """(what ``name`` is finite if, a verdict when known without them)."""
        index = self.index
        if name in index.graph_inputs:
            return [], mixed or self.input_types.get(name, 0) in _EXACT_TYPES
        if name in index.initializers:
            return [], _finite_value(index.const(name))
        node = index.producer.get(name)
        if node is None or node.domain not in ("", "ai.onnx"):
            return [], False
        if is_op(node, "Constant"):
            return [], _finite_value(index.const(name))
        if _softmax_guard(node, index):
            return [(node.input[1], mixed)], None
        if node.op_type not in FINITE or any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
            return [], False
        if not _attributes_finite(node, index, self.opsets):
            return [], False
        wanted = FINITE[node.op_type]
        inputs = [i for k, i in enumerate(node.input) if i and (wanted is None or k in wanted)]
        behind = mixed or node.op_type in MIXING
        return [(i, behind) for i in inputs], None


def _softmax_guard(node: onnx.NodeProto, index: GraphIndex) -> bool:
    """``node`` is ``Where(IsNaN(p), c, p)`` with ``p`` a Softmax's output."""
    if not is_op(node, "Where") or len(node.input) != 3:
        return False
    isnan, softmax = index.producer.get(node.input[0]), index.producer.get(node.input[2])
    return (
        isnan is not None and is_op(isnan, "IsNaN") and isnan.input[0] == node.input[2]
        and softmax is not None and is_op(softmax, "Softmax")
    )  # fmt: skip


def finite_check(model: onnx.ModelProto, index: GraphIndex) -> Callable[[str], bool]:
    """Whether a tensor of ``index``'s graph (``model``'s) is finite whenever the model's inputs are (the
    check above, memoized; ``softmax-mask`` asks it of attention scores)."""
    return _Finite(index, {o.domain: o.version for o in model.opset_import})


def _finite_value(value: np.ndarray | None) -> bool:
    if value is None:
        return False  # not readable here (external data): not known to be finite
    return value.dtype.kind not in "fc" or bool(np.isfinite(value).all())


def _attributes_finite(node: onnx.NodeProto, index: GraphIndex, opsets: dict[str, int]) -> bool:
    """The conditions some ops put on their attributes or constant inputs for a finite result."""
    op = node.op_type
    if op == "Div":  # by a constant without zeros (the attention scale); a computed divisor may be 0
        divisor = node.input[1] if len(node.input) > 1 else ""
        value = index.const(divisor)
        if value is None and divisor and index.computed_from_constants(divisor):
            value = evaluate_constant(index, divisor, opsets)  # weight normalization's norm
        return value is not None and _finite_value(value) and bool((value != 0).all())
    if op in ("LayerNormalization", "InstanceNormalization", "GroupNormalization"):
        eps = attr(node, "epsilon", 1e-5)
        return isinstance(eps, float) and 0 < eps < math.inf  # no 0/0 on a constant row
    if op == "ConstantOfShape":
        tensor = attr(node, "value")
        return not isinstance(tensor, onnx.TensorProto) or _finite_value(onnx.numpy_helper.to_array(tensor))
    return all(math.isfinite(a.f) for a in node.attribute if a.type == onnx.AttributeProto.FLOAT)  # LeakyRelu's alpha...


def evaluate_constant(index: GraphIndex, name: str, opsets: dict[str, int]) -> np.ndarray | None:
    """The value of ``name``, computed from constants only (``GraphIndex.computed_from_constants``), by
    onnx's reference evaluator on the nodes it depends on; None when they read more than
    :data:`EVALUATE_MAX_BYTES` of initializers or cannot be evaluated. What onnxruntime's constant
    folding computes when the session is created: weight normalization's ``ReduceL2`` of a weight, the
    divisor of wav2vec2's positional convolution."""
    from onnx.reference import ReferenceEvaluator

    needed: list[str] = [name]
    nodes: dict[int, onnx.NodeProto] = {}
    inits: set[str] = set()
    while needed:
        cur = needed.pop()
        if cur in index.initializers:
            inits.add(cur)
            continue
        node = index.producer.get(cur)
        if node is None or node.domain not in ("", "ai.onnx"):
            return None
        if id(node) not in nodes:
            nodes[id(node)] = node
            needed.extend(i for i in node.input if i)
    if sum(stored_bytes(index.initializers[i]) for i in inits) > EVALUATE_MAX_BYTES:
        return None
    order = [n for n in index.graph.node if id(n) in nodes]
    graph = onnx.helper.make_graph(
        order, "constant", [], [onnx.helper.make_empty_tensor_value_info(name)], [index.initializers[i] for i in sorted(inits)]
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid(d, v) for d, v in opsets.items()])
    try:
        value = ReferenceEvaluator(model).run(None, {})[0]  # type: ignore[index]
    except Exception:  # noqa: BLE001 — not evaluable here: not known to be finite, the guard stays
        return None
    return np.asarray(value)


def _guards(index: GraphIndex, finite: _Finite, rank: Callable[[str], int | None]) -> list[tuple[onnx.NodeProto, onnx.NodeProto, str]]:
    """(IsNaN, Where, v) of every dead guard ``Where(IsNaN(v), c, v)``."""
    out = []
    for where in index.graph.node:
        if not is_op(where, "Where") or len(where.input) != 3 or not where.output[0]:
            continue
        cond, c, v = where.input
        isnan = index.producer.get(cond)
        if isnan is None or not is_op(isnan, "IsNaN") or isnan.input[0] != v or not v:
            continue
        if index.internal(where.output[0]) and _no_broadcast(index, c, v, rank) and finite(v):
            out.append((isnan, where, v))
    return out


def _no_broadcast(index: GraphIndex, c: str, v: str, rank: Callable[[str], int | None]) -> bool:
    """The Where's output has ``v``'s shape: ``c`` is one number, of no more dims than ``v``."""
    value = index.const(c)
    if value is None or value.size != 1:
        return False
    if value.ndim == 0:
        return True
    r = rank(v)
    return r is not None and value.ndim <= r


def _ranks(model: onnx.ModelProto) -> Callable[[str], int | None]:
    """Rank of a tensor by onnx's shape inference, run on first need (a rank-0 ``c`` needs none)."""
    types: list[dict[str, TensorType]] = []

    def rank(name: str) -> int | None:
        if not types:
            types.append(tensor_types(model))
        shape = t.shape if (t := types[0].get(name)) is not None else None
        return None if shape is None else len(shape)

    return rank


def apply(model: onnx.ModelProto) -> int:
    graph = model.graph
    if not any(is_op(n, "IsNaN") for n in graph.node):
        return 0
    index = GraphIndex(graph)
    opsets = {o.domain: o.version for o in model.opset_import}
    guards = _guards(index, _Finite(index, opsets), _ranks(model))
    if not guards:
        return 0
    edit = Rewrite(graph)
    renamed: dict[str, str] = {}
    for isnan, where, v in guards:
        cond = isnan.output[0]
        alone = all(u is where for u in index.uses(cond)) and index.internal(cond)
        edit.replace([isnan, where] if alone else [where], [])
        renamed[where.output[0]] = v
    for node in graph.node:
        for k, name in enumerate(node.input):
            if name in renamed:
                node.input[k] = renamed[name]
    return edit.commit()


PASS = GraphPass(
    name="nan-guard",
    summary="Where(IsNaN(v), c, v) -> v where v is finite whenever the inputs are (the SDPA guard after Softmax)",
    apply=apply,
)
