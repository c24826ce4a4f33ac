"""Render the whole iOS Swift package for two fixed models and compare it, file by file and byte by
byte, with tests/golden/expected/<name>/. ``pytest --update-goldens`` rewrites the expected trees."""

from __future__ import annotations

from pathlib import Path

import pytest
from golden_trees import assert_tree_matches, tree
from ios_specs import FAKE_ORT, NAMES, make_specs

from mobilegen.errors import UsageError
from mobilegen.targets.ios.project import render_ios


@pytest.mark.parametrize("name", NAMES)
def test_ios_tree_matches_golden(name: str, tmp_path: Path, update_goldens: bool) -> None:
    spec, opts = make_specs(tmp_path / "inputs")[name]
    out = tmp_path / name
    written = render_ios(spec, opts, out)
    actual = tree(out)
    assert sorted(actual) == [p.as_posix() for p in written]

    assert_tree_matches(out, name, update_goldens)


def test_resources_are_copied_byte_exact(tmp_path: Path) -> None:
    spec, opts = make_specs(tmp_path / "inputs")["ios_two_input"]
    out = tmp_path / "out"
    written = {p.as_posix() for p in render_ios(spec, opts, out)}
    assert "Sources/TextModel/Resources/TextModel.ort" in written
    assert (out / "Sources/TextModel/Resources/TextModel.ort").read_bytes() == FAKE_ORT
    assert (out / "Tests/TextModelTests/Resources/golden.mgv").read_bytes() == spec.golden_mgv.read_bytes()


def test_render_refuses_existing_destination(tmp_path: Path) -> None:
    spec, opts = make_specs(tmp_path / "inputs")["ios_cnn"]
    (tmp_path / "out").mkdir()
    with pytest.raises(UsageError):
        render_ios(spec, opts, tmp_path / "out")


def test_failed_render_leaves_nothing_behind(tmp_path: Path) -> None:
    from dataclasses import replace

    from mobilegen.spec import IOSpec, TensorSpec

    spec, opts = make_specs(tmp_path / "inputs")["ios_cnn"]
    bad = replace(spec, io=IOSpec((TensorSpec("x", "float16", (1, 4)),), (TensorSpec("y", "bool", (1,)),)))
    with pytest.raises(UsageError):
        render_ios(bad, opts, tmp_path / "out")
    assert not (tmp_path / "out").exists()
