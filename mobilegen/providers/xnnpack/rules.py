"""XNNPACK op rules read from the kernels' ``IsOnnxNodeSupported`` (issue 18's re-read), and the rules
that differ between ONNX Runtime releases.

Read at the ORT history mirror's ``SOURCE_COMMIT`` (microsoft/onnxruntime main, 2026-03-07, 1.25-dev): no
XNNPACK change since 2025-10, so these are the 1.24.x and 1.25.x rules. Later changes come from PR threads
whose merge dates were not read; each is given the first release that surely holds it (``ort_source``).
"""

from __future__ import annotations

from mobilegen.coverage.common import const_reasons
from mobilegen.coverage.rules import NodeContext, Rule, fmt_shape
from mobilegen.providers.xnnpack.facts import CHECKER, DISPLAY_NAME, FUSABLE_PRODUCERS, X

EP = DISPLAY_NAME
SOURCE_COMMIT = "d626b568e01e394e5f17c92e95f0e21e36a73a7e"
PADS_OK = ("NOTSET", "VALID", "SAME_UPPER")  # detail/utils.cc IsPaddingTypeSupported


def _dim(ctx: NodeContext, i: int, axis: int) -> int:
    """``dim_value()`` as the kernels read it: 0 for a symbolic or unknown dim."""
    return ctx.static_dim(i, axis) or 0


def conv(ctx: NodeContext) -> list[str]:
    """ConvBase::IsOnnxNodeSupported (Conv and ConvTranspose): opset 11+, 1-D or 2-D, C/H(/W) known."""
    op = ctx.node.op_type
    if ctx.since < 11 and ctx.unit is None:  # a QDQ unit's view: xnnpack.qdq.conv_opset says it
        return [f"{op} since_version {ctx.since}: XNNPACK takes {op} from opset 11"]
    s = ctx.shape(0)
    if s is None or len(s) not in (3, 4):
        return [f"{op} input {fmt_shape(s)}: XNNPACK takes 1-D or 2-D convolution (3-D or 4-D input)"]
    out = []
    if not all(isinstance(d, int) for d in s[1:]):
        out.append(f"{op} input {fmt_shape(s)}: XNNPACK needs C, H and W known")
    if not ctx.is_const(1):
        out.append(f"weight '{ctx.input_name(1)}' must be a constant initializer for XNNPACK")
    out.extend(const_reasons(ctx, ((2, "bias"),), EP))
    if ctx.attr("pads") is None and ctx.attr("auto_pad", "NOTSET") not in PADS_OK:
        out.append(f"{op} auto_pad {ctx.attr('auto_pad')} is not supported by XNNPACK")
    return out


def matmul(ctx: NodeContext) -> list[str]:
    """math/matmul.cc: A of rank >= 1 (any batch), B constant of rank <= 2 with non-zero known dims."""
    out = []
    ra, sb = ctx.rank(0), ctx.shape(1)
    if ra is None or ra < 1:
        out.append(f"MatMul A '{ctx.input_name(0)}' rank {ra}: XNNPACK needs a known rank >= 1")
    if sb is None or len(sb) > 2 or (len(sb) == 2 and _dim(ctx, 1, 1) == 0) or (len(sb) >= 1 and _dim(ctx, 1, 0) == 0):
        out.append(f"MatMul B '{ctx.input_name(1)}' {fmt_shape(sb)}: XNNPACK takes rank <= 2 with known non-zero dims")
    if not ctx.is_const(1):
        out.append(f"B input '{ctx.input_name(1)}' is not a constant initializer")
    return out


def _gemm_c_shape(ctx: NodeContext) -> list[str]:
    # gemm.cc compares C's first dim with B's dims as written (transB not applied); dim_value() 0 if symbolic.
    if not ctx.has_input(2) or not ctx.rank(2):
        return []
    c0, b0, b1 = _dim(ctx, 2, 0), _dim(ctx, 1, 0), _dim(ctx, 1, 1)
    if c0 not in (b0, b1):
        return [f"Gemm C {fmt_shape(ctx.shape(2))}: XNNPACK needs C's first dim to equal one of B's dims {fmt_shape(ctx.shape(1))}"]
    return []


GEMM_C_SOURCE = (
    "PR #28546 'Fix XNNPACK Gemm SIGSEGV on missing and scalar C bias' (fixes #28541/#28542; opened 2026-05-18 "
    "while main was 1.27-dev; merge date not read, so 1.27.0 is likely but 1.28.0 is the first release surely "
    "holding it). Before it gemm.cc dereferenced a missing C and read dim(0) of a rank-0 C: the session crashed"
)


