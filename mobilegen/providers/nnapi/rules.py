"""NNAPI op rules: one predicate per limit of an op builder in
onnxruntime/core/providers/nnapi/nnapi_builtin/builders/impl/ (see docs/coverage.md).

Android API levels stand for NNAPI feature levels: FL1 = API 27, FL2 = 28, FL3 = 29, FL4 = 30, FL5 = 31.
QDQ node units and QLinear* ops are judged as a whole by :mod:`~mobilegen.providers.nnapi.qdq`; Q/DQ
nodes outside a unit by their own builders (rules below).
"""

from __future__ import annotations

import numpy as np

from mobilegen.coverage.common import (
    both_float32_reason,
    const_reason,
    const_reasons,
    rank_reason,
    two_inputs_reason,
)
from mobilegen.coverage.rules import (
    F32,
    I32,
    U8,
    NodeContext,
    Reason,
    Rule,
    const_ints,
    dtype_name,
    fmt_num,
    fmt_shape,
    needs_api,
    rules_by_id,
)
from mobilegen.providers.nnapi.facts import DISPLAY_NAME

EP = DISPLAY_NAME
B = "onnxruntime/core/providers/nnapi/nnapi_builtin/builders/"
IMPL = B + "impl/"
BASE = IMPL + "base_op_builder.cc"
HELPER = B + "helper.cc"
FACTORY = B + "op_builder_factory.cc"
EP_SRC = "onnxruntime/core/providers/nnapi/nnapi_builtin/nnapi_execution_provider.cc"


def target_api(ctx: NodeContext) -> int:
    """The Android API level the analysis assumes (the ``android_api`` setting)."""
    return ctx.target.int_value("android_api")


# --- op rules -----------------------------------------------------------------------------------


def _clip_range(ctx: NodeContext) -> str | None:
    lo, hi = -np.inf, np.inf
    if ctx.since < 11:
        lo = float(ctx.attr("min", -np.inf))
        hi = float(ctx.attr("max", np.inf))
    else:
        for i, which in ((1, "min"), (2, "max")):
            if not ctx.has_input(i):
                continue
            if not ctx.is_const(i):
                return f"Clip {which} '{ctx.input_name(i)}' is not a constant initializer"
            v = ctx.const(i)
            if v is None:
                return f"Clip {which} value could not be read"
            if which == "min":
                lo = float(np.asarray(v).reshape(-1)[0])
            else:
                hi = float(np.asarray(v).reshape(-1)[0])
    if (lo, hi) in ((0.0, 6.0), (-1.0, 1.0)):
        return None
    return f"Clip range [{fmt_num(lo)}, {fmt_num(hi)}]: NNAPI supports only [0,6] and [-1,1]"


def _conv_weight(ctx: NodeContext) -> str | None:
    if not ctx.is_const(1):
        return f"weight input '{ctx.input_name(1)}' is not a constant initializer"
    r = ctx.rank(1)
    if r != 4:
        return f"weight has rank {r}: NNAPI takes only 2-D convolution (4-D weight)"
    return None


def _conv_dilations(ctx: NodeContext) -> str | Reason | None:
    dil = tuple(ctx.attr("dilations", (1, 1)))
    if all(d == 1 for d in dil):
        return None
    group = int(ctx.attr("group", 1))
    w = ctx.shape(1)
    if group != 1 and w is not None and len(w) > 1 and w[1] != 1:
        return f"dilations {list(dil)} on a grouped convolution: NNAPI supports dilation only for plain/depthwise conv"
    if target_api(ctx) < 29:
        return needs_api(f"dilations {list(dil)} need Android API 29, target is {target_api(ctx)}", 29)
    return None


def _batchnorm(ctx: NodeContext) -> list[str]:
    out = const_reasons(ctx, ((1, "scale"), (2, "B"), (3, "mean"), (4, "var")), EP)
    if ctx.n_outputs != 1:
        out.append("BatchNormalization with training outputs: NNAPI takes only the inference form (1 output)")
    r = ctx.rank(0)
    if r is not None and r > 4:
        out.append(f"input has rank {r}: NNAPI BatchNormalization takes rank <= 4")
    return out


