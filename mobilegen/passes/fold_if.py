"""``fold-if``: an ``If`` whose condition is constant -> the nodes of the branch it always takes, inlined.

A model bound with ``--const`` (silero-vad's ``sr``) or whose shapes are fixed often wraps all its work in
``If`` nodes whose condition can no longer change: ``If(sr == 16000)``, ``If(Shape(x)[0] == 1)``. No
execution provider takes an ``If`` (nor, most of them, the nodes of its bodies: see
:mod:`mobilegen.coverage.subgraphs`), so everything inside stays on the CPU. The condition is read from a
constant (initializer or ``Constant``) or, in the main graph, computed the way ``fold-constants`` would
(:mod:`mobilegen.passes.const_view`: shapes once the dims are fixed, ``Equal``, ``Not``, ``Cast``...).

Inlining the chosen branch into the graph that holds the ``If``:

- every name the branch defines (node outputs, initializers, sparse initializers) gets a fresh name
  (:class:`~mobilegen.passes.graph_util.Names`), except that the tensor a branch output is becomes the
  ``If``'s output of the same position (its readers are unchanged); an output the branch does not
  compute itself (an outer tensor, an initializer, the same tensor twice) gets an ``Identity``;
- references to those names inside nested subgraphs are renamed too (a nested body that defines the
  same name itself shadows it), references to outer tensors are left as they are (the branch may read
  the parent's tensors by name: they are in scope where the ``If`` was);
- the branch's initializers are appended to the parent graph (the pass contract: nothing existing is
  changed), its value_info is kept under the new names;
- the nodes that only computed the condition are removed when nothing else reads them.

Nested ``If``s come up to the parent graph with their branch and are folded in the same run when their
condition is known. ``If``s inside ``Loop``/``Scan`` bodies (and inside branches that are not folded) are
folded too when their condition is a constant of their own graph or of the main graph.

ONNX Runtime folds an ``If`` on a constant initializer itself when it optimizes (``ConstantFolding`` ->
``Graph::InlineIfSubgraph``), but it fails on nested ones once shapes are fixed (silero-vad: "... is not
If node's input or previous node output in this subgraph", and a crash when it saves the optimized
model): folding them here first is what lets such a model load at all with fixed dims. That is why
``fixed-dims`` runs this pass right after fixing the dims (:mod:`mobilegen.passes.dims`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import onnx

from mobilegen.errors import first_line
from mobilegen.passes.base import GraphPass
from mobilegen.passes.const_view import const_view
from mobilegen.passes.graph_util import GraphIndex, Names, drop_value_info, graphs, is_op
from mobilegen.passes.snapshot import Snapshot

_GRAPH = onnx.AttributeProto.GRAPH
_GRAPHS = onnx.AttributeProto.GRAPHS
_MAX_ROUNDS = 64  # each round folds at least one If; a model this deep in Ifs is not seen in practice


def apply(model: onnx.ModelProto) -> int:
    """Fold every ``If`` with a known condition, in the main graph and in subgraphs; returns the number
    of nodes rewritten (the ``If`` nodes folded and the condition nodes removed with them)."""
    total = 0
    for _ in range(_MAX_ROUNDS):
        done = _fold_main(model)
        if not done:
            break
        total += done
    if not any(is_op(n, "If") for g in _subgraphs(model.graph) for n in g.node):
        return total
    outer = GraphIndex(model.graph)
    for _ in range(_MAX_ROUNDS):  # folding in a body copies its nodes: look for the subgraphs again
        done = next(
            (d for g in _subgraphs(model.graph) if (d := _fold_in(g, _local(g, outer), model.graph))), 0
        )
        if not done:
            break
        total += done
    return total


def _fold_main(model: onnx.ModelProto) -> int:
    """One round on the main graph: the Ifs whose condition a constant gives, else those const_view
    can compute (dearer: evaluated only when some If is left)."""
    graph = model.graph
    if not any(is_op(n, "If") for n in graph.node):
        return 0
    index = GraphIndex(graph)
    done = _fold_in(graph, index.const, graph)
    if done:
        return done

    view = const_view(model, index)
    return _fold_in(graph, view.value, graph)


def _fold_in(graph: onnx.GraphProto, const: Callable[[str], np.ndarray | None], root: onnx.GraphProto) -> int:
    """Fold the Ifs of ``graph`` (not of its subgraphs) whose condition ``const(name)`` gives."""
    chosen: list[tuple[onnx.NodeProto, onnx.GraphProto]] = []
    for node in graph.node:
        if not is_op(node, "If") or not node.input:
            continue
        value = const(node.input[0])
        if value is None or value.size != 1 or value.dtype == object:
            continue
        branch = _branch(node, "then_branch" if bool(np.asarray(value).reshape(-1)[0]) else "else_branch")
        if branch is not None:
            chosen.append((node, branch))
    if not chosen:
        return 0
    names = Names(root)
    conds = {n.input[0] for n, _ in chosen}
    replaced: dict[int, list[onnx.NodeProto]] = {}
    for node, branch in chosen:
        replaced[id(node)] = _inline(graph, node, branch, names)
    out: list[onnx.NodeProto] = []
    for node in graph.node:
        out.extend(replaced.get(id(node), [node]))
    out, removed = _without_dead(graph, out, conds)
    copies = [onnx.NodeProto.FromString(n.SerializeToString()) for n in out]
    del graph.node[:]
    graph.node.extend(copies)
    # the If's outputs were annotated with what either branch may give (symbolic where they differ): the
    # branch's own shapes are inferred again; the condition's removed nodes lose theirs too
    produced = {o for n in copies for o in n.output if o}
    drop_value_info(
        graph,
        {o for n, _ in chosen for o in n.output if o} | (_annotated(graph) - produced - _defined(graph)),
    )
    return len(chosen) + removed


def _annotated(graph: onnx.GraphProto) -> set[str]:
    return {v.name for v in graph.value_info}


def _defined(graph: onnx.GraphProto) -> set[str]:
    """Tensors a graph has without a node computing them: inputs and initializers (value_info may name them)."""
    return {i.name for i in graph.input} | {t.name for t in graph.initializer}


def _branch(node: onnx.NodeProto, name: str) -> onnx.GraphProto | None:
    for a in node.attribute:
        if a.name == name and a.type == _GRAPH:
            branch: onnx.GraphProto = a.g
            return branch
    return None


def _inline(
    graph: onnx.GraphProto, node: onnx.NodeProto, branch: onnx.GraphProto, names: Names
) -> list[onnx.NodeProto]:
    """The nodes replacing ``node`` in ``graph``: the branch's, renamed, then Identities for the outputs
    the branch does not compute itself. Appends the branch's initializers and value_info to ``graph``."""
    defined = [t.name for t in branch.initializer]
    defined += [t.values.name for t in branch.sparse_initializer]
    defined += [o for n in branch.node for o in n.output if o]
    produced = {o for n in branch.node for o in n.output if o}
    rename: dict[str, str] = {}
    tails: list[onnx.NodeProto] = []
    taken: set[str] = set()
    pending: list[tuple[str, str]] = []  # (branch tensor, If output) computed by an Identity
    for b_out, y in zip((o.name for o in branch.output), node.output, strict=False):
        if not y:
            continue
        if b_out in produced and b_out not in taken:
            rename[b_out] = y
            taken.add(b_out)
        else:
            pending.append((b_out, y))
    for name in defined:
        if name not in rename:
            rename[name] = names.new(f"{node.name or 'If'}/{name}")
    prefix = node.name or "If"
    new_nodes: list[onnx.NodeProto] = []
    for n in branch.node:
        c = onnx.NodeProto()
        c.CopyFrom(n)
        c.name = names.new(f"{prefix}/{n.name or n.op_type}")
        _rename_node(c, rename)
        new_nodes.append(c)
    for b_out, y in pending:
        src = rename.get(b_out, b_out)
        tails.append(onnx.helper.make_node("Identity", [src], [y], name=names.new(f"{prefix}/output")))
    for t in branch.initializer:
        c = onnx.TensorProto()
        c.CopyFrom(t)
        c.name = rename[t.name]
        graph.initializer.append(c)
    for s in branch.sparse_initializer:
        sc = onnx.SparseTensorProto()
        sc.CopyFrom(s)
        sc.values.name = rename[s.values.name]
        graph.sparse_initializer.append(sc)
    for v in branch.value_info:
        if v.name in rename:
            vc = onnx.ValueInfoProto()
            vc.CopyFrom(v)
            vc.name = rename[v.name]
            graph.value_info.append(vc)
    return new_nodes + tails


