"""The constants and static shapes a graph has once its constant sub-graphs are folded, without folding
them: what ``fold-constants`` writes into the graph, and what ``rank6`` and ``pad`` read (a Pad's
computed pads, a Reshape's computed shape, the static shapes behind them).

TorchScript exports compute shapes at run time (Shape -> Gather -> Concat -> Reshape, the pads of a Pad
from Mod/ConstantOfShape...). Once the input dims are fixed all of it is constant, but onnx's shape
inference stops at the first value it cannot compute, and every shape after it is unknown (a Swin
block's Pad and its rank-6 Reshape/Transpose). Here the constant nodes are evaluated (onnx's reference
evaluator, one node at a time, with the model's opsets) and shape inference runs again with their
values, until nothing new is learnt.

Bounded: a node is evaluated only when each input is at most :data:`FOLD_MAX_BYTES` and each output is
known to be (or, for small shape arithmetic, turns out to be) at most that too, so no large weight is
read or copied. Random, quantization, control-flow and non-ONNX-domain nodes are never evaluated, nor a
node writing a graph output.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper

from mobilegen.passes.graph_util import (
    ONNX_DOMAINS,
    GraphIndex,
    TensorType,
    _tensor_type,
    _without_weights,
    attr,
    tensor_types,
)

FOLD_MAX_BYTES = 1 << 20  # the largest tensor read or written by an evaluated node (1 MiB)
_MAX_ROUNDS = 16  # shape inference re-runs (each round folds at least one more node)
_SMALL = 64  # elements: shape arithmetic on inputs this small is evaluated before its output is inferred

# Not deterministic, not a function of the values alone, or kept on purpose (QDQ structure).
_NEVER = frozenset(
    {
        "Constant",  # already a constant (read through GraphIndex.const)
        "RandomNormal",
        "RandomNormalLike",
        "RandomUniform",
        "RandomUniformLike",
        "Multinomial",
        "Bernoulli",
        "QuantizeLinear",
        "DequantizeLinear",
        "DynamicQuantizeLinear",
        "If",
        "Loop",
        "Scan",
    }
)
# Shape arithmetic whose output is no larger than a broadcast of its inputs: evaluated on small inputs
# even while its output shape is unknown (it becomes known in the next round otherwise).
_SHAPE_ARITHMETIC = frozenset(
    {
        "Identity", "Cast", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Concat", "Gather", "Slice",
        "Transpose", "Add", "Sub", "Mul", "Div", "Mod", "Neg", "Abs", "Floor", "Ceil", "Equal", "Less",
        "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Where", "Min", "Max", "ReduceProd",
        "ReduceSum", "ReduceMin", "ReduceMax", "Sign", "Split",
    }
)  # fmt: skip


@dataclass
class ConstView:
    """What folding would know: ``values`` of the constant tensors it computed (not the initializers and
    Constant nodes already in the graph: :meth:`value` reads those too), the ``types`` of every tensor
    as shape inference sees them afterwards, and the ``folded`` nodes (graph order)."""

    index: GraphIndex
    values: dict[str, np.ndarray] = field(default_factory=dict)
    types: dict[str, TensorType] = field(default_factory=dict)
    folded: list[onnx.NodeProto] = field(default_factory=list)

    def value(self, name: str) -> np.ndarray | None:
        """The value of ``name`` when it is constant and at most FOLD_MAX_BYTES, else None."""
        if not name:
            return None
        if name in self.values:
            return self.values[name]
        return _small_const(self.index, name)

    def static_shape(self, name: str) -> tuple[int, ...] | None:
        t = self.types.get(name)
        if t is None or t.shape is None or not t.static:
            return None
        return tuple(int(d) for d in t.shape if d is not None)


def const_view(model: onnx.ModelProto, index: GraphIndex | None = None) -> ConstView:
    """Evaluate ``model``'s constant nodes (bounded, see the module doc) and infer shapes with their values."""
    index = index or GraphIndex(model.graph)
    view = ConstView(index, types=tensor_types(model))
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    light: onnx.ModelProto | None = None
    pending = [n for n in model.graph.node if _may_fold(n, index)]
    for _ in range(_MAX_ROUNDS):
        new = _sweep(pending, view, opsets)
        if not new:
            break
        view.folded.extend(new)
        gone = {id(n) for n in new}
        pending = [n for n in pending if id(n) not in gone]
        if light is None:
            light = _without_weights(model)
        _substitute(light, new, view.values)
        view.types.update(_infer(light))
    view.folded.sort(key=_order(model.graph))
    return view


def static_types(model: onnx.ModelProto, needed: list[str], index: GraphIndex | None = None) -> dict[str, TensorType]:
    """onnx's shape inference, or the shapes after folding (:func:`const_view`, dearer) when some tensor of
    ``needed`` has no static shape without it."""
    types = tensor_types(model)
    if all((t := types.get(n)) is not None and t.static for n in needed):
        return types
    return const_view(model, index).types


