"""CoreML Resize, Split and Slice rules, re-read for issue 18 from onnxruntime/core/providers/coreml/builders/impl/
at the 1.24 branch point (commit 46e8d454a, ``releases.REL_1_24_COMMIT``; unchanged up to 2026-03-07)."""

from __future__ import annotations

import numpy as np

from mobilegen.coverage.common import const_reasons
from mobilegen.coverage.graph import Shape
from mobilegen.coverage.rules import NodeContext, const_ints, fmt_shape
from mobilegen.providers.coreml.facts import DISPLAY_NAME as EP


def _mlp(ctx: NodeContext) -> bool:
    return ctx.target.str_value("coreml_format") == "mlprogram"


def _reciprocal_divides(n: object, scale: float) -> bool:
    # utils::ReciprocalIsAFactorOfN: 1/scale is a whole number that divides n
    if not isinstance(n, int) or scale <= 0:
        return False
    r = round(1.0 / scale)
    return r > 0 and abs(r * scale - 1.0) < 1e-6 and n % r == 0


def _resize_scales(ctx: NodeContext, src: Shape, mlp: bool) -> list[str]:
    v = ctx.const(2)
    if v is None:
        return []
    vals = [float(x) for x in np.asarray(v).reshape(-1)]
    if len(vals) != len(src) or len(src) < 2:
        return []
    if any(x != 1.0 for x in vals[:-2]):
        return ["Resize scales dims other than the last two: CoreML resizes only H and W"]
    sh, sw = vals[-2], vals[-1]
    if sh >= 1.0 and sw >= 1.0:
        if round(sh) != sh or round(sw) != sw:
            return [f"Resize upscale {sh:g}x{sw:g}: CoreML takes whole-number upscales"]
    elif sh <= 1.0 and sw <= 1.0:
        if not mlp:
            return ["Resize downscale: CoreML NeuralNetwork only upsamples"]
        if not (_reciprocal_divides(src[-2], sh) and _reciprocal_divides(src[-1], sw)):
            return [f"Resize downscale {sh:g}x{sw:g} of {fmt_shape(src)}: CoreML needs 1/scale to divide H and W exactly"]
    else:
        return [f"Resize scales {sh:g}x{sw:g}: CoreML does not mix up- and downscaling"]
    return []


def _resize_sizes(ctx: NodeContext, src: Shape, mlp: bool) -> list[str]:
    sizes = const_ints(ctx, 3)
    if sizes is None or len(sizes) != len(src) or len(src) < 2:
        return []
    if any(not isinstance(d, int) or d != x for d, x in zip(src[:-2], sizes[:-2], strict=False)):
        return ["Resize changes dims other than the last two: CoreML resizes only H and W"]
    if mlp:
        return []
    h, w = src[-2], src[-1]
    if not isinstance(h, int) or not isinstance(w, int):
        return [f"Resize sizes on {fmt_shape(src)}: CoreML NeuralNetwork needs H and W known"]
    if sizes[-2] % h or sizes[-1] % w:
        return [f"Resize to {sizes[-2]}x{sizes[-1]} from {h}x{w}: CoreML NeuralNetwork takes whole-number upsampling"]
    return []


def _resize_coords(ctx: NodeContext, mode: str, using_sizes: bool, mlp: bool) -> list[str]:
    coord = ctx.attr("coordinate_transformation_mode", "half_pixel")
    if not mlp:
        return [] if coord == "asymmetric" else [f"Resize with '{coord}': CoreML NeuralNetwork takes only asymmetric"]
    if mode == "nearest":
        return [] if coord == "asymmetric" else [f"Resize nearest with '{coord}': CoreML takes only asymmetric"]
    if coord == "pytorch_half_pixel":
        o = ctx.out_shape(0)
        if o is not None and len(o) >= 2 and all(isinstance(d, int) and d > 1 for d in o[-2:]):
            coord = "half_pixel"  # the same when the output H and W exceed 1
    if coord in ("half_pixel", "align_corners") or (using_sizes and coord == "asymmetric"):
        return []
    return [f"Resize linear with '{coord}': CoreML takes half_pixel, align_corners, or asymmetric with a sizes input"]


def resize(ctx: NodeContext) -> list[str]:
    """ResizeOpBuilder::IsOpSupportedImpl: rank (ML Program 3..5, NeuralNetwork 4), linear/nearest, nearest
    only floor + asymmetric, constant scales/sizes on H and W only; whole upscales, and downscales (ML
    Program) by a factor dividing H and W; the coordinate modes per format and input."""
    mlp, out = _mlp(ctx), []
    src = ctx.shape(0)
    if src is not None and (not 3 <= len(src) <= 5 if mlp else len(src) != 4):
        out.append(f"Resize input rank {len(src)}: CoreML {'ML Program takes 3..5' if mlp else 'NeuralNetwork takes 4-D'}")
    mode = ctx.attr("mode", "nearest")
    if mode not in ("linear", "nearest"):
        out.append(f"Resize mode '{mode}': CoreML takes linear or nearest")
    if mode == "nearest" and ctx.attr("nearest_mode", "round_prefer_floor") != "floor":
        out.append("Resize nearest: CoreML takes only nearest_mode=floor")
    if int(ctx.attr("antialias", 0)) != 0 or int(ctx.attr("exclude_outside", 0)) != 0:
        out.append("Resize antialias/exclude_outside are not supported by CoreML")
    if ctx.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        out.append("Resize keep_aspect_ratio_policy other than stretch is not supported by CoreML")
    using_sizes = ctx.has_input(3)
    i = 3 if using_sizes else 2
    if not ctx.has_input(i) or not ctx.is_const(i):
        out.append(f"Resize {'sizes' if using_sizes else 'scales'} input is not a constant initializer")
    elif src is not None:
        out.extend(_resize_sizes(ctx, src, mlp) if using_sizes else _resize_scales(ctx, src, mlp))
    if mode in ("linear", "nearest"):
        out.extend(_resize_coords(ctx, mode, using_sizes, mlp))
    return out


