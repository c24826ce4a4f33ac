"""``--runtime`` on android / ios / package: refusals in one line, before any output (no litert needed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from cli_helpers import assert_fails, invoke

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mobilenet_tiny.pt"


@pytest.fixture
def no_litert(monkeypatch: pytest.MonkeyPatch) -> None:
    """litert-torch absent, as in the main environment (the litert environment has it)."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("litert_torch", "ai_edge_litert") else real(name, *a))


def test_missing_extra_is_named(tmp_path: Path, no_litert: None) -> None:
    out = tmp_path / "o"
    r = invoke("android", EXAMPLE, "--input", "image:1x3x64x64", "--runtime", "litert", "-o", out)
    line = assert_fails(r, 2, "--runtime litert needs litert-torch", "pip install 'mobilegen[litert]'")
    assert "ai-edge-litert" in line
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("ios", EXAMPLE, "--runtime", "litert"), ("LiteRT runs on android, this build is for ios",)),
        (("android", EXAMPLE, "--runtime", "tflite"), ("unknown runtime 'tflite'", "ort, litert")),
        (("package", EXAMPLE, "--ios", "--runtime", "ort,litert"), ("LiteRT runs on android",)),
    ],
)
def test_bad_runtime_names(tmp_path: Path, args: tuple[object, ...], needles: tuple[str, ...]) -> None:
    out = tmp_path / "o"
    assert_fails(invoke(*args, "-o", out), 2, *needles)
    assert not out.exists()


@pytest.fixture
def litert_present(monkeypatch: pytest.MonkeyPatch) -> None:
    """litert-torch and ai-edge-litert seen as installed: the refusals below come before any import of them."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name in ("litert_torch", "ai_edge_litert") else real(name, *a))


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (("--input", "image:batchx3x64x64"), ("--runtime litert converts fixed shapes only", "input 'image' has the dynamic dim(s) batch", "--input image:1x3x64x64")),
        (("--input", "image:1x3x64x64", "--dynamic", "image:0"), ("--runtime litert converts fixed shapes only, --dynamic image:0",)),
        (("--input", "image:1x3x64x64", "--quantize", "fp16"), ("--runtime litert has no --quantize fp16", "--quantize int8")),
    ],
)
def test_litert_limits_are_refused_before_any_work(tmp_path: Path, litert_present: None, extra: tuple[str, ...], needles: tuple[str, ...]) -> None:
    out = tmp_path / "o"
    assert_fails(invoke("android", EXAMPLE, *extra, "--runtime", "litert", "-o", out), 2, *needles)
    assert not out.exists()


def test_an_onnx_model_has_no_module_to_convert(tmp_path: Path, litert_present: None) -> None:
    src = tmp_path / "m.onnx"
    src.write_bytes(b"not read: refused before loading")
    out = tmp_path / "o"
    assert_fails(invoke("android", src, "--input", "x:1x4", "--runtime", "litert", "-o", out), 2, "--runtime litert converts the PyTorch model, m.onnx is ONNX")
    assert not out.exists()


def test_no_task_api_on_litert_yet(tmp_path: Path, litert_present: None) -> None:
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(f"class {i}" for i in range(10)) + "\n", encoding="utf-8")
    out = tmp_path / "o"
    r = invoke("android", EXAMPLE, "--input", "image:1x3x64x64", "--task", "image-classification", "--labels", labels, "--runtime", "litert", "-o", out)
    assert_fails(r, 2, "--runtime litert has no --task API yet")
    assert not out.exists()
