"""Peak memory of a build with large weights, measured on a child process (issues 25 and 27).

The onnx package's light VGG19 is a few KB of ConstantOfShape placeholders that onnxruntime folds into
~513 MB of weights: every stage after the export (conversion, canonicalization, the verification's
sessions) holds them. Before the stages let go of each copy, `mobilegen convert` on it peaked at 2.8 GB
(5.5x the .ort); now at ~1.7 GB (3.4x, of which ~0.3 GB is the interpreter with torch and onnxruntime
imported; 1.77-1.84 GB, 3.5-3.6x, measured again after the issue-27 conversion changes). One full-suite run
on a loaded machine saw 2.16 GiB (4.5x) once, so the bound is 5x: above that noise, and still failed by any
stage that keeps two more copies of the weights alive at once (3.5x + 2x). Only memory is asserted, never time.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

VGG19 = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_vgg19.onnx"


def peak_rss_bytes(cmd: list[str], cwd: Path) -> int:
    """Run ``cmd``; its peak resident memory (this child's own, from wait4, not every child's so far)."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    assert os.waitstatus_to_exitcode(status) == 0, err[-2000:]
    return int(usage.ru_maxrss) * 1024  # KiB on Linux


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss is in KiB on Linux only")
@pytest.mark.skipif(not VGG19.is_file(), reason="this onnx wheel ships no light models")
def test_convert_peak_memory_is_bounded_by_the_model_size(tmp_path: Path) -> None:
    out = tmp_path / "vgg.ort"
    peak = peak_rss_bytes([sys.executable, "-m", "mobilegen", "convert", str(VGG19), "-o", str(out), "--allow-degenerate"], tmp_path)
    size = out.stat().st_size
    assert size > 400e6  # the weights are really there
    assert peak <= 5.0 * size, f"peak {peak / 2**30:.2f} GiB for a {size / 2**30:.2f} GiB model ({peak / size:.1f}x)"
