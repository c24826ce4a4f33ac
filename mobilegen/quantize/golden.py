"""A quantized model's golden vectors and the tolerances they are checked with.

A quantized model reproduces its own outputs (onnxruntime CPU, its ``.ort``) on the golden inputs, not
the fp32 reference's: every case, ``golden.npz`` (with ``golden.mgv``, the device case) and each
``golden_case<i>.npz`` after it. Its folder is ``golden/`` when it is the package's only model, else
``golden/<target>/`` beside another target's model; either way the folder holds those cases and the
``tolerances.json`` that goes with them.

Since the golden outputs are the model's own, their tolerance covers only what differs between this
machine's kernels and a phone's (x86 vs ARM integer kernels, fused vs unfused QDQ units, float16
arithmetic), never the quantization error the accuracy gate measured against fp32
(:func:`derive_tolerance`): per float output the largest of the build's atol, :data:`OUTPUT_STEPS` steps of
the DequantizeLinear that produces it (one rounding difference in the last QuantizeLinear moves it a whole
step, :func:`output_steps`) and :data:`KERNEL_RTOL` of its largest golden magnitude; and never more than
:data:`MAX_FRACTION` of the smallest case's largest golden magnitude of any float output: the
degenerate-reference rule of the gate (an output within atol of zero everywhere proves nothing) applied to
the tolerance, so an all-zero output always fails. Integer and bool outputs are compared exactly. The same
(atol, rtol) is what ``verify`` re-runs the vectors with (the manifest's ``models[].golden``) and what the
generated device tests compile in (``ProjectSpec.atol``/``rtol``, :func:`tolerances_of`); how it was derived
is in ``tolerances.json`` and the manifest's ``models[].quantization.golden_tolerance``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen.artifacts import JSONValue, ShippedModel
from mobilegen.targets.tolerances import KERNEL_RTOL, MAX_FRACTION, OUTPUT_STEPS

if TYPE_CHECKING:
    import numpy as np
    import onnx

    from mobilegen.quantize.records import QuantizationRecord
    from mobilegen.verify.gate import VerifyOptions

GOLDEN_DIR = "golden"
GOLDEN_NPZ_NAME = "golden.npz"
GOLDEN_MGV_NAME = "golden.mgv"
GOLDEN_TOLERANCES_NAME = "tolerances.json"

# ops whose outputs are some of their data input's values, unchanged: a DequantizeLinear's step survives them
# (input 0 only for those whose other inputs are shapes, indices or axes; every input for Concat)
_VALUE_PRESERVING = frozenset(
    {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Expand", "Slice", "Gather", "Tile", "Split",
     "DepthToSpace", "SpaceToDepth", "TopK", "MaxPool", "GlobalMaxPool", "ReduceMax", "ReduceMin"}
)  # fmt: skip


def golden_folder(model: ShippedModel) -> str:
    """Where a model's golden vectors are: ``golden`` (the reference's, or a quantized model's own when it
    is the package's only one), or ``golden/<target>`` for a quantized model next to another target's."""
    return getattr(model, "golden", GOLDEN_DIR) or GOLDEN_DIR


def tolerances_of(model: ShippedModel, atol: float, rtol: float) -> tuple[float, float]:
    """(atol, rtol) a model's golden vectors are checked with (package verify, device tests): the build's,
    or for a quantized model its own (:func:`derive_tolerance`, recorded as ``golden_atol``)."""
    record: QuantizationRecord | None = getattr(model, "quantization", None)
    if record is None or not record.quantized:
        return atol, rtol
    if record.golden_tolerance:  # derived from its own golden outputs: may be below the build's atol (the cap)
        return record.golden_atol, rtol
    return max(atol, record.golden_atol), rtol


def output_steps(model: onnx.ModelProto) -> dict[str, float]:
    """Each graph output's quantization step: the largest scale of a DequantizeLinear that produces it
    (directly, or through ops that only move its values: reshapes, TopK, Concat, ...); 0.0 when none does
    (fp16, dynamic, a float op after the last DequantizeLinear)."""
    from onnx import numpy_helper

    producer = {out: node for node in model.graph.node for out in node.output if out}
    consts = {t.name: t for t in model.graph.initializer}
    consts |= {n.output[0]: a.t for n in model.graph.node if n.op_type == "Constant" for a in n.attribute if a.name == "value"}
    steps: dict[str, float] = {}
    for output in model.graph.output:
        step, seen = 0.0, set()
        todo = [output.name]
        while todo:
            name = todo.pop()
            node = producer.get(name)
            if name in seen or node is None:
                continue
            seen.add(name)
            if node.op_type == "DequantizeLinear" and len(node.input) > 1 and node.input[1] in consts:
                scale = numpy_helper.to_array(consts[node.input[1]])
                if scale.size:
                    step = max(step, float(abs(scale.astype("float64")).max()))
            elif node.op_type == "Concat":
                todo += [i for i in node.input if i]
            elif node.op_type in _VALUE_PRESERVING and node.input:
                todo.append(node.input[0])
        steps[output.name] = step
    return steps


def output_step(model: onnx.ModelProto) -> float:
    """The largest quantization step of the graph's outputs (:func:`output_steps`); 0.0 when none has one."""
    return max(output_steps(model).values(), default=0.0)


