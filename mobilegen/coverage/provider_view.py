"""The graph the providers see, from the graph a CPU-only session saved (issue 18).

mobilegen optimises with a CPU-only ORT session (ORT_ENABLE_BASIC), and the saved graph carries two things
the CPU provider needs *after* partitioning, which the accelerators never see:

* Casts named ``InsertedPrecisionFreeCast_*`` (onnxruntime/core/optimizer/insert_cast_transformer.cc)
  around nodes the CPU provider has no float16 kernel for: the fp16 Conv reads as an fp32 Conv. The
  transformer names a cast's output ``InsertedPrecisionFreeCast_<tensor>`` (or renames the producer's
  output so and casts back to ``<tensor>``), so dropping the casts and the prefix restores the tensors.
* Function ops (GroupNormalization-18+, Softmax on float16...) inlined because no kernel took them
  (onnxruntime/core/framework/graph_partitioner.cc inlines only nodes no provider claimed; the inlined
  values are named ``_inlfunc_<Op>_...``). Where some provider has a builder for the op, the node is
  taken back whole from the un-optimized graph: the nodes between its inputs and outputs are its body.

Both run only when the saved graph has such names (one scan of the node outputs); a refolded graph is made
per set of claimed ops, when a target's provider has a builder for an inlined op.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import onnx

if TYPE_CHECKING:
    from mobilegen.coverage.rules import EPTable

CAST_PREFIX = "InsertedPrecisionFreeCast_"
INLINE_PREFIX = "_inlfunc_"


@dataclass
class Refolder:
    """The inlined function nodes of one model and how to take them back, per provider: ORT inlines a
    function node only when no provider of the session claimed it, so each target gets its own view."""

    model: onnx.ModelProto  # the saved graph without the CPU-only casts (function bodies inlined)
    inlined: tuple[onnx.NodeProto, ...]  # the original function nodes whose bodies were inlined
    _views: dict[frozenset[str], onnx.ModelProto | None] = field(default_factory=dict)

    def ops(self) -> frozenset[str]:
        return frozenset(n.op_type for n in self.inlined)

    def view(self, claimed: frozenset[str]) -> onnx.ModelProto | None:
        """The graph with the inlined nodes of the ``claimed`` op types taken back whole (None: no change)."""
        key = claimed & self.ops()
        if not key:
            return None
        if key not in self._views:
            self._views[key] = _refolded(self.model, [n for n in self.inlined if n.op_type in key])
        return self._views[key]


def for_providers(
    optimized: onnx.ModelProto, original: onnx.ModelProto | None, source: Path | None
) -> tuple[onnx.ModelProto, Refolder | None]:
    """``optimized`` without the CPU-only casts, and the function nodes it has inlined (None: none). The
    original graph is ``original``, or read from ``source`` (without its weights) only when needed."""
    outs = [o for n in optimized.graph.node for o in n.output]
    if any(o.startswith(CAST_PREFIX) for o in outs) or any(
        n.op_type == "Cast" and n.name.startswith(CAST_PREFIX) for n in optimized.graph.node
    ):
        _drop_precision_casts(optimized.graph)
        outs = [o for n in optimized.graph.node for o in n.output]
    if not any(o.startswith(INLINE_PREFIX) for o in outs):
        return optimized, None
    if original is None and source is not None and source.is_file():
        original = onnx.load(str(source), load_external_data=False)
    inlined = () if original is None else _inlined_nodes(optimized, original)
    return optimized, Refolder(optimized, inlined) if inlined else None


def claimed_by(table: EPTable) -> frozenset[str]:
    """Op types of the default domain the table's provider has a builder for (modelled or not)."""
    return frozenset([*(op for (domain, op) in table.ops if domain == ""), *table.unmodelled])


def _strip(name: str) -> str:
    return name[len(CAST_PREFIX):] if name.startswith(CAST_PREFIX) else name


