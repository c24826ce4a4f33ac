"""Render the whole Android project for two fixed models and compare it, file by file and byte by byte,
with tests/golden/expected/<name>/. ``pytest --update-goldens`` rewrites the expected trees."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from android_specs import make_specs  # noqa: E402

from mobilegen.android import render_android  # noqa: E402

EXPECTED = Path(__file__).parent / "expected"
NAMES = ("android_cnn", "android_two_input")


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", NAMES)
def test_android_tree_matches_golden(name: str, tmp_path: Path, update_goldens: bool) -> None:
    spec, opts = make_specs(tmp_path / "inputs")[name]
    out = tmp_path / name
    written = render_android(spec, opts, out)
    actual = _tree(out)
    assert sorted(actual) == sorted(p.as_posix() for p in written)
    assert os.stat(out / "gradlew").st_mode & stat.S_IXUSR, "gradlew must stay executable"

    expected_dir = EXPECTED / name
    if update_goldens:
        shutil.rmtree(expected_dir, ignore_errors=True)
        shutil.copytree(out, expected_dir)
        return
    assert expected_dir.is_dir(), f"no golden tree for {name}; run pytest --update-goldens and review it"
    expected = _tree(expected_dir)
    assert sorted(actual) == sorted(expected), "file lists differ"
    changed = [path for path in expected if expected[path] != actual[path]]
    assert not changed, f"files differ from the golden tree: {changed} (pytest --update-goldens rewrites them)"


def test_render_refuses_existing_destination(tmp_path: Path) -> None:
    from mobilegen.errors import UsageError

    spec, opts = make_specs(tmp_path / "inputs")["android_cnn"]
    (tmp_path / "out").mkdir()
    with pytest.raises(UsageError):
        render_android(spec, opts, tmp_path / "out")