@dataclass(frozen=True)
class OutputTolerance:
    """How one float output's share of a quantized model's golden atol was derived."""

    output: str
    magnitude: float  # largest finite |golden value| over every case
    smallest_case: float  # the smallest of the cases' largest |golden value| (what an all-zero output misses by)
    steps: float  # OUTPUT_STEPS x the scale of the DequantizeLinear producing it (0: no quantized output)
    relative: float  # KERNEL_RTOL x magnitude
    wanted: float  # max(build atol, steps, relative)
    cap: float  # MAX_FRACTION x smallest_case

    def to_dict(self) -> dict[str, JSONValue]:
        return {
            "output": self.output,
            "max_abs_golden": self.magnitude,
            "smallest_case_max_abs_golden": self.smallest_case,
            "output_steps": self.steps,
            "relative": self.relative,
            "wanted": self.wanted,
            "cap": self.cap,
        }


@dataclass(frozen=True)
class GoldenTolerance:
    """A quantized model's golden (atol, rtol) and how atol was derived from its own golden outputs."""

    atol: float
    rtol: float
    build_atol: float
    outputs: tuple[OutputTolerance, ...]  # float outputs only: integer and bool ones are compared exactly
    exact: tuple[str, ...]  # the integer and bool outputs

    @property
    def capped(self) -> bool:
        return any(o.wanted > self.atol for o in self.outputs)

    def how(self) -> str:
        """One sentence: the rule and what decided the number."""
        rule = (
            f"atol = the largest over float outputs of max(build atol {self.build_atol:g}, {OUTPUT_STEPS} output quantization steps, "
            f"{KERNEL_RTOL:g} x largest |golden value|), at most {MAX_FRACTION:g} x the smallest case's largest |golden value| of any "
            "float output (so an all-zero output fails); the golden values are the quantized model's own outputs, so this "
            "covers kernel differences (x86 vs ARM, fused vs unfused), not quantization error"
        )
        if not self.outputs:
            return "no float outputs: every output is compared exactly; atol is the build's"
        decided = max(self.outputs, key=lambda o: o.wanted)
        if self.capped:
            low = min(self.outputs, key=lambda o: o.cap)
            return f"{rule}; capped by output {low.output!r} at {low.cap:.3g}"
        parts = {"build atol": self.build_atol, "output steps": decided.steps, "relative": decided.relative}
        why = max(parts, key=lambda k: parts[k])
        return f"{rule}; decided by output {decided.output!r} ({why})"

    def to_dict(self) -> dict[str, JSONValue]:
        return {
            "atol": self.atol,
            "rtol": self.rtol,
            "how": self.how(),
            "build_atol": self.build_atol,
            "output_steps": OUTPUT_STEPS,
            "kernel_rtol": KERNEL_RTOL,
            "max_fraction": MAX_FRACTION,
            "capped": self.capped,
            "outputs": [o.to_dict() for o in self.outputs],
            "exact": list(self.exact),
        }