def _rank_1_4(ctx: NodeContext) -> str | None:
    return rank_reason(ctx, 0, 1, 4, EP)


def _binary_rank(ctx: NodeContext) -> list[str]:
    out = []
    for i in (0, 1):
        r = ctx.rank(i)
        if r is not None and r > 4:
            out.append(f"input '{ctx.input_name(i)}' has rank {r}: NNAPI {ctx.node.op_type} takes rank <= 4")
    return out


def _pow_dtype(ctx: NodeContext) -> str | None:
    return both_float32_reason(ctx, "NNAPI")


def _minmax_inputs(ctx: NodeContext) -> str | None:
    return two_inputs_reason(ctx, "NNAPI")


def _batch_matmul_ok(ctx: NodeContext) -> bool:
    # op_builder_helpers.cc::IsSupportedBatchMatMul: API 29, float, same rank >= 3, same leading dims
    if ctx.node.op_type != "MatMul" or target_api(ctx) < 29:
        return False
    a, b = ctx.shape(0), ctx.shape(1)
    if a is None or b is None or len(a) < 3 or len(a) != len(b):
        return False
    if ctx.dtype(0) != F32 or ctx.dtype(1) != F32:
        return False
    return a[:-2] == b[:-2]


def _matmul(ctx: NodeContext) -> list[str]:
    if _batch_matmul_ok(ctx):
        return []
    out = []
    ra, rb = ctx.rank(0), ctx.rank(1)
    if ra is not None and ra != 2 or rb is not None and rb != 2:
        out.append(
            f"MatMul {fmt_shape(ctx.shape(0))} x {fmt_shape(ctx.shape(1))}: NNAPI takes 2-D x 2-D with a constant B, "
            "or (API 29+) float batch matmul of equal rank >= 3 with equal leading dims"
        )
    if not ctx.is_const(1):
        out.append(f"B input '{ctx.input_name(1)}' is not a constant initializer (needed outside the batch path)")
    return out


def _gemm_attrs(ctx: NodeContext) -> str | None:
    ta, alpha, beta = int(ctx.attr("transA", 0)), float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    if ta == 0 and alpha == 1.0 and beta == 1.0:
        return None
    return f"Gemm transA={ta} alpha={fmt_num(alpha)} beta={fmt_num(beta)}: NNAPI takes transA=0, alpha=1, beta=1"


def _gemm_rank(ctx: NodeContext) -> list[str]:
    out = []
    for i, what in ((0, "A"), (1, "B")):
        r = ctx.rank(i)
        if r is not None and r != 2:
            out.append(f"Gemm {what} has rank {r}: NNAPI takes 2-D A and B")
    return out


def _gemm_b_const(ctx: NodeContext) -> str | None:
    if int(ctx.attr("transB", 0)) == 0 and not ctx.is_const(1):
        return f"B input '{ctx.input_name(1)}' is not a constant initializer and transB=0: NNAPI needs one of them"
    return None


def _gemm_bias(ctx: NodeContext) -> str | Reason | None:
    if not ctx.has_input(2):
        return None
    c, b = ctx.shape(2), ctx.shape(1)
    if c is None or b is None or len(b) != 2:
        return None
    if len(c) == 0:
        return "Gemm C is a scalar: NNAPI takes a 1-D bias of size N"
    if len(c) > 1:
        if target_api(ctx) < 28:
            return needs_api(f"Gemm C {fmt_shape(c)} is not 1-D: needs Android API 28, target is {target_api(ctx)}", 28)
        if any(d != 1 for d in c[:-1]):
            return f"Gemm C {fmt_shape(c)}: NNAPI takes a bias of shape [N] or [1, .., 1, N]"
    n = b[1] if int(ctx.attr("transB", 0)) == 0 else b[0]
    size = c[-1]
    if isinstance(n, int) and isinstance(size, int) and size != n:
        return f"Gemm C {fmt_shape(c)} does not have N={n} elements: NNAPI does not broadcast the bias"
    return None


