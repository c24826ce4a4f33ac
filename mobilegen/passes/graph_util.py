"""Small helpers the graph passes share: who produces and consumes a tensor, constants, fresh names,
shapes from onnx's shape inference, and splicing new nodes in where old ones were.

Passes edit ``model.graph`` in place (:mod:`mobilegen.passes.base`): these helpers never modify or remove
an existing initializer; they only read them and add new ones.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

from mobilegen.infra.onnx_size import stored_bytes

ONNX_DOMAINS = ("", "ai.onnx")
Shape = tuple[int | None, ...]  # None: a symbolic or unknown dim


def opset(model: onnx.ModelProto, domain: str = "") -> int:
    """The model's opset import for ``domain`` ("" and "ai.onnx" are the same); 0 when not imported."""
    wanted = ONNX_DOMAINS if domain in ONNX_DOMAINS else (domain,)
    return max((o.version for o in model.opset_import if o.domain in wanted), default=0)


def is_op(node: onnx.NodeProto, op_type: str, domains: Sequence[str] = ONNX_DOMAINS) -> bool:
    return node.op_type == op_type and node.domain in domains


def attr(node: onnx.NodeProto, name: str, default: object = None) -> object:
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


class GraphIndex:
    """Producers and consumers of every tensor of the main graph, built once per pass run (a pass that
    changes the graph builds a new one before matching again)."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.graph = graph
        self.initializers = {t.name: t for t in graph.initializer}
        self.producer: dict[str, onnx.NodeProto] = {}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in graph.node:
            for o in node.output:
                if o:
                    self.producer[o] = node
            for i in node.input:
                if i:
                    self.consumers.setdefault(i, []).append(node)
        self.graph_outputs = {o.name for o in graph.output}
        self.graph_inputs = {i.name for i in graph.input}
        # a subgraph may read an outer tensor by name: such a tensor is used where we cannot see it
        self.used_in_subgraphs = _subgraph_reads(graph)

    def uses(self, name: str) -> list[onnx.NodeProto]:
        return self.consumers.get(name, [])

    def only_use(self, name: str) -> onnx.NodeProto | None:
        """The one node reading ``name`` (once or more), when nothing else sees it (no other node, no graph
        output, no subgraph); else None."""
        users = self.uses(name)
        if not users or any(u is not users[0] for u in users):
            return None
        return users[0] if self.internal(name) else None

    def internal(self, name: str) -> bool:
        """Whether ``name`` is seen only by the nodes of this graph (not a graph output, not read by a subgraph)."""
        return name not in self.graph_outputs and name not in self.used_in_subgraphs

    def const(self, name: str) -> np.ndarray | None:
        """The value of a constant tensor: an initializer (not a graph input, which a caller may override)
        or a Constant node's output; None otherwise."""
        if not name:
            return None
        init = self.initializers.get(name)
        if init is not None:
            if name in self.graph_inputs:
                return None
            return _to_array(init)
        node = self.producer.get(name)
        if node is not None and is_op(node, "Constant"):
            for a in node.attribute:
                if a.name == "value":
                    return _to_array(a.t)
                if a.name == "value_float":
                    return np.asarray(a.f, dtype=np.float32)
                if a.name == "value_floats":
                    return np.asarray(list(a.floats), dtype=np.float32)
                if a.name == "value_int":
                    return np.asarray(a.i, dtype=np.int64)
                if a.name == "value_ints":
                    return np.asarray(list(a.ints), dtype=np.int64)
        return None

    def computed_from_constants(self, name: str) -> bool:
        """Whether ``name`` is a constant or computed from constants only (what onnxruntime's constant
        folding turns into an initializer): no graph input, no random op, no subgraph upstream."""
        memo: dict[str, bool] = {}
        stack = [name]
        while stack:
            cur = stack[-1]
            if cur in memo:
                stack.pop()
                continue
            if cur in self.graph_inputs:
                memo[cur] = False
            elif cur in self.initializers:
                memo[cur] = True
            elif (node := self.producer.get(cur)) is None or node.op_type.startswith("Random") or any(
                a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute
            ):
                memo[cur] = False
            else:
                todo = [i for i in node.input if i and i not in memo]
                if todo:
                    stack.extend(todo)
                    continue
                memo[cur] = all(memo[i] for i in node.input if i)
            stack.pop()
        return memo[name]

    def scalar(self, name: str) -> float | None:
        """The value of a constant holding one number (any shape of size 1), else None."""
        value = self.const(name)
        if value is None or value.size != 1 or value.dtype.kind not in "fiu":
            return None
        return float(value.reshape(-1)[0])


