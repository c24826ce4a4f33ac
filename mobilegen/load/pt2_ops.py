"""Which functions an untrusted torch.export program may call: the policy, as data, with a reason each.

A serialized program names each node's function as text (``torch.ops.aten.linear.default``) and torch's
loader resolves that text by walking attributes of ``torch``, ``operator`` or ``math``, so any function
reachable from there — ``torch.serialization.os.system``, ``torch.ops.aten.from_file`` — could run when the
program runs (``inspect``, export and verification run it). Without ``--trust-pickle`` a program may call
only what is listed here, checked twice: on the names in the file before torch resolves them
(:func:`target_name_refusal`) and on the loaded graph before anything runs it (:func:`node_refusal`).
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Iterator
from typing import Any

# Tensor operators: an OpOverload of these namespaces computes its outputs from its tensor and number
# arguments only (torch checks their shapes and indices), except for REFUSED_OPERATORS.
OPERATOR_NAMESPACES = {
    "aten": "PyTorch's tensor operators",
    "prims": "the primitives aten operators decompose into",
}

# aten/prims operators that reach outside their tensors (every overload is refused).
REFUSED_OPERATORS = {
    "from_file": "reads the file its argument names (and blocks forever on a FIFO)",
    "save": "writes a file",
    "_print": "writes to the process's standard output",
    "warn": "emits a warning through the process's warning filters",
    "_test_warn_in_autograd": "emits a warning through the process's warning filters",
    "manual_seed": "re-seeds the process's global random generator",
    "seed": "re-seeds the process's global random generator from the operating system",
    "set_grad_enabled": "switches autograd for the whole process (programs use wrap_with_set_grad_enabled)",
    "_cufft_set_plan_cache_max_size": "changes process-wide cuFFT settings",
    "_cufft_clear_plan_cache": "changes process-wide cuFFT state",
    "_reshape_alias": "makes a view without checking that it fits its storage (reads memory outside the tensor)",
    "wait": "waits on a TorchScript future, not a tensor computation",
}

# Higher-order operators (torch.ops.higher_order.*) take parts of the program as arguments. Only those
# whose every function argument is a subgraph of the same program (checked node by node like the rest)
# and whose running time is bounded by the tensors they get are accepted.
CONTROL_FLOW = {
    "cond": "runs one of two subgraphs of the program",
    "map_impl": "runs a subgraph of the program once per slice of a tensor",
    "wrap_with_set_grad_enabled": "runs a subgraph with autograd switched, and switches it back",
    "wrap_with_autocast": "runs a subgraph under autocast, and restores it",
}
REFUSED_CONTROL_FLOW = {
    "while_loop": "loops for as long as the program's own condition says: a file can make it run forever",
}

# Python functions torch writes for arithmetic on symbolic sizes (serialize.py's _SYM_OPS), by the name
# torch's serializer gives them: integer and boolean arithmetic on sizes and numbers only. Their number
# arguments are bounded by check_symbolic_arguments (Python integers have no size limit).
SYMBOLIC_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "_operator.add": operator.add,
    "_operator.sub": operator.sub,
    "_operator.mul": operator.mul,
    "_operator.truediv": operator.truediv,
    "_operator.floordiv": operator.floordiv,
    "_operator.mod": operator.mod,
    "_operator.pow": operator.pow,
    "_operator.neg": operator.neg,
    "_operator.pos": operator.pos,
    "_operator.eq": operator.eq,
    "_operator.ne": operator.ne,
    "_operator.lt": operator.lt,
    "_operator.le": operator.le,
    "_operator.gt": operator.gt,
    "_operator.ge": operator.ge,
    "_operator.and_": operator.and_,
    "_operator.or_": operator.or_,
    "_operator.lshift": operator.lshift,
    "_operator.rshift": operator.rshift,
    "math.trunc": math.trunc,
    # the torch.sym_* functions are added by _symbolic_functions() (importing torch here would make
    # importing this module slow)
}
_TORCH_SYMBOLIC = ("sym_float", "sym_int", "sym_ite", "sym_max", "sym_min", "sym_not", "_sym_sqrt")
GETITEM = "_operator.getitem"  # picks one output of a node with several (its index is a number)

MAX_INT = 2**63  # |a number argument of a symbolic function|
MAX_EXPONENT = 64  # a symbolic power's exponent and a left shift's count: literal numbers up to this
_GROWING = {"_operator.pow": "exponent", "_operator.lshift": "shift count"}


@functools.cache
def _symbolic_functions() -> dict[str, Callable[..., Any]]:
    import torch

    torch_functions = {f"torch.{name}": getattr(torch, "sym_sqrt" if name == "_sym_sqrt" else name) for name in _TORCH_SYMBOLIC}
    return {**SYMBOLIC_FUNCTIONS, **torch_functions}


# ---- names in the file, before torch resolves them ---------------------------------------------------


def target_name_refusal(name: object) -> str | None:
    """Why a node whose serialized target is ``name`` may not be loaded without trust (completes "calls X,
    which ..."), or None."""
    if not isinstance(name, str):
        return "is not an operator name"
    if name == GETITEM or name in SYMBOLIC_FUNCTIONS or name in (f"torch.{n}" for n in _TORCH_SYMBOLIC):
        return None
    parts = name.split(".")
    if parts[:3] == ["torch", "ops", "higher_order"] and len(parts) == 4:
        return _control_flow_refusal(parts[3])
    if parts[:2] == ["torch", "ops"] and len(parts) == 5:
        return _operator_refusal(parts[2], parts[3])
    return "is not an ATen or prims operator (only --trust-pickle lets a program call other functions)"


def _operator_refusal(namespace: str, name: str) -> str | None:
    if namespace not in OPERATOR_NAMESPACES:
        return f"is an operator of the {namespace!r} namespace, not ATen or prims (custom operators run their own code)"
    if name in REFUSED_OPERATORS:
        return REFUSED_OPERATORS[name]
    return None


def _control_flow_refusal(name: str) -> str | None:
    if name in CONTROL_FLOW:
        return None
    return REFUSED_CONTROL_FLOW.get(name, "is a higher-order operator that can call functions other than the program's own subgraphs")


# ---- the loaded graph, before anything runs it -------------------------------------------------------


def node_refusal(node: Any, owner: Any) -> str | None:
    """Why the fx node ``node`` of the graph module ``owner`` may not run without trust (completes "its
    node X ..."), or None. Placeholders, outputs and get_attr nodes run nothing; call_function nodes must
    call an accepted function with no function among their arguments."""
    import torch

    if node.op in ("placeholder", "output", "get_attr"):
        return None
    if node.op != "call_function":
        return f"is a {node.op} node (torch.export programs call functions only)"
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        why = _operator_refusal(target.namespace, target._schema.name.split("::", 1)[-1])
    elif isinstance(target, torch._ops.HigherOrderOperator):
        name = target.name()  # type: ignore[no-untyped-call]
        why = _control_flow_refusal(name) or (None if getattr(torch.ops.higher_order, name, None) is target else "is not torch's own operator")
        if why is None:
            why = _subgraph_arguments_refusal(node, owner)
    elif target is operator.getitem:
        args = node.args
        why = None if len(args) == 2 and isinstance(args[0], torch.fx.Node) and type(args[1]) is int else "indexes something other than a node's outputs"
    else:
        names = {id(f): n for n, f in _symbolic_functions().items()}
        why = symbolic_arguments_refusal(names[id(target)], node.args) if id(target) in names else "is not an ATen or prims operator (only --trust-pickle lets a program call other functions)"
    if why is not None:
        return f"calls {_describe(target)}, which {why}"
    for value in _values(node.args, node.kwargs):
        if callable(value) and not isinstance(value, torch.fx.Node):
            return f"passes the function {_describe(value)} to {_describe(target)} (a program passes tensors, numbers and its own subgraphs)"
    return None


def _subgraph_arguments_refusal(node: Any, owner: Any) -> str | None:
    """Every get_attr argument of a control-flow node must be a GraphModule of the same program."""
    import torch

    for value in _values(node.args, node.kwargs):
        if isinstance(value, torch.fx.Node) and value.op == "get_attr":
            sub = owner
            for part in str(value.target).split("."):
                sub = getattr(sub, part, None)
            if not isinstance(sub, (torch.fx.GraphModule, torch.Tensor)):
                return f"gets {type(sub).__name__} {value.target!r} as a subgraph"
    return None


def symbolic_arguments_refusal(name: str, args: tuple[Any, ...]) -> str | None:
    """Numbers in a symbolic function's arguments are bounded like shape expressions: Python computes
    ``2 ** 10**18`` exactly, for ever."""
    for value in _values(args, {}):
        if type(value) is int and abs(value) > MAX_INT:
            return f"gets the integer argument {value if value.bit_length() < 200 else '...'}, larger than 2**63"
    if name in _GROWING:
        count = args[1] if len(args) > 1 else None
        if not (type(count) is int and abs(count) <= MAX_EXPONENT):
            return f"gets a {_GROWING[name]} that is not a literal number within ±{MAX_EXPONENT}"
    return None


def _values(args: Any, kwargs: Any) -> Iterator[Any]:
    """Every value inside the (nested) arguments, iteratively."""
    stack: list[Any] = [args, kwargs]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, slice):
            stack.extend((v.start, v.stop, v.step))
        else:
            yield v


def _describe(value: object) -> str:
    import torch

    if isinstance(value, torch._ops.OpOverload):
        return f"{value._schema.name}.{value._overloadname}"
    if isinstance(value, torch._ops.HigherOrderOperator):
        return f"higher_order::{value.name()}"  # type: ignore[no-untyped-call]
    module = getattr(value, "__module__", None) or type(value).__module__
    name = getattr(value, "__qualname__", None) or type(value).__qualname__
    return f"{module}.{name}"
