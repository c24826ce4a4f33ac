"""Costs a large build no longer pays: the package manifest takes the digest of a model the build hashed
while writing it (and hashes every other file, and a written one that changed since; the absolute-path
check still reads every file); the heap frozen during a build; idle torch/onnxruntime threads sleep."""

from __future__ import annotations

import gc
import hashlib
import os
from pathlib import Path

import pytest

from mobilegen.infra.digest import copy_file, remember_written
from mobilegen.infra.memory import frozen_heap
from mobilegen.package.tree import scan_files


def _digests(root: Path, needles: tuple[bytes, ...] = ()) -> tuple[dict[str, str], tuple[str, ...]]:
    entries, hits = scan_files(root, needles=needles)
    return {e.path: e.sha256 for e in entries}, hits


def test_a_remembered_digest_is_used_while_the_file_is_unchanged(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights" * 1000)
    remember_written(model, "0" * 64)  # not the real digest: shows which one the scan took
    assert _digests(tmp_path)[0]["model.onnx"] == "0" * 64


def test_a_changed_file_is_hashed_again(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights" * 1000)
    remember_written(model, "0" * 64)
    st = model.stat()
    model.write_bytes(b"other!!" * 1000)  # same size
    os.utime(model, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a later write, as the clock would say
    assert _digests(tmp_path)[0]["model.onnx"] == hashlib.sha256(b"other!!" * 1000).hexdigest()
    model.write_bytes(b"longer weights")
    assert _digests(tmp_path)[0]["model.onnx"] == hashlib.sha256(b"longer weights").hexdigest()


def test_a_copy_of_a_remembered_file_is_not_hashed_again(tmp_path: Path) -> None:
    """A project's copy of a model (``copy_file``) takes the model's recorded digest; a copy of a file with
    no record is hashed, and so is a copy changed after it was made."""
    (tmp_path / "model").mkdir()
    model = tmp_path / "model" / "model.ort"
    model.write_bytes(b"weights" * 1000)
    remember_written(model, "0" * 64)
    (tmp_path / "labels.txt").write_bytes(b"cat\n")
    copy_file(model, tmp_path / "copy.ort")
    copy_file(tmp_path / "labels.txt", tmp_path / "copy.txt")
    digests = _digests(tmp_path)[0]
    assert digests["copy.ort"] == "0" * 64
    assert digests["copy.txt"] == hashlib.sha256(b"cat\n").hexdigest()
    assert (tmp_path / "copy.ort").read_bytes() == model.read_bytes()
    (tmp_path / "copy.ort").write_bytes(b"changed")
    assert _digests(tmp_path)[0]["copy.ort"] == hashlib.sha256(b"changed").hexdigest()


def test_a_remembered_file_is_still_searched_for_the_build_path(tmp_path: Path) -> None:
    needle = b"/work/out/.staging-123"
    data = b"\0" * 5000 + needle + b"\0" * 7
    model = tmp_path / "model.ort"
    model.write_bytes(data)
    remember_written(model, hashlib.sha256(data).hexdigest())
    (tmp_path / "empty.onnx").write_bytes(b"")
    remember_written(tmp_path / "empty.onnx", hashlib.sha256(b"").hexdigest())
    digests, hits = _digests(tmp_path, (needle,))
    assert hits == ("model.ort",)
    assert digests == {"empty.onnx": hashlib.sha256(b"").hexdigest(), "model.ort": hashlib.sha256(data).hexdigest()}


def test_the_heap_is_frozen_only_inside() -> None:
    assert gc.get_freeze_count() == 0
    with frozen_heap(("json",)):
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_a_freeze_of_the_callers_own_is_left_alone() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()  # frozen objects may still be freed by reference counting: it only falls
        made_after = [[i] for i in range(1000)]  # a second freeze would take these too: the count would grow
        with frozen_heap():
            assert 0 < gc.get_freeze_count() <= frozen
        assert 0 < gc.get_freeze_count() <= frozen  # not unfrozen: the caller's freeze stands
        del made_after
    finally:
        gc.unfreeze()


def test_torch_threads_sleep_unless_the_user_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    from mobilegen.infra import threads

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    threads.passive_waits()
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    threads.passive_waits()
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_the_cli_entry_sets_the_wait_policy(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    code = "import sys, runpy; sys.argv = ['mobilegen', '--version']\ntry:\n    runpy.run_module('mobilegen', run_name='__main__')\nexcept SystemExit:\n    pass\nimport os; print(os.environ.get('OMP_WAIT_POLICY'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, check=False).stdout.split()
    assert out[-1:] == ["PASSIVE"]
