"""The graph passes that help QNN (:mod:`mobilegen.passes.registry`), each with why: fixed dims (its
builders take no dynamic shape), folding, and the rewrites of ops it has no builder for or takes only in
some forms (paths relative to onnxruntime/core/providers/qnn/). QNN's
verdicts are estimates, so the fix stage keeps each pass only when the estimate improves.

Its builders take LayerNormalization and Gelu whole in the forms below: there the decompositions only
make its graph bigger, and the fix stage's judging (the same coverage in more nodes is worse for the
provider that runs first) refuses them.
"""

from __future__ import annotations

FIX_REASONS: tuple[tuple[str, str], ...] = (
    (
        "fixed-dims",
        "QNN takes no dynamic shape: every input and output shape must be static "
        "(builder/qnn_model_wrapper.cc GetOnnxShape, rule qnn.fixed_dims), so the whole build gets the "
        "example sizes.",
    ),
    (
        "fold-if",
        "QNN has no If builder, and its GetCapability returns nothing for a subgraph "
        "(qnn_execution_provider.cc: IsSubgraph()): a constant If's branch reaches it only once inlined in "
        "the main graph.",
    ),
    (
        "fold-constants",
        "Its Pad and reduction builders need constant pads, value and axes "
        "(builder/opbuilder/pad_op_builder.cc, builder/opbuilder/reduce_op_builder.cc: rules qnn.pad, "
        "qnn.reduce): shape arithmetic computed at run time makes them refuse the node.",
    ),
    (
        "nan-guard",
        "QNN registers no IsNaN builder (builder/op_builder_factory.cc): the Where(IsNaN(Softmax)) guard "
        "torch.export puts after attention's Softmax leaves every attention block's guard on the CPU.",
    ),
    (
        "sum-add",
        "QNN's simple op builder takes Sum with exactly 2 inputs (builder/opbuilder/simple_op_builder.cc, "
        "rule qnn.two_inputs): a Sum of 3 or more becomes a chain of Adds it takes.",
    ),
    (
        "reduce",
        "QNN registers ReduceMax/Mean/Min/Prod/Sum/L2 but not ReduceSumSquare "
        "(builder/op_builder_factory.cc); its ReduceMean form (Mul, ReduceMean, Mul) it takes.",
    ),
    (
        "pad",
        "QNN's Pad builder (builder/opbuilder/pad_op_builder.cc, rule qnn.pad) takes constant pads and value, "
        "no axes input, rank <= 5, and the constant/reflect/edge modes: a wrap Pad or one with an axes input "
        "becomes Concat/Slice it takes.",
    ),
    (
        "layernorm",
        "QNN's LayerNormalization builder (builder/opbuilder/layer_norm_op_builder.cc, rule qnn.layernorm) "
        "takes one output over the last axis on the HTP; other forms run as the decomposition's ops, which it "
        "takes.",
    ),
    (
        "gelu",
        "QNN takes Erf only inside the Gelu pattern it fuses (builder/qnn_node_group/gelu_fusion.cc; no Erf "
        "builder in builder/op_builder_factory.cc): a GELU the fusion does not match leaves its Erf on the "
        "CPU, while the Erf-free form's ops it takes.",
    ),
    (
        "gelu-tanh",
        "As for gelu (builder/qnn_node_group/gelu_fusion.cc): the tanh approximation's Mul/Add/Sigmoid it "
        "takes (only with --approximate gelu).",
    ),
)

FIXES: tuple[str, ...] = tuple(name for name, _ in FIX_REASONS)
