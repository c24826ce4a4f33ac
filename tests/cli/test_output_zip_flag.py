"""-o X.zip: refused, the hint keeps the user's folder and says what --zip writes."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import assert_fails, invoke

ROOT = Path(__file__).resolve().parents[2]
CNN = ROOT / "examples" / "mobilenet_tiny.pt"


def listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


@pytest.mark.parametrize(("name", "zip_flag"), [("out.zip", False), ("a.ZIP", False), ("out.zip", True), ("a.ZIP", True)])
def test_o_zip_hint_keeps_the_users_folder(tmp_path: Path, name: str, zip_flag: bool) -> None:
    target = tmp_path / "qa6" / name
    folder = tmp_path / "qa6" / re.sub(r"\.zip$", "", name, flags=re.IGNORECASE)
    result = invoke("android", CNN, "--input", "image:1x3x64x64", "-o", target, *(["--zip"] if zip_flag else []))
    line = assert_fails(result, 2, f"-o {target}", f"-o {folder} ", f"it writes {folder}/ and {folder}.zip")
    assert ".ZIP" not in line.split(" — ", 1)[1]
    assert listing(tmp_path) == []


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


@pytest.mark.parametrize("command", ["android", "ios", "package"])
def test_o_zip_without_zip_is_refused(tmp_path: Path, command: str) -> None:
    model = image_classifier(tmp_path / "cls.onnx")
    extra = ["--android"] if command == "package" else []
    result = invoke(command, model, *extra, "-o", tmp_path / "new.zip")
    assert_fails(result, 2, "-o", "new.zip names the output folder, not a zip", f"use -o {tmp_path / 'new'} --zip")
    assert listing(tmp_path) == ["cls.onnx"]