def _order(graph: onnx.GraphProto):  # type: ignore[no-untyped-def]
    position = {id(n): i for i, n in enumerate(graph.node)}
    return lambda n: position[id(n)]


def _sweep(pending: list[onnx.NodeProto], view: ConstView, opsets: dict[str, int]) -> list[onnx.NodeProto]:
    """One pass over the candidate nodes in graph order: evaluate every one whose inputs are now known."""
    new: list[onnx.NodeProto] = []
    for node in pending:
        outputs = _evaluate(node, view, opsets)
        if outputs is None:
            continue
        new.append(node)
        for name, value in zip(node.output, outputs, strict=False):
            if name:
                view.values[name] = value
                view.types[name] = TensorType(helper.np_dtype_to_tensor_dtype(value.dtype), tuple(value.shape))
    return new


def _may_fold(node: onnx.NodeProto, index: GraphIndex) -> bool:
    if node.domain not in ONNX_DOMAINS or node.op_type in _NEVER:
        return False
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
        return False
    return all(o and o not in index.graph_outputs for o in node.output) and bool(node.output)


def _evaluate(node: onnx.NodeProto, view: ConstView, opsets: dict[str, int]) -> list[np.ndarray] | None:
    if node.op_type in ("Shape", "Size"):
        return _shape_of(node, view)
    inputs: dict[str, np.ndarray] = {}
    for name in node.input:
        if not name:
            continue
        value = view.value(name)
        if value is None:
            return None
        inputs[name] = value
    if not inputs:
        return None
    if not _outputs_small(node, view) and not (
        node.op_type in _SHAPE_ARITHMETIC and all(v.size <= _SMALL for v in inputs.values())
    ):
        return None
    return _run(node, inputs, opsets)


def _shape_of(node: onnx.NodeProto, view: ConstView) -> list[np.ndarray] | None:
    shape = view.static_shape(node.input[0]) if node.input else None
    if shape is None:
        return None
    if node.op_type == "Size":
        return [np.asarray(math.prod(shape), dtype=np.int64)]
    rank = len(shape)
    start = int(attr(node, "start", 0))  # type: ignore[call-overload]
    end = int(attr(node, "end", rank))  # type: ignore[call-overload]
    start, end = (min(max(v + rank if v < 0 else v, 0), rank) for v in (start, end))
    return [np.asarray(shape[start:end], dtype=np.int64)]


def _outputs_small(node: onnx.NodeProto, view: ConstView) -> bool:
    for name in node.output:
        t = view.types.get(name)
        if t is None or t.shape is None or not t.static:
            return False
        itemsize = _itemsize(t.elem_type)
        if itemsize is None or math.prod(int(d) for d in t.shape if d is not None) * itemsize > FOLD_MAX_BYTES:
            return False
    return True


def _itemsize(elem_type: int) -> int | None:
    try:
        return int(np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).itemsize)
    except (KeyError, TypeError, ValueError):
        return None


def _run(node: onnx.NodeProto, inputs: dict[str, np.ndarray], opsets: dict[str, int]) -> list[np.ndarray] | None:
    fast = _FAST.get(node.op_type)
    if fast is not None:
        try:
            out = fast(node, [inputs.get(i) for i in node.input], opsets.get("", 0))
        except (ValueError, IndexError, TypeError):  # numpy refuses: let the reference evaluator decide
            out = None
        if out is not None:
            return [out] if out.nbytes <= FOLD_MAX_BYTES else None
    from onnx.reference import ReferenceEvaluator

    undefined = onnx.TensorProto.UNDEFINED
    graph = helper.make_graph(
        [node],
        "fold",
        [helper.make_tensor_value_info(n, undefined, None) for n in inputs],
        [helper.make_tensor_value_info(o, undefined, None) for o in node.output],
    )
    try:
        results = ReferenceEvaluator(graph, opsets=opsets).run(None, inputs)
    except Exception:  # noqa: BLE001 — an op the reference evaluator cannot run is simply not folded
        return None
    values = [np.asarray(v) for v in results]
    if len(values) != len(node.output) or any(v.dtype == object or v.nbytes > FOLD_MAX_BYTES for v in values):
        return None
    return values


# numpy for the shape arithmetic TorchScript exports are made of (the reference evaluator costs ~0.6 ms a
# node to set up); None falls back to it. Each follows the op's ONNX definition at the model's opset.
_Fast = Callable[[onnx.NodeProto, list[np.ndarray | None], int], np.ndarray | None]


def _axes_of(node: onnx.NodeProto, inputs: list[np.ndarray | None], version: int) -> list[int] | None:
    if version >= 13:
        axes = inputs[1] if len(inputs) > 1 else None
        return None if axes is None else [int(a) for a in axes.reshape(-1)]
    got = attr(node, "axes", None)
    return [int(a) for a in got] if isinstance(got, list) else None


