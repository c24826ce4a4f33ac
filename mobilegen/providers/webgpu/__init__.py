"""WebGPU (Web): onnxruntime-web's WebGPU provider, a kernel EP (node by node, not a graph
compiler) — every node with a kernel is its own capability; what it leaves runs on onnxruntime-web's
WASM (CPU) provider.

The per-node rules are data in :mod:`~mobilegen.providers.webgpu.table` (which implementation the pinned
onnxruntime-web uses, and where each fact comes from). GetCapability's second step, ``GetCpuPreferredNodes``
(onnxruntime/core/framework/fallback_cpu_capability.cc), is not modelled: it does pick the nodes that compute
only on a shape (what follows ``Shape``'s CPU output), but partitioning calls GetCapability again after the
layout transformation, ``Shape`` is then already placed, nothing starts the trace, and JSEP takes those
nodes after all — onnxruntime-web 1.30.0's verbose log shows both ("Force fallback to CPU execution for
node: gather", then "All nodes placed on [JsExecutionProvider]"; tests/webgpu_oracle.py ``_shape_chain``).

It is a Web-only provider (``platform="web"``): no Android/iOS flag; the Web target asks WebGPU, then
WASM (:data:`WEB_CHAIN`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mobilegen.errors import UsageError
from mobilegen.providers.base import ORT_VERSION, ExecutionProvider, SettingValue
from mobilegen.providers.webgpu.facts import DISPLAY_NAME, EP_SOURCE, ORT_WEB_VERSION

if TYPE_CHECKING:
    from collections.abc import Mapping

    from mobilegen.coverage.rules import EPTable

# The onnxruntime-web releases whose WebGPU kernels the table holds: --ort-version names one of them.
KNOWN_RELEASES = (ORT_WEB_VERSION,)

# The Web target's provider chain, in the order the generated wrapper tries them (templates/web/src/ort.ts
# defaultProviders): WebGPU where the browser offers an adapter, else WebAssembly on the CPU.
WEB_CHAIN = ("webgpu", "wasm")


class WebGpu(ExecutionProvider):
    def rule_table(self) -> EPTable:
        # Imported here: the table imports onnx and numpy, needed only when a model is analysed.
        from mobilegen.providers.webgpu.table import TABLE

        return TABLE

    def resolve(self, given: Mapping[str, object]) -> tuple[tuple[str, SettingValue], ...]:
        """As every provider, but only a release whose JSEP kernels the table holds (no other was measured)."""
        values = super().resolve(given)
        version = dict(values)[ORT_VERSION.name]
        if version not in KNOWN_RELEASES:
            raise UsageError(
                f"the WebGPU rules are known for onnxruntime-web {', '.join(KNOWN_RELEASES)} only, not {version}",
                hint=f"drop --ort-version, or pass --ort-version {KNOWN_RELEASES[-1]}",
            )
        return values


PROVIDER = WebGpu(
    name="webgpu",
    display_name=DISPLAY_NAME,
    platform="web",
    ort_name="JsExecutionProvider",  # JSEP's name in onnxruntime-web's default build (the native EP: WebGpuExecutionProvider)
    rank=10,  # the GPU before WebAssembly's CPU kernels
    # GetCapability has no IsSubgraph() check: a body's nodes get the same kernel lookup as the main graph's
    takes_subgraphs=True,
    subgraph_source=EP_SOURCE,
    control_flow_kernels=frozenset({"If"}),  # operators/if.cc: the If node runs on WebGPU too (its bodies on their own)
)
