"""The "replace op X" suggestions: which refused op to act on, and with what.

A suggestion names what to do. When a standard rewrite of the op into other ONNX ops is known and the
provider has a builder for every op of it, it says "replace X with ..."; when the provider has a builder
for X but refused these nodes for its limits, it says which limit; otherwise it says that no rewrite
is known. Nodes refused only for a symbolic dim or the platform API level are left to the suggestions
about those, so an op refused only for an API-level setting is never told to be replaced.

The rewrites are plain ONNX identities (what an ONNX function body or a hand rewrite computes); the
provider's table says whether it takes the ops they use. Whether a suggestion shows at all is the
analysis' call (``WhatIf.change_if_taken``: fewer partitions or a better verdict).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mobilegen.providers.base import API, DYNAMIC, OP

if TYPE_CHECKING:
    from mobilegen.coverage.rules import EPTable
    from mobilegen.coverage.target import EPTarget
    from mobilegen.providers.base import Reason, WhatIf

MAX_OPS_TRIED = 3  # the most frequent refused ops a report suggests for (each costs a re-partitioning)


@dataclass(frozen=True)
class Rewrite:
    text: str  # "with ..." in the suggestion
    ops: tuple[str, ...]  # the ai.onnx ops it uses: the provider must have a builder for each


# ai.onnx op -> its rewrite into other ai.onnx ops.
REWRITES: dict[str, Rewrite] = {
    "Sum": Rewrite("a chain of Add (one per extra input)", ("Add",)),
    "Mean": Rewrite("a chain of Add, then Mul by 1/n", ("Add", "Mul")),
    "Gelu": Rewrite("its tanh approximation written with Mul, Add and Tanh (x·0.5·(1 + tanh(0.7979·(x + 0.044715·x³))))", ("Mul", "Add", "Tanh")),
    "Erf": Rewrite("the tanh approximation of the GELU it belongs to (Mul, Add, Tanh)", ("Mul", "Add", "Tanh")),
    "LayerNormalization": Rewrite("its ONNX definition: ReduceMean, Sub, Mul, Add, Sqrt and Div", ("ReduceMean", "Sub", "Mul", "Add", "Sqrt", "Div")),
    "InstanceNormalization": Rewrite("ReduceMean, Sub, Mul, Add, Sqrt and Div over the spatial axes", ("ReduceMean", "Sub", "Mul", "Add", "Sqrt", "Div")),
    "Flatten": Rewrite("Reshape to the flattened shape", ("Reshape",)),
    "Squeeze": Rewrite("Reshape to the squeezed shape", ("Reshape",)),
    "Unsqueeze": Rewrite("Reshape to the unsqueezed shape", ("Reshape",)),
    "Split": Rewrite("one Slice per output", ("Slice",)),
    "Pad": Rewrite("Slice and Concat of the edge rows/columns (reflect or edge padding)", ("Slice", "Concat")),
    "HardSwish": Rewrite("HardSigmoid and Mul", ("HardSigmoid", "Mul")),
    "HardSigmoid": Rewrite("Add 3, Clip to [0, 6] and Mul by 1/6 (the default alpha and beta)", ("Add", "Clip", "Mul")),
    "Neg": Rewrite("Mul by -1", ("Mul",)),
    "Abs": Rewrite("Relu(x) + Relu(-x) (Relu, Mul by -1, Add)", ("Relu", "Mul", "Add")),
    "Reciprocal": Rewrite("Div of 1 by the input", ("Div",)),
    "Sqrt": Rewrite("Pow with exponent 0.5", ("Pow",)),
    "Softplus": Rewrite("Exp, Add 1 and Log", ("Exp", "Add", "Log")),
    "Mish": Rewrite("x·tanh(softplus(x)) with Exp, Add, Log, Tanh and Mul", ("Exp", "Add", "Log", "Tanh", "Mul")),
    "ReduceSum": Rewrite("ReduceMean and Mul by the number of reduced elements", ("ReduceMean", "Mul")),
    "ReduceL2": Rewrite("Mul (square), ReduceSum and Sqrt", ("Mul", "ReduceSum", "Sqrt")),
    "Gemm": Rewrite("MatMul and Add", ("MatMul", "Add")),
    "Einsum": Rewrite("MatMul with Transpose and Reshape", ("MatMul", "Transpose", "Reshape")),
    "Expand": Rewrite("Add of a zero tensor of the target shape (broadcasting)", ("Add",)),
    "Where": Rewrite("arithmetic on the condition cast to float: c·x + (1 − c)·y (Cast, Mul, Sub, Add)", ("Cast", "Mul", "Sub", "Add")),
}


def takes(table: EPTable, target: EPTarget, op: str) -> bool:
    """Whether the provider has a builder for ai.onnx ``op`` (in this target's variant) whose limits are modelled."""
    spec = table.lookup("", op)
    if spec is None or op in table.unmodelled:
        return False
    return target.variant is None or spec.formats is None or target.variant in spec.formats


def rewrite_for(op_type: str, table: EPTable, target: EPTarget) -> Rewrite | None:
    """The known rewrite of ``op_type`` into ops the provider takes, or None."""
    rewrite = REWRITES.get(op_type)
    if rewrite is None or not all(takes(table, target, o) for o in rewrite.ops):
        return None
    return rewrite


def _op_is_the_obstacle(reasons: Sequence[Reason]) -> bool:
    """Refused for something about the op itself, not only for a symbolic dim or the API level."""
    return bool(reasons) and not all(r.category in (DYNAMIC, API) for r in reasons)


def op_suggestions(whatif: WhatIf, table: EPTable, target: EPTarget, display_name: str) -> list[str]:
    """For the most frequent ops refused for what they are (up to ``MAX_OPS_TRIED``): what to do about them,
    each only when taking that op's nodes would reduce the partitions or raise the verdict."""
    graph, reasons = whatif.graph, whatif.rule_reasons
    counts = Counter(graph.nodes[i].qualified for i in range(len(graph.nodes)) if _op_is_the_obstacle(reasons[i]))
    out: list[str] = []
    for op, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_OPS_TRIED]:
        marked = [graph.nodes[i].qualified == op for i in range(len(graph.nodes))]
        change = whatif.change_if_taken(marked)
        if change:
            own = [r for i, hit in enumerate(marked) if hit for r in reasons[i] if r.category not in (DYNAMIC, API)]
            out.append(f"{_what_to_do(op, count, own, table, target, display_name)}: {change}")
    return out


def _what_to_do(op: str, count: int, own: Sequence[Reason], table: EPTable, target: EPTarget, display_name: str) -> str:
    nodes = f"{op} ({count} node{'s' if count != 1 else ''})"
    rewrite = None if ":" in op else rewrite_for(op, table, target)  # rewrites are of ai.onnx ops only
    if rewrite is not None:
        return f"replace {nodes} with {rewrite.text}"
    texts = Counter(r.text for r in own).most_common()
    more = f" and {len(texts) - 1} more" if len(texts) > 1 else ""
    if own and all(r.category != OP for r in own):
        # the provider has a builder: the limit most of these nodes miss is what to change
        return f"change {nodes} to meet {display_name}'s limits ({texts[0][0]}{more})"
    if own and all(r.rule.endswith(".format") for r in own):
        return f"use the format that has a builder for {nodes} ({texts[0][0]})"
    return (
        f"rewrite {nodes} by hand with ops {display_name} takes, or move it into app code if it is at the model's "
        f"start or end: {display_name} has no builder for it and mobilegen knows no standard rewrite"
    )
