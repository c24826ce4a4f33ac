"""CoreML's quantization: no QDQ and no dynamic quantization (no Q/DQ builders); fp16 weights for MLProgram.

ORT source paths are under https://github.com/microsoft/onnxruntime (../shared/research/mobile_next.md §2–§3).
"""

from __future__ import annotations

from mobilegen.providers.quantization import FLOAT16_SOURCE, QuantizeMode, Recipe, Refusal

_BUILDERS = "onnxruntime/core/providers/coreml/builders/op_builder_factory.cc"


def recipe(mode: QuantizeMode) -> Recipe | Refusal:
    if mode == "fp16":
        return Recipe(
            "fp16", "coreml", "float16", "float16", False, (),
            "CoreML's MLProgram format takes float16 tensors and computes in fp16 on the GPU/Neural Engine; "
            f"weights stored as float16, inputs and outputs stay float32 ({FLOAT16_SOURCE})",
        )  # fmt: skip
    return Refusal(
        mode,
        "coreml",
        "the CoreML execution provider has no QuantizeLinear/DequantizeLinear builders, so a "
        f"{'QDQ' if mode == 'int8' else 'dynamically quantized'} model would split into many CoreML partitions "
        f"with the rest on the CPU ({_BUILDERS}); it ships fp32, which MLProgram computes in fp16 on the "
        "GPU/Neural Engine",
    )