def _reshape_shape_const(ctx: NodeContext) -> str | None:
    return const_reason(ctx, 1, "shape", EP)


def _reshape_zero(ctx: NodeContext) -> str | None:
    shape = const_ints(ctx, 1)
    if shape is None or 0 not in shape:
        return None
    if int(ctx.attr("allowzero", 0)) == 1:
        return "Reshape with allowzero=1 and a 0 in the shape: not supported by NNAPI"
    data = ctx.shape(0)
    for i, v in enumerate(shape):
        if v == 0 and (data is None or i >= len(data) or not isinstance(data[i], int)):
            return "Reshape copies a dynamic dim (0 in the shape): NNAPI needs it fixed"
    return None


def _softmax(ctx: NodeContext) -> str | Reason | None:
    # Below opset 13 the builder coerces to 2-D itself and checks nothing more; from 13 its axis default
    # is 1 (helper.Get("axis", 1)), not ONNX's -1.
    r = ctx.rank(0)
    if r is None or ctx.since < 13:
        return None
    if r > 4:
        return f"Softmax input has rank {r}: NNAPI takes rank <= 4"
    if target_api(ctx) < 29:
        axis = int(ctx.attr("axis", 1))
        if axis < 0:
            axis += r
        if r not in (2, 4) or axis != r - 1:
            return needs_api(f"Softmax rank {r} axis {axis}: below API 29 NNAPI takes only 2-D/4-D on the last axis", 29)
    return None


def _pool_rank4(ctx: NodeContext) -> str | None:
    return rank_reason(ctx, 0, 4, 4, EP)


def _pool_attrs(ctx: NodeContext) -> list[str]:
    out = []
    if int(ctx.attr("count_include_pad", 0)) == 1:
        out.append("count_include_pad=1 is not supported by NNAPI")
    if int(ctx.attr("storage_order", 0)) == 1:
        out.append("storage_order=1 is not supported by NNAPI")
    if len(tuple(ctx.attr("kernel_shape", (1, 1)))) != 2:
        out.append("only 2-D pooling is supported by NNAPI")
    if int(ctx.attr("ceil_mode", 0)) == 1:
        out.append("ceil_mode=1 is not supported by NNAPI")
    if any(d != 1 for d in tuple(ctx.attr("dilations", (1, 1)))):
        out.append("pooling dilations are not supported by NNAPI")
    if ctx.n_outputs != 1:
        out.append("MaxPool Indices output is not supported by NNAPI")
    return out


def _resize(ctx: NodeContext) -> list[str | Reason]:
    out: list[str | Reason] = []
    r = ctx.rank(0)
    if r is not None and r != 4:
        out.append(f"Resize input has rank {r}: NNAPI takes 4-D")
    mode = ctx.attr("mode", "nearest")
    coord = ctx.attr("coordinate_transformation_mode", "half_pixel")
    if mode not in ("linear", "nearest"):
        out.append(f"Resize mode '{mode}': NNAPI takes linear or nearest")
    if int(ctx.attr("exclude_outside", 0)) != 0:
        out.append("Resize exclude_outside=1 is not supported by NNAPI")
    if int(ctx.attr("antialias", 0)) != 0 or ctx.attr("axes") is not None:
        out.append("Resize antialias/axes (opset 18) are not supported by NNAPI")
    if ctx.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        out.append("Resize keep_aspect_ratio_policy other than stretch is not supported by NNAPI")
    if mode == "linear":
        if coord in ("half_pixel", "align_corners"):
            if target_api(ctx) < 30:
                out.append(needs_api(f"Resize linear with {coord} needs Android API 30, target is {target_api(ctx)}", 30))
        elif coord != "asymmetric":
            out.append(f"Resize coordinate_transformation_mode '{coord}' is not supported by NNAPI")
    elif mode == "nearest":
        if coord != "asymmetric" or ctx.attr("nearest_mode", "round_prefer_floor") != "floor":
            out.append("Resize nearest: NNAPI takes only asymmetric coordinates with nearest_mode=floor")
    out.extend(_resize_params(ctx))
    return out


