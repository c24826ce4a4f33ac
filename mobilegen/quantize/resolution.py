"""How well 8 bits hold each activation an int8 recipe would quantize, measured on the calibration samples,
and the ops a recipe's :class:`~mobilegen.providers.quantization.ActivationRules` leave float for it.

For every float tensor read or written by an op the recipe quantizes: its range over the samples and the
median of its non-zero magnitudes below the rules' sentinel (the typical value; exact zeros after a Relu
and padded positions are no values to resolve). ``steps``: that median over one step of an 8-bit
per-tensor scale of the range (the quantizer's asymmetric scale: (max(hi, 0) - min(lo, 0)) / 255). A
sentinel tensor reaches the rules' ``sentinel`` in magnitude. Every Div's (and Reciprocal's) divisor is
measured too: a divisor whose smallest magnitude is far under its typical one (:meth:`TensorStats.spread`,
a LayerNorm's std of a near-constant row) has its private chain left float (:func:`divisor_ops`).

The fp32 model runs in onnxruntime (CPU) with the tensors as extra outputs, a few per session
(:data:`_CHUNK`: only those are held), on at most :data:`MAX_SAMPLES` samples. The result is cached as
JSON beside the calibration ranges, so the rounds of a judged recipe measure once.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import onnx

    from mobilegen.providers.quantization import ActivationRules

MAX_SAMPLES = 16  # samples the statistics are taken on (ranges and medians settle well before)
_CHUNK = 128  # extra outputs per session (each run holds them)
_MEDIAN_VALUES = (
    4096  # a strided subsample of at most this many values per tensor and sample gives the median
)
_QDQ = ("QuantizeLinear", "DequantizeLinear")
STEPS = 255  # 8-bit: steps of the per-tensor scale


@dataclass(frozen=True)
class TensorStats:
    name: str
    lo: float
    hi: float
    median: float  # median |x| of non-zero values below the sentinel (mean over samples)

    @property
    def steps(self) -> float:
        """The typical |value| in steps of an 8-bit per-tensor scale of the range (inf for a constant 0)."""
        step = (max(self.hi, 0.0) - min(self.lo, 0.0)) / STEPS
        return self.median / step if step > 0 else math.inf

    def peak(self) -> float:
        return max(abs(self.lo), abs(self.hi))

    def spread(self) -> float:
        """The typical |value| over the smallest one, for a tensor used as a divisor (inf when its range
        reaches 0: some divisor may be 0)."""
        floor = self.lo if self.lo > 0 else -self.hi if self.hi < 0 else 0.0
        return self.median / floor if floor > 0 else math.inf


@dataclass(frozen=True)
class FloatOp:
    """An op the rules leave float: its name, the tensor that decided it, and why."""

    node: str
    tensor: str
    rule: str  # "sentinel", "divisor" or "coarse"
    reason: str


def candidates(model: onnx.ModelProto, op_types: Sequence[str]) -> list[onnx.NodeProto]:
    """The nodes a recipe of ``op_types`` (() = every op but Q/DQ) may quantize."""
    return [n for n in model.graph.node if n.op_type not in _QDQ and (not op_types or n.op_type in op_types)]


def measure(
    model_path: Path,
    op_types: Sequence[str],
    samples: Mapping[str, np.ndarray],
    sentinel: float,
    cache: Path | None = None,
) -> dict[str, TensorStats]:
    """The statistics of every float activation the candidate ops read or write (see the module doc)."""
    import numpy as np
    import onnx
    import onnxruntime as ort

    if cache is not None and cache.is_file():
        return {k: TensorStats(k, *v) for k, v in json.loads(cache.read_text()).items()}
    model = onnx.load_model(str(model_path), load_external_data=False)
    consts = {t.name for t in model.graph.initializer} | {
        o for n in model.graph.node if n.op_type == "Constant" for o in n.output
    }
    names = sorted(
        {x for n in candidates(model, op_types) for x in (*n.input, *n.output) if x and x not in consts}
    )
    names = sorted({*names, *(d for d, _ in divisors(model) if d not in consts)})
    graph_inputs = {i.name for i in model.graph.input}  # the samples themselves: no activation to judge
    names = [x for x in names if x not in graph_inputs]
    del model
    n = min(MAX_SAMPLES, int(next(iter(samples.values())).shape[0]))
    feeds = [{k: v[i] for k, v in samples.items()} for i in range(n)]
    acc: dict[str, list[float]] = {}  # lo, hi, sum of medians, count
    full = onnx.load_model(str(model_path), load_external_data=True)
    kept = list(full.graph.output)
    for start in range(0, len(names), _CHUNK):
        chunk = [x for x in names[start : start + _CHUNK] if x not in {o.name for o in kept}]
        del full.graph.output[:]
        full.graph.output.extend([*kept, *(onnx.helper.make_empty_tensor_value_info(x) for x in chunk)])
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # the tensors as named
        sess = ort.InferenceSession(full.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        outs = [o.name for o in sess.get_outputs()]
        for feed in feeds:
            for name, arr in zip(outs, sess.run(None, feed), strict=True):
                _add(acc, name, np.asarray(arr), sentinel)
        del sess
    stats = {k: TensorStats(k, v[0], v[1], v[2] / v[3]) for k, v in acc.items()}
    if cache is not None:
        cache.write_text(json.dumps({k: [s.lo, s.hi, s.median] for k, s in stats.items()}))
    return stats


def _add(acc: dict[str, list[float]], name: str, a: np.ndarray, sentinel: float) -> None:
    import numpy as np

    if a.dtype.kind != "f" or a.size == 0 or np.isnan(a).all():
        return
    lo, hi = float(np.nanmin(a)), float(np.nanmax(a))
    flat = a.reshape(-1)
    flat = flat[:: max(1, flat.size // _MEDIAN_VALUES)]
    mag = np.abs(flat[np.isfinite(flat)])
    typical = mag[(mag > 0) & (mag < sentinel)]
    med = float(np.median(typical)) if typical.size else 0.0
    prev = acc.get(name)
    acc[name] = (
        [lo, hi, med, 1.0]
        if prev is None
        else [min(prev[0], lo), max(prev[1], hi), prev[2] + med, prev[3] + 1]
    )


def float_ops(
    model_path: Path,
    op_types: Sequence[str],
    stats: Mapping[str, TensorStats],
    rules: ActivationRules,
    min_steps: float = 0.0,
) -> list[FloatOp]:
    """The candidate ops that read or write a sentinel tensor, and (``min_steps`` > 0) those that read or
    write a tensor whose typical value is under ``min_steps`` steps: each with the tensor and the rule."""
    import onnx

    model = onnx.load_model(str(model_path), load_external_data=False)
    out: list[FloatOp] = []
    divided = divisor_ops(model, op_types, stats, rules.divisor_spread) if rules.divisor_spread else {}
    for node in candidates(model, op_types):
        if not node.name:
            continue
        tensors = [stats[x] for x in (*node.input, *node.output) if x in stats]
        sentinel = next((t for t in tensors if t.peak() >= rules.sentinel), None)
        if sentinel is not None:
            out.append(FloatOp(node.name, sentinel.name, "sentinel", rules.sentinel_reason))
            continue
        if node.name in divided:
            d = stats[divided[node.name]]
            out.append(FloatOp(node.name, d.name, "divisor", rules.divisor_reason.format(tensor=d.name, spread=d.spread())))
            continue
        coarse = min(tensors, key=lambda t: t.steps, default=None)
        if coarse is not None and coarse.steps < min_steps:
            out.append(FloatOp(node.name, coarse.name, "coarse", rules.coarse_reason.format(steps=min_steps)))
    return out


# A divisor's private chain is followed back through at most this many producers (a decomposed LayerNorm:
# Sqrt <- Add(+eps) <- ReduceMean <- Mul(x - mean, x - mean)).
_DIVISOR_DEPTH = 8


def divisors(model: onnx.ModelProto) -> list[tuple[str, str]]:
    """(divisor tensor, the Div/Reciprocal node's name) for every division of ``model``'s main graph."""
    out = []
    for n in model.graph.node:
        if n.op_type == "Div" and len(n.input) > 1 and n.input[1]:
            out.append((n.input[1], n.name))
        elif n.op_type == "Reciprocal" and n.input and n.input[0]:
            out.append((n.input[0], n.name))
    return out


def divisor_ops(model: onnx.ModelProto, op_types: Sequence[str], stats: Mapping[str, TensorStats], spread: float) -> dict[str, str]:
    """Candidate op name -> divisor tensor, for the ops that compute a divisor whose :meth:`TensorStats.spread`
    is at least ``spread``: the divisor's private chain, followed back from the division through producers
    while each tensor feeds that chain only (one consumer; a Div's own numerator ends it: the LayerNorm's
    deviation x - mean, read by the square and by the Div, is where the chain starts)."""
    names = {n.name for n in candidates(model, op_types) if n.name}
    producer = {o: n for n in model.graph.node for o in n.output if o}
    readers: dict[str, int] = {}
    for n in model.graph.node:
        for x in n.input:
            readers[x] = readers.get(x, 0) + 1
    out: dict[str, str] = {}
    for tensor, _ in divisors(model):
        t = stats.get(tensor)
        if t is None or t.spread() < spread:
            continue
        todo, seen = [tensor], {tensor}
        while todo and len(seen) <= _DIVISOR_DEPTH:
            p = producer.get(todo.pop())
            if p is None:
                continue
            if p.name in names:
                out.setdefault(p.name, tensor)
            for x in p.input:
                if x and x not in seen and readers.get(x, 0) == 1 and x in producer:
                    seen.add(x)
                    todo.append(x)
    return out


def coarsest(stats: Mapping[str, TensorStats], limit: int = 8) -> list[TensorStats]:
    """The ``limit`` tensors with the fewest steps (sentinels first): what the report names."""
    return sorted(stats.values(), key=lambda t: (0.0 if not math.isfinite(t.peak()) else t.steps, t.name))[
        :limit
    ]
