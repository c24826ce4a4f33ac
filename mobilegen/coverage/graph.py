"""A read-only view of an ONNX graph with what the EP rules need: shapes, dtypes, constants, edges.

Built once per analysed model and shared by every target (``analyze_all``). Nothing here imports
onnxruntime; only ``onnx`` and ``numpy``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

Dim = int | str | None  # int: fixed; str: named symbolic dim; None: unnamed unknown dim
Shape = tuple[Dim, ...]

ONNX_DOMAINS = ("", "ai.onnx")
CONTROL_FLOW_OPS = ("If", "Loop", "Scan")

# Constants larger than this are not decoded (rules only need small tensors: axes, pads, scales, min/max).
_MAX_CONST_ELEMENTS = 4096


@dataclass(frozen=True)
class TensorInfo:
    elem_type: int | None  # onnx.TensorProto code, None when unknown
    shape: Shape | None  # None when the rank is unknown


@dataclass
class NodeInfo:
    index: int  # position in topological order
    name: str  # unique within the graph
    op_type: str
    domain: str  # "" for the default ONNX domain
    since_version: int | None  # the ONNX schema version the node resolves to; None if unknown op
    inputs: tuple[str, ...]  # "" for a missing optional input
    outputs: tuple[str, ...]
    attrs: dict[str, Any]
    subgraph_nodes: int = 0  # nodes inside If/Loop/Scan bodies (recursively)

    is_onnx_domain: bool = field(init=False, repr=False)
    qualified: str = field(init=False, repr=False)  # "Conv", or "com.microsoft:Gelu" outside ONNX's domain

    def __post_init__(self) -> None:  # read for every node by every provider: computed once
        self.is_onnx_domain = self.domain in ONNX_DOMAINS
        self.qualified = self.op_type if self.is_onnx_domain else f"{self.domain}:{self.op_type}"


@dataclass
class GraphInfo:
    nodes: list[NodeInfo]
    tensors: dict[str, TensorInfo]
    initializers: set[str]  # constant initializers (not overridable by a graph input)
    graph_inputs: list[str]
    graph_outputs: list[str]
    opsets: dict[str, int]
    producer: dict[str, int] = field(default_factory=dict)  # tensor name -> node index
    consumers: dict[str, list[int]] = field(default_factory=dict)  # tensor name -> node indices
    _init_protos: dict[str, onnx.TensorProto] = field(default_factory=dict, repr=False)
    _const_cache: dict[str, np.ndarray | None] = field(default_factory=dict, repr=False)
    _keys: list[int] | None = field(default=None, repr=False)
    # The QDQ node units (mobilegen.coverage.qdq.units_of), found once: None = not looked for yet,
    # False = the graph has none.
    qdq_units: Any = field(default=None, repr=False)
    _edges: tuple[list[int], list[list[int]]] | None = field(default=None, repr=False)

    def info(self, name: str) -> TensorInfo | None:
        return self.tensors.get(name)

    def is_const(self, name: str) -> bool:
        return name in self.initializers

    def const_value(self, name: str) -> np.ndarray | None:
        """The value of a (small) constant initializer, else None."""
        if name not in self.initializers:
            return None
        if name not in self._const_cache:
            proto = self._init_protos.get(name)
            value: np.ndarray | None = None
            if proto is not None and _num_elements(proto) <= _MAX_CONST_ELEMENTS:
                try:
                    value = numpy_helper.to_array(proto)
                except Exception:  # noqa: BLE001 — external data missing or exotic type: treat as unknown
                    value = None
            self._const_cache[name] = value
        return self._const_cache[name]

    def node_keys(self) -> list[int]:
        """Per node, the number of its kind: nodes with the same number have equal ``node_key``s, so
        every provider rule sees the same about them. Made once."""
        if self._keys is None:
            kinds: dict[Hashable, int] = {}
            consts: dict[str, Hashable] = {}
            self._keys = [kinds.setdefault(node_key(self, n, consts), len(kinds)) for n in self.nodes]
        return self._keys

    def edges(self) -> tuple[list[int], list[list[int]]]:
        """In-degree (one per consumed input slot fed by a node) and the consumer list per node, made
        once (callers copy the in-degrees before changing them)."""
        if self._edges is None:
            n = len(self.nodes)
            indeg = [0] * n
            out: list[list[int]] = [[] for _ in range(n)]
            for node in self.nodes:
                for t in node.inputs:
                    if not t:
                        continue
                    p = self.producer.get(t)
                    if p is None or p == node.index:
                        continue
                    indeg[node.index] += 1
                    out[p].append(node.index)
            self._edges = (indeg, out)
        return self._edges

    def successors(self, index: int) -> list[int]:
        out: list[int] = []
        seen: set[int] = set()
        for t in self.nodes[index].outputs:
            for c in self.consumers.get(t, ()):
                if c not in seen:
                    seen.add(c)
                    out.append(c)
        return out

    def predecessors(self, index: int) -> list[int]:
        out: list[int] = []
        seen: set[int] = set()
        for t in self.nodes[index].inputs:
            p = self.producer.get(t)
            if p is not None and p not in seen:
                seen.add(p)
                out.append(p)
        return out


# Constants up to this many elements enter a node's key by value; larger ones by name (no rule reads a
# large constant's values: GraphInfo.const_value gives None past _MAX_CONST_ELEMENTS).
_KEY_VALUE_ELEMENTS = 64


def _hashable(value: Any) -> Hashable:
    if isinstance(value, np.ndarray):
        if value.size <= _KEY_VALUE_ELEMENTS:
            return ("array", value.dtype.str, value.shape, value.tobytes())
        return ("array-id", id(value))  # never equal to another node's
    if isinstance(value, list | tuple):
        return tuple(_hashable(v) for v in value)
    return value if isinstance(value, Hashable) else ("id", id(value))


def _const_key(graph: GraphInfo, name: str) -> Hashable:
    proto = graph._init_protos.get(name)
    if proto is not None and _num_elements(proto) <= _KEY_VALUE_ELEMENTS:
        value = graph.const_value(name)
        if value is not None:
            return ("const", value.dtype.str, value.shape, value.tobytes())
    return ("const-name", name)


def node_key(graph: GraphInfo, node: NodeInfo, consts: dict[str, Hashable] | None = None) -> Hashable:
    """What provider rules can read about a node, as one hashable value: two nodes with equal keys get
    the same rule verdict on the same target. It holds the op, its schema version and attributes, each
    input's type, shape, constness (small constants by value, others by name) and producing op, and each
    output's type and shape. The names of non-constant tensors are left out: rules only quote them in
    refusal texts, so only "supported" verdicts are shared between nodes (see ``evaluate_nodes``).
    ``consts``: constant keys already made, by tensor name."""
    consts = {} if consts is None else consts
    ins: list[Hashable] = []
    for t in node.inputs:
        if not t:
            ins.append(None)
            continue
        prod = graph.producer.get(t)
        ins.append((
            graph.tensors.get(t),
            (consts[t] if t in consts else consts.setdefault(t, _const_key(graph, t))) if t in graph.initializers else None,
            None if prod is None else graph.nodes[prod].qualified,
        ))
    outs = tuple(graph.tensors.get(o) if o else None for o in node.outputs)
    attrs = tuple(sorted((k, _hashable(v)) for k, v in node.attrs.items()))
    return (node.domain, node.op_type, node.since_version, attrs, tuple(ins), outs, node.subgraph_nodes)


def _num_elements(proto: onnx.TensorProto) -> int:
    n = 1
    for d in proto.dims:
        n *= int(d)
    return n


def _tensor_info(vi: onnx.ValueInfoProto) -> TensorInfo:
    if vi.type.WhichOneof("value") != "tensor_type":
        return TensorInfo(None, None)
    tt = vi.type.tensor_type
    elem = tt.elem_type or None
    if not tt.HasField("shape"):
        return TensorInfo(elem, None)
    dims: list[Dim] = []
    for d in tt.shape.dim:
        which = d.WhichOneof("value")
        if which == "dim_value":
            dims.append(int(d.dim_value))
        elif which == "dim_param" and d.dim_param:
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return TensorInfo(elem, tuple(dims))


def _attr_value(attr: onnx.AttributeProto) -> Any:
    if attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
        return None  # subgraphs are counted, not analysed
    try:
        value = onnx.helper.get_attribute_value(attr)
    except Exception:  # noqa: BLE001 — malformed attribute: keep going, rules see None
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list):
        return tuple(v.decode("utf-8", errors="replace") if isinstance(v, bytes) else v for v in value)
    if isinstance(value, onnx.TensorProto):
        try:
            return numpy_helper.to_array(value)
        except Exception:  # noqa: BLE001
            return None
    return value


def _count_subgraph_nodes(node: onnx.NodeProto) -> int:
    total = 0
    for attr in node.attribute:
        graphs: Sequence[onnx.GraphProto] = ()
        if attr.type == onnx.AttributeProto.GRAPH:
            graphs = (attr.g,)
        elif attr.type == onnx.AttributeProto.GRAPHS:
            graphs = tuple(attr.graphs)
        for g in graphs:
            total += len(g.node)
            for n in g.node:
                total += _count_subgraph_nodes(n)
    return total


_schema_cache: dict[tuple[str, str, int], int | None] = {}


def since_version(op_type: str, domain: str, opset: int | None) -> int | None:
    """The since_version of the schema a node of this op resolves to under the model's opset import."""
    if opset is None:
        return None
    key = (op_type, domain, opset)
    if key not in _schema_cache:
        try:
            schema = onnx.defs.get_schema(op_type, opset, "" if domain in ONNX_DOMAINS else domain)
            _schema_cache[key] = int(schema.since_version)
        except Exception:  # noqa: BLE001 — unknown op / domain: no schema
            _schema_cache[key] = None
    return _schema_cache[key]


