"""Inputs that are not free tensors (issue 11 §1): ``--const`` on scripted, traced, ``.pt2`` and ONNX
models; one size for a named dim shared by inputs; a ``.pt2``'s recorded shapes checked before export."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from cli_helpers import assert_fails, invoke, private_tmpdir
from onnx import TensorProto, helper
from torch import nn
from typer.testing import Result


class SampleRateNet(nn.Module):
    """A streaming-audio model's shape: a Python int argument it checks, as silero-style VADs do."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor, sr: int) -> torch.Tensor:
        if sr != 8000 and sr != 16000:
            raise ValueError("sr must be 8000 or 16000")
        return self.lin(x) * (sr / 16000.0)


class GainNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor, gain: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * gain


class StreamNet(nn.Module):
    """``x`` and ``state`` share the batch dim; ``sr`` is exported as a constant (an int to torch.export)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor, state: torch.Tensor, sr: int) -> tuple[torch.Tensor, torch.Tensor]:
        if sr not in (8000, 16000):
            raise ValueError("sr must be 8000 or 16000")
        return self.lin(x) * (sr / 16000.0) + state.sum(0), state * 0.5


class FlattenNet(nn.Module):
    """Two dynamic dims and an output whose size is an expression over them (``16*s27``)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x)).reshape(x.shape[0], -1)


