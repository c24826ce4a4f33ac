"""Hostile or broken model inputs (issue 9, items 7, 9 and 11): every one ends with its own exit code and
one line naming the problem, before any work, with nothing left behind and nothing read outside the
model's folder. Every bad model is built here with onnx.helper."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from cli_helpers import assert_fails, invoke
from onnx import TensorProto, helper, numpy_helper


def make_model(
    *,
    in_name: str = "x",
    out_name: str = "y",
    dims: tuple[int | str, ...] = (1, 4),
    opset: int = 17,
    outputs: bool = True,
) -> onnx.ModelProto:
    """y = x + w, with w a 4-float initializer."""
    x = helper.make_tensor_value_info(in_name, TensorProto.FLOAT, list(dims))
    y = helper.make_tensor_value_info(out_name, TensorProto.FLOAT, list(dims))
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    graph = helper.make_graph([helper.make_node("Add", [in_name, "w"], [out_name])], "g", [x], [y] if outputs else [], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def save_external(model: onnx.ModelProto, path: Path, location: str = "w.bin") -> Path:
    """Save with the weight in an external file, then point it at ``location`` (which may be hostile)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(path), save_as_external_data=True, size_threshold=0, location="w.bin")
    proto = onnx.load_model(str(path), load_external_data=False)
    for entry in proto.graph.initializer[0].external_data:
        if entry.key == "location":
            entry.value = location
    onnx.save_model(proto, str(path))
    return path


def assert_nothing_left(folder: Path, before: set[str]) -> None:
    assert {p.name for p in folder.iterdir()} == before, sorted(p.name for p in folder.iterdir())


# --- item 7: external data ---------------------------------------------------------------------------


def _escaping(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "secret.bin").write_bytes(bytes(16))
    return save_external(make_model(), tmp_path / "m" / "m.onnx", "../secret.bin"), "points outside the model's folder"


def _absolute(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "secret.bin").write_bytes(bytes(16))
    return save_external(make_model(), tmp_path / "m" / "m.onnx", str(tmp_path / "secret.bin")), "is an absolute path"


def _missing(tmp_path: Path) -> tuple[Path, str]:
    return save_external(make_model(), tmp_path / "m" / "m.onnx", "nope.bin"), "is missing"


def _symlink(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "secret.bin").write_bytes(bytes(16))
    path = save_external(make_model(), tmp_path / "m" / "m.onnx", "link.bin")
    (path.parent / "link.bin").symlink_to(tmp_path / "secret.bin")
    return path, "through a symlink"


def _symlinked_folder(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "w.bin").write_bytes(bytes(16))
    path = save_external(make_model(), tmp_path / "m" / "m.onnx", "sub/w.bin")
    (path.parent / "sub").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    return path, "through a symlink"


def _short(tmp_path: Path) -> tuple[Path, str]:
    path = save_external(make_model(), tmp_path / "m" / "m.onnx")
    (path.parent / "w.bin").write_bytes(bytes(7))
    return path, "too short"


def _wrong_length(tmp_path: Path) -> tuple[Path, str]:
    path = save_external(make_model(), tmp_path / "m" / "m.onnx")
    (path.parent / "w.bin").write_bytes(bytes(40))
    proto = onnx.load_model(str(path), load_external_data=False)
    for entry in proto.graph.initializer[0].external_data:
        if entry.key == "length":
            entry.value = "40"
    onnx.save_model(proto, str(path))
    return path, "need 16"


EXTERNAL_CASES = {
    "escaping": _escaping,
    "absolute": _absolute,
    "missing": _missing,
    "symlink": _symlink,
    "symlinked-folder": _symlinked_folder,
    "short": _short,
    "wrong-length": _wrong_length,
}


@pytest.mark.parametrize("case", sorted(EXTERNAL_CASES))
@pytest.mark.parametrize("command", ["inspect", "export", "check"])
def test_bad_external_data_is_a_load_error(tmp_path: Path, case: str, command: str) -> None:
    path, needle = EXTERNAL_CASES[case](tmp_path)
    before = {p.name for p in path.parent.iterdir()}
    extra: list[object] = {"inspect": [], "export": ["-o", tmp_path / "out.onnx"], "check": ["--ep", "nnapi"]}[command]
    line = assert_fails(invoke(command, path, *extra), 3, needle, "tensor 'w'")
    assert "m.onnx" in line
    assert not (tmp_path / "out.onnx").exists()
    assert_nothing_left(path.parent, before)


