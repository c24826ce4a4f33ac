"""Every bad input of the core commands: exit code + one line saying what to do + no partial output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import assert_fails, error_lines, invoke
from model_files import hostile_pickle, write_all, write_bad


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("cli-models")
    paths = write_all(d)
    paths.update(write_bad(d))
    return paths


def test_version() -> None:
    r = invoke("--version")
    assert r.exit_code == 0 and r.stdout.startswith("mobilegen ")


@pytest.mark.parametrize("command", ["inspect", "export", "convert"])
def test_missing_file(tmp_path: Path, command: str) -> None:
    extra = ["-o", str(tmp_path / ("o.ort" if command == "convert" else "o.onnx"))] if command != "inspect" else []
    assert_fails(invoke(command, tmp_path / "nope.pt", *extra), 2, "no such file")


def test_directory(tmp_path: Path) -> None:
    assert_fails(invoke("inspect", tmp_path), 2, "is a directory")


def test_not_a_model(files) -> None:
    assert_fails(invoke("inspect", files["text"]), 3, "not a model")


def test_zip_not_torchscript(files) -> None:
    assert_fails(invoke("inspect", files["zip"]), 3, "not a PyTorch model")


def test_truncated_onnx(files, tmp_path: Path) -> None:
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(files["onnx"].read_bytes()[:200])
    assert_fails(invoke("inspect", cut), 3)


def test_hostile_pickle(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.pt"
    hostile_pickle(evil, marker)
    assert_fails(invoke("convert", evil, "-o", tmp_path / "m.ort", "--input", "x:1x3"), 3, "--trust-pickle")
    assert not marker.exists()
    assert not (tmp_path / "m.ort").exists()


def test_state_dict_without_class(files, tmp_path: Path) -> None:
    assert_fails(invoke("export", files["state_dict"], "-o", tmp_path / "m.onnx"), 3, "--model-class")


def test_torchscript_needs_input(files, tmp_path: Path) -> None:
    assert_fails(invoke("export", files["torchscript"], "-o", tmp_path / "m.onnx"), 2, "--input")


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("x:1x3x8", "rank"),  # wrong rank for an ONNX input
        ("x:1x3x8x8:int64", "dtype"),
        ("y:1x3x8x8", "does not take"),
        ("x:1x3x9x9", "fixed shape"),
        ("x", "malformed"),
        ("x:1x3x8x8:complex", "unknown dtype"),
    ],
)
def test_bad_input_spec_onnx(files, tmp_path: Path, spec: str, needle: str) -> None:
    out = tmp_path / "m.ort"
    assert_fails(invoke("convert", files["onnx"], "-o", out, "--input", spec), 2, needle)
    assert not out.exists()


def test_bad_input_for_torch_model(files, tmp_path: Path) -> None:
    # A rank the model's forward rejects: caught before export, named with the shapes tried.
    assert_fails(invoke("export", files["torchscript"], "-o", tmp_path / "m.onnx", "--input", "input:1x3"), 2, "rejected the example inputs")
    assert_fails(invoke("export", files["torchscript"], "-o", tmp_path / "m.onnx", "--input", "image:1x3x8x8"), 2, "does not take")


def test_unexportable_op(tmp_path: Path) -> None:
    import torch

    class Svd(torch.nn.Module):
        def forward(self, x):
            return torch.linalg.svd(x)[1]

    path = tmp_path / "svd.pt"
    torch.jit.save(torch.jit.script(Svd()), str(path))
    out = tmp_path / "svd.onnx"
    assert_fails(invoke("export", path, "-o", out, "--input", "x:3x3"), 4, "linalg_svd", "--opset")
    assert not out.exists()


def test_output_exists_needs_force(files, tmp_path: Path) -> None:
    out = tmp_path / "m.onnx"
    out.write_text("mine")
    assert_fails(invoke("export", files["onnx"], "-o", out), 2, "already exists", "--force")
    assert out.read_text() == "mine"
    r = invoke("export", files["onnx"], "-o", out, "--force")
    assert r.exit_code == 0, r.stderr
    assert out.read_bytes()[:4] != b"mine"


def test_output_not_writable(files, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert_fails(invoke("export", files["onnx"], "-o", blocker / "sub" / "m.onnx"), 2, "cannot write")


def test_json_error_on_stdout(tmp_path: Path) -> None:
    r = invoke("inspect", tmp_path / "nope.pt", "--json")
    assert r.exit_code == 2
    payload = json.loads(r.stdout)
    assert payload["error"] == "usage" and payload["hint"]


def test_inspect_json(files) -> None:
    r = invoke("inspect", files["exported_program"], "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["kind"] == "exported_program"
    assert data["inputs"][0]["shape"] == [1, 3, 8, 8]
    assert data["op_histogram"]["Conv"] == 1
    assert data["parameters"] == 4 * 3 * 3 * 3 + 4 + 4 * 5 + 5


def test_convert_onnx_writes_ort_and_config(files, tmp_path: Path) -> None:
    out = tmp_path / "sub" / "net.ort"
    r = invoke("convert", files["onnx"], "-o", out, "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["optimization_style"] == "Runtime" and data["ort_format_version"] >= 5
    assert out.read_bytes()[4:8] == b"ORTM"
    assert (tmp_path / "sub" / "net.required_operators.config").read_text().count("ai.onnx;") >= 1
    assert all(r["passed"] for r in data["verification"]["rows"])


def test_verification_gate_fails(tmp_path: Path) -> None:
    # forward draws fresh noise, so the exported graph can never reproduce PyTorch's numbers: the gate
    # must fail, list every failing (artifact, output) pair, and leave no output behind.
    import torch

    class Noisy(torch.nn.Module):
        def forward(self, x):
            return x + torch.rand_like(x), x * 2

    path = tmp_path / "noisy.pt2"
    torch.export.save(torch.export.export(Noisy(), (torch.zeros(1, 8),)), str(path))
    out = tmp_path / "noisy.ort"
    r = invoke("convert", path, "-o", out)
    assert r.exit_code == 5, r.stderr
    assert "differ from PyTorch" in error_lines(r)[0]
    details = [ln.strip() for ln in r.stderr.splitlines() if ln.startswith("  ")]
    assert {d.split()[0] for d in details} == {"onnx", "ort"}
    assert len(details) == 4  # only the noisy output fails, for both artifacts, in both seeded cases
    assert not out.exists() and not (tmp_path / "noisy.required_operators.config").exists()

def test_convert_refuses_opset_the_mobile_runtime_cannot_load(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    path = tmp_path / "new.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)], ir_version=11), str(path))
    out = tmp_path / "new.ort"
    # refused at load (issue 9 item 7), with no --opset hint: an ONNX input takes no --opset
    assert_fails(invoke("convert", path, "-o", out), 3, "opset 25", "up to opset 24")
    assert "--opset" not in invoke("convert", path, "-o", out).stderr
    assert not out.exists()


def test_inspect_without_shapes_and_ort(files, tmp_path: Path) -> None:
    r = invoke("inspect", files["torchscript"], "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["inputs"][0]["shape"] == ["?"] and data["parameters"] > 0
    assert "--input" in data["notes"][0]
    out = tmp_path / "net.ort"
    assert invoke("convert", files["onnx"], "-o", out).exit_code == 0
    r = invoke("inspect", out, "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["opset"]["ai.onnx"] == 17 and data["op_histogram"]
    assert data["ort_format_version"] in (5, 6)


def test_inspect_and_convert_onnx_with_dynamic_dims(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    path = tmp_path / "dyn.onnx"
    onnx.save(helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    r = invoke("inspect", path, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["inputs"][0]["shape"] == ["batch", 4]
    r = invoke("convert", path, "-o", tmp_path / "dyn.ort", "--json")
    assert r.exit_code == 0, r.stderr
    assert {row["case"] for row in json.loads(r.stdout)["verification"]["rows"]} == {"x:1x4", "x:2x4", "x:1x4 #3"}


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
def test_bad_tolerances(files, tmp_path: Path, value: str) -> None:
    assert_fails(invoke("export", files["onnx"], "-o", tmp_path / "m.onnx", "--atol", value), 2, "--atol")


def test_huge_example_input_refused(files, tmp_path: Path) -> None:
    assert_fails(invoke("export", files["torchscript"], "-o", tmp_path / "m.onnx", "--input", "input:100000x3x64x64"), 2, "GiB")


def test_opset_out_of_range(files, tmp_path: Path) -> None:
    assert_fails(invoke("export", files["onnx"], "-o", tmp_path / "m.onnx", "--opset", "25"), 2, "--opset 25")


def test_export_failure_keeps_json_clean(tmp_path: Path) -> None:
    import torch

    class Svd(torch.nn.Module):
        def forward(self, x):
            return torch.linalg.svd(x)[1]

    path = tmp_path / "svd.pt"
    torch.jit.save(torch.jit.script(Svd()), str(path))
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "mobilegen", "export", str(path), "-o", str(tmp_path / "o.onnx"), "--input", "x:3x3", "--json"], capture_output=True, text=True)
    assert p.returncode == 4
    assert json.loads(p.stdout)["error"] == "export"


def test_state_dict_mismatch_names_the_problem(files, tmp_path: Path) -> None:
    src = tmp_path / "arch.py"
    src.write_text(
        "from torch import nn\n"
        "class Net(nn.Sequential):\n"
        "    def __init__(self, classes=5):\n"
        "        super().__init__(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, classes))\n"
    )
    r = invoke("inspect", files["state_dict"], "--model-class", f"{src}:Net", "--model-kwargs", '{"classes": 7}', "--input", "input:1x3x8x8")
    assert_fails(r, 3, "size mismatch")


@pytest.mark.parametrize("kind", ["torchscript", "exported_program", "pickle", "state_dict", "onnx"])
def test_every_input_kind_converts(files, tmp_path: Path, kind: str) -> None:
    src = tmp_path / "arch.py"
    src.write_text(
        "from torch import nn\n"
        "class Net(nn.Sequential):\n"
        "    def __init__(self):\n"
        "        super().__init__(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 5))\n"
    )
    extra = {
        "torchscript": ["--input", "input:1x3x8x8"],
        "pickle": ["--trust-pickle", "--input", "input:1x3x8x8"],
        "state_dict": ["--model-class", f"{src}:Net", "--input", "input:1x3x8x8"],
    }.get(kind, [])
    out = tmp_path / f"{kind}.ort"
    r = invoke("convert", files[kind], "-o", out, "--json", *extra)
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)["verification"]["rows"]
    assert {row["artifact"] for row in rows} == {"onnx", "ort"} and all(row["passed"] for row in rows)
    assert out.read_bytes()[4:8] == b"ORTM"


def test_onnx_input_flags(files, tmp_path: Path) -> None:
    assert_fails(invoke("export", files["onnx"], "-o", tmp_path / "a.onnx", "--opset", "18"), 2, "--opset applies to PyTorch")
    assert_fails(invoke("export", files["onnx"], "-o", tmp_path / "a.onnx", "--input", "x:1x3x8x8", "--dynamic", "x:0=batch"), 2, "--dynamic applies")
    r = invoke("export", files["onnx"], "-o", tmp_path / "b.onnx", "--output-name", "logits", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["io"]["outputs"][0]["name"] == "logits"


def test_model_text_is_not_console_markup(files, tmp_path: Path) -> None:
    r = invoke("export", files["onnx"], "-o", tmp_path / "m.onnx", "--output-name", "y[/b][red]", env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.stderr
    assert "y[/b][red]" in r.stderr


def test_damaged_ort_and_broken_model_class(files, tmp_path: Path) -> None:
    out = tmp_path / "net.ort"
    assert invoke("convert", files["onnx"], "-o", out).exit_code == 0
    data = bytearray(out.read_bytes())
    bad = tmp_path / "bad.ort"
    bad.write_bytes(bytes(data[:64]) + b"\0" * (len(data) - 64))
    assert_fails(invoke("inspect", bad), 3, "not a loadable ORT-format model")
    src = tmp_path / "broken.py"
    src.write_text("class Net(:\n")
    assert_fails(invoke("inspect", files["state_dict"], "--model-class", f"{src}:Net"), 3, "SyntaxError")
