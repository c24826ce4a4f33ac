"""XNNPACK (Android): a kernel EP, not a compiling one — it claims single nodes, and takes Clip/Relu
only fused into a preceding Conv/MaxPool/AveragePool.

Partitions are still computed with ORT's grouping so the numbers compare with the other providers; a
boundary costs an NHWC<->NCHW transpose, not a copy to another device. The per-node rules are in
:mod:`~mobilegen.providers.xnnpack.table`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from mobilegen.providers.base import (
    OTHER,
    ExecutionProvider,
    HostSession,
    Reason,
    Setting,
    SettingValue,
    TargetFlag,
)
from mobilegen.providers.xnnpack.facts import DISPLAY_NAME
from mobilegen.providers.xnnpack.fixes import FIX_REASONS, FIXES

if TYPE_CHECKING:
    from collections.abc import Mapping

    from mobilegen.coverage.partition import Support
    from mobilegen.coverage.rules import EPTable
    from mobilegen.coverage.target import EPTarget
    from mobilegen.providers.quantization import QuantizeMode, Recipe

FUSED_OPS = ("Clip", "Relu")


SETTINGS = (
    Setting(
        "require_static_shapes",
        False,
        "recorded with the report (XNNPACK kernels check the dims they need themselves)",
        flag="--require-static-shapes",
    ),
)


def threads() -> int:
    return max(1, min(os.cpu_count() or 1, 4))  # ModelSupport.defaultXnnpackThreads


class Xnnpack(ExecutionProvider):
    def rule_table(self) -> EPTable:
        # Imported here: the table imports onnx and numpy, needed only when a model is analysed.
        from mobilegen.providers.xnnpack.qdq import TABLE  # the float table plus its QDQ node-unit rules

        return TABLE

    def refine(self, support: Support, target: EPTarget) -> None:
        """Clip/Relu are taken only when fused into a producer XNNPACK takes (node_support_checker.cc)."""
        graph = support.graph
        for node in graph.nodes:
            if node.op_type in FUSED_OPS and support.taken[node.index]:
                producer = graph.producer.get(node.inputs[0])
                if producer is None or not support.taken[producer]:
                    text = f"{node.op_type} has no preceding XNNPACK node to fuse into"
                    support.refuse(node.index, Reason(text, OTHER, "xnnpack.fusion"))

    def recipe(self, mode: QuantizeMode, settings: Mapping[str, SettingValue | None]) -> Recipe:
        from mobilegen.providers.xnnpack import recipe

        return recipe.recipe(self, mode)

    def qdq_table(self) -> EPTable:
        return self.rule_table()

    def host_session(self) -> HostSession:
        """As the generated wrapper: XNNPACK's own pool of min(cores, 4) threads, one ORT intra-op thread
        that does not spin."""
        return HostSession({"intra_op_num_threads": str(threads())}, {"session.intra_op.allow_spinning": "0"}, 1)


    def bench_configs(self, platform: str) -> tuple[str, ...]:
        return ("xnnpack",) if platform == "android" else ()

PROVIDER = Xnnpack(
    name="xnnpack",
    display_name=DISPLAY_NAME,
    platform="android",
    platforms=("android", "ios"),
    ort_name="XnnpackExecutionProvider",
    rank=30,  # CPU kernels: after the accelerators  # onnxruntime-android and the iOS pod/SwiftPM package are both built with it
    settings=SETTINGS,
    target_flags=(TargetFlag("xnnpack", "--xnnpack", False, "Add the XNNPACK EP (before the CPU fallback); with package: on every chosen target."),),
    fixes=FIXES,
    fix_reasons=FIX_REASONS,
    # the EP claims a QDQ Resize unit, then the fused Resize finds no kernel (detail/utils.cc)
    never_taken_qdq_rules=frozenset({"xnnpack.qdq.resize"}),
    # GetCapability has no IsSubgraph() check: a body's nodes get the same kernel checks as the main graph's
    takes_subgraphs=True,
    subgraph_source="onnxruntime/core/providers/xnnpack/xnnpack_execution_provider.cc",
    in_default_runtime=("android", "ios"),
    fixed_style=True,  # the help of --optimization-style (mobilegen.cli.provider_help)
)
