"""Render the whole Android project for two fixed models and compare it, file by file and byte by byte,
with tests/golden/expected/<name>/. ``pytest --update-goldens`` rewrites the expected trees."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from android_specs import make_specs
from golden_trees import assert_tree_matches, tree

from mobilegen.targets.android.project import render_android

NAMES = ("android_cnn", "android_two_input")


@pytest.mark.parametrize("name", NAMES)
def test_android_tree_matches_golden(name: str, tmp_path: Path, update_goldens: bool) -> None:
    spec, opts = make_specs(tmp_path / "inputs")[name]
    out = tmp_path / name
    written = render_android(spec, opts, out)
    actual = tree(out)
    assert sorted(actual) == sorted(p.as_posix() for p in written)
    assert os.stat(out / "gradlew").st_mode & stat.S_IXUSR, "gradlew must stay executable"

    assert_tree_matches(out, name, update_goldens)


def test_render_refuses_existing_destination(tmp_path: Path) -> None:
    from mobilegen.errors import UsageError

    spec, opts = make_specs(tmp_path / "inputs")["android_cnn"]
    (tmp_path / "out").mkdir()
    with pytest.raises(UsageError):
        render_android(spec, opts, tmp_path / "out")
