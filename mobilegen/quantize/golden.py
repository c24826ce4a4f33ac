"""A quantized model's golden vectors and the tolerances they are checked with.

A quantized model reproduces its own outputs (onnxruntime CPU, its ``.ort``) on the golden inputs, not
the fp32 reference's. Its folder is ``golden/`` when it is the package's only model, else
``golden/<target>/`` beside another target's model; either way the folder holds ``golden.npz``,
``golden.mgv`` and the ``tolerances.json`` that goes with them: the build's, with ``atol`` widened to the
worst error the accuracy gate measured against fp32 and to two steps of the quantized output (another CPU's,
or a phone's, integer kernels round differently from this machine's: one rounding difference in the last
QuantizeLinear moves an output by a whole step of its DequantizeLinear, :func:`output_step`). The same (atol, rtol) is what ``verify`` re-runs the vectors with
(the manifest's ``models[].golden``) and what the generated device tests compile in
(``ProjectSpec.atol``/``rtol``, :func:`tolerances_of`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen.artifacts import JSONValue, ShippedModel

if TYPE_CHECKING:
    import onnx

    from mobilegen.quantize.records import QuantizationRecord
    from mobilegen.verify import VerifyOptions

GOLDEN_DIR = "golden"
GOLDEN_NPZ_NAME = "golden.npz"
GOLDEN_MGV_NAME = "golden.mgv"
GOLDEN_TOLERANCES_NAME = "tolerances.json"
OUTPUT_STEPS = 2  # a quantized model's golden atol covers this many steps of its outputs' last DequantizeLinear

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
    widened for a quantized model to its ``golden_atol``: the worst error its gate measured against fp32,
    and at least ``OUTPUT_STEPS`` steps of its quantized outputs (another CPU's, or a phone's, integer
    kernels round differently from this machine's)."""
    record: QuantizationRecord | None = getattr(model, "quantization", None)
    if record is None or not record.quantized:
        return atol, rtol
    return max(atol, record.golden_atol), rtol


_QUANTIZED_AS = {
    "int8": "int8-quantized (QDQ), and a phone's integer kernels may round an output a quantization step away from this machine's",
    "dynamic": "dynamically quantized (int8 weights, activations quantized as it runs), and a phone's integer kernels may round differently from this machine's",
    "fp16": "float16 (`--quantize fp16`), and a phone's float16 arithmetic may round differently from this machine's",
}


def tolerance_reason(mode: str) -> str:
    """Why a quantized model's device tests assert the tolerance they do (one README sentence, no period):
    not the float32 reasoning of an fp32 model's."""
    what = _QUANTIZED_AS.get(mode, f"quantized ({mode})")
    steps = f", and at least {OUTPUT_STEPS} steps of its quantized outputs" if mode == "int8" else ""
    return f"the model is {what}, so atol is the quantized model's own: the worst error its accuracy gate measured against float32{steps}"


def output_step(model: onnx.ModelProto) -> float:
    """The largest quantization step of the graph's outputs: the largest scale of a DequantizeLinear that
    produces an output (directly, or through ops that only move its values: reshapes, TopK, Concat, ...);
    0.0 when no output comes from one (fp16, dynamic, a float op after the last DequantizeLinear)."""
    from onnx import numpy_helper

    producer = {out: node for node in model.graph.node for out in node.output if out}
    consts = {t.name: t for t in model.graph.initializer}
    consts |= {n.output[0]: a.t for n in model.graph.node if n.op_type == "Constant" for a in n.attribute if a.name == "value"}
    step, seen = 0.0, set()
    todo = [o.name for o in model.graph.output]
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
    return step


def tolerances_record(model: ShippedModel, verify: VerifyOptions) -> dict[str, JSONValue]:
    """A quantized model's ``tolerances.json``: the build's record (``golden/tolerances.json`` of the
    reference) with its own (atol, rtol), naming the model and the mode they are for."""
    atol, rtol = tolerances_of(model, verify.atol, verify.rtol)
    record = model.quantization
    mode = record.shipped if record is not None else None
    step = record.output_step if record is not None else 0.0
    return verify.record() | {"atol": atol, "rtol": rtol, "model": model.ort_file, "quantization": mode, "output_step": step}


def write_golden(models: Sequence[ShippedModel], root: Path, verify: VerifyOptions) -> None:
    """Each quantized model's own outputs (onnxruntime CPU, its ``.ort``) on the golden inputs, and the
    tolerances they are checked with, in its golden folder."""
    from mobilegen.golden import GoldenCase, encode_mgv, read_npz, write_npz
    from mobilegen.verify import ort_runner

    ref = read_npz(root / GOLDEN_DIR / GOLDEN_NPZ_NAME)  # the first case's inputs and the reference's outputs
    for m in models:
        record = getattr(m, "quantization", None)
        if record is None or not record.quantized:
            continue
        got = ort_runner(m.converted().path)(dict(ref.inputs))
        case = GoldenCase(dict(ref.inputs), dict(zip(ref.outputs, got, strict=True)))
        folder = root / golden_folder(m)
        folder.mkdir(parents=True, exist_ok=True)
        write_npz(folder / GOLDEN_NPZ_NAME, case)
        (folder / GOLDEN_MGV_NAME).write_bytes(encode_mgv(case))
        (folder / GOLDEN_TOLERANCES_NAME).write_text(json.dumps(tolerances_record(m, verify), indent=2) + "\n", encoding="utf-8")
