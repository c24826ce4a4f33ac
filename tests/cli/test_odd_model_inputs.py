"""Odd model inputs (found by tests/cli/test_fuzz.py, issue 9): each builds its bad input itself and
checks the exit code, the one-line message and that nothing is left behind."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from cli_helpers import assert_fails, invoke, private_tmpdir
from model_files import LinearRelu
from onnx import TensorProto, helper


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from private_tmpdir(tmp_path, monkeypatch, ignore=frozenset({".ses"}))  # .ses: onnxruntime's telemetry file


# ---- a .pt2 whose sample inputs do not fit its program: torch cannot rebuild the module ------------


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pt2") / "net.pt2"
    torch.manual_seed(0)
    torch.export.save(torch.export.export(LinearRelu().eval(), (torch.randn(2, 4),)), str(path))
    return path


def with_sample_inputs(src: Path, dst: Path, value: object) -> Path:
    buf = io.BytesIO()
    torch.save(value, buf)
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            zout.writestr(name, buf.getvalue() if name.endswith("data/sample_inputs/model.pt") else zin.read(name))
    return dst


@pytest.mark.parametrize("sample", [((), {}), ({"a": 1},)], ids=["no-args", "dict-only"])
@pytest.mark.parametrize("command", ["inspect", "convert"])
def test_pt2_sample_inputs_that_do_not_fit_the_program(program: Path, tmp_path: Path, sample: object, command: str) -> None:
    bad = with_sample_inputs(program, tmp_path / "bad.pt2", sample)
    out = tmp_path / "out"
    out.mkdir()
    args = ["inspect", bad] if command == "inspect" else ["convert", bad, "-o", out / "m.ort"]
    assert_fails(invoke(*args), 3, "bad.pt2", "cannot rebuild the program", alone=True)
    assert list(out.iterdir()) == []


# ---- an ONNX model whose recorded input shape makes gigabytes of example data ---------------------


def huge_input_model(path: Path, dim: int) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    big = helper.make_tensor_value_info("big", TensorProto.FLOAT, [dim])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x, big], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


@pytest.mark.parametrize("dim", [2**63 - 1, 2**29])
def test_onnx_input_recorded_too_large_for_example_data(tmp_path: Path, dim: int) -> None:
    model = huge_input_model(tmp_path / "m.onnx", dim)
    out = tmp_path / "out"
    out.mkdir()
    line = assert_fails(invoke("convert", model, "-o", out / "m.ort"), 3, "example inputs of m.onnx", "'big'", "GiB", alone=True)
    assert str(dim) in line
    assert list(out.iterdir()) == []


def test_check_analyses_a_model_with_a_huge_input(tmp_path: Path) -> None:
    """`check` builds no example inputs: it still analyses such a model."""
    model = huge_input_model(tmp_path / "m.onnx", 2**40)
    result = invoke("check", model, "--ep", "xnnpack", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["reports"][0]["total_nodes"] == 1


# ---- ONNX strings that are not UTF-8 (protobuf returns them as bytes) ------------------------------


@pytest.mark.parametrize("command", ["inspect", "check", "convert"])
def test_onnx_name_that_is_not_utf8(tmp_path: Path, command: str) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["probs"], name="relu")], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    data = model.SerializeToString()
    assert data.count(b"probs") == 2
    path = tmp_path / "m.onnx"
    path.write_bytes(data.replace(b"probs", b"p\xffobs"))  # one damaged byte, in the node and the graph output
    out = tmp_path / "out"
    out.mkdir()
    args = {"inspect": ["inspect", path], "check": ["check", path, "--ep", "nnapi"], "convert": ["convert", path, "-o", out / "m.ort"]}
    assert_fails(invoke(*args[command]), 3, "m.onnx is damaged", "not UTF-8", alone=True)
    assert list(out.iterdir()) == []


def test_ort_name_that_is_not_utf8(tmp_path: Path) -> None:
    """onnxruntime loads an .ort whose output name is not UTF-8 (its verifier checks layout, not text);
    `inspect` then cannot read the name back: a damaged file (exit 3), not an internal error."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["probs"], name="relu")], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    (tmp_path / "m.onnx").write_bytes(model.SerializeToString())
    converted = invoke("convert", tmp_path / "m.onnx", "-o", tmp_path / "m.ort")
    assert converted.exit_code == 0, converted.stderr
    data = (tmp_path / "m.ort").read_bytes()
    assert data.count(b"probs") == 1
    bad = tmp_path / "bad.ort"
    bad.write_bytes(data.replace(b"probs", b"p\xffobs"))
    for args in (["inspect", bad], ["inspect", bad, "--json"]):
        result = invoke(*args)
        assert_fails(result, 3, "bad.ort is damaged", "not UTF-8", alone=True)
