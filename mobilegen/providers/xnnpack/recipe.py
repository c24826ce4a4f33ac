"""XNNPACK's quantization: int8 QDQ (per-channel Conv weights) on the node units XNNPACK takes; dynamic
and fp16 as the CPU kernels take them (XNNPACK leaves dynamically quantized ops to the CPU EP).

ORT source paths are under https://github.com/microsoft/onnxruntime (../shared/research/mobile_next.md §2–§3).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mobilegen.providers.quantization import (
    EIGHT_BIT_RULES,
    KERNEL_INT8,
    QuantizeMode,
    Recipe,
    cpu_recipe,
    only_units,
)

if TYPE_CHECKING:
    from mobilegen.providers.base import ExecutionProvider

_REFUSES_UNITS = "xnnpack/detail/node_support_checker.cc"


def recipe(provider: ExecutionProvider, mode: QuantizeMode) -> Recipe:
    if mode != "int8":
        return cpu_recipe(mode, provider.name)
    ops, only = only_units(provider, "int8", _REFUSES_UNITS)
    return Recipe(
        "int8", provider.name, "int8", "int8", True, ops,
        f"{KERNEL_INT8}; {only}; Gemm/MatMul stay float: XNNPACK's kernels take a float A only (math/gemm.cc, "
        "math/matmul.cc) and run them float, where their QDQ units would go to the CPU",
        EIGHT_BIT_RULES,
    )  # fmt: skip
