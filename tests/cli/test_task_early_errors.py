"""Task flag mistakes that the model's declared IO shows are reported before the export (issue 27): a
``.pt2``'s recorded shapes, a TorchScript file's ``--input`` and one forward give the inputs and the
class count, so ``--labels``/``--top-k``/``--crop``/``--layout``/``--resize`` mismatches need no export.
Asserted without timings: the export function is spied on and never called. ``--mean 0.5 0.5 0.5``
(spaces) says to write the values with commas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from cli_helpers import assert_fails, invoke
from torch import nn

import mobilegen.export.stage


class Classifier(nn.Module):
    """x [1,3,16,16] → y [1,10]."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.fc(self.conv(x).mean(dim=(2, 3)))
        return out


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[str]]]:
    root = tmp_path_factory.mktemp("early")
    torch.manual_seed(0)
    m = Classifier().eval()
    x = torch.randn(1, 3, 16, 16)
    torch.jit.trace(m, (x,)).save(str(root / "cls.pt"))
    torch.export.save(torch.export.export(m, (x,)), root / "cls.pt2")
    (root / "five.txt").write_text("a\nb\nc\nd\ne\n", encoding="utf-8")
    return {"torchscript": (root / "cls.pt", ["--input", "x:1x3x16x16"]), "pt2": (root / "cls.pt2", [])}


@pytest.fixture
def exports(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every call of the build's export function."""
    calls: list[Any] = []
    real = mobilegen.export.stage.export_onnx

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0].source)
        return real(*args, **kwargs)

    monkeypatch.setattr(mobilegen.export.stage, "export_onnx", spy)
    return calls


CASES = [
    (["--task", "image-classification", "--labels", "{five}"], "--labels has 5 labels but the model has 10 classes"),
    (["--task", "image", "--top-k", "20"], "--top-k 20 is more than the model's 10 classes"),
    (["--task", "image", "--crop", "32x32"], "--crop 32x32 does not match the model's input 'x' (1x3x16x16: 16x16)"),
    (["--task", "image", "--layout", "nhwc"], "with --layout nhwc needs a 1xHxWx3 input"),
    (["--task", "image", "--resize", "8"], "--resize 8 is smaller than the model's 16x16 input"),
]


@pytest.mark.parametrize("kind", ["torchscript", "pt2"])
@pytest.mark.parametrize(("flags", "needle"), CASES, ids=["labels", "top-k", "crop", "layout", "resize"])
def test_task_mismatch_before_the_export(
    models: dict[str, tuple[Path, list[str]]], exports: list[Any], tmp_path: Path, kind: str, flags: list[str], needle: str
) -> None:
    path, extra = models[kind]
    five = path.parent / "five.txt"
    out = tmp_path / "out"
    args = [f.format(five=five) for f in flags]
    assert_fails(invoke("android", path, "--nnapi", *extra, "-o", out, *args), 2, needle)
    assert exports == []  # found before the export
    assert not out.exists() and not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_valid_task_flags_export(models: dict[str, tuple[Path, list[str]]], exports: list[Any], tmp_path: Path) -> None:
    """The spy sees the export when the flags fit the model (so the tests above can fail)."""
    path, _ = models["pt2"]
    r = invoke("android", path, "--nnapi", "-o", tmp_path / "out", "--task", "image", "--top-k", "3", "--softmax")
    assert r.exit_code == 0, r.stderr
    assert exports == [path]


@pytest.mark.parametrize(("flag", "spelled"), [("--mean", ["--mean", "0.5"]), ("--std", ["--std", "0.5"]), ("--mean", ["--mean=0.5"]), ("--std", ["--std", "0.5,"])])
def test_spaced_mean_says_commas(models: dict[str, tuple[Path, list[str]]], tmp_path: Path, flag: str, spelled: list[str]) -> None:
    path, _ = models["pt2"]
    rest = ["0.25,", "0.125"] if spelled[-1].endswith(",") else ["0.25", "0.125"]
    line = assert_fails(invoke("android", path, "--task", "image", *spelled, *rest, "-o", tmp_path / "o"), 2, "comma-separated")
    assert f"write {flag} 0.5,0.25,0.125" in line
    assert "unexpected extra argument" not in line


class HalfOut(nn.Module):
    """x [1,4] → float16 [1,2]: an output dtype the Android wrapper cannot carry."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.lin(x).half()
        return out


@pytest.mark.parametrize("kind", ["torchscript", "pt2"])
def test_target_dtype_refusal_before_the_export(exports: list[Any], tmp_path: Path, kind: str) -> None:
    """Without --task the targets' IO checks run on the IO known before the export too."""
    x = torch.randn(1, 4)
    m = HalfOut().eval()
    if kind == "torchscript":
        path = tmp_path / "half.pt"
        torch.jit.trace(m, (x,)).save(str(path))
    else:
        path = tmp_path / "half.pt2"
        torch.export.save(torch.export.export(m, (x,)), path)
    out = tmp_path / "out"
    assert_fails(invoke("android", path, "--input", "x:1x4", "-o", out), 2, "the Android wrapper cannot express these tensors", "float16")
    assert exports == []
    assert not out.exists()


