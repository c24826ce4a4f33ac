"""Graph passes inside ``If``/``Loop``/``Scan`` bodies: each pass runs on the main graph, then on every body.

Passes are written against ``model.graph`` (:mod:`mobilegen.passes.base`). A body is handed to them as the
graph of a model of its own, made for the call: its nodes, initializers, value_info, inputs and outputs,
plus what it reads from the graphs around it — an enclosing graph's constant (initializer or ``Constant``)
as an initializer, so a pass sees a constant weight as constant, and any other outer tensor as an input
with the type shape inference gives it. Afterwards the body gets the rewritten nodes and value_info and
the initializers the pass appended; the borrowed ones are left out. Fresh names avoid every name of the
whole model (:func:`mobilegen.passes.graph_util.reserved_names`): a body may not shadow an outer name.

Undoing stays cheap: bodies live in node attributes, which :class:`mobilegen.passes.snapshot.Snapshot` copies
with the nodes. ``fold-if`` walks the bodies itself (``GraphPass.in_bodies=False``).

Where it matters: a provider that takes a body's nodes (``ExecutionProvider.takes_subgraphs``,
:mod:`mobilegen.coverage.subgraphs`) can gain from a rewrite inside a ``Loop``; for one that takes none,
only folding the ``If`` helps.
"""

from __future__ import annotations

from collections.abc import Iterator

import onnx

from mobilegen.passes.base import GraphPass
from mobilegen.passes.graph_util import GraphIndex, _without_weights, all_names, graphs, reserved_names

_GRAPH = onnx.AttributeProto.GRAPH
_GRAPHS = onnx.AttributeProto.GRAPHS


def apply_everywhere(graph_pass: GraphPass, model: onnx.ModelProto) -> int:
    """``graph_pass`` on the main graph, then (unless it walks them itself) on every body; the nodes
    rewritten in all of them."""
    count = int(graph_pass.apply(model))
    if not graph_pass.in_bodies or not has_bodies(model.graph):
        return count
    types = _types(model)
    every = all_names(model.graph)
    for body, consts in list(_bodies(model.graph, {})):
        count += _apply_to_body(graph_pass, model, body, consts, types, every)
    return count


def has_bodies(graph: onnx.GraphProto) -> bool:
    return any(a.type in (_GRAPH, _GRAPHS) for n in graph.node for a in n.attribute)


def _bodies(graph: onnx.GraphProto, outer: dict[str, onnx.TensorProto]) -> Iterator[tuple[onnx.GraphProto, dict[str, onnx.TensorProto]]]:
    """Every body below ``graph`` with the constants of the graphs around it (name -> value), innermost
    first: a body's rewrite replaces its nodes (and the bodies inside them) by copies, so the bodies inside
    it are done by then."""
    scope = {**outer, **_constants(graph)}
    for node in graph.node:
        for a in node.attribute:
            for sub in (a.g,) if a.type == _GRAPH else a.graphs if a.type == _GRAPHS else ():
                yield from _bodies(sub, scope)
                yield sub, scope


def _constants(graph: onnx.GraphProto) -> dict[str, onnx.TensorProto]:
    inputs = {i.name for i in graph.input}
    out = {t.name: t for t in graph.initializer if t.name not in inputs}
    for n in graph.node:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and len(n.output) == 1:
            for a in n.attribute:
                if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                    out[n.output[0]] = a.t
    return out


def _types(model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    """The type of every tensor shape inference can tell, in any graph of the model (names are unique
    across scopes)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(_without_weights(model), strict_mode=False)
    except (onnx.shape_inference.InferenceError, ValueError, RuntimeError):
        inferred = model
    out: dict[str, onnx.ValueInfoProto] = {}
    for g in graphs(inferred.graph):
        for v in (*g.input, *g.value_info, *g.output):
            if v.type.HasField("tensor_type"):
                out.setdefault(v.name, v)
    return out




def _apply_to_body(
    graph_pass: GraphPass,
    model: onnx.ModelProto,
    body: onnx.GraphProto,
    consts: dict[str, onnx.TensorProto],
    types: dict[str, onnx.ValueInfoProto],
    every: set[str],
) -> int:
    sub = onnx.ModelProto(ir_version=model.ir_version)
    sub.opset_import.extend(model.opset_import)
    sub.functions.extend(model.functions)
    g = sub.graph
    g.name = body.name or "body"
    g.node.extend(body.node)
    g.initializer.extend(body.initializer)
    g.sparse_initializer.extend(body.sparse_initializer)
    g.value_info.extend(body.value_info)
    g.input.extend(body.input)
    g.output.extend(body.output)
    own = len(g.initializer)
    index = GraphIndex(body)
    defined = set(index.producer) | set(index.initializers) | index.graph_inputs
    reads = sorted({i for n in body.node for i in n.input if i and i not in defined} | (index.used_in_subgraphs - defined))
    for name in reads:
        if name in consts:
            g.initializer.append(consts[name])  # borrowed: not written back
        elif name in types:
            g.input.append(types[name])
        else:
            g.input.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.UNDEFINED, None))
    borrowed = len(g.initializer) - own
    with reserved_names(every):
        count = int(graph_pass.apply(sub))
    if count <= 0:
        return 0
    del body.node[:]
    body.node.extend(g.node)
    body.initializer.extend(g.initializer[own + borrowed :])
    del body.value_info[:]
    body.value_info.extend(v for v in g.value_info if v.name not in consts)
    every.update(all_names(body))
    return count
