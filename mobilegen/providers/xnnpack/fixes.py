"""The graph passes that help XNNPACK (:mod:`mobilegen.passes.registry`), each with why (paths relative to
onnxruntime/core/providers/xnnpack/)."""

from __future__ import annotations

FIX_REASONS: tuple[tuple[str, str], ...] = (
    (
        "fold-if",
        "No provider has an If kernel: XNNPACK takes a body's nodes (xnnpack_execution_provider.cc has no "
        "IsSubgraph() check), but each body is partitioned on its own; inlining a constant If's branch puts "
        "its nodes in the main graph with their neighbours.",
    ),
    (
        "fold-constants",
        "Its Conv, MatMul and Gemm kernels take constant weights and biases only (nn/conv_base.cc, "
        "math/matmul.cc, math/gemm.cc): a weight computed from constants at run time is refused until folded.",
    ),
    (
        "matmul-2d",
        "Declared when XNNPACK's table read its MatMul/Gemm kernels as taking 2-D weights and 2-D inputs "
        "only; its rules now (math/matmul.cc: A of any rank >= 1, constant B of rank <= 2; math/gemm.cc) take "
        "both forms, so the fix stage keeps the rewrite (a MatMul and its bias Add as one Gemm) only where "
        "the coverage improves.",
    ),
    (
        "conv1d-2d",
        "Declared when XNNPACK's table read its Conv kernels as taking 2-D convolutions only; its rules now "
        "(nn/conv_base.cc ConvBase::IsOnnxNodeSupported: 1-D or 2-D, C/H/W known, constant weight) take both "
        "forms, so the fix stage keeps the rewrite only where the coverage improves.",
    ),
)

FIXES: tuple[str, ...] = tuple(name for name, _ in FIX_REASONS)