def _gemm_c_crash(ctx: NodeContext) -> list[str]:
    if not ctx.has_input(2):
        return ["Gemm without C crashes XNNPACK's capability check in this ONNX Runtime release (#28541)"]
    if ctx.rank(2) == 0:
        return [f"Gemm scalar C '{ctx.input_name(2)}' crashes XNNPACK's capability check in this ONNX Runtime release (#28542)"]
    return _gemm_c_shape(ctx)


def _gemm_c_fixed(ctx: NodeContext) -> list[str]:
    if ctx.has_input(2) and ctx.rank(2) == 0:
        return [f"Gemm scalar C '{ctx.input_name(2)}': XNNPACK refuses a rank-0 C (no scalar broadcast)"]
    return _gemm_c_shape(ctx)


GEMM_C = Rule("xnnpack.gemm.c", "Gemm C present, not scalar, first dim one of B's (missing/scalar C crash)",
              X + "math/gemm.cc", _gemm_c_crash, until_ort="1.28.0", ort_source=GEMM_C_SOURCE)
GEMM_C_FIXED = Rule("xnnpack.gemm.c", "Gemm C absent, or of rank 1..2 with its first dim one of B's",
                    X + "math/gemm.cc", _gemm_c_fixed, since_ort="1.28.0", ort_source=GEMM_C_SOURCE)


def avgpool(ctx: NodeContext) -> list[str]:
    """nn/average_pool.cc: opset 7+, 4-D with C/H/W known, 2-D kernel not 1x1, no ceil_mode,
    count_include_pad=0, default dilations, auto_pad NOTSET/VALID/SAME_UPPER."""
    s = ctx.shape(0)
    if s is None or len(s) != 4:
        return [f"AveragePool input {fmt_shape(s)}: XNNPACK takes only 2-D pooling (4-D input)"]
    out = []
    if not all(isinstance(d, int) for d in s[1:]):
        out.append(f"AveragePool input {fmt_shape(s)}: XNNPACK needs C, H and W known")
    if int(ctx.attr("ceil_mode", 0)) != 0:
        out.append("AveragePool ceil_mode=1 is not supported by XNNPACK")
    if ctx.attr("auto_pad", "NOTSET") not in PADS_OK:
        out.append(f"AveragePool auto_pad {ctx.attr('auto_pad')} is not supported by XNNPACK")
    k = tuple(ctx.attr("kernel_shape", ()))
    if len(k) != 2 or k == (1, 1):
        out.append(f"AveragePool kernel {list(k)}: XNNPACK takes a 2-D kernel other than 1x1")
    if int(ctx.attr("count_include_pad", 0)) != 0:
        out.append("AveragePool count_include_pad=1 is not supported by XNNPACK (float)")
    if any(int(d) != 1 for d in ctx.attr("dilations", ())):
        out.append("AveragePool dilations are not supported by XNNPACK")
    return out


