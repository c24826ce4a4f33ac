"""XNNPACK's quantization: int8 QDQ (per-channel Conv weights) on the node units XNNPACK takes; dynamic
and fp16 as the CPU kernels take them (XNNPACK leaves dynamically quantized ops to the CPU EP).

ORT source paths are under https://github.com/microsoft/onnxruntime (../shared/research/mobile_next.md §2–§3).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mobilegen.providers.quantization import (
    EIGHT_BIT_RULES,
    QuantizeMode,
    Recipe,
    cpu_recipe,
    only_units,
)

if TYPE_CHECKING:
    from mobilegen.providers.base import ExecutionProvider

_REFUSES_UNITS = "xnnpack/detail/node_support_checker.cc"
_XNN_UTILS = "onnxruntime/core/providers/xnnpack/detail/utils.cc"

# What XNNPACK's kernels take, and that the CPU EP's QDQ kernels take the same (its int8 recipe builds on it).
KERNEL_INT8 = (
    "XNNPACK takes int8 QDQ with per-channel symmetric int8 weights (xnn_datatype_qcint8, zero point 0) "
    f"and per-tensor int8/uint8 activations ({_XNN_UTILS}, GetDtypeInXnnpack); the CPU EP's QDQ "
    "kernels take the same; per-channel (Conv weights only) keeps depthwise convolutions accurate"
)
# Its dynamic recipe is the CPU kernels': XNNPACK has no kernel for the dynamically quantized ops.
DYNAMIC_NOTE = "XNNPACK leaves them to the CPU EP"


def recipe(provider: ExecutionProvider, mode: QuantizeMode) -> Recipe:
    if mode != "int8":
        return cpu_recipe(mode, provider.name, dynamic_note=DYNAMIC_NOTE)
    ops, only = only_units(provider, "int8", _REFUSES_UNITS)
    return Recipe(
        "int8", provider.name, "int8", "int8", True, ops,
        f"{KERNEL_INT8}; {only}; Gemm/MatMul stay float: XNNPACK's kernels take a float A only (math/gemm.cc, "
        "math/matmul.cc) and run them float, where their QDQ units would go to the CPU",
        EIGHT_BIT_RULES,
    )  # fmt: skip