def _to_array(t: onnx.TensorProto) -> np.ndarray | None:
    if t.data_location == onnx.TensorProto.EXTERNAL:
        return None  # weights not loaded: not read here
    try:
        return numpy_helper.to_array(t)
    except (ValueError, TypeError):
        return None


def _subgraph_reads(graph: onnx.GraphProto) -> set[str]:
    names: set[str] = set()
    for node in graph.node:
        for a in node.attribute:
            for sub in (a.g,) if a.type == onnx.AttributeProto.GRAPH else a.graphs:
                for n in sub.node:
                    names.update(i for i in n.input if i)
                names |= _subgraph_reads(sub)
    return names


def graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """``graph`` and every subgraph in it (If/Loop/Scan bodies), depth first."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from graphs(attr.g)
            for sub in attr.graphs:
                yield from graphs(sub)


_RESERVED: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("mobilegen_reserved_names", default=frozenset())


def all_names(graph: onnx.GraphProto) -> set[str]:
    """Every tensor and node name of ``graph`` and of its subgraphs, at any depth ("" left out)."""
    names: set[str] = set()
    for g in graphs(graph):
        names.update(t.name for t in g.initializer)
        names.update(v.name for v in (*g.input, *g.output, *g.value_info))
        for node in g.node:
            names.update(node.input)
            names.update(node.output)
            names.add(node.name)
    names.discard("")
    return names


@contextlib.contextmanager
def reserved_names(names: Iterable[str]) -> Iterator[None]:
    """While a pass runs on a body handed to it as a graph of its own (:mod:`mobilegen.passes.bodies`),
    :class:`Names` avoids the names of the rest of the model too (a body may not shadow an outer name)."""
    token = _RESERVED.set(frozenset(names))
    try:
        yield
    finally:
        _RESERVED.reset(token)


class Names:
    """Fresh tensor and node names that collide with nothing in the graph or its subgraphs (nor with each
    other, nor with the :func:`reserved_names`); with ``prefix``, each is ``<prefix>/<base>``."""

    def __init__(self, graph: onnx.GraphProto, *, prefix: str = "") -> None:
        self._used = set(_RESERVED.get()) | all_names(graph)
        self._prefix = prefix

    def __contains__(self, name: str) -> bool:
        return name in self._used

    def new(self, base: str) -> str:
        base = base or "t"
        base = f"{self._prefix}/{base}" if self._prefix else base
        name, i = base, 0
        while name in self._used:
            i += 1
            name = f"{base}_{i}"
        self._used.add(name)
        return name


class Constants:
    """New initializers for one pass run: the same value and dtype get one initializer."""

    def __init__(self, graph: onnx.GraphProto, names: Names, prefix: str) -> None:
        self._graph = graph
        self._names = names
        self._prefix = prefix
        self._cache: dict[tuple[str, tuple[int, ...], bytes], str] = {}

    def add(self, value: np.ndarray, hint: str = "const") -> str:
        value = np.asarray(value, order="C")  # not ascontiguousarray: it makes a 0-d scalar 1-D
        key = (value.dtype.str, value.shape, value.tobytes())
        name = self._cache.get(key)
        if name is None:
            name = self._names.new(f"{self._prefix}/{hint}")
            self._graph.initializer.append(numpy_helper.from_array(value, name))
            self._cache[key] = name
        return name

    def scalar(self, value: float, dtype: np.dtype | type = np.float32) -> str:
        return self.add(np.asarray(value, dtype=dtype), "c")

    def ints(self, values: Iterable[int], hint: str = "shape") -> str:
        return self.add(np.asarray(list(values), dtype=np.int64), hint)


@dataclass(frozen=True)
class TensorType:
    elem_type: int  # onnx.TensorProto.DataType; 0 when unknown
    shape: Shape | None  # None: rank unknown

    @property
    def static(self) -> bool:
        return self.shape is not None and all(d is not None for d in self.shape)


# Initializers at least this big are stubbed (type and dims only) for shape inference: data propagation
# reads only small constants (shapes, axes), and copying the weights would cost a model's size each time.
_STUB_MIN_BYTES = 64 * 1024


def tensor_types(model: onnx.ModelProto) -> dict[str, TensorType]:
    """Element type and shape of every tensor onnx's shape inference can tell (on a copy without the large
    weights: the model is not changed). A model it cannot infer gives what the graph already declares."""
    try:
        inferred = onnx.shape_inference.infer_shapes(_without_weights(model), strict_mode=False, data_prop=True)
    except (onnx.shape_inference.InferenceError, ValueError, RuntimeError):
        inferred = model
    graph = inferred.graph
    out: dict[str, TensorType] = {}
    for v in (*graph.input, *graph.value_info, *graph.output):
        if v.type.HasField("tensor_type"):
            out[v.name] = _tensor_type(v.type.tensor_type)
    for t in graph.initializer:
        out[t.name] = TensorType(t.data_type, tuple(int(d) for d in t.dims))
    return out


def _without_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` whose large initializers carry their type and dims but no bytes (marked as
    external data, which shape inference does not read)."""
    light = onnx.ModelProto(ir_version=model.ir_version)
    light.opset_import.extend(model.opset_import)
    light.functions.extend(model.functions)
    src, graph = model.graph, light.graph
    graph.name = src.name
    graph.node.extend(src.node)
    graph.input.extend(src.input)
    graph.output.extend(src.output)
    graph.value_info.extend(src.value_info)
    for t in src.initializer:
        if stored_bytes(t) < _STUB_MIN_BYTES:
            graph.initializer.append(t)
            continue
        stub = graph.initializer.add(name=t.name, data_type=t.data_type, dims=t.dims)
        stub.data_location = onnx.TensorProto.EXTERNAL
        stub.external_data.add(key="location", value="mobilegen-weights-not-copied")
    return light


