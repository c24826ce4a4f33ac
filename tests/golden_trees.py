"""Whole-tree golden comparison shared by the Android and iOS golden tests."""

from __future__ import annotations

import shutil
from pathlib import Path

EXPECTED = Path(__file__).parent / "golden" / "expected"


def tree(root: Path) -> dict[str, bytes]:
    """Every file below ``root``: relative POSIX path → bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def assert_tree_matches(out: Path, name: str, update: bool) -> None:
    """``out`` equals ``golden/expected/<name>`` file for file and byte for byte (``--update-goldens`` rewrites it)."""
    expected_dir = EXPECTED / name
    if update:
        shutil.rmtree(expected_dir, ignore_errors=True)
        shutil.copytree(out, expected_dir)
        return
    assert expected_dir.is_dir(), f"no golden tree for {name}; run pytest --update-goldens and review it"
    actual, expected = tree(out), tree(expected_dir)
    assert sorted(actual) == sorted(expected), "file lists differ"
    changed = [path for path in expected if expected[path] != actual[path]]
    assert not changed, f"files differ from the golden tree: {changed} (pytest --update-goldens rewrites them)"
