"""The real CLI as a process under Ctrl-C and kill -9 (issue 9 items 13, 14): exit 130 and nothing left
behind, whatever the run was doing (importing torch, initialising onnxruntime, exporting); staging of a
killed run is removed by the next run into the same folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "examples" / "mobilenet_tiny.pt"
pytestmark = pytest.mark.slow


def start(out: Path, tmpdir: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mobilegen", "package", str(MODEL), "--input", "image:1x3x64x64", "--android", "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmpdir)},
    )


def mine(tmpdir: Path) -> list[str]:
    """mobilegen's entries in TMPDIR (other libraries keep their own files there)."""
    return [p.name for p in tmpdir.iterdir() if p.name.startswith("mobilegen-")]


def wait_for_staging(parent: Path, proc: subprocess.Popen[str]) -> bool:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if any(p.name.startswith(".out.tmp-") for p in parent.iterdir()):
            return True
        time.sleep(0.01)
    return False


def test_sigint_at_any_point_exits_130_and_leaves_nothing(tmp_path: Path) -> None:
    interrupted = 0
    # after the staging folder appears: torch import, model load and export, onnxruntime initialising
    for i, delay in enumerate((None, 0.0, 0.8, 1.4, 2.0)):
        parent, tmpdir = tmp_path / f"run{i}", tmp_path / f"tmp{i}"
        parent.mkdir()
        tmpdir.mkdir()
        proc = start(parent / "out", tmpdir)
        if delay is None:
            time.sleep(0.3)  # still importing mobilegen's own modules
        else:
            wait_for_staging(parent, proc)
            time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        if proc.returncode == 0:  # a fast machine finished first: then the output must be whole
            assert (parent / "out" / "manifest.json").is_file()
            assert [p.name for p in parent.iterdir()] == ["out"]
            continue
        interrupted += 1
        assert proc.returncode == 130, (delay, proc.returncode, err)
        assert err.strip().splitlines()[-1:] == ["interrupted"], (delay, err)
        assert "Traceback" not in err, err
        assert list(parent.iterdir()) == [], (delay, list(parent.iterdir()))
        assert mine(tmpdir) == [], delay
    assert interrupted >= 3


def test_staging_of_a_killed_run_is_removed_by_the_next_run(tmp_path: Path) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = start(tmp_path / "out", tmpdir)
    assert wait_for_staging(tmp_path, proc)
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    left = [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.tmp-")]
    assert left  # kill -9 cleans nothing up by itself
    done = subprocess.run(
        [sys.executable, "-m", "mobilegen", "package", str(MODEL), "--input", "image:1x3x64x64", "--android", "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env={**os.environ, "TMPDIR": str(tmpdir)},
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "tmp"]
    assert mine(tmpdir) == []