def resize(ctx: NodeContext) -> list[str]:
    """tensor/resize.cc: opset 10+, 4-D with C known, linear mode, constant scales (N, C scale 1; a
    downscale must divide H and W exactly) or sizes (C kept), no axes/antialias/extrapolation/exclude_outside."""
    s = ctx.shape(0)
    if s is None or len(s) != 4 or _dim(ctx, 0, 1) <= 0:
        return [f"Resize input {fmt_shape(s)}: XNNPACK takes 4-D input with C known"]
    out = []
    mode = ctx.attr("mode", "nearest")
    if mode != "linear":
        out.append(f"Resize mode '{mode}': XNNPACK takes only linear")
    scale_i = 1 if ctx.since == 10 else 2
    scales = ctx.const(scale_i) if ctx.has_input(scale_i) and ctx.is_const(scale_i) else None
    sizes = ctx.const(3) if ctx.since > 10 and ctx.has_input(3) and ctx.is_const(3) else None
    if scales is not None and scales.size == 0:
        scales = None
    if scales is None and sizes is None:
        out.append("Resize needs constant scales or sizes for XNNPACK")
    if scales is not None:
        sc = [float(x) for x in scales.reshape(-1)]
        if len(sc) == 4 and sc[1] != 1.0:
            out.append(f"Resize scales {sc}: XNNPACK keeps the channel scale 1")
        elif len(sc) == 4 and (sc[2] < 1.0 or sc[3] < 1.0):
            for axis, scale in ((2, sc[2]), (3, sc[3])):
                n = ctx.static_dim(0, axis)
                if n is None or not _reciprocal_divides(n, scale):
                    out.append(f"Resize downscale {scale:g} of dim {n}: XNNPACK needs 1/scale to divide it exactly")
                    break
    if sizes is not None and len(sizes.reshape(-1)) == 4 and int(sizes.reshape(-1)[1]) != _dim(ctx, 0, 1):
        out.append("Resize sizes change the channel count: not supported by XNNPACK")
    if int(ctx.attr("antialias", 0)) != 0 or ctx.attr("axes") or ctx.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        out.append("Resize antialias/axes/keep_aspect_ratio_policy are not supported by XNNPACK")
    if float(ctx.attr("extrapolation_value", 0.0)) != 0.0 or int(ctx.attr("exclude_outside", 0)) != 0:
        out.append("Resize extrapolation_value/exclude_outside are not supported by XNNPACK")
    ctm = ctx.attr("coordinate_transformation_mode", "half_pixel") if ctx.since > 10 else "asymmetric"
    o = ctx.out_shape(0)
    pytorch_ok = o is not None and len(o) == 4 and all(isinstance(d, int) and d > 1 for d in o[2:])
    if ctm not in ("asymmetric", "half_pixel", "align_corners") and not (ctm == "pytorch_half_pixel" and pytorch_ok):
        out.append(f"Resize coordinate_transformation_mode '{ctm}' is not supported by XNNPACK")
    return out


def _reciprocal_divides(n: int, scale: float) -> bool:
    # utils::ReciprocalIsAFactorOfN: round(1/scale) * scale == 1 and n divisible by it
    if scale <= 0:
        return False
    r = round(1.0 / scale)
    return r > 0 and abs(r * scale - 1.0) < 1e-6 and n % r == 0


FUSION_SOURCE = (
    "PR #28814 'Fix XNNPACK Clip/Relu fusion when the producer output has other consumers' (fixes #28543/#28544; "
    "opened 2026-06-05, still in review 2026-06-10, so after the 1.27 branch; 1.28.0 is likely, but 1.29.0 "
    "(main of August 2026, read for issue 18) is the first release surely holding it). Before it the fusion "
    "dropped the producer output and session creation failed"
)


def _fanout(ctx: NodeContext) -> str | None:
    src = ctx.input_name(0)
    if src in ctx.graph.graph_outputs or len(ctx.graph.consumers.get(src, ())) > 1:
        return src
    return None


def fusion_base(ctx: NodeContext) -> list[str]:
    prod = ctx.graph.producer.get(ctx.input_name(0))
    if prod is None or ctx.graph.nodes[prod].op_type not in FUSABLE_PRODUCERS:
        return [f"{ctx.node.op_type} is taken by XNNPACK only fused into a preceding Conv/MaxPool/AveragePool"]
    if ctx.node.op_type == "Clip":
        for i in (1, 2):
            if ctx.has_input(i) and not ctx.is_const(i):
                return [f"Clip bound '{ctx.input_name(i)}' is not constant: cannot fuse into XNNPACK"]
    return []


def _fusion_breaks(ctx: NodeContext) -> list[str]:
    out = fusion_base(ctx)
    src = None if out else _fanout(ctx)
    if src is not None:
        out.append(f"fusing {ctx.node.op_type} drops '{src}', which is also used elsewhere: session creation fails in this ONNX Runtime release (#28543)")
    return out


def _fusion_refused(ctx: NodeContext) -> list[str]:
    out = fusion_base(ctx)
    src = None if out else _fanout(ctx)
    if src is not None:
        out.append(f"'{src}' is also used elsewhere (or a graph output): XNNPACK does not fuse {ctx.node.op_type} into its producer")
    return out


FUSION = Rule("xnnpack.fusion", "Clip/Relu fused into a preceding Conv/MaxPool/AveragePool (a shared producer output breaks the session)",
              CHECKER, _fusion_breaks, until_ort="1.29.0", ort_source=FUSION_SOURCE)
FUSION_FIXED = Rule("xnnpack.fusion", "Clip/Relu fused into a preceding Conv/MaxPool/AveragePool whose output is used only by it",
                    CHECKER, _fusion_refused, since_ort="1.29.0", ort_source=FUSION_SOURCE)