def _is_sorted(graph: onnx.GraphProto, known: set[str]) -> bool:
    """Whether every node comes after the producers of its inputs."""
    nodes = graph.node
    pending = {o for n in nodes for o in n.output if o} - known  # produced by a node not seen yet
    for n in nodes:
        for t in n.input:
            if t in pending:
                return False
        pending.difference_update(n.output)
    return True


def _topological(graph: onnx.GraphProto, known: set[str]) -> list[int]:
    """Kahn's order over the proto's node list (stable: keeps proto order when already sorted)."""
    if _is_sorted(graph, known):  # exporters and ORT write sorted graphs: skip the walk
        return list(range(len(graph.node)))
    produced_by: dict[str, int] = {}
    for i, n in enumerate(graph.node):
        for o in n.output:
            if o:
                produced_by[o] = i
    indeg = [0] * len(graph.node)
    succ: list[list[int]] = [[] for _ in graph.node]
    for i, n in enumerate(graph.node):
        deps = {produced_by[t] for t in n.input if t and t in produced_by and t not in known}
        deps.discard(i)
        indeg[i] = len(deps)
        for d in deps:
            succ[d].append(i)
    ready = deque(i for i in range(len(graph.node)) if indeg[i] == 0)
    order: list[int] = []
    while ready:
        i = ready.popleft()
        order.append(i)
        for s in succ[i]:
            indeg[s] -= 1
            if indeg[s] == 0:
                ready.append(s)
    if len(order) != len(graph.node):  # a cycle (invalid model): keep the remaining nodes in file order
        rest = [i for i in range(len(graph.node)) if i not in set(order)]
        order.extend(rest)
    return order


