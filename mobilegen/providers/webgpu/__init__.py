"""WebGPU (Web): onnxruntime-web's WebGPU provider, a kernel EP like XNNPACK — every node with a kernel
is its own capability; what it leaves runs on onnxruntime-web's WASM (CPU) provider.

The per-node rules are data in :mod:`~mobilegen.providers.webgpu.table` (which implementation the pinned
onnxruntime-web uses, and where each fact comes from). :meth:`WebGpu.refine` adds GetCapability's second
step, ``GetCpuPreferredNodes`` (onnxruntime/core/framework/fallback_cpu_capability.cc): nodes that only
compute on CPU tensors (a shape read by ``Shape`` and what follows from it) go back to the CPU.

It is a Web-only provider (``platform="web"``): no Android/iOS flag; the Web target asks WebGPU, then
WASM (:data:`WEB_CHAIN`).
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from mobilegen.providers.base import OTHER, ExecutionProvider, Reason

if TYPE_CHECKING:
    from mobilegen.coverage.partition import Support
    from mobilegen.coverage.rules import EPTable
    from mobilegen.coverage.target import EPTarget

DISPLAY_NAME = "WebGPU"
JS = "onnxruntime/core/providers/js/"
EP_SOURCE = JS + "js_execution_provider.cc"
FALLBACK_SOURCE = "onnxruntime/core/framework/fallback_cpu_capability.cc"
ORT_WEB_VERSION = "1.30.0"  # the onnxruntime-web release the table was measured in (templates/web/package-lock.json)

# The Web target's provider chain, in the order the generated wrapper tries them (templates/web/src/ort.ts
# defaultProviders): WebGPU where the browser offers an adapter, else WebAssembly on the CPU.
WEB_CHAIN = ("webgpu", "wasm")

# JSEP kernels whose output lives in CPU memory (OutputMemoryType): where GetCpuPreferredNodes starts.
CPU_OUTPUT_OPS = ("Shape",)


class WebGpu(ExecutionProvider):
    def rule_table(self) -> EPTable:
        # Imported here: the table imports onnx and numpy, needed only when a model is analysed.
        from mobilegen.providers.webgpu.table import TABLE

        return TABLE

    def refine(self, support: Support, target: EPTarget) -> None:
        """GetCpuPreferredNodes: from the consumers of a CPU output (``Shape``'s), a node WebGPU took goes
        back to the CPU when each input is an initializer, a graph input or a CPU tensor that the kernel
        does not itself read from CPU memory, and none is float16; its outputs are then CPU tensors."""
        from mobilegen.coverage.rules import F16
        from mobilegen.providers.webgpu.table import KERNELS

        graph = support.graph
        taken = support.taken
        cpu_args: set[str] = set()
        heap: list[int] = []

        def push_consumers(name: str) -> None:
            for c in graph.consumers.get(name, ()):
                heapq.heappush(heap, c)  # node indices are topological: ORT pops in topological order

        for node in graph.nodes:
            if taken[node.index] and node.op_type in CPU_OUTPUT_OPS and node.is_onnx_domain:
                for out in node.outputs:
                    if out:
                        cpu_args.add(out)
                        push_consumers(out)
        inputs = set(graph.graph_inputs)
        visited: set[int] = set()
        while heap:
            i = heapq.heappop(heap)
            if i in visited or not taken[i]:
                continue
            visited.add(i)
            node = graph.nodes[i]
            kernel = KERNELS.get(node.op_type)
            cpu_inputs = kernel.cpu_inputs if kernel is not None else ()
            place = True
            for k, name in enumerate(node.inputs):
                if not name:
                    continue
                info = graph.info(name)
                if info is not None and info.elem_type == F16:
                    place = False
                    break
                if name in graph.initializers or name in inputs:
                    continue
                if name not in cpu_args or k in cpu_inputs:
                    place = False
                    break
            if place:
                support.refuse(i, Reason(
                    f"{node.op_type} computes only on CPU tensors (a shape): ONNX Runtime runs it on the CPU "
                    "rather than copy them to the GPU (GetCpuPreferredNodes)", OTHER, "webgpu.cpu_preferred"))
                for out in node.outputs:
                    if out:
                        cpu_args.add(out)
                        push_consumers(out)


PROVIDER = WebGpu(
    name="webgpu",
    display_name=DISPLAY_NAME,
    platform="web",
    ort_name="JsExecutionProvider",  # JSEP's name in onnxruntime-web's default build (the native EP: WebGpuExecutionProvider)
    rank=10,  # the GPU before WebAssembly's CPU kernels
    # GetCapability has no IsSubgraph() check: a body's nodes get the same kernel lookup as the main graph's
    takes_subgraphs=True,
    subgraph_source=EP_SOURCE,
)
