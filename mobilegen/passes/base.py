"""What a graph pass is to mobilegen: the contract between the pass library and the fix stage.

A pass rewrites an in-memory ``onnx.ModelProto`` into an equivalent graph that an execution provider
takes (a LayerNormalization into the ops it is made of, a 3-D MatMul into a 2-D one...). Execution
providers name the passes that help them (``ExecutionProvider.fixes``); the fix stage runs them per
target, re-analyses coverage after each and keeps a pass only if it helps.

Rules every pass follows (the fix stage relies on them to undo a pass cheaply):

- it mutates ``model.graph`` in place: it may replace, insert and remove nodes and add initializers and
  value_info, but never modifies or removes an existing initializer (it may read one);
- it keeps the graph's inputs and outputs (names, types, shapes) as they are;
- it returns the number of nodes it rewrote (the matched source nodes); 0 means the model is unchanged;
- an exact pass keeps every output within fp32 rounding of the original; a pass that does not is marked
  ``exact=False`` and only runs when the user asks for it by name (``--approximate NAME``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnx


@dataclass(frozen=True)
class GraphPass:
    """One rewrite: its name (kebab-case, shown in reports and JSON), what it does, and the function."""

    name: str
    summary: str  # one line: "LayerNormalization -> ReduceMean/Sub/Mul/Sqrt/Div/Add"
    apply: Callable[[onnx.ModelProto], int]
    exact: bool = True
    approximate_as: str = ""  # for exact=False: the word --approximate takes ("gelu")
    # run it in If/Loop/Scan bodies too, each handed over as a graph of its own (mobilegen.passes.bodies);
    # False for a pass that walks the bodies itself (fold-if)
    in_bodies: bool = True
