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
