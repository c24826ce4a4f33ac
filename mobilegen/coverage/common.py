"""Predicates shared by several EP tables (general rules and small helpers)."""

from __future__ import annotations

from collections.abc import Sequence

from mobilegen.coverage.rules import NodeContext, dtype_name, fmt_shape


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
