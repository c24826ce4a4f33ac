"""Where each node ran, read from ONNX Runtime's profiling file.

ORT writes a Chrome-trace JSON array when profiling is on (Python ``SessionOptions.enable_profiling`` +
``InferenceSession.end_profiling()``; Java ``SessionOptions.enableProfiling(String)`` +
``OrtSession.endProfiling()``; onnxruntime/core/common/profiler.cc). Each kernel run is an event with
``cat == "Node"``, ``name == "<node name>_kernel_time"`` and ``args.op_name`` / ``args.provider``
(onnxruntime/core/framework/sequential_executor.cc). A partition a compiling provider made runs as
one fused node named after the provider; a kernel provider keeps the model's nodes and tags them with its name.

The device code (templates/android/.../bench/ModelBenchmark.kt) applies the same rules in Kotlin.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mobilegen.bench.schema import PlacedNode, Placement

CPU_PROVIDER = "CPUExecutionProvider"
KERNEL_SUFFIX = "_kernel_time"



def placement_from_events(events: Iterable[Mapping[str, Any]]) -> Placement:
    """Each node's provider, in execution order: the first run's events (later runs repeat them)."""
    nodes: dict[str, PlacedNode] = {}
    timed: list[tuple[float, int, PlacedNode]] = []
    for i, ev in enumerate(events):
        if not isinstance(ev, Mapping) or ev.get("cat") != "Node":
            continue
        name, args = ev.get("name"), ev.get("args")
        if not isinstance(name, str) or not name.endswith(KERNEL_SUFFIX) or not isinstance(args, Mapping):
            continue  # fence_before / fence_after events carry no provider
        provider, op = args.get("provider"), args.get("op_name")
        if not isinstance(provider, str):
            continue
        node = name[: -len(KERNEL_SUFFIX)]
        if node in nodes:
            continue
        placed = PlacedNode(node, op if isinstance(op, str) else "", provider)
        nodes[node] = placed
        ts = ev.get("ts")
        timed.append((float(ts) if isinstance(ts, int | float) else float(i), i, placed))
    ordered = tuple(p for _ts, _i, p in sorted(timed, key=lambda t: (t[0], t[1])))
    if not ordered:
        return Placement.unavailable("the profiling file has no node events (ORT profiled no run)")
    return Placement(True, None, ordered, observed_partitions(ordered))


def observed_partitions(nodes: Iterable[PlacedNode]) -> int:
    """Runs of consecutive nodes on a provider other than the CPU, in execution order (a partition an
    EP compiled is one fused node, so one run)."""
    count, previous = 0, CPU_PROVIDER
    for n in nodes:
        if n.provider != CPU_PROVIDER and n.provider != previous:
            count += 1
        previous = n.provider
    return count


def read_profile(path: Path) -> Placement:
    """:func:`placement_from_events` of a profiling file; an unreadable file is an unavailable placement."""
    try:
        events = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        return Placement.unavailable(f"the profiling file could not be read: {err}")
    if isinstance(events, Mapping):  # some writers wrap the array: {"traceEvents": [...]}
        events = events.get("traceEvents", [])
    if not isinstance(events, list):
        return Placement.unavailable("the profiling file is not a list of trace events")
    return placement_from_events(events)