def _tensor_type(tt: onnx.TypeProto.Tensor) -> TensorType:
    if not tt.HasField("shape"):
        return TensorType(tt.elem_type, None)
    dims = tuple(int(d.dim_value) if d.HasField("dim_value") else None for d in tt.shape.dim)
    return TensorType(tt.elem_type, dims)


class Rewrite:
    """Replacements of node groups by new nodes, applied to the graph at once by :meth:`commit`.

    Each group's new nodes go where the last of its old nodes was: every input of the group is computed
    before that place, and every reader of its outputs after it (so the graph stays topologically sorted)."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self._graph = graph
        self._position = {id(n): i for i, n in enumerate(graph.node)}
        self._gone: set[int] = set()
        self._new_at: dict[int, list[onnx.NodeProto]] = {}
        self._read: set[str] = set()  # what the replaced nodes read
        self._wrote: set[str] = set()  # and what they wrote
        self.count = 0  # source nodes replaced so far

    def claimed(self, nodes: Iterable[onnx.NodeProto]) -> bool:
        """Whether any of ``nodes`` is already replaced by an earlier group."""
        return any(id(n) in self._gone for n in nodes)

    def replace(self, old: Sequence[onnx.NodeProto], new: Sequence[onnx.NodeProto]) -> None:
        last = max(old, key=lambda n: self._position[id(n)])
        self._gone.update(id(n) for n in old)
        self._new_at[id(last)] = list(new)
        self._read.update(i for n in old for i in n.input if i)
        self._wrote.update(o for n in old for o in n.output if o)
        self.count += len(old)

    def commit(self) -> int:
        """Apply every replacement; returns the number of source nodes replaced."""
        if not self._gone:
            return 0
        out: list[onnx.NodeProto] = []
        for node in self._graph.node:
            key = id(node)
            if key not in self._gone:
                out.append(node)
            elif key in self._new_at:
                out.extend(self._new_at[key])
        out = self._without_orphan_constants(out)
        # the kept nodes belong to the container cleared below: copy them out first
        copies = [onnx.NodeProto.FromString(n.SerializeToString()) for n in out]
        del self._graph.node[:]
        self._graph.node.extend(copies)
        produced = {o for n in copies for o in n.output}
        drop_value_info(self._graph, self._wrote - produced)
        return self.count

    def _without_orphan_constants(self, nodes: list[onnx.NodeProto]) -> list[onnx.NodeProto]:
        """``nodes`` without the Constant nodes that only the replaced nodes read (their scalars)."""
        read = {i for n in nodes for i in n.input}
        seen = {o.name for o in self._graph.output} | _subgraph_reads(self._graph)
        return [
            n
            for n in nodes
            if not (
                is_op(n, "Constant")
                and all(o in self._read and o not in read and o not in seen for o in n.output)
            )
        ]


def drop_value_info(graph: onnx.GraphProto, names: Iterable[str]) -> None:
    """Forget stale shape annotations of tensors a pass removed or whose shape it changed."""
    gone = set(names)
    keep = [onnx.ValueInfoProto.FromString(v.SerializeToString()) for v in graph.value_info if v.name not in gone]
    if len(keep) != len(graph.value_info):
        del graph.value_info[:]
        graph.value_info.extend(keep)
