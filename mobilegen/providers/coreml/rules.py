"""CoreML op rules (NeuralNetwork and MLProgram): one predicate per limit of an op builder in
onnxruntime/core/providers/coreml/builders/impl/.

Format-specific limits check the target's ``coreml_format``. Dynamic dims are accepted unless the target
requires static shapes (the EP's ``RequireStaticInputShapes`` option).
"""

from __future__ import annotations

import numpy as np

from mobilegen.coverage.common import both_float32_reason, const_reasons, dtype_reason, two_inputs_reason
from mobilegen.coverage.rules import (
    BOOL,
    F16,
    F32,
    I32,
    I64,
    NodeContext,
    Rule,
    const_ints,
    dtype_name,
    fmt_shape,
    rules_by_id,
)
from mobilegen.providers.coreml.facts import DISPLAY_NAME
from mobilegen.providers.coreml.shape_ops import resize, slice_rule, split_pre13_refused

EP = DISPLAY_NAME
B = "onnxruntime/core/providers/coreml/builders/"
IMPL = B + "impl/"
BASE = IMPL + "base_op_builder.cc"
HELPER = B + "helper.cc"
EP_SRC = "onnxruntime/core/providers/coreml/coreml_execution_provider.cc"

MAX_RANK = 5
MAX_CONV_DIM = 16384


def coreml_format(ctx: NodeContext) -> str:
    """The format the target builds: "mlprogram" or "neuralnetwork" (the ``coreml_format`` setting)."""
    return ctx.target.str_value("coreml_format")


def is_mlp(ctx: NodeContext) -> bool:
    return coreml_format(ctx) == "mlprogram"


# --- op rules -----------------------------------------------------------------------------------


def _conv(ctx: NodeContext) -> list[str]:
    out = []
    r = ctx.rank(1)
    if r is not None and r not in (3, 4):
        out.append(f"weight has rank {r}: CoreML takes only 1-D/2-D convolution")
    if not is_mlp(ctx) and not ctx.is_const(1):
        out.append(f"weight input '{ctx.input_name(1)}' is not a constant initializer (NeuralNetwork needs it)")
    out.extend(const_reasons(ctx, ((2, "bias"),), EP))
    for i in (0, 1):
        s = ctx.shape(i)
        if s is not None and any(isinstance(d, int) and d > MAX_CONV_DIM for d in s):
            out.append(f"input '{ctx.input_name(i)}' {fmt_shape(s)} has a dim > {MAX_CONV_DIM}: CoreML conv memory limit")
    return out


