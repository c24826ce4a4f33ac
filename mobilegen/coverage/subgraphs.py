"""The bodies of control-flow nodes (``If``/``Loop``/``Scan``), found once per analysed model.

ONNX Runtime partitions every subgraph on its own: ``GraphPartitioner`` calls each provider's
``GetCapability`` on the bodies of a control-flow node as well as on the main graph
(``onnxruntime/core/framework/graph_partitioner.cc``: subgraphs first, bottom up). What a provider does
there is its own rule (:attr:`mobilegen.providers.base.ExecutionProvider.takes_subgraphs`, with the ORT
file it was read from in ``subgraph_source``): a provider either returns nothing for a subgraph or judges
a body's nodes like the main graph's. The control-flow node itself is judged only by a provider that
declares a kernel for it (``control_flow_kernels``).

A :class:`Body` is one subgraph as a :class:`~mobilegen.coverage.graph.GraphInfo` of its own (shapes
from the shape inference run on the whole model, which annotates the bodies too), with the tensors it
reads from enclosing graphs known by their types, and the enclosing graphs' constants as constants.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import onnx

from mobilegen.coverage.graph import CONTROL_FLOW_OPS, GraphInfo, build_graph_info

__all__ = ["Body", "bodies"]


@dataclass(frozen=True)
class Body:
    """One subgraph: ``path`` names it from the main graph down (``If_0/then_branch``, nested:
    ``If_0/then_branch/Loop_3/body``); its nodes are reported as ``<path>/<node name>``."""

    path: str
    graph: GraphInfo

    def qualified(self, name: str) -> str:
        return f"{self.path}/{name}"


def bodies(model: onnx.ModelProto, main: GraphInfo) -> tuple[Body, ...]:
    """Every body of every control-flow node of ``model`` (whose main graph ``main`` describes), depth
    first in node order; () when there is none (checked without copying anything)."""
    if not any(n.op_type in CONTROL_FLOW_OPS for n in main.nodes):
        return ()
    return tuple(_walk(model, model.graph, main, ""))


def _walk(model: onnx.ModelProto, graph: onnx.GraphProto, info: GraphInfo, prefix: str) -> Iterator[Body]:
    by_output = {o: n for n in graph.node for o in n.output if o}
    for node_info in info.nodes:
        if node_info.op_type not in CONTROL_FLOW_OPS or not node_info.outputs:
            continue
        node = _node_proto(graph, node_info.outputs, by_output)
        if node is None:
            continue
        for attr in node.attribute:
            subs = (attr.g,) if attr.type == onnx.AttributeProto.GRAPH else tuple(attr.graphs)
            for k, sub in enumerate(subs):
                label = attr.name if len(subs) == 1 else f"{attr.name}[{k}]"
                path = f"{prefix}{node_info.name}/{label}"
                sub_info = _body_info(model, sub, info)
                yield Body(path, sub_info)
                yield from _walk(model, sub, sub_info, f"{path}/")


def _node_proto(graph: onnx.GraphProto, outputs: tuple[str, ...], by_output: dict[str, onnx.NodeProto]) -> onnx.NodeProto | None:
    first = next((o for o in outputs if o), None)
    return by_output.get(first) if first is not None else None


def _body_info(model: onnx.ModelProto, sub: onnx.GraphProto, outer: GraphInfo) -> GraphInfo:
    wrapper = onnx.ModelProto(ir_version=model.ir_version)
    wrapper.opset_import.extend(model.opset_import)
    wrapper.graph.CopyFrom(sub)
    info = build_graph_info(wrapper)
    defined = set(info.tensors) | set(info.producer) | set(info.graph_inputs)
    # what this body and the bodies inside it read from outside (a nested body sees the outer graphs
    # through this one)
    for name in sorted(_reads(sub) - defined):
        known = outer.tensors.get(name)
        if known is not None:
            info.tensors[name] = known
        if name in outer.initializers:  # an enclosing graph's constant: a constant here too
            info.initializers.add(name)
            proto = outer._init_protos.get(name)
            if proto is not None:
                info._init_protos[name] = proto
    return info


def _reads(graph: onnx.GraphProto) -> set[str]:
    """Every tensor name the nodes of ``graph`` and of its nested bodies read."""
    out: set[str] = set()
    for node in graph.node:
        out.update(i for i in node.input if i)
        for attr in node.attribute:
            for sub in (attr.g,) if attr.type == onnx.AttributeProto.GRAPH else tuple(attr.graphs):
                out |= _reads(sub)
    return out
