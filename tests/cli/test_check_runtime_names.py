"""check names the onnxruntime release each provider was analysed against."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from cli_helpers import invoke


def image_classifier(path: Path, classes: int = 3) -> Path:
    """x [1,3,8,8] → mean over pixels → MatMul → y [1,classes]."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((3, classes)).astype(np.float32), "w")
    nodes = [helper.make_node("ReduceMean", ["x"], ["p"], axes=[2, 3], keepdims=0), helper.make_node("MatMul", ["p", "w"], ["y"])]
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, classes])], [w]
    )
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def test_check_names_the_ort_release_per_provider(tmp_path: Path) -> None:
    model = image_classifier(tmp_path / "cls.onnx")
    result = invoke("check", model, "--ep", "nnapi", "--ep", "xnnpack", "--ort-version", "1.24.2")
    assert result.exit_code == 0, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ", verdict " in ln and not ln.startswith(" ")]  # human output: stderr
    assert len(lines) == 2 and all(ln.endswith("(rules of onnxruntime 1.24.2)") for ln in lines), lines