def _resize_params(ctx: NodeContext) -> list[str | Reason]:
    """Scales (preferred when present) or sizes: constant, N/C kept; a downscale needs H and W known and
    divisible by 1/scale; NCHW needs API 29."""
    scales_i = 2 if ctx.since >= 11 else 1
    use_scales = ctx.has_input(scales_i)
    i = scales_i if use_scales else 3
    if not ctx.has_input(i) or not ctx.is_const(i):
        return [f"Resize {'scales' if use_scales else 'sizes'} input is not a constant initializer"]
    v, src = ctx.const(i), ctx.shape(0)
    if v is None or src is None or len(src) != 4 or v.size != 4:
        return []
    vals = [float(x) for x in np.asarray(v).reshape(-1)]
    out: list[str | Reason] = []
    if use_scales:
        nchw = vals[1] == 1.0
        n, c, h, w = (vals[0], vals[1], vals[2], vals[3]) if nchw else (vals[0], vals[3], vals[1], vals[2])
        if n != 1.0 or c != 1.0:
            out.append("Resize scales batch/channel dims: NNAPI resizes only H and W")
        elif h < 1.0 or w < 1.0:
            hi, wi = (src[2], src[3]) if nchw else (src[1], src[2])
            if not (_divides(hi, h) and _divides(wi, w)):
                out.append(f"Resize downscale {h:g}x{w:g} of {fmt_shape(src)}: NNAPI needs H and W known and divisible by 1/scale")
    else:
        nchw = isinstance(src[1], int) and vals[1] == src[1]
        c = 1 if nchw else 3
        if vals[0] != src[0] or vals[c] != src[c]:
            out.append("Resize sizes change batch/channel dims: NNAPI resizes only H and W")
    if nchw and target_api(ctx) < 29:
        out.append(needs_api(f"NCHW Resize needs Android API 29, target is {target_api(ctx)}", 29))
    return out


def _divides(n: object, scale: float) -> bool:
    # utils::ReciprocalIsAFactorOfN
    if not isinstance(n, int) or scale <= 0:
        return False
    r = round(1.0 / scale)
    return r > 0 and abs(r * scale - 1.0) < 1e-6 and n % r == 0


def _pad(ctx: NodeContext) -> list[str]:
    out = []
    mode = ctx.attr("mode", "constant")
    if mode != "constant":
        out.append(f"Pad mode '{mode}': NNAPI takes only constant padding")
    r = const_reason(ctx, 1, "pads", EP)
    if r:
        out.append(r)
    else:
        pads = const_ints(ctx, 1)
        if pads is not None and any(p < 0 for p in pads):
            out.append("negative pads (cropping) are not supported by NNAPI")
    out.extend(const_reasons(ctx, ((2, "constant_value"),), EP))
    if ctx.has_input(3):
        out.append("Pad axes input is not supported by NNAPI")
    return out


def _axes_const(ctx: NodeContext) -> str | None:
    if ctx.since >= 13 and ctx.has_input(1) and not ctx.is_const(1):
        return f"axes input '{ctx.input_name(1)}' is not a constant initializer"
    return None


def _slice(ctx: NodeContext) -> list[str]:
    # Before opset 10 starts/ends/axes are attributes.
    inputs = ((1, "starts"), (2, "ends"), (3, "axes"), (4, "steps")) if ctx.since >= 10 else ()
    out = const_reasons(ctx, inputs, EP)
    r = ctx.rank(0)
    if r is not None and r > 4:
        out.append(f"Slice input has rank {r}: NNAPI takes rank <= 4")
    s = ctx.shape(0)
    if s is not None and 0 in s:
        out.append(f"Slice input {fmt_shape(s)} has a zero-sized dim")
    if ctx.since >= 10 and ctx.has_input(4) and not ctx.has_input(3):
        # the builder checks input 3 ('axes') for a constant whenever there are more than 3 inputs
        out.append("Slice with steps but no axes: NNAPI needs a constant axes input")
    return out


