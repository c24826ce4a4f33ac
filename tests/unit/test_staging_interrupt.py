"""Ctrl-C while the staging folder beside -o is being made (a faster start-up made this moment reachable:
the signal landed inside ``tempfile.mkdtemp``, after its mkdir) leaves nothing behind."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from mobilegen.infra import outputs


@pytest.mark.parametrize("where", ["mkdtemp", "owner"])
def test_interrupt_while_staging_is_made_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    real_mkdtemp = tempfile.mkdtemp

    def interrupted_mkdtemp(*args: object, **kwargs: object) -> str:
        real_mkdtemp(*args, **kwargs)  # type: ignore[call-overload]
        raise KeyboardInterrupt  # after the folder exists, before its name is returned

    def interrupted_owner(_path: Path) -> None:
        raise KeyboardInterrupt

    if where == "mkdtemp":
        monkeypatch.setattr(outputs.tempfile, "mkdtemp", interrupted_mkdtemp)
    else:
        monkeypatch.setattr(outputs, "write_owner", interrupted_owner)
    parent = tmp_path / "parent"
    parent.mkdir()
    (parent / ".other.tmp-1-keep").mkdir()  # another run's staging is not ours to remove
    with pytest.raises(KeyboardInterrupt), outputs.staged_output(parent / "out", force=False):
        pass
    assert sorted(p.name for p in parent.iterdir()) == [".other.tmp-1-keep"]
