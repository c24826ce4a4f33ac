"""The operator policy for untrusted torch.export programs (mobilegen.load.pt2_ops) and the pytree-spec check
(mobilegen.load.pt2_safety.spec_refusal): one accepted and one refused case per rule."""

from __future__ import annotations

import json
import operator
import os

import pytest
import torch

from mobilegen.load.pt2_ops import CONTROL_FLOW, REFUSED_OPERATORS, node_refusal, target_name_refusal
from mobilegen.load.pt2_safety import SPEC_TYPES, spec_refusal


@pytest.mark.parametrize(
    "name",
    ["torch.ops.aten.linear.default", "torch.ops.prims.convert_element_type.default", "torch.ops.higher_order.cond", "_operator.getitem", "_operator.mul", "torch.sym_max", "math.trunc"],
)
def test_what_torch_writes_is_a_callable_target(name: str) -> None:
    assert target_name_refusal(name) is None


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("torch.ops.aten.from_file.default", "reads the file"),
        ("torch.ops.aten.save.default", "writes a file"),
        ("torch.ops.mylib.op.default", "'mylib' namespace"),
        ("torch.ops.higher_order.while_loop", "forever"),
        ("torch.ops.higher_order.flat_apply", "other than the program's own subgraphs"),
        ("torch.serialization.os.system", "not an ATen or prims operator"),
        ("torch.ops.aten.add", "not an ATen or prims operator"),  # a packet, not an overload
        ("#mylib/op", "not an ATen or prims operator"),
        ("builtins.eval", "not an ATen or prims operator"),
        (3, "not an operator name"),
    ],
)
def test_other_targets_are_refused(name: object, needle: str) -> None:
    why = target_name_refusal(name)
    assert why is not None and needle in why


def test_every_refused_operator_and_control_flow_op_exists() -> None:
    """The policy names real operators (a typo would allow the one it meant)."""
    for name in REFUSED_OPERATORS:
        assert hasattr(torch.ops.aten, name), name
    for name in CONTROL_FLOW:
        assert isinstance(getattr(torch.ops.higher_order, name), torch._ops.HigherOrderOperator), name


def _graph(target: object, *args: object) -> tuple[torch.nn.Module, torch.fx.Node]:
    """One call_function node on a placeholder (no code generated: some of these would not compile)."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    node = graph.call_function(target, tuple(x if a == "x" else a for a in args))  # type: ignore[arg-type]
    graph.output(node)
    return torch.nn.Module(), node


@pytest.mark.parametrize(
    ("target", "args"),
    [(torch.ops.aten.relu.default, ("x",)), (operator.mul, ("x", 2)), (operator.pow, ("x", 2)), (operator.getitem, ("x", 0))],
)
def test_allowed_nodes_pass(target: object, args: tuple[object, ...]) -> None:
    gm, node = _graph(target, *args)
    assert node_refusal(node, gm) is None


@pytest.mark.parametrize(
    ("target", "args", "needle"),
    [
        (torch.ops.aten.from_file.default, ("/etc/passwd",), "reads the file"),
        (os.system, ("true",), "not an ATen or prims operator"),
        (torch.ops.aten.add.Tensor, ("x", print), "passes the function builtins.print"),
        (torch.ops.aten.add.Tensor, ("x", [1, (torch.ops.aten.relu.default,)]), "passes the function aten::relu.default"),
        (operator.pow, ("x", 10**18), "literal number within ±64"),
        (operator.pow, (2, "x"), "literal number within ±64"),
        (operator.lshift, ("x", 2**40), "literal number within ±64"),
        (operator.add, ("x", 2**70), "larger than 2**63"),
        (torch.ops.higher_order.while_loop, ("x",), "forever"),
        (operator.getitem, ("x", "key"), "indexes something other"),
    ],
)
def test_refused_nodes(target: object, args: tuple[object, ...], needle: str) -> None:
    gm, node = _graph(target, *args)
    why = node_refusal(node, gm)
    assert why is not None and needle in why


def test_control_flow_takes_only_subgraphs_of_the_program() -> None:
    class Branch(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, (x,))

    ep = torch.export.export(Branch(), (torch.randn(3),))
    gm = ep.graph_module
    (cond,) = [n for n in gm.graph.nodes if n.target is torch.ops.higher_order.cond]
    assert node_refusal(cond, gm) is None
    setattr(gm, cond.args[1].target, torch.nn.Linear(1, 1))  # a module that is not a graph of the program
    why = node_refusal(cond, gm)
    assert why is not None and "as a subgraph" in why


def _spec(root: dict) -> str:
    return json.dumps([1, root])


LEAF = {"type": None, "context": None, "children_spec": []}


@pytest.mark.parametrize(
    "spec",
    [
        _spec(LEAF),
        _spec({"type": "builtins.tuple", "context": "null", "children_spec": [LEAF, {"type": "builtins.dict", "context": '["k", 1]', "children_spec": [LEAF, LEAF]}]}),
        _spec({"type": "collections.OrderedDict", "context": '[["a", 1]]', "children_spec": [LEAF]}),
        _spec({"type": "collections.deque", "context": "3", "children_spec": [LEAF]}),
        _spec({"type": "torch.Size", "context": "null", "children_spec": []}),
    ],
)
def test_container_specs_are_accepted(spec: str) -> None:
    assert spec_refusal(spec) is None


ENUM = json.dumps({"__enum__": True, "fqn": "ctypes:cdll", "name": "libx.so"})


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        (_spec({"type": "builtins.tuple", "context": ENUM, "children_spec": [LEAF]}), "__enum__"),
        (_spec({"type": "builtins.dict", "context": f"[{ENUM}]", "children_spec": [LEAF]}), "__enum__"),
        (_spec({"type": "collections.defaultdict", "context": {"default_factory_module": "os", "default_factory_name": "system", "dict_context": []}, "children_spec": []}), "collections.defaultdict"),
        (_spec({"type": "collections.namedtuple", "context": "mymod.Pair", "children_spec": [LEAF]}), "collections.namedtuple"),
        (_spec({"type": "NO_SERIALIZED_TYPE_NAME_FOUND", "context": "null", "children_spec": []}), "NO_SERIALIZED_TYPE_NAME_FOUND"),
        (_spec({"type": "mymod.Point", "context": '["x"]', "children_spec": [LEAF]}), "mymod.Point"),
        (_spec({"type": "collections.deque", "context": "-1", "children_spec": []}), "would not write"),
        (_spec({"type": None, "context": "null", "children_spec": []}), "leaf with a context"),
        (_spec({"type": "builtins.list", "context": "null"}), "not a pytree spec node"),
        (json.dumps([2, LEAF]), "protocol 1"),
        ("[1, {", "not JSON"),
        ("[" * 100_000 + "]" * 100_000, "nests too deeply"),
        (None, "not text"),
    ],
)
def test_hook_and_user_specs_are_refused(spec: object, needle: str) -> None:
    why = spec_refusal(spec)
    assert why is not None and needle in why


def test_spec_types_are_what_torch_registers() -> None:
    """Each accepted type name is registered by torch itself, with no deserializer of its own (so its
    context is plain JSON, which spec_refusal checks)."""
    from torch.utils import _pytree

    for name in SPEC_TYPES:
        typ = _pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE[name]
        assert _pytree.SUPPORTED_SERIALIZED_TYPES[typ].from_dumpable_context is None, name
