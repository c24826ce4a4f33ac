"""The --runtime registry (mobilegen.backends): names, platforms, the refusals that need no model."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from mobilegen import backends
from mobilegen.errors import UsageError
from mobilegen.spec import TensorSpec


def test_every_entry_names_a_module_with_the_contract() -> None:
    for b in backends.BUILTIN:
        spec = importlib.util.find_spec(b.module)
        assert spec is not None, b.module
        src = Path(spec.origin or "").read_text(encoding="utf-8")
        assert "def convert(" in src and "def host_runner(" in src, b.name
        assert b.platforms and b.suffix.startswith(".")


def test_runtimes_parse_in_registry_order_and_keep_ort() -> None:
    assert backends.parse_runtimes(None, ["android"]) == ("ort",)
    assert backends.parse_runtimes("litert", ["android"]) == ("ort", "litert")
    assert backends.parse_runtimes("litert, ort", ["android", "ios"]) == ("ort", "litert")


@pytest.mark.parametrize(
    ("text", "platforms", "needle"),
    [
        ("tflite", ["android"], "unknown runtime 'tflite'"),
        ("litert", ["ios"], "LiteRT runs on android, this build is for ios"),
        ("ort,", ["android"], "empty name"),
    ],
)
def test_bad_runtimes_are_refused(text: str, platforms: list[str], needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        backends.parse_runtimes(text, platforms)


def test_the_wrapper_runtime_per_platform() -> None:
    assert backends.for_platform(("ort", "litert"), "android").name == "litert"
    assert backends.for_platform(("ort", "litert"), "ios").name == "ort"
    assert backends.for_platform(("ort",), "android").name == "ort"


def test_missing_dependency_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    # ai-edge-litert (the host runtime) present, litert-torch (the converter) not
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "litert_torch" else object())
    with pytest.raises(UsageError) as err:
        backends.check_available(backends.get("litert"))
    assert str(err.value) == "--runtime litert needs litert-torch, which is not installed"
    assert err.value.hint is not None and "pip install 'mobilegen[litert]'" in err.value.hint


def test_static_shape_limits_are_checked_before_conversion() -> None:
    lt = backends.get("litert")
    with pytest.raises(UsageError, match=r"fixed shapes only, --dynamic x:0"):
        backends.check_static(lt, [TensorSpec("x", "float32", (1, 4))], dynamic_flags=["x:0"])
    with pytest.raises(UsageError, match=r"input 'ids' has the dynamic dim\(s\) seq \(1xseq\)") as err:
        backends.check_static(lt, [TensorSpec("ids", "int64", (1, "seq"))])
    assert err.value.hint is not None and "--input ids:1x1" in err.value.hint
    backends.check_static(lt, [TensorSpec("x", "float32", (1, 3, 8, 8))])  # fixed: accepted
    backends.check_static(backends.get("ort"), [TensorSpec("ids", "int64", (1, "seq"))])  # ORT takes dynamic dims


def test_host_runner_by_suffix() -> None:
    assert backends.by_suffix(".ort") is backends.get("ort")
    assert backends.by_suffix(".tflite") is backends.get("litert")
    with pytest.raises(UsageError, match="no runtime runs .bin model files"):
        backends.host_runner(Path("model.bin"))