def _convtranspose(ctx: NodeContext) -> list[str]:
    out = const_reasons(ctx, ((1, "weight"), (2, "bias")), EP)
    if ctx.attr("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
        out.append("ConvTranspose auto_pad SAME_* is not supported by CoreML")
    if ctx.attr("output_shape") is not None:
        out.append("ConvTranspose output_shape is not supported by CoreML")
    if any(p != 0 for p in tuple(ctx.attr("output_padding", ()))):
        out.append("ConvTranspose output_padding must be 0 on CoreML")
    pads = list(ctx.attr("pads", ()))
    if ctx.attr("auto_pad", "NOTSET") == "NOTSET" and len(set(pads)) > 1:
        out.append(f"ConvTranspose pads {pads}: CoreML needs all pads equal (asymmetric pads give inconsistent results)")
    k, w = ctx.attr("kernel_shape"), ctx.shape(1)
    if k is not None and w is not None and list(k) != list(w[2:]):
        out.append(f"ConvTranspose kernel_shape {list(k)} does not match the weight {fmt_shape(w)}")
    return out


def _batchnorm(ctx: NodeContext) -> list[str]:
    out = []
    r = ctx.rank(0)
    if r is not None and r != 4:
        out.append(f"input has rank {r}: CoreML BatchNormalization takes 4-D")
    out.extend(const_reasons(ctx, ((1, "scale"), (2, "B"), (3, "mean"), (4, "var")), EP))
    if ctx.n_outputs != 1:
        out.append("BatchNormalization training outputs are not supported by CoreML")
    return out


def _prelu(ctx: NodeContext) -> list[str]:
    out = []
    r = ctx.rank(0)
    if r is not None and r not in (3, 4):
        out.append(f"PRelu input has rank {r}: CoreML takes 3-D or 4-D")
    elif r is not None and ctx.static_dim(0, r - 3) is None:
        out.append(f"PRelu input {fmt_shape(ctx.shape(0))}: CoreML needs the channel dim (third from last) known")
    if not ctx.is_const(1):
        out.append(f"slope '{ctx.input_name(1)}' is not a constant initializer")
    else:
        s = ctx.shape(1) or ()
        n = int(np.prod([d for d in s if isinstance(d, int)])) if s else 1
        if n != 1 and not (len(s) == 3 and s[1] == 1 and s[2] == 1):
            out.append(f"slope shape {fmt_shape(s)}: CoreML takes [C, 1, 1] or a single element")
    return out


def _clip(ctx: NodeContext) -> list[str]:
    if ctx.since >= 11:
        out = const_reasons(ctx, ((1, "min"), (2, "max")), EP)
        if out:
            return out
        lo = float(ctx.const(1).reshape(-1)[0]) if ctx.has_input(1) else None  # type: ignore[union-attr]
        hi = float(ctx.const(2).reshape(-1)[0]) if ctx.has_input(2) else None  # type: ignore[union-attr]
    else:
        lo, hi = ctx.attr("min"), ctx.attr("max")
    if lo is not None and hi is not None and float(lo) == float(hi):
        return [f"Clip min == max ({float(lo):g}): not supported by CoreML"]
    return []


def _binary_dtype(ctx: NodeContext) -> str | None:
    allowed = (F32, F16, I64) if is_mlp(ctx) else (F32,)
    return dtype_reason(ctx, 0, allowed, f"CoreML {coreml_format(ctx)}")


def _pow(ctx: NodeContext) -> str | None:
    return both_float32_reason(ctx, "CoreML")


def _max_binary(ctx: NodeContext) -> str | None:
    return two_inputs_reason(ctx, "CoreML")


def _matmul(ctx: NodeContext) -> list[str]:
    ra, rb = ctx.rank(0), ctx.rank(1)
    if is_mlp(ctx):
        if (ra == 1 and rb is not None and rb > 1) or (rb == 1 and ra is not None and ra > 1):
            return ["MatMul with one 1-D input and one N-D input is not supported by CoreML MLProgram (coremltools#2263)"]
        return []
    out = []
    if ra is not None and ra != 2 or rb is not None and rb != 2:
        out.append(f"MatMul {fmt_shape(ctx.shape(0))} x {fmt_shape(ctx.shape(1))}: NeuralNetwork takes 2-D x 2-D")
    if not ctx.is_const(1):
        out.append(f"B input '{ctx.input_name(1)}' is not a constant initializer (NeuralNetwork needs it)")
    return out


def _gemm(ctx: NodeContext) -> list[str]:
    out = []
    if not ctx.is_const(1):
        out.append(f"B input '{ctx.input_name(1)}' is not a constant initializer")
    ta, alpha, beta = int(ctx.attr("transA", 0)), float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    if ta != 0 or alpha != 1.0 or beta != 1.0:
        out.append(f"Gemm transA={ta} alpha={alpha:g} beta={beta:g}: CoreML takes transA=0, alpha=1, beta=1")
    if ctx.has_input(2):
        if not ctx.is_const(2):
            out.append(f"C input '{ctx.input_name(2)}' is not a constant initializer")
        else:
            s = ctx.shape(2) or ()
            if not (len(s) <= 1 or (len(s) == 2 and s[0] == 1)):
                out.append(f"Gemm C {fmt_shape(s)}: CoreML takes a bias of shape [], [1], [N] or [1, N]")
    return out


def _reshape(ctx: NodeContext) -> list[str]:
    out = []
    if not ctx.is_const(1):
        return [f"shape input '{ctx.input_name(1)}' is not a constant initializer"]
    shape = const_ints(ctx, 1)
    if shape is not None:
        if not shape:
            out.append("Reshape to an empty shape is not supported by CoreML")
        if len(shape) > MAX_RANK:
            out.append(f"Reshape to rank {len(shape)}: CoreML takes rank <= {MAX_RANK}")
        if 0 in shape and int(ctx.attr("allowzero", 0)) == 1:
            out.append("Reshape with allowzero=1 and a 0 in the shape is not supported by CoreML")
    if ctx.shape(0) is not None and not ctx.is_static(0):
        out.append(f"Reshape input {fmt_shape(ctx.shape(0))} is not static: CoreML Reshape needs a static input shape")
    return out


def _concat(ctx: NodeContext) -> list[str]:
    out = []
    if sum(1 for t in ctx.node.inputs if t) < 2:
        out.append("Concat with fewer than 2 inputs is not supported by CoreML")
    if not is_mlp(ctx):
        r = ctx.rank(0)
        axis = int(ctx.attr("axis", 0))
        if r is not None:
            if axis < 0:
                axis += r
            if r != 4 or axis != r - 3:
                out.append(f"Concat rank {r} axis {axis}: NeuralNetwork concatenates only 4-D on the channel axis")
    return out


def _gather(ctx: NodeContext) -> list[str]:
    out = []
    ri, rd = ctx.rank(1), ctx.rank(0)
    if ri == 0:
        out.append("Gather with scalar indices is not supported by CoreML")
    if ri is not None and rd is not None and rd + ri - 1 > MAX_RANK:
        out.append(f"Gather output rank {rd + ri - 1}: CoreML takes rank <= {MAX_RANK}")
    return out


def _shape(ctx: NodeContext) -> list[str]:
    if is_mlp(ctx):
        return []
    out = []
    if int(ctx.attr("start", 0)) != 0:
        out.append("Shape start != 0 is not supported by CoreML NeuralNetwork")
    if ctx.attr("end") is not None:
        out.append("Shape end is not supported by CoreML NeuralNetwork")
    return out


def _softmax(ctx: NodeContext) -> str | None:
    if ctx.since < 13 and ctx.shape(0) is not None and not ctx.is_static(0):
        return "Softmax opset < 13 needs a static input shape on CoreML"
    return None


def _norm(ctx: NodeContext) -> list[str]:
    out = const_reasons(ctx, ((1, "scale"), (2, "bias")), EP)
    if ctx.node.op_type == "LayerNormalization" and int(ctx.attr("stash_type", 1)) != 1:
        out.append("LayerNormalization stash_type != 1 is not supported by CoreML")
    if ctx.n_outputs != 1:
        out.append(f"{ctx.node.op_type} extra outputs (mean / inv std) are not supported by CoreML")
    return out


def _reduce(ctx: NodeContext) -> list[str]:
    out = []
    if ctx.has_input(1) and not ctx.is_const(1):
        out.append(f"axes input '{ctx.input_name(1)}' is not a constant initializer")
    if not is_mlp(ctx) and int(ctx.attr("noop_with_empty_axes", 0)) == 1:
        axes = ctx.attr("axes")
        if (axes is None or len(axes) == 0) and not ctx.has_input(1):
            out.append("noop_with_empty_axes=1 without axes is not supported by CoreML NeuralNetwork")
    return out


def _argmax(ctx: NodeContext) -> str | None:
    if int(ctx.attr("select_last_index", 0)) != 0:
        return "ArgMax select_last_index=1 is not supported by CoreML"
    return None


def _pool_rank4(ctx: NodeContext) -> str | None:
    r = ctx.rank(0)
    return None if r is None or r == 4 else f"{ctx.node.op_type} input has rank {r}: CoreML takes 4-D"


def _pool_attrs(ctx: NodeContext) -> list[str]:
    out = []
    if len(tuple(ctx.attr("kernel_shape", (1, 1)))) != 2:
        out.append("only 2-D pooling is supported by CoreML")
    if int(ctx.attr("storage_order", 0)) != 0:
        out.append("storage_order=1 is not supported by CoreML")
    if any(d != 1 for d in tuple(ctx.attr("dilations", (1, 1)))):
        out.append("pooling dilations are not supported by CoreML")
    if ctx.n_outputs != 1:
        out.append("MaxPool Indices output is not supported by CoreML")
    if not is_mlp(ctx) and int(ctx.attr("ceil_mode", 0)) != 0:
        out.append("ceil_mode=1 is not supported by CoreML NeuralNetwork")
    return out


def _pad(ctx: NodeContext) -> list[str]:
    out = []
    r = ctx.rank(0)
    if r is not None and r < 2:
        out.append(f"Pad input rank {r}: CoreML takes rank >= 2")
    mode = ctx.attr("mode", "constant")
    if mode != "constant":
        out.append(f"Pad mode '{mode}': CoreML takes only constant padding")
    if not ctx.is_const(1):
        out.append(f"pads input '{ctx.input_name(1)}' is not a constant initializer")
    else:
        pads = const_ints(ctx, 1)
        if pads is not None and r is not None and len(pads) == 2 * r:
            if any(p < 0 for p in pads):
                out.append("negative pads are not supported by CoreML")
            lead = pads[: r - 2] + pads[r : 2 * r - 2]
            if any(p != 0 for p in lead):
                out.append("Pad pads dims other than the last two: CoreML pads only H and W")
    if ctx.has_input(2) and not ctx.is_const(2):
        out.append(f"constant_value input '{ctx.input_name(2)}' is not a constant initializer")
    if ctx.has_input(3) and not ctx.is_const(3):
        out.append(f"axes input '{ctx.input_name(3)}' is not a constant initializer")
    return out


def _axes_const(ctx: NodeContext) -> str | None:
    if ctx.has_input(1) and not ctx.is_const(1):
        return f"axes input '{ctx.input_name(1)}' is not a constant initializer"
    return None


def _unsqueeze_rank(ctx: NodeContext) -> str | None:
    r = ctx.rank(0)
    axes = ctx.attr("axes")
    n = len(axes) if axes is not None else len(const_ints(ctx, 1) or [])
    if r is not None and r + n > MAX_RANK:
        return f"Unsqueeze output rank {r + n}: CoreML takes rank <= {MAX_RANK}"
    return None


def _cast(ctx: NodeContext) -> str | None:
    to = int(ctx.attr("to", 0))
    src = ctx.dtype(0)
    if is_mlp(ctx):
        ok = (F32, F16, I32, I64)
        if src in ok and to in ok:
            return None
        return f"Cast {dtype_name(src)} -> {dtype_name(to)}: CoreML MLProgram casts between int32/int64/float32/float16"
    prod = ctx.graph.producer.get(ctx.input_name(0))
    if prod is not None and ctx.graph.nodes[prod].op_type == "ArgMax" and to == I32:
        return None
    return "Cast in NeuralNetwork is only taken as int64 -> int32 right after ArgMax"


def _cast_producer(ctx: NodeContext) -> str | None:
    # CastOpBuilder::IsOpSupportedImpl returns false first thing when node.GetInputEdgesCount() == 0 ("Cast
    # has no preceding nodes"), in both formats and every release: a Cast of a graph input (or of an
    # initializer) has no input edge.
    if ctx.graph.producer.get(ctx.input_name(0)) is None:
        return f"Cast reads '{ctx.input_name(0)}', which no node produces: CoreML refuses a Cast without a preceding node"
    return None


def _depthtospace(ctx: NodeContext) -> str | None:
    mode = ctx.attr("mode", "DCR")
    if mode == "DCR":
        return None
    if not is_mlp(ctx):
        return f"DepthToSpace mode {mode}: CoreML NeuralNetwork takes only DCR"
    if not ctx.is_static(0):
        return "DepthToSpace CRD needs a static input shape on CoreML MLProgram"
    return None


def _lrn(ctx: NodeContext) -> str | None:
    r = ctx.rank(0)
    return None if r is None or r in (3, 4) else f"LRN input has rank {r}: CoreML takes 3-D or 4-D"


def _where(ctx: NodeContext) -> list[str]:
    out = []
    for i in (1, 2):
        dt = ctx.dtype(i)
        if dt is not None and dt not in (F32, F16):
            out.append(f"Where branch '{ctx.input_name(i)}' is {dtype_name(dt)}: CoreML takes float32/float16")
    return out


def _and(ctx: NodeContext) -> list[str]:
    return [
        f"And input '{ctx.input_name(i)}' is {dtype_name(ctx.dtype(i))}: CoreML takes bool"
        for i in (0, 1)
        if ctx.dtype(i) is not None and ctx.dtype(i) != BOOL
    ]


def _gathernd(ctx: NodeContext) -> str | None:
    bd = int(ctx.attr("batch_dims", 0))
    return None if bd == 0 else f"GatherND batch_dims={bd}: CoreML takes 0"


def _tile(ctx: NodeContext) -> str | None:
    r = ctx.rank(0)
    return None if r is None or r <= MAX_RANK else f"Tile input rank {r}: CoreML takes rank <= {MAX_RANK}"


OP_RULES = rules_by_id(
    Rule("coreml.conv", "Conv 1-D/2-D, constant bias (and weight for NN), dims <= 16384", IMPL + "conv_op_builder.cc", _conv),
    Rule("coreml.convtranspose", "ConvTranspose constant W/B, no SAME_*, no output_shape/padding", IMPL + "convtranspose_op_builder.cc", _convtranspose),
    Rule("coreml.batchnorm", "BatchNormalization 4-D, constant params, 1 output", IMPL + "batch_norm_op_builder.cc", _batchnorm),
    Rule("coreml.prelu", "PRelu 3-D/4-D, constant slope [C,1,1] or 1 element", IMPL + "activation_op_builder.cc", _prelu),
    Rule("coreml.clip", "Clip min/max constant", IMPL + "clip_op_builder.cc", _clip),
    Rule("coreml.binary.dtype", "binary ops float32 (MLProgram also float16/int64)", IMPL + "binary_op_builder.cc", _binary_dtype),
    Rule("coreml.pow", "Pow both inputs float32", IMPL + "binary_op_builder.cc", _pow),
    Rule("coreml.max.binary", "Max exactly 2 inputs", IMPL + "binary_op_builder.cc", _max_binary),
    Rule("coreml.matmul", "MatMul: NN 2-D x constant 2-D; MLP no 1-D x N-D", IMPL + "gemm_op_builder.cc", _matmul),
    Rule("coreml.gemm", "Gemm constant B and C, transA=0, alpha=beta=1", IMPL + "gemm_op_builder.cc", _gemm),
    Rule("coreml.reshape", "Reshape constant non-empty shape, static input", IMPL + "reshape_op_builder.cc", _reshape),
    Rule("coreml.concat", "Concat >= 2 inputs; NN 4-D on channels", IMPL + "concat_op_builder.cc", _concat),
    Rule("coreml.split", "Split-13+: constant splits, >= 2 parts", IMPL + "split_op_builder.cc", split_pre13_refused,
         until_ort="1.27.0", ort_source="pre-13 Split from PR #28270 (see releases.SPLIT_SOURCE)"),
    Rule("coreml.slice", "Slice static data, constant starts/ends/axes/steps", IMPL + "slice_op_builder.cc", slice_rule),
    Rule("coreml.gather", "Gather non-scalar indices, output rank <= 5", IMPL + "gather_op_builder.cc", _gather,
         until_ort="1.27.0", ort_source="scalar indices taken from PR #28278 (see releases.GATHER_SOURCE)"),
    Rule("coreml.shape", "Shape: NN no start/end", IMPL + "shape_op_builder.cc", _shape),
    Rule("coreml.softmax", "Softmax opset < 13 needs static shape", IMPL + "softmax_op_builder.cc", _softmax),
    Rule("coreml.norm", "Layer/Group/InstanceNorm constant scale/bias, 1 output", IMPL + "normalization_op_builder.cc", _norm),
    Rule("coreml.reduce", "Reduce* constant axes; NN no noop_with_empty_axes", IMPL + "reduction_op_builder.cc", _reduce),
    Rule("coreml.argmax", "ArgMax select_last_index=0", IMPL + "argmax_op_builder.cc", _argmax),
    Rule("coreml.pool.rank4", "pooling input 4-D", IMPL + "pool_op_builder.cc", _pool_rank4),
    Rule("coreml.pool.attrs", "2-D pooling, no storage_order/dilations/indices; NN no ceil_mode", IMPL + "pool_op_builder.cc", _pool_attrs),
    Rule("coreml.resize", "Resize linear/nearest, constant scales/sizes, H/W only", IMPL + "resize_op_builder.cc", resize),
    Rule("coreml.pad", "Pad constant mode, constant pads on the last two dims", IMPL + "pad_op_builder.cc", _pad,
         until_ort="1.27.0", ort_source="ML Program Pad from PR #28073 (see releases.PAD_MLP_SOURCE)"),
    Rule("coreml.axes_const", "axes input constant", IMPL + "squeeze_op_builder.cc", _axes_const),
    Rule("coreml.unsqueeze.rank", "Unsqueeze output rank <= 5", IMPL + "squeeze_op_builder.cc", _unsqueeze_rank),
    Rule("coreml.cast", "Cast: MLP int32/int64/float/fp16; NN only after ArgMax", IMPL + "cast_op_builder.cc", _cast),
    Rule("coreml.cast.producer", "Cast fed by a node (not a graph input or initializer)", IMPL + "cast_op_builder.cc", _cast_producer),
    Rule("coreml.depthtospace", "DepthToSpace DCR (MLP CRD with static shape)", IMPL + "depthtospace_op_builder.cc", _depthtospace),
    Rule("coreml.lrn", "LRN 3-D or 4-D", IMPL + "LRN_op_builder.cc", _lrn),
    Rule("coreml.where", "Where X/Y float32/float16", IMPL + "where_op_builder.cc", _where),
    Rule("coreml.and", "And inputs bool", IMPL + "logical_op_builder.cc", _and),
    Rule("coreml.gathernd", "GatherND batch_dims 0", IMPL + "gather_nd_op_builder.cc", _gathernd),
    Rule("coreml.tile", "Tile input rank <= 5", IMPL + "tile_op_builder.cc", _tile),
)