class CountNet(nn.Module):
    """A symbolic int argument and a tensor flag in a .pt2."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, n: int, flag: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * n + flag


@pytest.fixture(autouse=True)
def _tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from private_tmpdir(tmp_path, monkeypatch)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("const-models")
    torch.manual_seed(0)
    out = {"scripted": d / "sr_script.pt", "traced": d / "gain_traced.pt", "stream": d / "stream.pt2", "count": d / "count.pt2", "flat": d / "flat.pt2"}
    torch.jit.save(torch.jit.script(SampleRateNet().eval()), str(out["scripted"]))
    torch.jit.save(torch.jit.trace(GainNet().eval(), (torch.randn(2, 16), torch.tensor(2.0))), str(out["traced"]))
    batch = torch.export.Dim("batch", min=1, max=64)
    stream = torch.export.export(StreamNet().eval(), (torch.randn(3, 16), torch.randn(2, 3, 16), 16000), dynamic_shapes=({0: batch}, {1: batch}, None))
    torch.export.save(stream, str(out["stream"]))
    count = torch.export.export(CountNet().eval(), (torch.randn(3, 4), 5, torch.tensor(1.0)), dynamic_shapes=(None, torch.export.Dim.DYNAMIC, None))
    torch.export.save(count, str(out["count"]))
    seq = torch.export.Dim("seq", min=2, max=256)
    flat = torch.export.export(FlattenNet().eval(), (torch.randn(2, 8, 16),), dynamic_shapes=({0: batch, 1: seq},))
    torch.export.save(flat, str(out["flat"]))
    return out


def _onnx_with_sr(path: Path) -> Path:
    """y = x * sr: an ONNX model with an extra int64 scalar input."""
    nodes = [helper.make_node("Cast", ["sr"], ["srf"], to=TensorProto.FLOAT), helper.make_node("Mul", ["x", "srf"], ["y"])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]), helper.make_tensor_value_info("sr", TensorProto.INT64, [])]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save_model(model, str(path))
    return path


def _exported(result: Result, out: Path) -> tuple[dict[str, Any], onnx.ModelProto, ort.InferenceSession]:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout), onnx.load(str(out)), ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])


def _cases(doc: dict[str, Any]) -> list[str]:
    rows = doc["verification"]["rows"]
    return sorted({r["case"].split(" #")[0] for r in rows})


def test_scripted_int_argument_is_baked_in(models: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "sr.onnx"
    doc, model, sess = _exported(invoke("export", models["scripted"], "--input", "x:batchx16", "--const", "sr=8000", "-o", out, "--json"), out)
    assert [t["name"] for t in doc["io"]["inputs"]] == ["x"]
    assert [i.name for i in model.graph.input] == ["x"]
    x = np.random.default_rng(0).standard_normal((5, 16)).astype(np.float32)
    scripted = torch.jit.load(str(models["scripted"]))
    want = scripted(torch.from_numpy(x), 8000).detach().numpy()
    (got,) = sess.run(None, {"x": x})
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert not np.allclose(got, scripted(torch.from_numpy(x), 16000).detach().numpy())  # the value, not a default


def test_scripted_int_argument_errors(models: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "sr.onnx"
    args = ("export", models["scripted"], "--input", "x:1x16", "-o", out)
    assert_fails(invoke(*args), 2, "input 'sr' of sr_script.pt is a Python int argument", "--const sr=VALUE")
    assert_fails(invoke(*args, "--const", "sr=8001"), 2, "sr must be 8000 or 16000")
    assert_fails(invoke(*args, "--const", "rate=8000"), 2, "--const rate=8000: sr_script.pt has no input 'rate'", "its inputs are: x, sr")
    assert_fails(invoke(*args, "--const", "sr=8000.5"), 2, "--const sr=8000.5: input 'sr' is a Python int", "not an integer")
    assert_fails(invoke(*args, "--const", "sr=16k"), 2, "--const 'sr=16k'", "NAME=VALUE")
    assert_fails(invoke(*args, "--const", "sr=8000", "--const", "sr=16000"), 2, "--const 'sr' is given more than once")
    assert_fails(invoke(*args, "--const", "x=1"), 2, "input 'x' is given both --input and --const")
    assert not out.exists()


def test_traced_tensor_input_is_baked_in(models: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "gain.onnx"
    doc, model, sess = _exported(invoke("export", models["traced"], "--input", "x:batchx16", "--const", "gain=3.5", "-o", out, "--json"), out)
    assert [i.name for i in model.graph.input] == ["x"] and [t["name"] for t in doc["io"]["inputs"]] == ["x"]
    x = np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32)
    want = torch.jit.load(str(models["traced"]))(torch.from_numpy(x), torch.tensor(3.5)).detach().numpy()
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], want, atol=1e-5)


def test_pt2_constant_argument_is_bound_to_its_recorded_value(models: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "stream.onnx"
    doc, model, _ = _exported(invoke("export", models["stream"], "-o", out, "--json"), out)
    x, state = doc["io"]["inputs"]
    assert (x["name"], state["name"]) == ("x", "state") and x["shape"][0] == state["shape"][1]  # one dim, one name
    assert [i.name for i in model.graph.input] == ["x", "state"]
    assert invoke("export", models["stream"], "--const", "sr=16000", "-o", tmp_path / "again.onnx").exit_code == 0
    assert_fails(
        invoke("export", models["stream"], "--const", "sr=8000", "-o", tmp_path / "bad.onnx"),
        2, "stream.pt2 was exported with sr=16000 as a constant", "re-export the model with sr=8000",
    )
    assert not (tmp_path / "bad.onnx").exists()


def test_pt2_symbolic_int_and_tensor_become_initializers(models: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "count.onnx"
    assert_fails(invoke("export", models["count"], "-o", out), 2, "input 'n' of count.pt2 is a Python int argument", "--const n=VALUE")
    doc, model, sess = _exported(invoke("export", models["count"], "--const", "n=3", "--const", "flag=2", "-o", out, "--json"), out)
    assert [i.name for i in model.graph.input] == ["x"] and [t["name"] for t in doc["io"]["inputs"]] == ["x"]
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    assert inits["n"].dtype == np.int64 and inits["n"].shape == () and int(inits["n"]) == 3
    assert inits["flag"].dtype == np.float32 and float(inits["flag"]) == 2.0
    x = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    program = torch.export.load(str(models["count"])).module()
    want = program(torch.from_numpy(x), 3, torch.tensor(2.0)).detach().numpy()
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], want, atol=1e-5)


def test_onnx_input_becomes_an_initializer(tmp_path: Path) -> None:
    src = _onnx_with_sr(tmp_path / "extra.onnx")
    out = tmp_path / "bound.onnx"
    doc, model, sess = _exported(invoke("export", src, "--const", "sr=3", "-o", out, "--json"), out)
    assert [i.name for i in model.graph.input] == ["x"] and [t["name"] for t in doc["io"]["inputs"]] == ["x"]
    (init,) = model.graph.initializer
    assert (init.name, init.data_type, list(init.dims)) == ("sr", TensorProto.INT64, [])
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], 3 * x)
    assert_fails(invoke("export", src, "--const", "sr=0.5", "-o", tmp_path / "bad.onnx"), 2, "input 'sr' holds int64", "not an integer")
    check = invoke("check", src, "--ep", "nnapi", "--const", "sr=3", "--json")
    assert check.exit_code == 0, check.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["TMPDIR", "bound.onnx", "extra.onnx"]


def test_shared_pt2_dim_takes_one_size(models: dict[str, Path], tmp_path: Path) -> None:
    """A size given for ``x``'s batch is ``state``'s too (it was 5 for one and the example 3 for the other)."""
    out = tmp_path / "s.onnx"
    doc, model, _ = _exported(invoke("export", models["stream"], "--input", "x:5x16", "-o", out, "--json"), out)
    assert _cases(doc) == ["x:5x16;state:2x5x16"]  # the size fixes the dim (one case, no second size)
    assert [[d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input] == [[5, 16], [2, 5, 16]]
    # renaming the dim in one input renames it in both
    doc, model, _ = _exported(invoke("export", models["stream"], "--input", "state:2xbatchx16", "-o", out, "--force", "--json"), out)
    assert [[d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input] == [["batch", 16], [2, "batch", 16]]


def _dims(values: Any) -> list[list[int | str]]:
    return [[d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim] for v in values]


def test_pt2_input_size_fixes_its_named_dims(models: dict[str, Path], tmp_path: Path) -> None:
    """``--input x:1x128x16`` on a .pt2 exported with dynamic dims gives a fixed-size ONNX model, as for a
    module (it kept ``x_dim0``/``x_dim1``: NNAPI, XNNPACK and the shape-dependent passes lost); an output
    sized by an expression over them (``16*s27``) is inferred again; a name keeps the dim dynamic."""
    out = tmp_path / "f.onnx"
    doc, model, session = _exported(invoke("export", models["flat"], "--input", "x:1x128x16", "-o", out, "--json"), out)
    assert _dims(model.graph.input) == [[1, 128, 16]] and _dims(model.graph.output) == [[1, 2048]]
    assert all(not d.dim_param for v in model.graph.value_info for d in v.type.tensor_type.shape.dim)
    assert _cases(doc) == ["x:1x128x16"]
    x = np.random.default_rng(0).standard_normal((1, 128, 16)).astype(np.float32)
    program = torch.export.load(str(models["flat"])).module()
    np.testing.assert_allclose(session.run(None, {"x": x})[0], program(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    _, model, _ = _exported(invoke("export", models["flat"], "--input", "x:1xseqx16", "-o", out, "--force", "--json"), out)
    assert _dims(model.graph.input) == [[1, "seq", 16]]
    assert_fails(invoke("export", models["flat"], "--input", "x:1x300x16", "-o", tmp_path / "g.onnx"), 2, "dim 1 (x_dim1) must be in 2..256, given 300")
    assert not (tmp_path / "g.onnx").exists()


def test_shared_named_dim_without_recorded_shapes(models: dict[str, Path], tmp_path: Path) -> None:
    """Two --dynamic flags naming one dim with different --input sizes (it was silently the last one's)."""
    out = tmp_path / "s.onnx"
    assert_fails(
        invoke("export", models["traced"], "--input", "x:2x16", "--input", "gain:1x16", "--dynamic", "x:0=batch", "--dynamic", "gain:0=batch", "-o", out),
        2, "dim 'batch' is 1 in input 'gain' but 2 in another input",
    )
    assert not out.exists()


def test_pt2_wrong_input_shape_fails_before_export(models: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "s.onnx"
    assert_fails(
        invoke("export", models["stream"], "--input", "x:65x16", "-o", out),
        2, "--input x:65x16 does not fit stream.pt2's input 'x', recorded as {x_dim0: 1..64, example 3}x16", "must be in 1..64, given 65",
    )
    assert_fails(
        invoke("export", models["stream"], "--input", "x:4x16", "--input", "state:2x5x16", "-o", out),
        2, "--input state:2x5x16 does not fit", "same dim as dim 0 of 'x', given 4 there and 5 here",
    )
    assert_fails(invoke("export", models["stream"], "--input", "state:3x4x16", "-o", out), 2, "--input state", "does not match the model's fixed shape")
    assert not out.exists()


@pytest.mark.slow
def test_package_ships_no_bound_input(models: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    result = invoke("package", models["scripted"], "--android", "--ios", "--input", "x:batchx16", "--const", "sr=16000", "-o", out, "--json")
    assert result.exit_code == 0, result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["const"] == {"sr": 16000}
    assert [t["name"] for t in json.loads(result.stdout)["io"]["inputs"]] == ["x"]
    with np.load(out / "golden" / "golden.npz") as z:
        assert [f for f in z.files if f.startswith("input:")] == ["input:x"]
    wrappers = [*out.glob("android/*/src/main/kotlin/**/*.kt"), *out.glob("ios/Sources/**/*.swift")]
    assert wrappers and all('"sr"' not in p.read_text() and "SR_NAME" not in p.read_text() for p in wrappers)
    assert any('"x"' in p.read_text() for p in wrappers)
