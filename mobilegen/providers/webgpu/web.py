"""WebGPU in the Web package: its entry of the provider chain (``src/ort.ts``) and how the package's tests run
it, read by :mod:`mobilegen.targets.web.project`, with the fragments ``templates/providers/webgpu/web/``."""

from __future__ import annotations

from typing import Any

# Chromium without a GPU: its software Vulkan (SwiftShader) runs the WebGPU kernels, slowly.
CHROMIUM_FLAGS = (
    "--enable-unsafe-webgpu",
    "--use-angle=swiftshader",
    "--enable-features=Vulkan",
    "--use-vulkan=swiftshader",
    "--use-webgpu-adapter=swiftshader",
)

TEMPLATE_DATA: dict[str, Any] = {
    # when the wrapper's create() gets it (the doc of defaultProviders)
    "when": "WebGPU where the browser offers an adapter",
    # onnxruntime-web's builds: the WASM-only one (ort.wasm.min.mjs) lacks it; the default one ("all") has it
    "build": "all",
    "chromium_flags": CHROMIUM_FLAGS,
    # why the Web target neither fixes nor quantizes for it: JSEP has no QuantizeLinear kernel, so judging
    # --quantize on it would ship fp32 to every browser for the GPU's sake
    "quantize_note": "JSEP has no QuantizeLinear kernel",
}
