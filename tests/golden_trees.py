"""Whole-tree golden comparison shared by the Android and iOS golden tests, and the log of what
``pytest --update-goldens`` rewrote (printed at the end of the run by ``conftest.pytest_terminal_summary``;
a test whose golden changed is reported as skipped, so a blessing run is never silently green)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

EXPECTED = Path(__file__).parent / "golden" / "expected"
REWRITTEN: list[str] = []  # "added|removed|changed <path>" per file rewritten in this run


def tree(root: Path) -> dict[str, bytes]:
    """Every file below ``root``: relative POSIX path → bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def report_rewrite(where: str, before: dict[str, bytes], after: dict[str, bytes]) -> None:
    """Log the files that differ between ``before`` and ``after`` and skip the calling test if any do."""
    changes = [f"added   {where}/{p}" for p in sorted(after.keys() - before.keys())]
    changes += [f"removed {where}/{p}" for p in sorted(before.keys() - after.keys())]
    changes += [f"changed {where}/{p}" for p in sorted(before.keys() & after.keys()) if before[p] != after[p]]
    if changes:
        REWRITTEN.extend(changes)
        pytest.skip(f"golden {where} rewritten: {len(changes)} file(s) added, removed or changed")


def assert_tree_matches(out: Path, name: str, update: bool) -> None:
    """``out`` equals ``golden/expected/<name>`` file for file and byte for byte (``--update-goldens`` rewrites it)."""
    expected_dir = EXPECTED / name
    if update:
        before = tree(expected_dir) if expected_dir.is_dir() else {}
        shutil.rmtree(expected_dir, ignore_errors=True)
        shutil.copytree(out, expected_dir)
        report_rewrite(f"tests/golden/expected/{name}", before, tree(expected_dir))
        return
    assert expected_dir.is_dir(), f"no golden tree for {name}; run pytest --update-goldens and review it"
    actual, expected = tree(out), tree(expected_dir)
    assert sorted(actual) == sorted(expected), (
        f"file lists differ: only in the output {sorted(actual.keys() - expected.keys())}, "
        f"only in the golden tree {sorted(expected.keys() - actual.keys())}"
    )
    changed = [path for path in expected if expected[path] != actual[path]]
    assert not changed, f"files differ from the golden tree: {changed} (pytest --update-goldens rewrites them)"
