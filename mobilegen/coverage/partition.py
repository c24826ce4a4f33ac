"""Partitioning as the EPs' GetCapability does it.

The grouping follows the idea of ``CreateSupportedPartitionNodeGroups``
(onnxruntime/core/providers/partitioning_utils.cc): a Kahn topological walk that grows one group at a
time; supported nodes join the group, unsupported nodes that do not consume the group's outputs are
walked past, and unsupported nodes on the group's border wait for the next group. This is an own
implementation of that idea, not a port of the code.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from mobilegen.coverage.graph import GraphInfo
from mobilegen.providers.base import Reason

SupportFn = Callable[[int], bool]
GroupFn = Callable[[list[int]], bool]


def group_nodes(
    graph: GraphInfo,
    is_supported: SupportFn,
    on_group_closed: GroupFn | None = None,
    edges: tuple[list[int], list[list[int]]] | None = None,
) -> list[list[int]]:
    """Groups of node indices that one EP partition each would hold, in the order ORT forms them.
    ``edges``: in-degrees and consumers to walk instead of the graph's (QDQ node units walk as one node)."""
    indeg0, consumers = edges or graph.edges()
    indeg = list(indeg0)
    ready: deque[int] = deque(i for i in range(len(graph.nodes)) if indeg[i] == 0)
    deferred: deque[int] = deque()
    groups: list[list[int]] = []
    group: list[int] = []
    border: set[int] = set()
    cache: list[bool | None] = [None] * len(graph.nodes)  # each node is asked once

    def close() -> None:
        nonlocal group
        if group:
            if on_group_closed is None or on_group_closed(group):
                groups.append(group)
            group = []
            border.clear()

    pop, push, defer = ready.popleft, ready.append, deferred.append
    while ready or deferred:
        if not ready:
            close()
            ready, deferred = deferred, ready
            pop, push, defer = ready.popleft, ready.append, deferred.append
            continue
        i = pop()
        ok = cache[i]
        if ok is None:
            ok = cache[i] = is_supported(i)
        if ok:
            group.append(i)
            border.discard(i)
            border.update(consumers[i])
        elif i in border:
            defer(i)
            continue
        for c in consumers[i]:
            indeg[c] -= 1
            if indeg[c] == 0:
                push(c)
    close()
    return groups


def downstream_of(graph: GraphInfo, roots: Iterable[int]) -> dict[int, int]:
    """Every node reachable from ``roots`` (roots included), mapped to the root that reached it first."""
    _, consumers = graph.edges()
    seen: dict[int, int] = {}
    for r in roots:
        if r in seen:
            continue
        seen[r] = r
        queue = deque([r])
        while queue:
            cur = queue.popleft()
            for c in consumers[cur]:
                if c not in seen:
                    seen[c] = r
                    queue.append(c)
    return seen


def partition_inputs(graph: GraphInfo, group: Sequence[int]) -> list[str]:
    produced: set[str] = set()
    for i in group:
        produced.update(o for o in graph.nodes[i].outputs if o)
    inputs: list[str] = []
    seen: set[str] = set()
    for i in group:
        for t in graph.nodes[i].inputs:
            if t and t not in produced and t not in seen:
                seen.add(t)
                inputs.append(t)
    return inputs


def only_constant_inputs(graph: GraphInfo, group: Sequence[int]) -> bool:
    """Whether every input of the group is a constant (a provider's ``drop_group`` may drop such
    partitions)."""
    return all(graph.is_const(t) for t in partition_inputs(graph, group))


@dataclass
class Support:
    """Per node, whether the provider takes it and why not: what the partition hooks read and change."""

    graph: GraphInfo
    taken: list[bool]
    reasons: list[list[Reason]]
    ort_version: str = ""  # the ONNX Runtime release analysed ("" = newest): hooks whose behaviour changed read it

    def refuse(self, index: int, reason: Reason) -> None:
        self.taken[index] = False
        self.reasons[index].append(reason)

    def downstream_of(self, roots: Iterable[int]) -> dict[int, int]:
        return downstream_of(self.graph, roots)

    def only_constant_inputs(self, group: Sequence[int]) -> bool:
        return only_constant_inputs(self.graph, group)
