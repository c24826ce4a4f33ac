"""Rule types shared by the providers' tables, and the per-node context the rule predicates read.

A table is data: an ``OpSpec`` per registered op (since-version range, minimum platform API, the dtypes
input 0 may have, the ids of the op rules that apply) plus ``Rule`` objects. A rule's ``check`` returns
the reasons it refuses the node (empty: accepted); every reason it gives carries the rule's id and
category. Every rule names the ONNX Runtime source file it was read from (paths in the
microsoft/onnxruntime repository).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from onnx import TensorProto

from mobilegen.coverage.graph import GraphInfo, NodeInfo, Shape
from mobilegen.coverage.target import EPTarget
from mobilegen.providers.base import API, DYNAMIC, GROUP, OP, OTHER, STOP, Reason
from mobilegen.runtimes.releases import version_key

__all__ = ["API", "DYNAMIC", "GROUP", "OP", "OTHER", "STOP", "Reason"]  # the categories, for the tables

DTYPE_NAMES: dict[int, str] = {
    TensorProto.FLOAT: "float32",
    TensorProto.UINT8: "uint8",
    TensorProto.INT8: "int8",
    TensorProto.UINT16: "uint16",
    TensorProto.INT16: "int16",
    TensorProto.INT32: "int32",
    TensorProto.INT64: "int64",
    TensorProto.STRING: "string",
    TensorProto.BOOL: "bool",
    TensorProto.FLOAT16: "float16",
    TensorProto.DOUBLE: "float64",
    TensorProto.UINT32: "uint32",
    TensorProto.UINT64: "uint64",
    TensorProto.BFLOAT16: "bfloat16",
}

F32 = TensorProto.FLOAT
F16 = TensorProto.FLOAT16
U8 = TensorProto.UINT8
I8 = TensorProto.INT8
I32 = TensorProto.INT32
I64 = TensorProto.INT64
BOOL = TensorProto.BOOL


def dtype_name(code: int | None) -> str:
    return "unknown" if code is None else DTYPE_NAMES.get(int(code), f"type {code}")


@dataclass
class NodeContext:
    """What a rule sees: one node, the graph around it, and the target settings."""

    node: NodeInfo
    graph: GraphInfo
    target: EPTarget
    spec: OpSpec  # the node's op in the table being evaluated
    unit: Any = None  # the QDQ node unit (mobilegen.coverage.qdq.Unit) ``node`` is the view of, if any

    # --- attributes -------------------------------------------------------------------------------
    def attr(self, name: str, default: Any = None) -> Any:
        value = self.node.attrs.get(name)
        return default if value is None else value

    # --- inputs -------------------------------------------------------------------------------------
    def has_input(self, i: int) -> bool:
        return i < len(self.node.inputs) and self.node.inputs[i] != ""

    def input_name(self, i: int) -> str:
        return self.node.inputs[i] if i < len(self.node.inputs) else ""

    def shape(self, i: int) -> Shape | None:
        if not self.has_input(i):
            return None
        info = self.graph.info(self.node.inputs[i])
        return None if info is None else info.shape

    def rank(self, i: int) -> int | None:
        s = self.shape(i)
        return None if s is None else len(s)

    def dtype(self, i: int) -> int | None:
        if not self.has_input(i):
            return None
        info = self.graph.info(self.node.inputs[i])
        return None if info is None else info.elem_type

    def out_dtype(self, i: int = 0) -> int | None:
        if i >= len(self.node.outputs):
            return None
        info = self.graph.info(self.node.outputs[i])
        return None if info is None else info.elem_type

    def out_shape(self, i: int = 0) -> Shape | None:
        if i >= len(self.node.outputs):
            return None
        info = self.graph.info(self.node.outputs[i])
        return None if info is None else info.shape

    def is_const(self, i: int) -> bool:
        return self.has_input(i) and self.graph.is_const(self.node.inputs[i])

    def const(self, i: int) -> np.ndarray | None:
        return self.graph.const_value(self.node.inputs[i]) if self.has_input(i) else None

    def static_dim(self, i: int, axis: int) -> int | None:
        s = self.shape(i)
        if s is None or not -len(s) <= axis < len(s):
            return None
        d = s[axis]
        return d if isinstance(d, int) else None

    def is_static(self, i: int) -> bool:
        s = self.shape(i)
        return s is not None and all(isinstance(d, int) for d in s)

    @property
    def since(self) -> int:
        return self.node.since_version or 0

    @property
    def n_outputs(self) -> int:
        return sum(1 for o in self.node.outputs if o)


# A check returns refusal texts, or Reasons when it has more to say than text (``min_api``).
CheckResult = str | Reason | Sequence[str | Reason] | None
CheckFn = Callable[[NodeContext], CheckResult]


@dataclass(frozen=True)
class Rule:
    """One predicate of a provider's table. ``check`` returns refusal reasons (None/empty: accepted)."""

    id: str
    summary: str
    source: str
    check: CheckFn
    category: str = OTHER
    # The ONNX Runtime releases the rule holds for: from ``since_ort`` (inclusive), until ``until_ort``
    # (exclusive, the first release without it); "" = no bound. ``ort_source``: the PR/commit that
    # added or removed it. :meth:`EPTable.for_version` keeps the rules of one release.
    since_ort: str = ""
    until_ort: str = ""
    ort_source: str = ""

    def holds_for(self, version: str) -> bool:
        return in_ort_range(version, self.since_ort, self.until_ort)

    def evaluate(self, ctx: NodeContext) -> list[Reason]:
        out = self.check(ctx)
        if not out:
            return []
        items = [out] if isinstance(out, str | Reason) else list(out)
        return [
            replace(i, category=self.category, rule=self.id) if isinstance(i, Reason) else Reason(i, self.category, self.id)
            for i in items
        ]


