"""A quantized build's task golden files (``golden/task/``) hold the shipped ``.ort``'s answers, as its
golden vectors do: the quantized ``.onnx`` with every graph optimisation fuses QDQ into host integer
kernels that saturate on x86 without VNNI (here: a Conv whose int8 weights all sit at +127), and its
answers differ from what the device (and the gate) run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from cli_helpers import invoke
from onnx import TensorProto, helper, numpy_helper

from mobilegen.verify.gate import ort_runner
from mobilegen.verify.golden import decode_mgv

pytestmark = pytest.mark.slow  # a quantized build: ~14 s


def _saturating_classifier(path: Path, classes: int = 4) -> Path:
    """x [1,3,8,8] → Conv (positive weights: every int8 weight near +127) → mean over pixels → MatMul → y."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((np.abs(rng.standard_normal((8, 3, 3, 3))) + 1.0).astype(np.float32), "w")
    w2 = numpy_helper.from_array(rng.standard_normal((8, classes)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("ReduceMean", ["c"], ["p"], axes=[2, 3], keepdims=0),
        helper.make_node("MatMul", ["p", "w2"], ["y"]),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, classes])
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w, w2]), opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def test_quantized_task_golden_is_what_the_shipped_ort_answers(tmp_path: Path) -> None:
    model = _saturating_classifier(tmp_path / "cls.onnx")
    labels = tmp_path / "labels.txt"
    labels.write_text("a\nb\nc\nd\n", encoding="utf-8")
    out = tmp_path / "out"
    gate = ["--min-cosine", "0", "--min-top1", "0"]  # random calibration: the gate is not the point here
    r = invoke("android", model, "-o", out, "--xnnpack", "--task", "image-classification", "--labels", labels,
               "--quantize", "int8", "--calibration", "random", *gate)  # fmt: skip
    assert r.exit_code == 0, r.stderr
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    (entry,) = manifest["models"]
    assert entry["quantization"]["shipped"] == "int8"
    shipped = ort_runner(out / entry["ort"]["file"])
    doc = json.loads((out / "golden/task/cases.json").read_text(encoding="utf-8"))
    assert doc["cases"]
    for c in doc["cases"]:
        case = decode_mgv((out / "golden/task" / c["vectors"]).read_bytes())
        (y,) = shipped(dict(case.inputs))
        assert np.array_equal(np.asarray(case.outputs["y"]), y), c["name"]  # the vectors are the .ort's outputs
        ranked = [int(i) for i in np.argsort(-y[0], kind="stable")]
        assert [t["index"] for t in c["top_k"]] == ranked[: len(c["top_k"])], c["name"]
        assert [t["score"] for t in c["top_k"]] == [float(y[0][i]) for i in ranked[: len(c["top_k"])]], c["name"]