@pytest.mark.parametrize("kind", ["torchscript", "pt2"])
def test_output_name_count_before_the_export(models: dict[str, tuple[Path, list[str]]], exports: list[Any], tmp_path: Path, kind: str) -> None:
    path, extra = models[kind]
    out = tmp_path / "out"
    r = invoke("android", path, *extra, "--output-name", "logits", "--output-name", "extra", "-o", out)
    assert_fails(r, 2, "--output-name given 2 times, the model has 1 output")
    assert exports == []
    assert not out.exists()


def test_spaced_mean_is_quoted_as_typed(models: dict[str, tuple[Path, list[str]]], tmp_path: Path) -> None:
    path, _ = models["pt2"]
    line = assert_fails(invoke("android", path, "--task", "image", "--mean", "0.5,", "0.5,", "0.5", "-o", tmp_path / "o"), 2, "comma-separated")
    assert "got '0.5, 0.5, 0.5'" in line and "write --mean 0.5,0.5,0.5" in line


def test_spaced_mean_of_two_hints_only_valid_forms(models: dict[str, tuple[Path, list[str]]], tmp_path: Path) -> None:
    """--mean 0.5,0.5 is refused ("needs one finite value or three"): the hint must not suggest it."""
    path, _ = models["pt2"]
    line = assert_fails(invoke("android", path, "--task", "image", "--mean", "0.5", "0.25", "-o", tmp_path / "o"), 2, "got '0.5 0.25'")
    assert "0.5,0.25" not in line
    assert "write one value (--mean 0.5) or 3 comma-separated (--mean A,B,C)" in line


def test_other_extra_arguments_keep_clicks_message(models: dict[str, tuple[Path, list[str]]], tmp_path: Path) -> None:
    path, _ = models["pt2"]
    line = assert_fails(invoke("android", path, "--task", "image", "--mean", "0.5", "extra", "-o", tmp_path / "o"), 2, "unexpected extra argument")
    assert "comma" not in line


class OneLogit(nn.Module):
    """x [1,4] → y [1,1]: one class."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.lin(x)
        return out


def test_softmax_over_one_class_before_the_export(exports: list[Any], tmp_path: Path) -> None:
    """--softmax on a [1, 1] output is always 1 (it failed late as a degenerate verification): refused before the export."""
    path = tmp_path / "one.pt"
    torch.jit.trace(OneLogit().eval(), (torch.randn(1, 4),)).save(str(path))
    out = tmp_path / "out"
    r = invoke("android", path, "--input", "x:1x4", "--task", "audio", "--sample-rate", "8000", "--softmax", "-o", out)
    line = assert_fails(r, 2, "--softmax over one class:", "a softmax over one class is always 1")
    assert "degenerate" not in line
    assert exports == []
    assert not out.exists()


def _npz(path: Path, **arrays: Any) -> Path:
    import numpy as np

    np.savez(path, **{k: np.asarray(v, dtype=np.float32) for k, v in arrays.items()})
    return path


DATA_CASES = [
    ("range", lambda d: ["--range", "foo=0:5"], "--range foo=0:5: the model has no input 'foo'"),
    ("sample", lambda d: ["--sample", str(_npz(d / "s.npz", foo=[[0.0]]))], "has no array 'x'"),
    ("calibration", lambda d: ["--quantize", "int8", "--calibration", str(_npz(d / "c.npz", image=[[0.0]]))], "array 'image' is not a model input (inputs: x)"),
    ("calibration-folder", lambda d: ["--quantize", "int8", "--calibration", str(_npz((d / "cal").mkdir() or d / "cal" / "a.npz", y=[[0.0]]).parent)], "array 'y' is not a model input"),
    ("eval", lambda d: ["--quantize", "int8", "--calibration", "random", "--eval", str(_npz(d / "e.npz", foo=[[0.0]]))], "--eval"),
]


@pytest.mark.parametrize("kind", ["torchscript", "pt2"])
@pytest.mark.parametrize(("case", "flags", "needle"), DATA_CASES, ids=[c[0] for c in DATA_CASES])
def test_data_file_names_before_the_export(
    models: dict[str, tuple[Path, list[str]]], exports: list[Any], tmp_path: Path, kind: str, case: str, flags: Any, needle: str
) -> None:
    """Input names in --range, --sample, --calibration (a file or a folder) and --eval are checked against the
    inputs the export will have, before it (read from the files' zip directories; a review found each of
    these reported only after the export). Their shapes and values are still checked after it."""
    path, extra = models[kind]
    out = tmp_path / "out"
    line = assert_fails(invoke("android", path, "--nnapi", *extra, "-o", out, *flags(tmp_path)), 2, needle)
    assert "is not a model input" in line or "no input" in line or "no array" in line
    assert exports == []
    assert not out.exists()


def test_data_files_with_the_right_names_export(models: dict[str, tuple[Path, list[str]]], exports: list[Any], tmp_path: Path) -> None:
    """The spy sees the export when the names fit (so the test above can fail); a wrong shape is still
    reported after it, by the full read."""
    path, _ = models["pt2"]
    bad_shape = _npz(tmp_path / "s.npz", x=[[0.0, 1.0]])
    line = assert_fails(invoke("android", path, "--nnapi", "-o", tmp_path / "out", "--range", "x=0:1", "--sample", bad_shape), 2, "--sample")
    assert exports == [path], line