def _gather(ctx: NodeContext) -> list[str]:
    out = []
    if ctx.dtype(1) != I32 and not ctx.is_const(1):
        out.append(
            f"Gather indices '{ctx.input_name(1)}' are {dtype_name(ctx.dtype(1))} and not constant: "
            "NNAPI needs constant indices unless they are int32"
        )
    r = ctx.rank(0)
    if r is not None and not 1 <= r <= 4:
        out.append(f"Gather data has rank {r}: NNAPI takes rank 1..4")
    return out


def _split(ctx: NodeContext) -> list[str]:
    out = []
    s = ctx.shape(0)
    axis = int(ctx.attr("axis", 0))
    n = len(ctx.node.outputs)
    if ctx.has_input(1):
        if not ctx.is_const(1):
            return [f"split input '{ctx.input_name(1)}' is not a constant initializer"]
        splits = const_ints(ctx, 1) or []
        if len(set(splits)) > 1:
            out.append(f"uneven split {splits}: NNAPI splits only into equal parts")
        return out
    if ctx.since >= 18 and ctx.attr("num_outputs") is None:
        out.append("Split opset 18 without split input needs num_outputs")
    if s is not None and -len(s) <= axis < len(s):
        d = s[axis]
        if isinstance(d, int) and n and d % n != 0:
            out.append(f"axis dim {d} is not divisible by {n} outputs: NNAPI splits only into equal parts")
    return out


def _cast_to(ctx: NodeContext) -> str | None:
    to = int(ctx.attr("to", 0))
    if to in (F32, I32):
        return None
    return f"Cast to {dtype_name(to)}: NNAPI casts only to float32 or int32"


def _reducemean(ctx: NodeContext) -> list[str]:
    out = []
    r = rank_reason(ctx, 0, 1, 4, EP)
    if r:
        out.append(r)
    if ctx.since >= 18:
        if ctx.has_input(1) and not ctx.is_const(1):
            out.append(f"axes input '{ctx.input_name(1)}' is not a constant initializer")
        if int(ctx.attr("noop_with_empty_axes", 0)) == 1:
            out.append("noop_with_empty_axes=1 is not supported by NNAPI")
    return out


def _depthtospace(ctx: NodeContext) -> list[str]:
    out = []
    r = rank_reason(ctx, 0, 4, 4, EP)
    if r:
        out.append(r)
    if ctx.since >= 11 and ctx.attr("mode", "DCR") != "DCR":
        out.append(f"DepthToSpace mode {ctx.attr('mode')}: NNAPI takes only DCR")
    return out


def _qdq_params(ctx: NodeContext) -> list[str]:
    out = []
    for i, what in ((1, "scale"), (2, "zero point")):
        if not ctx.has_input(i):
            continue
        if not ctx.is_const(i):
            out.append(f"{what} '{ctx.input_name(i)}' is not a constant initializer")
            continue
        v = ctx.const(i)
        if v is not None and np.asarray(v).size != 1:
            out.append(f"per-channel {what}: NNAPI {ctx.node.op_type} takes per-tensor quantization")
    return out


def _quantize_out(ctx: NodeContext) -> str | None:
    dt = ctx.out_dtype(0)
    if dt is None or dt == U8:
        return None
    return f"QuantizeLinear output is {dtype_name(dt)}: NNAPI quantizes only to uint8"