def derive_tolerance(cases: Sequence[Mapping[str, np.ndarray]], steps: Mapping[str, float], atol: float, rtol: float) -> GoldenTolerance:
    """A quantized model's golden tolerance from its own golden outputs (``cases``: every case's outputs by
    name) and each output's quantization step (:func:`output_steps`); ``atol``/``rtol``: the build's."""
    import numpy as np

    per: list[OutputTolerance] = []
    exact: list[str] = []
    names = list(dict.fromkeys(name for case in cases for name in case))
    for name in names:
        values = [np.asarray(case[name]) for case in cases if name in case]
        if not all(np.issubdtype(v.dtype, np.floating) for v in values):
            exact.append(name)
            continue
        peaks = [float(np.abs(v[np.isfinite(v)]).max(initial=0.0)) for v in values]
        if not peaks or max(peaks) == 0.0:
            continue  # all zero: the gate's degenerate rule already spoke about it; no magnitude to scale by
        magnitude, smallest = max(peaks), min(peaks)
        step = OUTPUT_STEPS * float(steps.get(name, 0.0))
        relative = KERNEL_RTOL * magnitude
        per.append(OutputTolerance(name, magnitude, smallest, step, relative, max(atol, step, relative), MAX_FRACTION * smallest))
    if not per:
        return GoldenTolerance(atol, rtol, atol, (), tuple(exact))
    wanted = max(o.wanted for o in per)
    cap = min((o.cap for o in per if o.cap > 0.0), default=wanted)
    chosen = min(wanted, cap)
    if not math.isfinite(chosen):
        chosen = atol
    return GoldenTolerance(chosen, rtol, atol, tuple(per), tuple(exact))


def tolerances_record(model: ShippedModel, verify: VerifyOptions) -> dict[str, JSONValue]:
    """A quantized model's ``tolerances.json``: the build's record (``golden/tolerances.json`` of the
    reference) with its own (atol, rtol), naming the model and the mode they are for, and how atol was derived."""
    atol, rtol = tolerances_of(model, verify.atol, verify.rtol)
    record = model.quantization
    mode = record.shipped if record is not None else None
    step = record.output_step if record is not None else 0.0
    derived = record.golden_tolerance if record is not None else {}
    return verify.record() | {"atol": atol, "rtol": rtol, "model": model.ort_file, "quantization": mode, "output_step": step, "derivation": derived}


def write_golden(models: Sequence[ShippedModel], root: Path, verify: VerifyOptions, cases: Sequence[Path]) -> tuple[ShippedModel, ...]:
    """Each quantized model's own outputs (onnxruntime CPU, its ``.ort``) on every golden case's inputs
    (``cases``: the reference's case files, ``golden.npz`` first), under the same names in its golden
    folder, with the tolerance derived from them (:func:`derive_tolerance`); returns the models with that
    tolerance in their records."""
    from mobilegen.verify.gate import ort_runner
    from mobilegen.verify.golden import GoldenCase, encode_mgv, read_npz, write_npz

    if not cases:
        cases = [root / GOLDEN_DIR / GOLDEN_NPZ_NAME]
    refs = [(p.name, read_npz(p)) for p in cases]
    out: list[ShippedModel] = []
    for m in models:
        record = getattr(m, "quantization", None)
        if record is None or not record.quantized:
            out.append(m)
            continue
        run = ort_runner(m.converted().path)
        folder = root / golden_folder(m)
        folder.mkdir(parents=True, exist_ok=True)
        own = []
        for i, (name, ref) in enumerate(refs):
            case = GoldenCase(dict(ref.inputs), dict(zip(ref.outputs, run(dict(ref.inputs)), strict=True)))
            write_npz(folder / name, case)
            if i == 0:
                (folder / GOLDEN_MGV_NAME).write_bytes(encode_mgv(case))
            own.append(case.outputs)
        tol = derive_tolerance(own, output_steps(_proto(m)), verify.atol, verify.rtol)
        m = replace(m, quantization=replace(record, golden_atol=tol.atol, golden_tolerance=tol.to_dict()))
        (folder / GOLDEN_TOLERANCES_NAME).write_text(json.dumps(tolerances_record(m, verify), indent=2) + "\n", encoding="utf-8")
        out.append(m)
    return tuple(out)


def _proto(m: ShippedModel) -> onnx.ModelProto:
    if m.onnx.proto is not None:
        return m.onnx.proto
    import onnx

    return onnx.load_model(str(m.onnx.path), load_external_data=False)
