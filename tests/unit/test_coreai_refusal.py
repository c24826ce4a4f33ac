"""Without the [coreai] extra, --runtime coreai is refused in one line naming the extra (needs nothing installed)."""

from __future__ import annotations

import builtins
from typing import Any

import pytest

from mobilegen.errors import UsageError


def test_missing_extra_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from mobilegen.backends.coreai import require

    real_import = builtins.__import__

    def no_coreai(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] in ("coreai_torch", "coreai", "coreai_opt"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_coreai)
    with pytest.raises(UsageError) as err:
        require()
    assert err.value.message == "--runtime coreai needs coreai-torch, coreai-core, coreai-opt, which are not installed"
    assert err.value.hint is not None and err.value.hint.startswith("pip install 'mobilegen[coreai]'")
    assert err.value.exit_code == 2


def test_registry_refuses_coreai_without_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """--runtime coreai (mobilegen.backends): the converter missing, the host runtime present."""
    import importlib.util

    from mobilegen import backends

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("coreai_torch", "coreai_opt") else object())
    with pytest.raises(UsageError) as err:
        backends.check_available(backends.get("coreai"))
    assert str(err.value) == "--runtime coreai needs coreai-torch, coreai-opt, which are not installed"
    assert err.value.hint is not None and err.value.hint.startswith("pip install 'mobilegen[coreai]'")


def test_coreai_is_an_ios_runtime_beside_ort() -> None:
    from mobilegen import backends

    assert backends.parse_runtimes("ort,coreai", ["android", "ios"]) == ("ort", "coreai")
    assert backends.for_platform(("ort", "coreai"), "ios").name == "coreai"
    assert backends.for_platform(("ort", "coreai"), "android").name == "ort"
    assert backends.by_suffix(".aimodel") is backends.get("coreai")
    with pytest.raises(UsageError, match="Core AI runs on ios, this build is for android"):
        backends.parse_runtimes("coreai", ["android"])


def test_quantize_with_coreai_is_refused_before_any_work(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    import importlib.util

    from mobilegen import backends
    from mobilegen.backends import stage
    from mobilegen.options import BuildOptions
    from mobilegen.quantize.options import QuantizeOptions
    from mobilegen.targets.ios.project import IosOptions

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())  # the extra "installed"
    opts = BuildOptions(model=tmp_path / "m.pt", out=tmp_path / "o", targets={"ios": IosOptions()}, runtimes=("ort", "coreai"),
                        quantize=QuantizeOptions(mode="int8"))
    with pytest.raises(UsageError) as err:
        stage.check_options(opts)
    assert str(err.value) == "--runtime coreai has no --quantize int8"
    assert err.value.hint == "drop --quantize (the build ships Core AI's fp32 model)"
    assert backends.get("coreai").quantize_modes == ()
