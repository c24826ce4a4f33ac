"""The QDQ node units a quantized model makes that its provider refuses, and the nodes to leave float so
that none forms (:func:`mobilegen.quantize.engine.quantize`'s int8 path for providers with a QDQ table)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mobilegen.coverage.graph import GraphInfo
    from mobilegen.quantize.recipes import Recipe

_QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")


# Ops ORT's QDQPropagationTransformer moves a Q/DQ pair across (optimizer/qdq_transformer/qdq_propagation.cc,
# CanNodePropagate): a float op before one of them can still end up between a DQ and a Q on the device.
_PROPAGATED = ("MaxPool", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Slice")


def refused_unit_breakers(model_path: Path, recipe: Recipe, left_float: Collection[str] = ()) -> list[str]:
    """Names of the nodes whose quantization makes a QDQ unit ``recipe``'s provider refuses, where leaving
    them float lets the provider take the unit's nodes one by one; [] for providers without unit rules.
    The units are those of the graph ORT runs (ORT_ENABLE_BASIC, as the coverage report sees it).
    ``left_float``: nodes a judged recipe leaves float (:mod:`mobilegen.quantize.judged`) although their op
    type is in the recipe: a unit around one of them is broken the same way."""
    from mobilegen.coverage.analyze import prepare
    from mobilegen.coverage.qdq import table_units
    from mobilegen.quantize.recipes import qdq_table, unit_ops

    table = qdq_table(recipe.provider)
    if table is None or not recipe.op_types or not all(table.lookup("", op) for op in _QDQ_OPS):
        return []
    taken = set(unit_ops(recipe.provider, recipe.activation_type).taken)
    graph = prepare(None, source=model_path).graph
    units = table_units(table, graph)
    names: list[str] = []
    for unit in units.units if units is not None else ():
        target = graph.nodes[unit.target]
        if unit.qlinear or (target.op_type in taken and target.name not in left_float) or table.lookup(target.domain, target.op_type) is None:
            continue
        if target.op_type in recipe.op_types:  # a Relu/Clip the quantizer kept: leave it float
            names.append(target.name)
        names += _quantizing_consumers(graph, unit.qs, recipe)
    return list(dict.fromkeys(n for n in names if n))


def _quantizing_consumers(graph: GraphInfo, qs: tuple[int, ...], recipe: Recipe) -> list[str]:
    """The nodes past ``qs`` (through Q/DQ and the ops ORT propagates them across) that quantized their input."""
    names: list[str] = []
    seen, todo = set(qs), list(qs)
    while todo:
        for out in graph.nodes[todo.pop()].outputs:
            for c in graph.consumers.get(out, []):
                node = graph.nodes[c]
                if node.op_type in (*_QDQ_OPS, *_PROPAGATED):
                    if node.op_type in recipe.op_types:
                        names.append(node.name)
                    if c not in seen:
                        seen.add(c)
                        todo.append(c)
                else:
                    names.append(node.name)
    return names


def named_nodes(pre: Path, work: Path) -> Path:
    """``pre`` with a unique name on every unnamed node: ``nodes_to_exclude`` (engine ``_static_for_provider``) names
    the nodes it leaves float, and ORT keeps an unnamed node unnamed."""
    import onnx

    model = onnx.load_model(str(pre), load_external_data=True)
    nodes = model.graph.node
    if all(n.name for n in nodes):
        return pre
    used = {n.name for n in nodes}
    for i, node in enumerate(nodes):
        if not node.name:
            name = f"{node.op_type}_{i}"
            while name in used:
                name += "_"
            node.name = name
            used.add(name)
    out = work / "pre-named.onnx"
    onnx.save_model(model, str(out))
    return out


_BIAS_OPS = ("Conv", "Gemm", "ConvTranspose")  # input 2: the bias onnxruntime.quantization makes int32


def own_biases(pre: Path, work: Path) -> Path:
    """``pre`` with a copy of its bias initializer for every Conv/Gemm whose bias is shared (with another
    node, or used as another input too). onnxruntime.quantization quantizes a tensor once: a shared bias
    (the exporter merges equal constants: zero-initialised Linear biases of a ``transformers`` model, or
    the MatMul+Add that ``quant_pre_process`` fuses into a Gemm) gets the uint8 QDQ of its first consumer
    instead of the int32 one a bias needs, ORT's Gemm/Conv selector then forms no node unit, and the float
    Gemm left between the DQs — its B a DequantizeLinear output, not a constant, with transB=0 — is
    refused by a provider whose Gemm rule wants a constant B unless transB=1 (its rule table names the ORT
    source): the ConvNeXt and ViT configs' int8 models split there."""
    import onnx

    model = onnx.load_model(str(pre), load_external_data=True)
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    uses: dict[str, int] = {}
    for n in g.node:
        for x in n.input:
            uses[x] = uses.get(x, 0) + 1
    changed = False
    used = set(inits) | {o for n in g.node for o in n.output}
    for n in g.node:
        if n.op_type not in _BIAS_OPS or len(n.input) < 3 or n.input[2] not in inits or uses[n.input[2]] < 2:
            continue
        name, k = f"{n.input[2]}_{n.name or n.op_type}_bias", 0
        while name in used:
            k += 1
            name = f"{n.input[2]}_{n.name or n.op_type}_bias{k}"
        copy = onnx.TensorProto()
        copy.CopyFrom(inits[n.input[2]])
        copy.name = name
        g.initializer.append(copy)
        used.add(name)
        uses[n.input[2]] -= 1
        n.input[2] = name
        changed = True
    if not changed:
        return pre
    out = work / "pre-bias.onnx"
    onnx.save_model(model, str(out))
    return out
