"""A ``mobilegen.toml`` found in the current folder (it may come with a cloned repository) cannot run code
nor aim ``--force`` outside its folder: ``trust_pickle``, ``model_class``, ``force`` and an ``output``
outside the folder are refused from it (exit 2, one line naming the key). The same file named with
``--config`` applies them, with a ``note:`` on stderr — the controls, which show each payload is live.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from cli_helpers import assert_fails, invoke, private_tmpdir
from model_files import hostile_torch_save
from onnx import TensorProto, helper, save

IMPLICIT = "found in the current folder"


@pytest.fixture(autouse=True)
def _tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from private_tmpdir(tmp_path, monkeypatch)


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_trust_pickle_from_an_implicit_file_is_refused(work: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pickle-ran"
    hostile_torch_save(work / "model.pt", marker)
    (work / "mobilegen.toml").write_text('model = "model.pt"\ntrust-pickle = true\n')
    line = assert_fails(invoke("inspect"), 2, "mobilegen.toml: trust-pickle is not taken from a mobilegen.toml", IMPLICIT)
    assert "pass --trust-pickle on the command line" in line and "--config mobilegen.toml" in line
    assert not marker.exists()
    # control: named with --config, the file applies it (and says so): the pickle's code runs
    ran = invoke("inspect", "--config", "mobilegen.toml")
    assert "note: --config mobilegen.toml sets --trust-pickle" in ran.stderr, ran.stderr
    assert marker.exists()


def test_model_class_from_an_implicit_file_is_refused(work: Path, tmp_path: Path) -> None:
    marker = tmp_path / "module-imported"
    (work / "net.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = torch.nn.Linear(4, 2)\n"
    )
    torch.save({"fc.weight": torch.zeros(2, 4), "fc.bias": torch.zeros(2)}, work / "w.pt")
    (work / "mobilegen.toml").write_text('[inspect]\nmodel = "w.pt"\nmodel-class = "net.py:Net"\n')
    line = assert_fails(invoke("inspect", "--json"), 2, "mobilegen.toml: [inspect] model-class is not taken", IMPLICIT, "--model-class")
    assert "runs code" in line
    assert not marker.exists()
    # a top-level key is refused for every command, also one that does not take it
    (work / "mobilegen.toml").write_text('model-class = "net.py:Net"\n')
    assert_fails(invoke("verify", "missing.zip"), 2, "model-class is not taken")
    assert not marker.exists()
    ran = invoke("inspect", "w.pt", "--config", "mobilegen.toml", "--json")
    assert ran.exit_code == 0, ran.stderr
    assert json.loads(ran.stdout)["parameters"] == 10 and "sets --model-class" in ran.stderr
    assert marker.exists()


def _onnx(path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))


@pytest.mark.parametrize("force", [True, False])
def test_force_and_an_output_outside_the_folder_are_refused(work: Path, tmp_path: Path, force: bool) -> None:
    victim = tmp_path / "victim"  # an earlier, unrelated package beside the repository: --force could replace it
    (victim / "model").mkdir(parents=True)
    (victim / "manifest.json").write_text(json.dumps({"kind": "mobilegen-package", "model": {"name": "theirs"}}))
    (victim / "model" / "model.ort").write_bytes(b"their model")
    before = _tree(victim)
    _onnx(work / "m.onnx")
    (work / "mobilegen.toml").write_text(f'model = "m.onnx"\n[package]\nandroid = true\n{"force = true" if force else ""}\noutput = "../victim"\n')
    needle = "[package] force is not taken" if force else "[package] output = '../victim' is outside the folder of mobilegen.toml"
    assert_fails(invoke("package"), 2, "mobilegen.toml:", needle)
    assert _tree(victim) == before
    assert sorted(p.name for p in work.iterdir()) == ["m.onnx", "mobilegen.toml"]
    if force:  # control: named with --config, the same file replaces the victim, and says it does
        ran = invoke("package", "--config", "mobilegen.toml")
        assert ran.exit_code == 0, ran.stderr
        assert "note: --config mobilegen.toml sets --force, -o " in ran.stderr
        assert _tree(victim) != before and (victim / "model" / "model.ort").read_bytes() != b"their model"


def test_harmless_values_pass_from_an_implicit_file(work: Path) -> None:
    _onnx(work / "m.onnx")
    (work / "mobilegen.toml").write_text('model = "m.onnx"\nforce = false\ntrust-pickle = false\n[package]\nandroid = true\noutput = "out/pkg"\n')
    ran = invoke("package")
    assert ran.exit_code == 0, ran.stderr
    assert (work / "out" / "pkg" / "manifest.json").is_file() and "note:" not in ran.stderr


def test_an_output_escaping_through_a_link_is_refused(work: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (work / "link").symlink_to(tmp_path / "elsewhere")
    _onnx(work / "m.onnx")
    (work / "mobilegen.toml").write_text('[export]\noutput = "link/m2.onnx"\n')
    assert_fails(invoke("export", "m.onnx"), 2, "output = 'link/m2.onnx' is outside the folder")
    assert list((tmp_path / "elsewhere").iterdir()) == []