def build_graph_info(model: onnx.ModelProto) -> GraphInfo:
    graph = model.graph
    opsets: dict[str, int] = {}
    for imp in model.opset_import:
        opsets["" if imp.domain in ONNX_DOMAINS else imp.domain] = int(imp.version)

    tensors: dict[str, TensorInfo] = {}
    by_type: dict[bytes, TensorInfo] = {}  # most tensors share a handful of types: decode each once
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        key = vi.type.SerializeToString()
        decoded = by_type.get(key)
        if decoded is None:
            decoded = by_type[key] = _tensor_info(vi)
        tensors[vi.name] = decoded
    init_protos: dict[str, onnx.TensorProto] = {}
    graph_input_names = [i.name for i in graph.input]
    input_set = set(graph_input_names)
    for init in graph.initializer:
        init_protos[init.name] = init
        if init.name not in tensors or init.name not in input_set:
            tensors[init.name] = TensorInfo(int(init.data_type), tuple(int(d) for d in init.dims))
    # From IR 4 on, an initializer that is also a graph input can be overridden at run time: not a
    # constant (ORT's Graph::CanOverrideInitializer). Before IR 4 every initializer is a constant.
    if model.ir_version < 4:
        initializers = set(init_protos)
    else:
        initializers = {n for n in init_protos if n not in input_set}
    # Constant nodes are folded by ORT's basic optimizations; when analysing an unoptimized graph
    # treat their outputs as constants too (ORT would).
    const_node_outputs: dict[str, onnx.TensorProto] = {}
    for n in graph.node:
        if n.op_type == "Constant" and n.domain in ONNX_DOMAINS and len(n.output) == 1:
            for a in n.attribute:
                if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                    const_node_outputs[n.output[0]] = a.t

    order = _topological(graph, set(init_protos))
    nodes: list[NodeInfo] = []
    used_names: set[str] = set()
    for pos, i in enumerate(order):
        n = graph.node[i]
        domain = "" if n.domain in ONNX_DOMAINS else n.domain
        name = n.name or f"{n.op_type}_{i}"
        if name in used_names:
            k = 2
            while f"{name}#{k}" in used_names:
                k += 1
            name = f"{name}#{k}"
        used_names.add(name)
        nodes.append(
            NodeInfo(
                index=pos,
                name=name,
                op_type=n.op_type,
                domain=domain,
                since_version=since_version(n.op_type, domain, opsets.get(domain)),
                inputs=tuple(n.input),
                outputs=tuple(n.output),
                attrs={a.name: _attr_value(a) for a in n.attribute},
                subgraph_nodes=_count_subgraph_nodes(n) if n.op_type in CONTROL_FLOW_OPS else 0,
            )
        )

    info = GraphInfo(
        nodes=nodes,
        tensors=tensors,
        initializers=initializers,
        graph_inputs=[n for n in graph_input_names if n not in initializers],
        graph_outputs=[o.name for o in graph.output],
        opsets=opsets,
        _init_protos=init_protos,
    )
    for name, proto in const_node_outputs.items():
        info.initializers.add(name)
        info._init_protos[name] = proto
        info.tensors.setdefault(name, TensorInfo(int(proto.data_type), tuple(int(d) for d in proto.dims)))
    for node in nodes:
        for o in node.outputs:
            if o:
                info.producer[o] = node.index
        for t in node.inputs:
            if t:
                info.consumers.setdefault(t, []).append(node.index)
    return info