def _rename_node(node: onnx.NodeProto, rename: dict[str, str]) -> None:
    for i, name in enumerate(node.input):
        if name in rename:
            node.input[i] = rename[name]
    for i, name in enumerate(node.output):
        if name in rename:
            node.output[i] = rename[name]
    for a in node.attribute:
        for sub in (a.g,) if a.type == _GRAPH else a.graphs if a.type == _GRAPHS else ():
            _rename_outer(sub, rename)


def _rename_outer(graph: onnx.GraphProto, rename: dict[str, str]) -> None:
    """Rename the outer-scope references of a nested subgraph (the names it defines itself shadow)."""
    own = {t.name for t in graph.initializer} | {i.name for i in graph.input}
    own |= {t.values.name for t in graph.sparse_initializer}
    own |= {o for n in graph.node for o in n.output if o}
    visible = {k: v for k, v in rename.items() if k not in own}
    if not visible:
        return
    for n in graph.node:
        for i, name in enumerate(n.input):
            if name in visible:
                n.input[i] = visible[name]
        for a in n.attribute:
            for sub in (a.g,) if a.type == _GRAPH else a.graphs if a.type == _GRAPHS else ():
                _rename_outer(sub, visible)
    for o in graph.output:  # a body may return an outer tensor as it is
        if o.name in visible:
            o.name = visible[o.name]


