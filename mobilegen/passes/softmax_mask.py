"""``softmax-mask``: a -inf attention mask whose NaN rows are guarded -> a finite mask and a row factor.

The TorchScript exporter writes scaled-dot-product attention with a boolean mask as
``Where(IsNaN(p), 0, p)`` with ``p = Softmax(s + Where(c, 0, -inf))``
(torch/onnx/_internal/torchscript_exporter/symbolic_opset14.py in torch 2.13):
a fully masked row is all ``-inf``, its Softmax 0/0, and the guard makes it 0. For a provider with no
IsNaN (or no Where) builder every attention block of a traced BERT leaves it for the CPU and comes back
(the declaring providers' ``fix_reasons`` say which); ``nan-guard`` cannot remove this guard: here it
does fire.

The rewrite keeps the guard's meaning with Exp, ReduceMax and Mul::

    m' = Where(c, 0, finfo.min)                   (the -inf constant -> float32's lowest finite value)
    y  = Softmax(s + m') * Exp(ReduceMax(m', axis, keepdims=1))

Exact for finite scores ``s`` (checked as ``nan-guard`` checks them) whose magnitude stays far below
3.4e38: in a row with an unmasked position the Softmax's maximum is an unmasked score, so every masked
``exp(s + finfo.min - max)`` is exactly 0 as ``exp(-inf)`` was, the unmasked terms are the same, and the
factor is ``exp(0) = 1``; in a fully masked row the factor is ``exp(finfo.min) = 0``, as the guard made
it. The mask's other branch must be 0 (else the factor would not be 1) and the guard's value 0.

What is left, ``Where(c, 0, finfo.min)`` on a boolean mask, is the form torch.export writes, which
``bool-mask`` turns into float arithmetic. A provider without Where or ReduceMax builders gains too:
those read only the mask and sit ahead of the first attention block (onnxruntime shares them between the
layers), so the blocks are no longer cut. Opset 13 and later (Softmax over one axis). Where a provider
computes in float16, ``finfo.min`` overflows to -inf, as the mask torch.export writes itself does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from mobilegen.passes.base import GraphPass
from mobilegen.passes.graph_util import (
    Constants,
    GraphIndex,
    Names,
    Rewrite,
    TensorType,
    attr,
    is_op,
    opset,
    tensor_types,
)
from mobilegen.passes.nan_guard import finite_check

FINFO_MIN = float(np.finfo(np.float32).min)


@dataclass(frozen=True)
class _Match:
    mask: onnx.NodeProto  # Where(c, 0, -inf)
    add: onnx.NodeProto  # s + m
    softmax: onnx.NodeProto
    isnan: onnx.NodeProto
    guard: onnx.NodeProto  # Where(IsNaN(p), 0, p)
    axis: int  # the Softmax's axis, counted from the end of the mask (negative)


def _const_all(index: GraphIndex, name: str, value: float) -> bool:
    v = index.const(name)
    return v is not None and v.dtype == np.float32 and v.size >= 1 and bool((v == value).all())


def _rank(types: dict[str, TensorType], name: str) -> int | None:
    t = types.get(name)
    return None if t is None or t.shape is None else len(t.shape)


def _match(guard: onnx.NodeProto, index: GraphIndex, types: dict[str, TensorType], finite: Callable[[str], bool]) -> _Match | None:
    if len(guard.input) != 3 or not guard.output or not guard.output[0]:
        return None
    cond, zero, p = guard.input
    isnan = index.producer.get(cond)
    softmax = index.producer.get(p)
    if isnan is None or not is_op(isnan, "IsNaN") or isnan.input[0] != p or softmax is None or not is_op(softmax, "Softmax"):
        return None
    value = index.const(zero)
    if value is None or value.size != 1 or not _const_all(index, zero, 0.0):
        return None
    if not index.internal(guard.output[0]) or not index.internal(p):
        return None
    add = index.producer.get(softmax.input[0])
    if add is None or not is_op(add, "Add") or len(add.input) != 2 or not index.internal(softmax.input[0]):
        return None
    if len(index.uses(softmax.input[0])) != 1:
        return None
    for k in (0, 1):
        mask = index.producer.get(add.input[k])
        if mask is None or not is_op(mask, "Where") or len(mask.input) != 3:
            continue
        if not _const_all(index, mask.input[1], 0.0) or not _const_all(index, mask.input[2], -np.inf):
            continue
        if not finite(add.input[1 - k]):
            continue
        out_rank, mask_rank = _rank(types, softmax.input[0]), _rank(types, mask.output[0])
        if out_rank is None or mask_rank is None:
            continue
        axis = int(attr(softmax, "axis", -1))  # type: ignore[call-overload]
        if not -out_rank <= axis < out_rank:
            continue
        return _Match(mask, add, softmax, isnan, guard, axis - out_rank if axis >= 0 else axis)
    return None


def apply(model: onnx.ModelProto) -> int:
    graph = model.graph
    if opset(model) < 13 or not any(is_op(n, "IsNaN") for n in graph.node):
        return 0
    index = GraphIndex(graph)
    types = tensor_types(model)
    finite = finite_check(model, index)
    matches = [m for g in graph.node if is_op(g, "Where") and (m := _match(g, index, types, finite)) is not None]
    if not matches:
        return 0
    names = Names(graph)
    consts = Constants(graph, names, "softmax_mask")
    edit = Rewrite(graph)
    version = opset(model)
    # the finite mask per -inf mask: in place when every reader is a matched Add, else next to it
    matched_adds: dict[str, set[int]] = {}
    for m in matches:
        matched_adds.setdefault(m.mask.output[0], set()).add(id(m.add))
    finite_mask: dict[str, str] = {}
    for out, adds in matched_adds.items():
        mask = index.producer[out]
        if edit.claimed([mask]):
            continue
        alone = index.internal(out) and all(id(u) in adds for u in index.uses(out))
        new = onnx.NodeProto()
        new.CopyFrom(mask)
        new.input[2] = consts.add(np.full(index.const(mask.input[2]).shape, FINFO_MIN, np.float32), "finfo_min")  # type: ignore[union-attr]
        new.name = names.new(f"{mask.name or out}/finite")
        if alone:
            finite_mask[out] = out
            edit.replace([mask], [new])
        else:
            finite_mask[out] = names.new(f"{out}/finite")
            new.output[0] = finite_mask[out]
            keep = onnx.NodeProto()
            keep.CopyFrom(mask)
            edit.replace([mask], [keep, new])
    factors: dict[tuple[str, int], str] = {}
    for m in matches:
        out = m.mask.output[0]
        if out not in finite_mask or edit.claimed([m.add, m.isnan, m.guard]):
            continue
        fm = finite_mask[out]
        base = m.guard.name or m.guard.output[0]
        nodes: list[onnx.NodeProto] = []
        if fm != out:
            add = onnx.NodeProto()
            add.CopyFrom(m.add)
            add.input[list(m.add.input).index(out)] = fm
            edit.replace([m.add], [add])
        factor = factors.get((fm, m.axis))
        if factor is None:
            mask_rank = _rank(types, out) or 0
            t = types.get(out)
            dim = t.shape[m.axis] if t is not None and t.shape is not None and -mask_rank <= m.axis else None
            src = fm
            if -mask_rank <= m.axis and dim != 1:  # the mask varies along the axis: its maximum per row
                src = names.new(f"{base}/row_max")
                if version >= 18:
                    nodes.append(helper.make_node("ReduceMax", [fm, consts.ints([m.axis], "axes")], [src], name=names.new(f"{base}/ReduceMax"), keepdims=1))
                else:
                    nodes.append(helper.make_node("ReduceMax", [fm], [src], name=names.new(f"{base}/ReduceMax"), axes=[m.axis], keepdims=1))
            factor = names.new(f"{base}/row_taken")
            nodes.append(helper.make_node("Exp", [src], [factor], name=names.new(f"{base}/Exp")))
            factors[(fm, m.axis)] = factor
        keep_isnan = not (index.internal(m.isnan.output[0]) and all(u is m.guard for u in index.uses(m.isnan.output[0])))
        nodes.append(helper.make_node("Mul", [m.softmax.output[0], factor], [m.guard.output[0]], name=names.new(f"{base}/Mul")))
        edit.replace([m.guard] if keep_isnan else [m.isnan, m.guard], nodes)
    return edit.commit()


PASS = GraphPass(
    name="softmax-mask",
    summary="Where(IsNaN(p), 0, p), p = Softmax(s + Where(c, 0, -inf)) -> Softmax(s + Where(c, 0, finfo.min)) * Exp(ReduceMax(mask))",
    apply=apply,
)