def _unsqueeze(node: onnx.NodeProto, inputs: list[np.ndarray | None], version: int) -> np.ndarray | None:
    axes, x = _axes_of(node, inputs, version), inputs[0]
    return None if axes is None or x is None else np.expand_dims(x, tuple(axes))


def _squeeze(node: onnx.NodeProto, inputs: list[np.ndarray | None], version: int) -> np.ndarray | None:
    axes, x = _axes_of(node, inputs, version), inputs[0]
    if x is None:
        return None
    return np.squeeze(x) if axes is None else np.squeeze(x, axis=tuple(axes))


def _cast(node: onnx.NodeProto, inputs: list[np.ndarray | None], version: int) -> np.ndarray | None:
    to = attr(node, "to", None)
    x = inputs[0]
    if x is None or not isinstance(to, int) or to not in _PLAIN_TYPES or x.dtype.kind not in "biuf":
        return None
    if x.dtype.kind == "f" and not np.isfinite(x).all():
        return None  # what a NaN or inf becomes as an integer is the evaluator's call, not numpy's
    return x.astype(helper.tensor_dtype_to_np_dtype(to))


def _reshape(node: onnx.NodeProto, inputs: list[np.ndarray | None], version: int) -> np.ndarray | None:
    x, shape = inputs[0], inputs[1] if len(inputs) > 1 else None
    if x is None or shape is None or version < 5:
        return None
    keep_zero = bool(attr(node, "allowzero", 0))
    dims = [x.shape[i] if d == 0 and not keep_zero else int(d) for i, d in enumerate(shape.reshape(-1))]
    return x.reshape(dims)


def _concat(node: onnx.NodeProto, inputs: list[np.ndarray | None], version: int) -> np.ndarray | None:
    parts = [x for x in inputs if x is not None]
    if not parts or len(parts) != len(inputs):
        return None
    return np.concatenate(parts, axis=int(attr(node, "axis", 0)))  # type: ignore[call-overload]


def _gather(node: onnx.NodeProto, inputs: list[np.ndarray | None], version: int) -> np.ndarray | None:
    data, indices = inputs[0], inputs[1] if len(inputs) > 1 else None
    if data is None or indices is None or indices.dtype.kind not in "iu":
        return None
    return np.take(data, indices, axis=int(attr(node, "axis", 0)))  # type: ignore[call-overload]


def _binary(op: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> _Fast:
    def run(node: onnx.NodeProto, inputs: list[np.ndarray | None], version: int) -> np.ndarray | None:
        a, b = inputs[0], inputs[1] if len(inputs) > 1 else None
        if a is None or b is None or a.dtype != b.dtype or a.dtype.kind not in "iu" or version < 7:
            return None  # integers only: float arithmetic is left to the reference evaluator
        return np.asarray(op(a, b))

    return run


_PLAIN_TYPES = frozenset(
    {
        onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16, onnx.TensorProto.BOOL,
        onnx.TensorProto.INT8, onnx.TensorProto.INT16, onnx.TensorProto.INT32, onnx.TensorProto.INT64,
        onnx.TensorProto.UINT8, onnx.TensorProto.UINT16, onnx.TensorProto.UINT32, onnx.TensorProto.UINT64,
    }
)  # fmt: skip
_FAST: dict[str, _Fast] = {
    "Identity": lambda n, i, v: i[0],
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Cast": _cast,
    "Reshape": _reshape,
    "Concat": _concat,
    "Gather": _gather,
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Equal": _binary(np.equal),
}


def _small_const(index: GraphIndex, name: str) -> np.ndarray | None:
    """An initializer or Constant value, when it is at most FOLD_MAX_BYTES (read without copying a big one)."""
    init = index.initializers.get(name)
    if init is not None:
        itemsize = _itemsize(init.data_type)
        if itemsize is None or math.prod(init.dims) * itemsize > FOLD_MAX_BYTES:
            return None
    value = index.const(name)
    if value is None or value.dtype == object or value.nbytes > FOLD_MAX_BYTES:
        return None
    return value


def _substitute(light: onnx.ModelProto, folded: list[onnx.NodeProto], values: dict[str, np.ndarray]) -> None:
    """Replace the ``folded`` nodes of the weightless copy by initializers holding their outputs."""
    gone = {o for n in folded for o in n.output if o}
    nodes = light.graph.node
    for i in reversed([i for i, n in enumerate(nodes) if n.output and n.output[0] in gone]):
        del nodes[i]
    light.graph.initializer.extend(numpy_helper.from_array(values[o], o) for o in sorted(gone))


def _infer(light: onnx.ModelProto) -> dict[str, TensorType]:
    try:
        inferred = onnx.shape_inference.infer_shapes(light, strict_mode=False, data_prop=True)
    except (onnx.shape_inference.InferenceError, ValueError, RuntimeError):
        return {}
    graph = inferred.graph
    return {
        v.name: _tensor_type(v.type.tensor_type)
        for v in (*graph.input, *graph.value_info, *graph.output)
        if v.type.HasField("tensor_type")
    }
