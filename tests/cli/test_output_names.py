"""--output-name: honoured without --top-k, refused with it (the task names the outputs), and no hint to set it when the task does."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import assert_fails, invoke

from mobilegen.artifacts import LoadedModel, OnnxModel
from mobilegen.options import BuildOptions
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.tasks.spec import TaskSpec


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


def listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


_IO = IOSpec(inputs=(TensorSpec("x", "float32", (1, 3, 8, 8)),), outputs=(TensorSpec("linear", "float32", (1, 5)),))


def test_no_output_name_hint_when_the_task_names_the_outputs() -> None:
    from mobilegen.pipeline import export_notices

    loaded = LoadedModel(source=Path("m.pt"), kind="pickle", sha256="0" * 64)
    exported = OnnxModel(path=Path("m.onnx"), io=_IO, opset=17, exporter="dynamo")
    base = BuildOptions(model=Path("m.pt"), out=Path("out"))
    codes = lambda opts: [n.code for n in export_notices(loaded, exported, opts)]  # noqa: E731
    top_k = replace(base, task=TaskSpec(kind="image", top_k=3))
    assert codes(top_k) == []  # the shipped outputs are scores/indices: the exporter's name is nowhere
    # Without --top-k the model's output keeps the exporter's name, which --output-name would set: hinted.
    assert codes(replace(base, task=TaskSpec(kind="image", softmax=True))) == ["output-names"]
    assert codes(base) == ["output-names"]


@pytest.mark.parametrize("command", ["android", "ios"])
def test_output_name_with_top_k_is_refused(tmp_path: Path, command: str) -> None:
    model = image_classifier(tmp_path / "cls.onnx")
    out = tmp_path / "out"
    result = invoke(command, model, "-o", out, "--task", "image", "--softmax", "--top-k", "2", "--output-name", "logits")
    line = assert_fails(result, 2, "--output-name has no effect with --top-k: the task names its outputs scores and indices")
    assert " — drop --output-name" in line
    assert listing(tmp_path) == ["cls.onnx"]


def test_output_name_without_top_k_is_honoured(tmp_path: Path) -> None:
    model = image_classifier(tmp_path / "cls.onnx")
    out = tmp_path / "out"
    result = invoke("android", model, "-o", out, "--task", "image", "--scale", "1/255", "--softmax", "--output-name", "probs", "--json")
    assert result.exit_code == 0, result.stderr
    outputs = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["io"]["outputs"]
    assert [o["name"] for o in outputs] == ["probs"]
