"""`mobilegen inspect`: one parameter count per source (the same with and without --input), sizes people
can read (never "0.00 MB"), and for an .ort only the opset domains its nodes use."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from cli_helpers import invoke, private_tmpdir
from onnx import TensorProto, helper
from torch import nn

from mobilegen.artifacts import OnnxModel
from mobilegen.commands.inspection import format_size
from mobilegen.convert.to_ort import convert_to_ort
from mobilegen.spec import IOSpec


@pytest.fixture(autouse=True)
def _tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # nothing an inspection stages is left behind (.ses: onnxruntime's telemetry file)
    yield from private_tmpdir(tmp_path, monkeypatch, ignore=frozenset({".ses"}))


class ConvBn(nn.Module):
    """Conv + BatchNorm: the exporter folds the BatchNorm, so the ONNX graph has fewer weights."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


def _scripted(path: Path) -> Path:
    torch.manual_seed(0)
    torch.jit.script(ConvBn().eval()).save(str(path))
    return path


def _param_line(stderr: str, prefix: str = "parameters: ") -> str:
    return next(ln for ln in stderr.splitlines() if ln.startswith(prefix))


def test_torchscript_count_is_the_same_with_and_without_input(tmp_path: Path) -> None:
    model = _scripted(tmp_path / "convbn.pt")
    # conv 4*3*3*3 + 4, bn weight/bias/mean/var 4*4; num_batches_tracked is an integer buffer
    expected = 4 * 27 + 4 + 16
    bare = invoke("inspect", model)
    shaped = invoke("inspect", model, "--input", "x:1x3x8x8")
    assert bare.exit_code == 0 and shaped.exit_code == 0, (bare.stderr, shaped.stderr)
    line = _param_line(bare.stderr)
    assert line == _param_line(shaped.stderr)
    assert line.startswith(f"parameters: {expected} ({format_size(expected * 4)}) — ")
    assert "PyTorch module's parameters and floating-point buffers" in line
    # the exported graph's own count is shown apart, named as such, with why it differs
    onnx_line = _param_line(shaped.stderr, "exported ONNX weights: ")
    assert "folds BatchNorm" in onnx_line
    assert "exported ONNX weights" not in bare.stderr
    payloads = [json.loads(invoke("inspect", model, *extra, "--json").stdout) for extra in ((), ("--input", "x:1x3x8x8"))]
    assert [p["parameters"] for p in payloads] == [expected, expected]
    assert [p["parameter_bytes"] for p in payloads] == [expected * 4, expected * 4]
    assert payloads[0]["onnx_parameters"] is None
    assert payloads[1]["onnx_parameters"] == 4 * 27 + 4  # BatchNorm folded into the conv
    assert payloads[0]["parameters_counted"] == payloads[1]["parameters_counted"]


def _onnx_with_weights(path: Path, count: int) -> Path:
    inits = [helper.make_tensor("w", TensorProto.FLOAT, [count], np.ones(count, np.float32))] if count else []
    nodes = [helper.make_node("Add", ["x", "w"], ["y"])] if count else [helper.make_node("Relu", ["x"], ["y"])]
    dims = [count or 1]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)], [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)], inits
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


@pytest.mark.parametrize(("count", "shown"), [(0, "parameters: 0 — "), (3, "parameters: 3 (12 bytes) — "), (300, "parameters: 300 (1.2 kB) — ")])
def test_small_onnx_sizes_are_readable(tmp_path: Path, count: int, shown: str) -> None:
    result = invoke("inspect", _onnx_with_weights(tmp_path / "m.onnx", count))
    assert result.exit_code == 0, result.stderr
    assert "MB" not in result.stderr and "0.00" not in result.stderr
    line = _param_line(result.stderr)
    assert line.startswith(shown), line
    assert "initializers" in line


@pytest.mark.parametrize(
    ("nbytes", "text"),
    [(0, "0 bytes"), (1, "1 byte"), (999, "999 bytes"), (1000, "1.0 kB"), (86_056, "86.1 kB"), (999_949, "999.9 kB"),
     (999_950, "1.0 MB"), (12_345_678, "12.3 MB"), (1_210_000_000, "1.21 GB")],
)
def test_format_size(nbytes: int, text: str) -> None:
    assert format_size(nbytes) == text


def _ort(tmp_path: Path, nodes: list[onnx.NodeProto], opsets: list[onnx.OperatorSetIdProto]) -> Path:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])]
    )
    src = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=opsets, ir_version=8), str(src))
    out = tmp_path / "m.ort"
    convert_to_ort(OnnxModel(path=src, io=IOSpec(()), opset=17, exporter="passthrough"), out, tmp_path / "m.config")
    return out


def test_ort_shows_only_the_opset_domains_its_nodes_use(tmp_path: Path) -> None:
    ort_file = _ort(tmp_path, [helper.make_node("Relu", ["x"], ["y"])], [helper.make_opsetid("", 17)])
    result = invoke("inspect", ort_file, "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["opset"] == {"ai.onnx": 17}  # the converter declares ai.onnx.ml, com.microsoft, ...
    human = invoke("inspect", ort_file)
    assert "opset: ai.onnx 17\n" in human.stderr and "com.microsoft" not in human.stderr


def test_ort_keeps_a_contrib_domain_it_uses(tmp_path: Path) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Gelu", ["a"], ["y"], domain="com.microsoft")]
    ort_file = _ort(tmp_path, nodes, [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    result = invoke("inspect", ort_file, "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["opset"] == {"ai.onnx": 17, "com.microsoft": 1}