def rules_by_id(*rules: Rule) -> dict[str, Rule]:
    """A table's op rules, keyed by their ids (what ``OpSpec.rules`` names)."""
    return {r.id: r for r in rules}


def needs_api(text: str, level: int) -> Reason:
    """A refusal that a platform API level of ``level`` would lift (the rule adds its id and category)."""
    return Reason(text, min_api=level)


MinApi = int | Callable[[NodeContext], int]


@dataclass(frozen=True)
class OpSpec:
    """A registered op builder/kernel: the general limits plus the op rules that apply."""

    op_type: str
    source: str
    since_min: int = 1
    since_max: int | None = None  # None: the provider's default cap
    min_api: MinApi | None = None  # the platform API level the op needs (a provider's feature level)
    input0_dtypes: tuple[int, ...] | None = None  # None: the provider's default
    rules: tuple[str, ...] = ()
    domain: str = ""
    formats: tuple[str, ...] | None = None  # the provider variants with a builder (its variant setting's values); None: all
    note: str = ""
    since_ort: str = ""  # the builder exists from this ONNX Runtime release on ("" = every modelled one)
    until_ort: str = ""  # ... and no longer in this one ("" = still there)
    ort_source: str = ""  # the PR/commit that added or removed the builder

    def holds_for(self, version: str) -> bool:
        return in_ort_range(version, self.since_ort, self.until_ort)


def in_ort_range(version: str, since: str, until: str) -> bool:
    """``since <= version < until`` on release numbers; an empty bound is open, an empty version is the newest."""
    if not version:
        return not until
    v = version_key(version)
    return (not since or version_key(since) <= v) and (not until or v < version_key(until))


def ops_by_key(*specs: OpSpec) -> dict[tuple[str, str], OpSpec]:
    """A table's registered ops, keyed by (domain, op type) as ``EPTable.spec`` looks them up."""
    return {(s.domain, s.op_type): s for s in specs}


@dataclass(frozen=True)
class EPTable:
    ep: str
    ops: dict[tuple[str, str], OpSpec]  # (domain, op_type) -> spec
    rules: dict[str, Rule]  # op rules by id
    general: tuple[Rule, ...]  # general rules, evaluated for every registered op, in order
    default_since_max: int
    default_input0_dtypes: tuple[int, ...]
    unmodelled: tuple[str, ...] = ()  # ops with a builder whose limits are not modelled (counted as refused)
    domain_blind: tuple[str, ...] = ()  # domains whose ops the builders look up by op type only
    extra: dict[str, str] = field(default_factory=dict)  # source files worth naming
    # Further versions of op rules (same id as one in ``rules``, another release range) and rules that
    # exist only in some releases; :meth:`for_version` picks the one that holds.
    versioned: tuple[Rule, ...] = ()
    # How the EP takes QDQ node units and QLinear ops (mobilegen.coverage.qdq.QdqTable); None: it checks
    # every node on its own.
    qdq: Any = None

    def spec(self, domain: str, op_type: str) -> OpSpec | None:
        return self.ops.get(("" if domain == "ai.onnx" else domain, op_type))

    def lookup(self, domain: str, op_type: str) -> OpSpec | None:
        """The spec the provider's builder registry finds for a node (domain-blind lookups included)."""
        spec = self.spec(domain, op_type)
        if spec is None and domain in self.domain_blind:
            spec = self.spec("", op_type)
        return spec

    def all_rules(self) -> list[Rule]:
        return list(self.general) + list(self.rules.values())

    def for_version(self, version: str) -> EPTable:
        """The table as the ONNX Runtime release ``version`` has it: the op builders and rules whose
        release range holds it. Op specs name rule ids; a rule absent in that release is dropped from
        them. Several versions of one rule share an id, each with its own range (at most one holds)."""
        key = (id(self), version)
        cached = _VERSIONED.get(key)
        if cached is not None and cached[0] is self:
            return cached[1]
        ops = {k: s for k, s in self.ops.items() if s.holds_for(version)}
        held = [r for r in self._all_versions() if r.holds_for(version)]
        rules = {r.id: r for r in held}
        general = tuple(r for r in self.general if r.holds_for(version))
        ops = {k: replace(s, rules=tuple(rid for rid in s.rules if rid in rules)) for k, s in ops.items()}
        table = replace(self, ops=ops, rules=rules, general=general)
        _VERSIONED[key] = (self, table)
        return table

    def _all_versions(self) -> list[Rule]:
        return [*self.rules.values(), *self.versioned]


_VERSIONED: dict[tuple[int, str], tuple[EPTable, EPTable]] = {}


def fmt_shape(shape: Shape | None) -> str:
    if shape is None:
        return "unknown"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def fmt_num(x: float) -> str:
    return f"{x:g}"


def const_ints(ctx: NodeContext, i: int) -> list[int] | None:
    v = ctx.const(i)
    if v is None:
        return None
    return [int(x) for x in np.asarray(v).reshape(-1)]
