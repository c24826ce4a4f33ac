"""Benchmarks: the result schema (versioned JSON), ORT profiling placement, ``mobilegen bench`` on the
host, and merging results (host or device) into a package's report.

onnxruntime is imported only by :func:`run_host_bench`.
"""

from __future__ import annotations

from mobilegen.bench.host import run_host_bench
from mobilegen.bench.merge import MergeResult, merge_results
from mobilegen.bench.profile import observed_partitions, placement_from_events, read_profile
from mobilegen.bench.schema import (
    SCHEMA_VERSION,
    BenchResult,
    Configuration,
    Device,
    PlacedNode,
    Placement,
    Preprocessing,
    WarmStats,
    read_result,
    result_from_json,
    schema_document,
)

__all__ = [
    "SCHEMA_VERSION",
    "BenchResult",
    "Configuration",
    "Device",
    "MergeResult",
    "PlacedNode",
    "Placement",
    "Preprocessing",
    "WarmStats",
    "merge_results",
    "observed_partitions",
    "placement_from_events",
    "read_profile",
    "read_result",
    "result_from_json",
    "run_host_bench",
    "schema_document",
]