def _without_dead(
    graph: onnx.GraphProto, nodes: list[onnx.NodeProto], conds: set[str]
) -> tuple[list[onnx.NodeProto], int]:
    """``nodes`` without those that only computed the folded conditions (nothing else reads them)."""
    keep_names = {o.name for o in graph.output}
    removed = 0
    suspects = set(conds)
    while suspects:
        read = {i for n in nodes for i in n.input if i} | keep_names | _reads_of_subgraphs(nodes)
        dead = [
            n
            for n in nodes
            if any(o in suspects for o in n.output)
            and all(o not in read for o in n.output if o)
            and not n.op_type.startswith("Random")
        ]
        if not dead:
            break
        gone = {id(n) for n in dead}
        nodes = [n for n in nodes if id(n) not in gone]
        removed += len(dead)
        suspects = {i for n in dead for i in n.input if i}
    return nodes, removed


def _reads_of_subgraphs(nodes: list[onnx.NodeProto]) -> set[str]:
    out: set[str] = set()
    for n in nodes:
        for a in n.attribute:
            for sub in (a.g,) if a.type == _GRAPH else a.graphs if a.type == _GRAPHS else ():
                for g in graphs(sub):
                    for m in g.node:
                        out.update(i for i in m.input if i)
    return out


def _subgraphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """Every subgraph below ``graph`` (not ``graph`` itself), depth first."""
    for g in graphs(graph):
        if g is not graph:
            yield g


def _local(graph: onnx.GraphProto, outer: GraphIndex) -> Callable[[str], np.ndarray | None]:
    """A constant of ``graph`` (its initializer or Constant node), else of the main graph (a body input
    or a tensor the body computes is no constant; a constant of an enclosing body is not looked for)."""
    index = GraphIndex(graph)
    defined = {o for n in graph.node for o in n.output} | {i.name for i in graph.input}

    def const(name: str) -> np.ndarray | None:
        value = index.const(name)
        if value is not None:
            return value
        return None if name in defined else outer.const(name)

    return const


def fold_unjudged(model: onnx.ModelProto) -> tuple[int, str | None]:
    """:func:`apply` where it is not judged (after ``fixed-dims``, before the fix stage's first analysis):
    (nodes rewritten, None), or (0, the error) with ``model`` as it was when folding failed."""
    if not any(is_op(n, "If") for g in graphs(model.graph) for n in g.node):
        return 0, None
    snap = Snapshot(model)
    try:
        return apply(model), None
    except Exception as err:  # noqa: BLE001 — a bug folding one model must not cost the build: keep the Ifs
        snap.restore(model)
        return 0, first_line(err, 200)


PASS = GraphPass(
    name="fold-if",
    summary="If with a constant condition -> the nodes of the branch it takes",
    apply=apply,
    in_bodies=False,  # it folds the Ifs of bodies itself, with the main graph's constants in view
)
