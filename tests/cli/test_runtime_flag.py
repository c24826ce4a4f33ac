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


@pytest.mark.skipif(importlib.util.find_spec("litert_torch") is None, reason="litert-torch not installed (make test-litert runs this)")
def test_dynamic_axis_refused_before_conversion(tmp_path: Path) -> None:
    out = tmp_path / "o"
    r = invoke("android", EXAMPLE, "--input", "image:batchx3x64x64", "--runtime", "litert", "-o", out)
    assert_fails(r, 2, "--runtime litert converts fixed shapes only", "'image'")
    assert not out.exists()
