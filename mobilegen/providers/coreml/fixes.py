"""The graph passes that help CoreML (:mod:`mobilegen.passes.registry`), each with why: what its MLProgram
builders refuse in transformer-style models, read from ONNX Runtime's sources (paths relative to
onnxruntime/core/providers/coreml/).

Not ``int64-indices``: CoreML's Gather takes int64 indices (builders/impl/gather_op_builder.cc checks only
the data's type), so int32 indices do not help it. Not ``instancenorm``: its MLProgram takes
InstanceNormalization whole (builders/impl/normalization_op_builder.cc).
"""

from __future__ import annotations

FIX_REASONS: tuple[tuple[str, str], ...] = (
    (
        "fold-if",
        "CoreML has no If builder, and its GetCapability returns nothing for a subgraph unless "
        "COREML_FLAG_ENABLE_ON_SUBGRAPH is set (coreml_execution_provider.cc), which the generated iOS code "
        "does not set: a constant If's branch reaches it only once inlined in the main graph.",
    ),
    (
        "fold-constants",
        "Its Reshape, Slice and reduction builders need constant shapes, starts/ends and axes "
        "(builders/impl/reshape_op_builder.cc, builders/impl/slice_op_builder.cc, "
        "builders/impl/reduction_op_builder.cc): shape arithmetic computed at run time makes them refuse the "
        "node.",
    ),
    (
        "nan-guard",
        "CoreML has no IsNaN builder (builders/op_builder_factory.cc): the Where(IsNaN(Softmax)) guard "
        "torch.export puts after attention's Softmax makes every attention block leave CoreML for the CPU and "
        "come back (BERT and ViT from torch.export: 3 CoreML partitions, not 1); Max/Min/Relu/Clip with a NaN "
        "operand are unspecified in CoreML, so no form keeping the guard for NaN helps.",
    ),
    (
        "softmax-mask",
        "CoreML has no IsNaN builder, and its Where arrives only in ONNX Runtime 1.28 (PR #28597), so every "
        "attention block of a traced BERT leaves CoreML for the CPU and comes back. The rewrite's ops are "
        "ones its ML Program builders take (builders/impl/unary_op_builder.cc Exp, "
        "builders/impl/reduction_op_builder.cc ReduceMax, builders/impl/binary_op_builder.cc Mul); the "
        "Where(c, 0, finfo.min) left on the boolean mask is bool-mask's to rewrite. Where CoreML computes in "
        "float16 (the Neural Engine) finfo.min overflows to -inf, as the mask torch.export writes itself "
        "does.",
    ),
    (
        "rank6",
        "CoreML refuses every input of rank above 5 (the helper's rank check, builders/helper.cc; "
        "builders/impl/reshape_op_builder.cc also a target of rank above 5): Swin's window partition [B, H/w, "
        "w, W/w, w, C] becomes rank 4, which it takes.",
    ),
    (
        "sum-add",
        "CoreML registers no Sum builder (builders/op_builder_factory.cc) but takes Add "
        "(builders/impl/binary_op_builder.cc: float32, MLProgram also float16/int64).",
    ),
    (
        "bool-mask",
        "CoreML's ML Program builders in the pinned runtime (ONNX Runtime 1.24) take no bool tensor at all: "
        "Cast to bool is refused (builders/impl/cast_op_builder.cc takes int32/int64/float32/float16 in and "
        "out), every other builder's input check takes float (or int64) data "
        "(builders/impl/base_op_builder.cc), and there is no And or Where builder before 1.28 (PR #28597). So "
        "a Hugging Face attention mask stays on the CPU, and so does everything that reads it. Its Cast "
        "builder also refuses a Cast no node feeds (\"Cast has no preceding nodes\", "
        "builders/impl/cast_op_builder.cc IsOpSupportedImpl): the rewrite moves the Cast off the graph input.",
    ),
    (
        "gathernd-gather",
        "CoreML registers a GatherND builder only from ONNX Runtime 1.28 (PR #28598); the pinned iOS runtime "
        "(1.24) has Gather (builders/impl/gather_op_builder.cc: float32/int64 data, non-scalar indices, "
        "output rank <= 5) and Reshape (builders/impl/reshape_op_builder.cc: constant shape, static input).",
    ),
    (
        "flatten-reshape",
        "CoreML registers no Flatten builder (builders/op_builder_factory.cc) but takes Reshape "
        "(builders/impl/reshape_op_builder.cc: constant shape input).",
    ),
    (
        "reduce",
        "CoreML registers ReduceMean/Sum/Max/Min/Prod but not ReduceL2 or ReduceSumSquare "
        "(builders/op_builder_factory.cc); builders/impl/reduction_op_builder.cc needs constant axes; Mul and "
        "Sqrt it takes in both formats. So a ReduceL2 or ReduceSumSquare up to rank 5 is what the rewrite "
        "gives it (a ReduceSum it took already).",
    ),
    (
        "pad",
        "CoreML's Pad builder (builders/impl/pad_op_builder.cc) does not override SupportsMLProgram in the "
        "ONNX Runtime the apps ship (1.24; still so in the 1.25 sources and in 1.31.1's "
        "coreml_supported_mlprogram_ops.md), so BaseOpBuilder::IsOpSupported refuses every Pad in an "
        "MLProgram (\"does not support MLProgram\"); only NeuralNetwork takes it (constant mode, last two "
        "dims), from opset 11. Concat (builders/impl/concat_op_builder.cc: two or more inputs, any axis in "
        "MLProgram) and Slice (builders/impl/slice_op_builder.cc: static data shape, constant "
        "starts/ends/axes/steps, negative steps included, no empty range) it takes. Newer upstream sources "
        "add an MLProgram pad (constant on any axis, reflect on the last two); where a runtime takes the Pad, "
        "the fix stage finds no gain and undoes the pass. A pass that lets onnxruntime merge the nodes CoreML "
        "took is a gain even with fewer nodes taken: Swin, 624/638 nodes in 13 partitions -> 617/619 in 1.",
    ),
    (
        "lstm",
        "CoreML has no LSTM builder (no LSTM in builders/op_builder_factory.cc), so the LSTM stays on the CPU "
        "and splits the model in two partitions (silero-vad, a streaming model that runs one step per call).",
    ),
)

FIXES: tuple[str, ...] = tuple(name for name, _ in FIX_REASONS)
