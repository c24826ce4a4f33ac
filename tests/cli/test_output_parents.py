"""Output folders: a failed output removes the parent folders it made; a successful one keeps them."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import assert_fails, invoke

from mobilegen.infra.outputs import staged_files


def test_failed_folder_output_removes_the_parents_it_made(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"garbage\n")
    assert_fails(invoke("android", bad, "-o", tmp_path / "out8" / "deep" / "p"), 3, "bad.pt is not a model")
    (tmp_path / "keep").mkdir()
    assert_fails(invoke("android", bad, "-o", tmp_path / "keep" / "new" / "p", "--zip"), 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.pt", "keep"]
    assert list((tmp_path / "keep").iterdir()) == []  # a folder that was there stays


def test_failed_file_output_removes_the_parents_it_made(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"garbage\n")
    assert_fails(invoke("export", bad, "-o", tmp_path / "q7" / "a" / "c.onnx"), 3)
    assert_fails(invoke("convert", bad, "-o", tmp_path / "q8" / "c.ort"), 3)
    (tmp_path / "keep").mkdir()
    assert_fails(invoke("export", bad, "-o", tmp_path / "keep" / "c.onnx"), 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.pt", "keep"]
    assert list((tmp_path / "keep").iterdir()) == []


def test_staged_files_keep_the_parents_they_made_on_success_only(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), staged_files([tmp_path / "a" / "b" / "f.txt"], force=False) as (staged,):
        staged.path.write_text("x")
        raise RuntimeError("the run failed")
    assert list(tmp_path.iterdir()) == []
    with staged_files([tmp_path / "a" / "b" / "f.txt"], force=False) as (staged,):
        staged.path.write_text("x")
    assert (tmp_path / "a" / "b" / "f.txt").read_text() == "x"
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["f.txt"]
