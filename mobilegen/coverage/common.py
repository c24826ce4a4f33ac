"""Predicates shared by several EP tables (general rules and small helpers)."""

from __future__ import annotations

from collections.abc import Sequence

from mobilegen.coverage.rules import F32, NodeContext, dtype_name, fmt_shape


def unknown_shape_reasons(ctx: NodeContext, ep: str) -> list[str]:
    out = []
    for i, name in enumerate(ctx.node.inputs):
        if name and ctx.shape(i) is None:
            out.append(f"shape of input '{name}' is unknown: {ep} needs every input shape")
    return out


def symbolic_dim_reasons(ctx: NodeContext, what: str) -> list[str]:
    out = []
    for i, name in enumerate(ctx.node.inputs):
        s = ctx.shape(i)
        if not name or s is None:
            continue
        for d in s:
            if not isinstance(d, int):
                label = f"'{d}'" if isinstance(d, str) else "(unnamed)"
                out.append(f"dim {label} of input '{name}' is symbolic: {what}")
                break
    return out


def dtype_reason(
    ctx: NodeContext, i: int, allowed: Sequence[int], ep: str, what: str = "input"
) -> str | None:
    if not ctx.has_input(i):
        return None
    dt = ctx.dtype(i)
    if dt in allowed:
        return None
    names = "/".join(dtype_name(a) for a in allowed)
    return f"{what} '{ctx.input_name(i)}' is {dtype_name(dt)}: {ep} {ctx.node.op_type} takes {names}"


def opset_reason(ctx: NodeContext, default_max: int, ep: str) -> str | None:
    """The node's since_version outside its builder's range (up to ``since_max``, else ``default_max``)."""
    spec = ctx.spec
    hi = spec.since_max or default_max
    v = ctx.node.since_version
    if v is None or spec.since_min <= v <= hi:
        return None
    return f"{ctx.node.op_type} opset {v} (node since_version): {ep} takes {spec.since_min}..{hi}"


def input0_dtype_reason(ctx: NodeContext, ep: str, default: Sequence[int] = (F32,)) -> str | None:
    """Input 0's element type outside the op's ``input0_dtypes`` (``default`` when the op names none)."""
    return dtype_reason(ctx, 0, ctx.spec.input0_dtypes or default, ep)


def rank_reason(ctx: NodeContext, i: int, lo: int, hi: int, ep: str) -> str | None:
    r = ctx.rank(i)
    if r is None or lo <= r <= hi:
        return None
    want = f"rank {lo}" if lo == hi else f"rank {lo}..{hi}"
    return f"input '{ctx.input_name(i)}' has rank {r} {fmt_shape(ctx.shape(i))}: {ep} {ctx.node.op_type} needs {want}"


def const_reason(ctx: NodeContext, i: int, what: str, ep: str) -> str | None:
    if not ctx.has_input(i) or ctx.is_const(i):
        return None
    return f"{what} input '{ctx.input_name(i)}' is not a constant initializer: {ep} needs it constant"


def const_reasons(ctx: NodeContext, inputs: Sequence[tuple[int, str]], ep: str) -> list[str]:
    """``const_reason`` for each ``(input index, what)``, in order: the inputs given but not constant."""
    return [r for i, what in inputs if (r := const_reason(ctx, i, what, ep))]


def both_float32_reason(ctx: NodeContext, ep: str) -> str | None:
    """Binary ops (Pow) whose two inputs must both be float32."""
    a, b = ctx.dtype(0), ctx.dtype(1)
    if a == F32 and b == F32:
        return None
    return f"{ctx.node.op_type} inputs are {dtype_name(a)} and {dtype_name(b)}: {ep} {ctx.node.op_type} takes float32 for both"


def two_inputs_reason(ctx: NodeContext, ep: str) -> str | None:
    """Variadic ops (Max/Min) the EP takes only with exactly two inputs."""
    n = sum(1 for t in ctx.node.inputs if t)
    return None if n == 2 else f"{ctx.node.op_type} with {n} inputs: {ep} takes exactly 2"
