"""Undoing a graph pass cheaply: what a pass may change, copied before it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mobilegen.errors import InternalError

if TYPE_CHECKING:
    import onnx


class Snapshot:
    """What a pass may change, copied (nodes, value_info, graph inputs/outputs, opsets, functions), and
    the number of initializers it may append to. Weights are not copied."""

    def __init__(self, model: onnx.ModelProto) -> None:
        import onnx

        g = model.graph
        self._graph = onnx.GraphProto()
        self._graph.node.extend(g.node)
        self._graph.value_info.extend(g.value_info)
        self._graph.input.extend(g.input)
        self._graph.output.extend(g.output)
        self._model = onnx.ModelProto()  # copies of the opsets and functions (small), field presence kept
        self._model.opset_import.extend(model.opset_import)
        self._model.functions.extend(model.functions)
        self._ir_version = model.ir_version
        self._initializers = [i.name for i in g.initializer]
        self._sparse = len(g.sparse_initializer)

    def check(self, model: onnx.ModelProto, by: str) -> None:
        """InternalError when ``by`` removed, replaced or reordered an initializer (the pass contract)."""
        inits = model.graph.initializer
        if len(inits) < len(self._initializers) or any(inits[i].name != n for i, n in enumerate(self._initializers)):
            raise InternalError(f"graph pass '{by}' removed or replaced an initializer", hint="a pass may only append initializers")

    def restore(self, model: onnx.ModelProto) -> None:
        g = model.graph
        for name in ("node", "value_info", "input", "output"):
            field_ = getattr(g, name)
            del field_[:]
            field_.extend(getattr(self._graph, name))
        del g.initializer[len(self._initializers) :]
        del g.sparse_initializer[self._sparse :]
        for name in ("opset_import", "functions"):
            field_ = getattr(model, name)
            del field_[:]
            field_.extend(getattr(self._model, name))
        model.ir_version = self._ir_version
