"""A mobilegen run leaves nothing in the temp folder, not even the cache folder torch makes there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch


@pytest.mark.slow
@pytest.mark.parametrize("preexisting", [False, True])
def test_export_leaves_no_torch_cache_folder(tmp_path: Path, preexisting: bool) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    model = tmp_path / "m.pt2"  # exported with torch.export, whose import makes the cache folder
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    torch.export.save(torch.export.export(net, (torch.randn(2, 4),)), str(model))
    user_cache = None
    if preexisting:  # the user's own cache folder (another torch program made it): kept as it was
        import getpass

        user_cache = tmp / f"torchinductor_{getpass.getuser()}"
        user_cache.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    env["TMPDIR"] = str(tmp)
    proc = subprocess.run(
        [sys.executable, "-m", "mobilegen", "export", str(model), "--input", "input:2x4", "-o", str(tmp_path / "m.onnx")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    left = sorted(p.name for p in tmp.iterdir() if p.name != ".ses")  # .ses: onnxruntime's telemetry file
    assert left == ([user_cache.name] if user_cache else []), left