def test_fifo_external_data_is_refused_without_opening_it(tmp_path: Path) -> None:
    """Opening a FIFO for reading blocks forever: the refusal must come from lstat alone."""
    path = save_external(make_model(), tmp_path / "m.onnx", "pipe.bin")
    os.mkfifo(tmp_path / "pipe.bin")
    p = subprocess.run([sys.executable, "-m", "mobilegen", "inspect", str(path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 3, p.stderr
    assert "'pipe.bin'" in p.stderr and "not a regular file" in p.stderr


def test_valid_external_data_still_works(tmp_path: Path) -> None:
    path = save_external(make_model(), tmp_path / "m.onnx")
    r = invoke("inspect", path, "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["parameters"] == 4
    out = tmp_path / "out.onnx"
    r = invoke("export", path, "-o", out)
    assert r.exit_code == 0, r.stderr
    assert len(onnx.load_model(str(out)).graph.initializer[0].raw_data) == 16  # inlined


# --- item 7: broken or unusable models -------------------------------------------------------------


def test_inline_weight_of_the_wrong_length(tmp_path: Path) -> None:
    for size in (7, 20):  # the checker refuses too short only; too long is refused as well
        model = make_model()
        model.graph.initializer[0].raw_data = bytes(size)
        path = tmp_path / f"bad{size}.onnx"
        onnx.save_model(model, str(path))
        assert_fails(invoke("inspect", path), 3, f"holds {size} bytes", "need 16")
        assert_fails(invoke("export", path, "-o", tmp_path / "o.onnx"), 3, f"holds {size} bytes")
    assert not (tmp_path / "o.onnx").exists()


def test_checker_errors_are_load_errors_with_no_opset_hint(tmp_path: Path) -> None:
    model = make_model()
    model.graph.initializer[0].ClearField("raw_data")
    model.graph.initializer[0].float_data.extend([1.0, 2.0, 3.0])  # 3 values for 4 elements
    path = tmp_path / "bad.onnx"
    onnx.save_model(model, str(path))
    for command in ("inspect", "export"):
        extra = ["-o", tmp_path / "o.onnx"] if command == "export" else []
        line = assert_fails(invoke(command, path, *extra), 3, "not a valid ONNX model", "float_data")
        assert "--opset" not in line


BROKEN = {
    "no-outputs": (dict(outputs=False), "declares no outputs"),
    "zero-dim": (dict(dims=(1, 0)), "has size 0 on axis 1"),
    "opset-99": (dict(opset=99), "opset 99"),
    "opset-25": (dict(opset=25), "up to opset 24"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
@pytest.mark.parametrize("command", ["inspect", "export", "check"])
def test_unusable_model_exits_3_before_any_work(tmp_path: Path, case: str, command: str) -> None:
    kwargs, needle = BROKEN[case]
    path = tmp_path / "m.onnx"
    onnx.save_model(make_model(**kwargs), str(path))  # type: ignore[arg-type]
    extra: list[object] = {"inspect": [], "export": ["-o", tmp_path / "o.onnx"], "check": ["--ep", "coreml"]}[command]
    line = assert_fails(invoke(command, path, *extra), 3, needle)
    assert "--opset" not in line  # an ONNX input takes no --opset
    assert_nothing_left(tmp_path, {"m.onnx"})


def test_unusable_model_leaves_no_package_behind(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save_model(make_model(opset=99), str(path))
    assert_fails(invoke("android", path, "-o", tmp_path / "pkg", "--zip"), 3, "opset 99")
    assert_nothing_left(tmp_path, {"m.onnx"})


# --- item 9: --input sizes and tensor names ------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("x:1x99999999999999999999", "above the largest size"),
        ("x:1x" + "9" * 5000, "above the largest size"),  # int() refuses > 4300 digits: no ValueError leaks
        ("x:1x\u0664", "digits 0-9"),  # Arabic-Indic four: int() would take it
        ("x:\uff11x4", "digits 0-9"),  # fullwidth one
        ("x:1x4\u00b2", "digits 0-9"),  # superscript two: isdigit() but not int()
        ("x:2147483647x2147483647x2147483647x2147483647", "GiB"),  # overflows int64 in np.prod
    ],
)
def test_bad_input_sizes_are_usage_errors(tmp_path: Path, spec: str, needle: str) -> None:
    path = tmp_path / "m.onnx"
    onnx.save_model(make_model(), str(path))
    assert_fails(invoke("export", path, "-o", tmp_path / "o.onnx", "--input", spec), 2, needle)
    assert_nothing_left(tmp_path, {"m.onnx"})


@pytest.mark.parametrize(("role", "name"), [("input", "x\x00y"), ("output", "y\x00"), ("input", "x\ny"), ("output", "y\x7f")])
def test_control_characters_in_model_names(tmp_path: Path, role: str, name: str) -> None:
    path = tmp_path / "m.onnx"
    onnx.save_model(make_model(**{f"{'in' if role == 'input' else 'out'}_name": name}), str(path))  # type: ignore[arg-type]
    for command, extra in (("inspect", []), ("android", ["-o", tmp_path / "pkg"])):
        line = assert_fails(invoke(command, path, *extra), 2, f"{role} name", repr(name))
        assert "\x00" not in line
    assert_nothing_left(tmp_path, {"m.onnx"})


def test_control_characters_in_a_dim_name(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save_model(make_model(dims=("b\x00", 4)), str(path))
    assert_fails(invoke("inspect", path), 2, "dim name", repr("b\x00"))


@pytest.mark.parametrize(
    ("flag", "value", "needle"),
    [
        ("--input", "x\x00y:1x4", repr("x\x00y")),
        ("--output-name", "y\x00", repr("y\x00")),
        ("--output-name", "y\x1b[31m", repr("y\x1b[31m")),
        ("--output-name", "", "empty"),
        ("--output-name", "x", "already the name of another tensor"),
    ],
)
def test_bad_names_from_flags(tmp_path: Path, flag: str, value: str, needle: str) -> None:
    path = tmp_path / "m.onnx"
    onnx.save_model(make_model(), str(path))
    assert_fails(invoke("export", path, "-o", tmp_path / "o.onnx", flag, value), 2, needle)
    assert_nothing_left(tmp_path, {"m.onnx"})


# --- item 11: models past 2 GB -------------------------------------------------------------------------


@pytest.fixture
def bytesize_past_2gib(monkeypatch: pytest.MonkeyPatch) -> None:
    """What protobuf does for a message past 2 GiB: ByteSize() raises EncodeError (SerializeToString too)."""
    from google.protobuf.message import EncodeError

    def refuse(self: onnx.ModelProto) -> int:
        raise EncodeError("Failed to serialize proto")

    monkeypatch.setattr(onnx.ModelProto, "ByteSize", refuse)


def test_too_large_onnx_is_an_export_error(tmp_path: Path, bytesize_past_2gib: None) -> None:
    path = save_external(make_model(), tmp_path / "m.onnx")
    for command, suffix in (("export", "onnx"), ("convert", "ort")):
        out = tmp_path / f"o.{suffix}"
        assert_fails(invoke(command, path, "-o", out), 4, "GB", "stop at 2 GB", "quantize or shrink")
        assert not out.exists()
    assert_nothing_left(tmp_path, {"m.onnx", "w.bin"})


def test_check_analyses_a_too_large_onnx_as_given(tmp_path: Path, bytesize_past_2gib: None) -> None:
    path = save_external(make_model(), tmp_path / "m.onnx")
    r = invoke("check", path, "--ep", "nnapi", "--json")
    assert r.exit_code == 0, r.stderr
    report = json.loads(r.stdout)["reports"][0]
    assert report["total_nodes"] == 1 and report["settings"]["optimized"] is True
    assert_nothing_left(tmp_path, {"m.onnx", "w.bin"})


def test_check_analyses_onnx_with_external_data(tmp_path: Path) -> None:
    path = save_external(make_model(), tmp_path / "m.onnx")
    r = invoke("check", path, "--ep", "xnnpack", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["reports"][0]["total_nodes"] == 1


def test_too_large_export_from_pytorch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    import mobilegen.export.limits

    path = tmp_path / "lin.pt2"
    torch.export.save(torch.export.export(torch.nn.Linear(4, 2).eval(), (torch.randn(1, 4),)), str(path))
    monkeypatch.setattr(mobilegen.export.limits, "MAX_INLINE_BYTES", 16)
    out = tmp_path / "o.onnx"
    assert_fails(invoke("export", path, "-o", out), 4, "the exported model is", "quantize or shrink")
    assert not out.exists()