def split(ctx: NodeContext) -> list[str]:
    """SplitOpBuilder::IsOpSupportedImpl: a 'split' input is constant, has >= 2 non-zero parts summing to a
    static axis dim; without it, opset 18+ needs num_outputs >= 2, equal to the outputs and <= the axis dim."""
    s, axis = ctx.shape(0), int(ctx.attr("axis", 0))
    dim = s[axis] if s is not None and -len(s) <= axis < len(s) else None
    if ctx.has_input(1):
        if not ctx.is_const(1):
            return [f"split input '{ctx.input_name(1)}' is not a constant initializer"]
        splits = const_ints(ctx, 1) or []
        out = []
        if len(splits) < 2:
            out.append("Split into fewer than 2 parts is not supported by CoreML")
        if 0 in splits:
            out.append("Split with a zero-sized part is not supported by CoreML")
        if not isinstance(dim, int):
            out.append(f"Split axis dim '{dim}' is not static: CoreML needs it with a split input")
        elif sum(splits) != dim:
            out.append(f"Split parts {splits} do not sum to the axis dim {dim}")
        return out
    if ctx.since >= 18:
        n = ctx.attr("num_outputs")
        if n is None or int(n) < 2 or int(n) != ctx.n_outputs:
            return [f"Split-{ctx.since} num_outputs {n}: CoreML needs it >= 2 and equal to the outputs"]
        if not isinstance(dim, int) or int(n) > dim:
            return [f"Split-{ctx.since} num_outputs {n} on an axis dim of {dim}: CoreML needs a static dim >= it"]
    return []


def split_pre13_refused(ctx: NodeContext) -> list[str]:
    """Before #28270 the builder starts at opset 13 ('split' was an attribute before)."""
    if ctx.since < 13:
        return [f"Split-{ctx.since} (split as an attribute): CoreML's Split builder starts at opset 13 in this ONNX Runtime release"]
    return split(ctx)


def split_with_attribute(ctx: NodeContext) -> list[str]:
    """From #28270: Split of any opset; a pre-13 'split' attribute follows the input's rules, and an even
    split (no sizes) needs the static axis dim divisible by the outputs."""
    if ctx.since >= 13:
        return split(ctx)
    s, axis = ctx.shape(0), int(ctx.attr("axis", 0))
    dim = s[axis] if s is not None and -len(s) <= axis < len(s) else None
    sizes = [int(x) for x in ctx.attr("split", ())]
    out = []
    if ctx.n_outputs < 2:
        out.append("Split into fewer than 2 parts is not supported by CoreML")
    if not isinstance(dim, int):
        out.append(f"Split axis dim '{dim}' is not static: CoreML needs it")
    elif sizes and (sum(sizes) != dim or any(x <= 0 for x in sizes)):
        out.append(f"Split sizes {sizes} on an axis dim of {dim}: CoreML needs positive sizes summing to it")
    elif not sizes and ctx.n_outputs and dim % ctx.n_outputs:
        out.append(f"even Split of a dim of {dim} into {ctx.n_outputs}: CoreML needs it divisible")
    return out


def _empty_range(dim: int, start: int, end: int, step: int) -> bool:
    # SliceOp::PrepareForComputeHelper's clamping, then the builder's empty-range test
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        return start >= end
    start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return start <= end


def slice_rule(ctx: NodeContext) -> list[str]:
    """SliceOpBuilder: static data, constant starts/ends/axes/steps, no empty range on any axis."""
    out = []
    s = ctx.shape(0)
    if s is not None and not ctx.is_static(0):
        out.append(f"Slice data {fmt_shape(s)} is not static: CoreML Slice needs a static shape")
    out.extend(const_reasons(ctx, ((1, "starts"), (2, "ends"), (3, "axes"), (4, "steps")), EP))
    if out or s is None:
        return out
    starts, ends = const_ints(ctx, 1) or [], const_ints(ctx, 2) or []
    axes = (const_ints(ctx, 3) if ctx.has_input(3) else None) or list(range(len(starts)))
    steps = (const_ints(ctx, 4) if ctx.has_input(4) else None) or [1] * len(starts)
    for st, en, ax, sp in zip(starts, ends, axes, steps, strict=False):
        dim = s[ax + len(s) if ax < 0 else ax]
        if isinstance(dim, int) and sp != 0 and _empty_range(dim, st, en, sp):
            out.append(f"Slice [{st}:{en}:{sp}] on a dim of {dim} is empty: not supported by CoreML")
            break
    return out
