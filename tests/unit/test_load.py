"""Detection by content and every loader (small models made in the test)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from model_files import hostile_pickle, hostile_torch_save, write_all, write_bad

from mobilegen.errors import LoadError, UsageError
from mobilegen.load.loader import LoadOptions, detect_kind, load_model


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_all(tmp_path_factory.mktemp("models"))


@pytest.mark.parametrize("kind", ["torchscript", "exported_program", "onnx"])
def test_detects_and_loads(files: dict[str, Path], kind: str) -> None:
    m = load_model(files[kind])
    assert m.kind == kind
    assert len(m.sha256) == 64


def test_detection_ignores_extension(files: dict[str, Path], tmp_path: Path) -> None:
    renamed = tmp_path / "model.bin"
    shutil.copyfile(files["onnx"], renamed)
    assert detect_kind(renamed) == "onnx"
    renamed2 = tmp_path / "model.onnx"
    shutil.copyfile(files["torchscript"], renamed2)
    assert detect_kind(renamed2) == "torchscript"


def test_exported_program_records_shapes(files: dict[str, Path]) -> None:
    m = load_model(files["exported_program"])
    assert m.io_hint is not None and m.io_hint.inputs[0].shape == (1, 3, 8, 8)


def test_onnx_records_shapes(files: dict[str, Path]) -> None:
    m = load_model(files["onnx"])
    assert m.io_hint is not None
    assert [t.name for t in m.io_hint.inputs] == ["x"]
    assert m.io_hint.outputs[0].name == "y"


def test_pickle_refused_without_trust(files: dict[str, Path]) -> None:
    with pytest.raises(LoadError) as info:
        load_model(files["pickle"])
    assert "--trust-pickle" in info.value.one_line()


def test_pickle_loads_with_trust(files: dict[str, Path]) -> None:
    m = load_model(files["pickle"], LoadOptions(trust_pickle=True))
    assert m.kind == "pickle"
    assert not m.module.training


def test_state_dict_needs_class(files: dict[str, Path]) -> None:
    with pytest.raises(LoadError) as info:
        load_model(files["state_dict"])
    assert "--model-class" in info.value.one_line()


def test_state_dict_with_class(files: dict[str, Path], tmp_path: Path) -> None:
    src = tmp_path / "arch.py"
    src.write_text(
        "from torch import nn\n"
        "class Net(nn.Sequential):\n"
        "    def __init__(self, classes=5):\n"
        "        super().__init__(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, classes))\n"
    )
    m = load_model(files["state_dict"], LoadOptions(model_class=f"{src}:Net", model_kwargs='{"classes": 5}'))
    assert m.kind == "state_dict"
    with pytest.raises(LoadError, match="do not fit"):
        load_model(files["state_dict"], LoadOptions(model_class=f"{src}:Net", model_kwargs='{"classes": 7}'))
    with pytest.raises(UsageError, match="JSON"):
        load_model(files["state_dict"], LoadOptions(model_class=f"{src}:Net", model_kwargs="{nope"))
    with pytest.raises(UsageError, match="has no"):
        load_model(files["state_dict"], LoadOptions(model_class=f"{src}:Missing"))


@pytest.mark.parametrize("maker", [hostile_pickle, hostile_torch_save])
def test_hostile_pickle_never_runs(tmp_path: Path, maker) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    maker(path, marker)
    with pytest.raises(LoadError) as info:
        load_model(path)
    assert "--trust-pickle" in info.value.one_line()
    assert not marker.exists()


def test_bad_files(tmp_path: Path) -> None:
    bad = write_bad(tmp_path)
    with pytest.raises(LoadError, match="not a model"):
        load_model(bad["text"])
    with pytest.raises(LoadError, match="zip archive but not a PyTorch model"):
        load_model(bad["zip"])
    with pytest.raises(LoadError, match="empty"):
        load_model(bad["empty"])
    with pytest.raises(UsageError, match="no such file"):
        load_model(tmp_path / "missing.pt")
    with pytest.raises(UsageError, match="directory"):
        load_model(tmp_path)


def test_truncated_onnx(files: dict[str, Path], tmp_path: Path) -> None:
    data = files["onnx"].read_bytes()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(LoadError):
        load_model(cut)
