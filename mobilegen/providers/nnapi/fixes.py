"""The graph passes that help NNAPI (:mod:`mobilegen.passes.registry`), each with why: what NNAPI's builders
refuse in the form the pass rewrites, read from ONNX Runtime's sources (paths relative to
onnxruntime/core/providers/nnapi/ unless they start with onnxruntime/).

Fixed input dims (it takes no symbolic dim), then rewrites of what its builders refuse in transformer-style
models, and constant folding. Not ``bool-mask``: its twin Cast of an int64 tensor NNAPI refuses too (every
builder without ``HasSupportedInputOutputsImpl`` takes float32 input only).
"""

from __future__ import annotations

FIX_REASONS: tuple[tuple[str, str], ...] = (
    (
        "fixed-dims",
        "NNAPI takes no node with a symbolic dim at all (nnapi_builtin/builders/impl/base_op_builder.cc: "
        "every input dim fixed, rule nnapi.fixed_dims), so the whole build gets the example sizes; never "
        "judged by coverage, since it changes the inputs every target sees.",
    ),
    (
        "fold-if",
        "NNAPI has no If builder, and its GetCapability returns nothing for a subgraph (\"TODO: Task 812756: "
        "NNAPI EP, add support for subgraph (If and Loop operators)\", "
        "nnapi_builtin/nnapi_execution_provider.cc): the nodes of a constant If's branch reach it only once "
        "inlined in the main graph.",
    ),
    (
        "fold-constants",
        "Its Reshape, Pad and reduction builders need constant shapes, pads and axes "
        "(nnapi_builtin/builders/impl/reshape_op_builder.cc: a constant shape; "
        "nnapi_builtin/builders/impl/pad_op_builder.cc; nnapi_builtin/builders/impl/reduction_op_builder.cc): "
        "shape arithmetic computed at run time makes them refuse the node.",
    ),
    (
        "nan-guard",
        "NNAPI has neither an IsNaN nor a Where builder (nnapi_builtin/builders/op_builder_factory.cc "
        "registers none): the Where(IsNaN(Softmax)) guard torch.export puts after attention's Softmax makes "
        "every attention block leave NNAPI for the CPU and come back; Max/Min/Relu/Clip with a NaN operand "
        "are unspecified in NNAPI, so no form keeping the guard for NaN helps.",
    ),
    (
        "softmax-mask",
        "NNAPI has no IsNaN, Where or ReduceMax builder (nnapi_builtin/builders/op_builder_factory.cc); after "
        "the rewrite the Where and ReduceMax read only the mask and sit ahead of the first attention block "
        "(onnxruntime shares them between the layers), so the blocks are no longer cut.",
    ),
    (
        "rank6",
        "NNAPI refuses a Transpose or Reshape input above rank 4 "
        "(nnapi_builtin/builders/impl/transpose_op_builder.cc, "
        "nnapi_builtin/builders/impl/reshape_op_builder.cc: \"only supports up to 1-4d shape\"): Swin's window "
        "partition [B, H/w, w, W/w, w, C] becomes rank 4, which it takes.",
    ),
    (
        "int64-indices",
        "NNAPI's Gather builder (nnapi_builtin/builders/impl/gather_op_builder.cc, IsOpSupportedImpl) takes "
        "indices that are int32, or a constant initializer of another type (which it converts to int32 "
        "itself, SafeInt<int32_t>); run-time int64 indices are refused (\"Indices of Gather must be a constant "
        "initializer\"). Its Cast builder (nnapi_builtin/builders/impl/cast_op_builder.cc) casts to float32 or "
        "int32 only, and like every NNAPI builder that does not override HasSupportedInputOutputsImpl "
        "(nnapi_builtin/builders/impl/base_op_builder.cc) takes float32 input only. So the rewrite puts such "
        "a Gather on NNAPI with every node it adds taken too when the indices come from Cast(to=int64) of a "
        "float32 tensor (Cast to int32 is taken from API 29) or of an int32 tensor. Constant int64 indices "
        "NNAPI converts itself; int64 graph inputs (token ids) would need a Cast of an int64 input, which "
        "NNAPI refuses, so the pass leaves both alone.",
    ),
    (
        "sum-add",
        "NNAPI registers no Sum builder (nnapi_builtin/builders/op_builder_factory.cc) but takes Add "
        "(nnapi_builtin/builders/impl/binary_op_builder.cc: float32, rank <= 4).",
    ),
    (
        "reduce",
        "NNAPI's only reduction is ReduceMean (nnapi_builtin/builders/impl/reduction_op_builder.cc registers "
        "its builder for \"ReduceMean\" alone, \"TODO: Add more reduction ops support\": rank 1..4, constant "
        "axes, no noop_with_empty_axes from opset 18, API 28); Mul and Sqrt (API 29) it takes. So it refuses "
        "ReduceSum, ReduceL2 and ReduceSumSquare, and takes their ReduceMean forms up to rank 4.",
    ),
    (
        "pad",
        "NNAPI's Pad builder (nnapi_builtin/builders/impl/pad_op_builder.cc) takes constant mode only, from "
        "API 29 (constant pads >= 0 and value, rank 1..4); it takes Concat from API 27 and Slice from 28, so "
        "the Concat/Slice form gives it the reflect, edge and wrap modes, and any Pad below API 29.",
    ),
    (
        "avgpool-pad",
        "NNAPI's pool builder (nnapi_builtin/builders/impl/pool_op_builder.cc, IsOpSupportedImpl) refuses "
        "count_include_pad == 1 and ceil_mode == 1; it takes GlobalAveragePool (rank 4) and Pad "
        "(nnapi_builtin/builders/impl/pad_op_builder.cc: constant mode, constant pads >= 0 and value, rank "
        "1..4, API 29). onnxruntime's Level1 PadFusion (onnxruntime/core/optimizer/pad_fusion.cc) would fold "
        "a zero Pad back into an explicitly padded AveragePool with count_include_pad=1, the form NNAPI "
        "refuses; it leaves auto_pad=VALID alone. A ceil_mode pool that still needs ceil_mode after the "
        "rewrite gains nothing: NNAPI refuses ceil_mode whatever the padding.",
    ),
    (
        "layernorm",
        "NNAPI has no LayerNormalization builder (nnapi_builtin/builders/op_builder_factory.cc); it takes "
        "every op of the decomposition (API 29 for Sqrt). onnxruntime's Level2 fusions never run on the nodes "
        "NNAPI takes, nor at the .ort conversion, so only the Level1 LayerNormFusion matters, and the pass's "
        "Mul form survives it.",
    ),
    (
        "instancenorm",
        "NNAPI has no InstanceNormalization builder (nnapi_builtin/builders/op_builder_factory.cc registers "
        "none); it takes every op of the decomposition: ReduceMean "
        "(nnapi_builtin/builders/impl/reduction_op_builder.cc, rank 1..4, constant axes, API 28), Sub and Div "
        "(nnapi_builtin/builders/impl/binary_op_builder.cc, API 28), Mul, Add, and Sqrt (API 29). torch "
        "exports GroupNorm as a Reshape, an InstanceNormalization and the affine Mul/Add: wav2vec2's feature "
        "extractor (feat_extract_norm=\"group\", the base models) has one, and it alone split the NNAPI graph "
        "in two around it. Its ReduceMean stops at rank 4, so a rank-5 input gains nothing.",
    ),
    (
        "gelu",
        "NNAPI has no Erf and no Gelu builder (nnapi_builtin/builders/op_builder_factory.cc); it takes every "
        "op of the Erf-free form. onnxruntime's Level2 Gelu fusions do not run for NNAPI nodes, nor at the "
        ".ort conversion.",
    ),
    (
        "gelu-tanh",
        "NNAPI has no Erf, Tanh-based Gelu or Gelu builder (nnapi_builtin/builders/op_builder_factory.cc); it "
        "takes the Mul/Add/Sigmoid of the tanh approximation (only with --approximate gelu).",
    ),
    (
        "matmul-2d",
        "NNAPI's MatMul/Gemm builder (nnapi_builtin/builders/impl/gemm_op_builder.cc, IsOpSupportedImpl) "
        "takes A and B both 2-D (FULLY_CONNECTED; B a constant initializer for MatMul, and for Gemm unless "
        "transB=1), or both of rank > 2 as a batch matmul (API 29): a 3-D activation times a 2-D weight is "
        "refused (\"A and B must be 2D\"). Its Reshape needs a constant shape, which the pass's static shapes "
        "give; a Gemm's [N] bias is what FULLY_CONNECTED takes at every API level.",
    ),
    (
        "conv1d-2d",
        "NNAPI's Conv builder (nnapi_builtin/builders/impl/conv_op_builder.cc) takes only a constant 4-D "
        "weight (\"Only conv 2d is supported\"); a weight computed from constants is folded into a 4-D "
        "initializer by onnxruntime's Level1 constant folding before NNAPI sees it, a run-time weight gains "
        "nothing. Dilations above 1 still need API 29 and an ungrouped or depthwise conv, as before the "
        "rewrite.",
    ),
    (
        "lstm",
        "NNAPI has no LSTM builder (no LSTM in nnapi_builtin/builders/op_builder_factory.cc), so the LSTM "
        "stays on the CPU and splits the model in two partitions (silero-vad: 48/49 nodes in 2 partitions "
        "without the pass, 67/67 in 1 with it).",
    ),
)

FIXES: tuple[str, ...] = tuple(name for name, _ in FIX_REASONS)

# Not in FIXES: NNAPI's int8 recipe runs ``flatten-reshape`` before quantizing (recipe.py). NNAPI takes a
# float Flatten (nnapi_builtin/builders/impl/flatten_op_builder.cc) but, in a quantized model, no QDQ node
# unit around it: ORT's selectors group DQ -> Flatten -> Q
# (onnxruntime/core/optimizer/qdq_transformer/selectors_actions/shared/utils.cc, the "misc" ops) and NNAPI's
# builders take QDQ units only for a few ops, Reshape among them
# (nnapi_builtin/builders/impl/reshape_op_builder.cc overrides IsNodeUnitTypeSupported).