def _drop_precision_casts(g: onnx.GraphProto) -> None:
    graph_names = {v.name for v in g.input} | {v.name for v in g.output} | {i.name for i in g.initializer}
    alias: dict[str, str] = {}  # a dropped cast's output -> the tensor it copied
    kept = []
    for n in g.node:
        if n.op_type == "Cast" and n.name.startswith(CAST_PREFIX) and len(n.input) == 1 and len(n.output) == 1:
            src, dst = _strip(n.input[0]), _strip(n.output[0])
            if src == dst:
                continue
            if n.output[0] not in graph_names:
                alias[n.output[0]] = n.input[0]  # an unusual name: consumers read the cast's input instead
                continue
        kept.append(n)
    for n in kept:
        for i, t in enumerate(n.input):
            n.input[i] = _strip(alias.get(t, t))
        for i, t in enumerate(n.output):
            n.output[i] = _strip(t)
    del g.node[:]
    g.node.extend(kept)
    # their recorded types are the CPU's float32: shape inference types them again
    stale = [v for v in g.value_info if v.name.startswith(CAST_PREFIX) or v.name in alias]
    for v in stale:
        g.value_info.remove(v)


def _has_function(op_type: str, opset: int) -> bool:
    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except onnx.defs.SchemaError:
        return False
    return bool(getattr(schema, "has_function", False) or getattr(schema, "has_context_dependent_function", False))


def _inlined_nodes(model: onnx.ModelProto, original: onnx.ModelProto) -> tuple[onnx.NodeProto, ...]:
    """The function nodes of ``original`` (default domain) that are no longer in ``model``."""
    opset = next((o.version for o in original.opset_import if o.domain in ("", "ai.onnx")), 0)
    present = {(n.name, n.op_type) for n in model.graph.node if n.name}
    return tuple(
        n for n in original.graph.node
        if n.domain in ("", "ai.onnx") and (n.name, n.op_type) not in present and _has_function(n.op_type, opset)
    )


def _refolded(model: onnx.ModelProto, nodes: list[onnx.NodeProto]) -> onnx.ModelProto | None:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    known = _inferred_types(out)
    changed = False
    for node in nodes:
        if _refold(out.graph, node):
            changed = True
            # onnx infers no shape for some function ops (GroupNormalization): keep what the body gave
            out.graph.value_info.extend(known[t] for t in node.output if t in known)
    return out if changed else None


def _inferred_types(model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:  # noqa: BLE001 — (a model past 2 GiB, a failing op) the refolded outputs stay untyped
        return {}
    return {v.name: v for v in inferred.graph.value_info}


def _refold(g: onnx.GraphProto, node: onnx.NodeProto) -> bool:
    """Replace the inlined body of ``node`` (the nodes producing its outputs, back to its inputs, every
    value between named ``_inlfunc_...``) by ``node``; left as it is when the body is not that clear."""
    producer = {o: i for i, n in enumerate(g.node) for o in n.output}
    available = {v.name for v in g.input} | {i.name for i in g.initializer} | set(producer)
    inputs = {t for t in node.input if t}
    outputs = [t for t in node.output if t]
    if not outputs or not inputs <= available or any(t not in producer for t in outputs):
        return False
    body: set[int] = set()
    todo = [producer[t] for t in outputs]
    while todo:
        i = todo.pop()
        if i in body:
            continue
        n = g.node[i]
        if any(o and o not in outputs and not o.startswith(INLINE_PREFIX) for o in n.output):
            return False  # a node the function did not make: not a clean body
        body.add(i)
        for t in n.input:
            if t and t not in inputs and t in producer:
                todo.append(producer[t])
    if any(g.node[i].op_type == node.op_type and g.node[i].name == node.name for i in body):
        return False
    last = max(body)
    new_nodes = []
    for i, n in enumerate(g.node):
        if i == last:
            new_nodes.append(node)
        elif i not in body:
            new_nodes.append(n)
    del g.node[:]
    g.node.extend(new_nodes)
    used = {t for n in g.node for t in n.input}
    for init in [i for i in g.initializer if i.name.startswith(INLINE_PREFIX) and i.name not in used]:
        g.initializer.remove(init)
    for v in [v for v in g.value_info if v.name.startswith(INLINE_PREFIX) and v.name not in used]:
        g.value_info.remove(v)
    return True