OP_RULES = rules_by_id(
    Rule("nnapi.clip.range", "Clip min/max constant and [0,6] or [-1,1]", IMPL + "clip_op_builder.cc", _clip_range),
    Rule("nnapi.conv.weight", "Conv weight constant and 4-D", IMPL + "conv_op_builder.cc", _conv_weight),
    Rule("nnapi.conv.dilations", "Conv dilations need API 29, not grouped", IMPL + "conv_op_builder.cc", _conv_dilations),
    Rule("nnapi.batchnorm", "BatchNormalization params constant, 1 output, rank <= 4", IMPL + "batchnorm_op_builder.cc", _batchnorm),
    Rule("nnapi.rank_1_4", "input 0 rank 1..4", IMPL + "unary_op_builder.cc", _rank_1_4),
    Rule("nnapi.binary.rank", "both inputs rank <= 4", IMPL + "binary_op_builder.cc", _binary_rank),
    Rule("nnapi.pow.dtype", "Pow inputs both float32", IMPL + "binary_op_builder.cc", _pow_dtype),
    Rule("nnapi.minmax.inputs", "Max/Min exactly 2 inputs", IMPL + "minmax_op_builder.cc", _minmax_inputs),
    Rule("nnapi.matmul", "MatMul 2-D with constant B, or batch matmul (API 29)", IMPL + "gemm_op_builder.cc", _matmul),
    Rule("nnapi.gemm.attrs", "Gemm transA=0, alpha=1, beta=1", IMPL + "gemm_op_builder.cc", _gemm_attrs),
    Rule("nnapi.gemm.rank", "Gemm A and B 2-D", IMPL + "gemm_op_builder.cc", _gemm_rank),
    Rule("nnapi.gemm.b_const", "Gemm B constant unless transB=1", IMPL + "gemm_op_builder.cc", _gemm_b_const),
    Rule("nnapi.gemm.bias", "Gemm C is [N] (or [1,..,N] from API 28)", B + "op_builder_helpers.cc", _gemm_bias),
    Rule("nnapi.reshape.shape_const", "Reshape shape constant", IMPL + "reshape_op_builder.cc", _reshape_shape_const),
    Rule("nnapi.reshape.zero", "Reshape 0 only on fixed dims, no allowzero", IMPL + "reshape_op_builder.cc", _reshape_zero),
    Rule("nnapi.softmax", "Softmax rank <= 4; API 28: 2-D/4-D on the last axis", IMPL + "softmax_op_builder.cc", _softmax),
    Rule("nnapi.pool.rank4", "pooling input 4-D", IMPL + "pool_op_builder.cc", _pool_rank4),
    Rule("nnapi.pool.attrs", "2-D pooling, no ceil_mode/count_include_pad/storage_order/dilations/indices", IMPL + "pool_op_builder.cc", _pool_attrs),
    Rule("nnapi.resize", "Resize 4-D, linear/nearest, constant scales/sizes, H/W only", IMPL + "resize_op_builder.cc", _resize),
    Rule("nnapi.pad", "Pad constant mode, constant non-negative pads and value", IMPL + "pad_op_builder.cc", _pad),
    Rule("nnapi.axes_const", "axes input constant (opset 13+)", IMPL + "squeeze_op_builder.cc", _axes_const),
    Rule("nnapi.slice", "Slice inputs constant, rank <= 4, no zero dims", IMPL + "slice_op_builder.cc", _slice),
    Rule("nnapi.gather", "Gather indices constant unless int32; data rank 1..4", IMPL + "gather_op_builder.cc", _gather),
    Rule("nnapi.split", "Split into equal parts, split input constant", IMPL + "split_op_builder.cc", _split),
    Rule("nnapi.cast.to", "Cast to float32 or int32", IMPL + "cast_op_builder.cc", _cast_to),
    Rule("nnapi.reducemean", "ReduceMean rank 1..4, constant axes, no noop_with_empty_axes", IMPL + "reduction_op_builder.cc", _reducemean),
    Rule("nnapi.depthtospace", "DepthToSpace 4-D, DCR", IMPL + "depthtospace_op_builder.cc", _depthtospace),
    Rule("nnapi.qdq.params", "Q/DQ scale and zero point constant, per-tensor", IMPL + "quantizelinear_op_builder.cc", _qdq_params),
    Rule("nnapi.quantize.out", "QuantizeLinear output uint8", IMPL + "quantizelinear_op_builder.cc", _quantize_out),
)
