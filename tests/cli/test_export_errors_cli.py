"""`mobilegen export` on models torch 2.13's exporters really fail on: exit 4, and the one error line names
the innermost cause (the primary exporter's first), never torch's "Next steps:" boilerplate."""

from __future__ import annotations

import getpass
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from cli_helpers import assert_fails, invoke, private_tmpdir

ARCH = '''
import torch
from torch import nn


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(1))


class BranchThenEig(Base):
    """torch.export: data-dependent branch; the TorchScript exporter: no symbolic for linalg_eigvals."""

    def forward(self, x):
        if x.abs().sum() > 0:
            return torch.linalg.eigvals(x * self.w).real
        return x.sum(0)


class Branch(Base):
    """torch.export fails on the branch; the TorchScript trace works (and keeps one branch)."""

    def forward(self, x):
        if x.sum() > 0:
            return x * self.w
        return x - self.w


class Eig(Base):
    def forward(self, x):
        return torch.linalg.eigvals(x * self.w).real
'''


@pytest.fixture(autouse=True)
def _tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # .ses: onnxruntime's telemetry file; torchinductor_USER: the cache folder torch._dynamo makes in the temp
    # folder when it is first imported (by any torch.export run), kept across runs by design.
    yield from private_tmpdir(tmp_path, monkeypatch, ignore=frozenset({".ses", f"torchinductor_{getpass.getuser()}"}))


@pytest.fixture
def models(tmp_path: Path) -> Path:
    d = tmp_path / "models"
    d.mkdir()
    (d / "arch.py").write_text(ARCH)
    torch.save({"w": torch.ones(1)}, d / "weights.pt")
    return d


def _state_dict_export(models: Path, cls: str, *extra: str) -> tuple[object, Path]:
    out = models.parent / "out" / "m.onnx"
    out.parent.mkdir(exist_ok=True)
    args = ("export", models / "weights.pt", "--model-class", f"{models / 'arch.py'}:{cls}", "--input", "x:3x3", "-o", out, *extra)
    return invoke(*args), out


def test_both_exporters_fail_primary_cause_first(models: Path) -> None:
    r, out = _state_dict_export(models, "BranchThenEig")
    line = assert_fails(r, 4, "torch.export could not export weights.pt: Could not guard on data-dependent expression")
    assert "Next steps" not in r.stderr and "This is step" not in r.stderr
    assert "arch.py:" in line and "in forward: `if x.abs().sum() > 0:`" in line  # the model's line that branches
    # the fallback's failure comes after the primary one, with its own real cause
    assert line.index("data-dependent") < line.index("the TorchScript exporter (the fallback) failed too: Exporting the operator 'aten::linalg_eigvals'")
    assert "torch.where" in line and "torch.jit.trace" in line  # what to try
    assert list(out.parent.iterdir()) == []


def test_debug_shows_the_primary_failure(models: Path) -> None:
    r, _ = _state_dict_export(models, "BranchThenEig", "--debug")
    assert r.exit_code == 4
    assert "Traceback" in r.stderr and "GuardOnDataDependentSymNode" in r.stderr  # torch.export's own traceback
    assert r.stderr.rstrip().splitlines()[-1].startswith("error: torch.export could not export")


def test_json_carries_the_same_cause(models: Path) -> None:
    r, _ = _state_dict_export(models, "BranchThenEig", "--json")
    assert r.exit_code == 4
    doc = json.loads(r.stdout)
    assert doc["error"] == "export" and doc["exit_code"] == 4
    assert doc["message"].startswith("torch.export could not export weights.pt: Could not guard on data-dependent expression")
    assert "torch.where" in doc["hint"]


def test_fallback_reason_names_the_cause(models: Path) -> None:
    r, out = _state_dict_export(models, "Branch")
    assert r.exit_code == 0, r.stderr
    fell = [ln for ln in r.stderr.splitlines() if ln.startswith("fell back")]
    assert len(fell) == 1 and "Could not guard on data-dependent expression" in fell[0], r.stderr
    assert "keeps only the branch the example inputs took" in fell[0] and "Next steps" not in r.stderr
    assert out.is_file()


def test_pt2_never_falls_back(tmp_path: Path) -> None:
    import importlib.util

    (tmp_path / "arch.py").write_text(ARCH)
    spec = importlib.util.spec_from_file_location("export_errors_arch", tmp_path / "arch.py")
    assert spec and spec.loader
    arch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(arch)
    src = tmp_path / "eig.pt2"
    torch.export.save(torch.export.export(arch.Eig(), (torch.randn(3, 3),)), str(src))
    out = tmp_path / "out"
    out.mkdir()
    r = invoke("export", src, "-o", out / "eig.onnx")
    line = assert_fails(r, 4, "torch.export could not export eig.pt2: No ONNX function found for <OpOverload(op='aten.linalg_eig'")
    assert "TorchScript" not in line and "train()" not in line  # the fallback that cannot work is not tried
    assert "aten.linalg_eig has no ONNX translation" in line and "--opset" in line
    assert list(out.iterdir()) == []


def test_torchscript_file_names_its_exporter_only(tmp_path: Path) -> None:
    class Svd(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.linalg.svd(x)[1]

    src = tmp_path / "svd.pt"
    torch.jit.save(torch.jit.script(Svd()), str(src))
    out = tmp_path / "out"
    out.mkdir()
    line = assert_fails(invoke("export", src, "-o", out / "svd.onnx", "--input", "x:3x3"), 4)
    assert line.startswith("error: the TorchScript exporter could not export svd.pt: Exporting the operator 'aten::linalg_svd'"), line
    assert "torch.export" not in line and "aten::linalg_svd has no ONNX symbolic" in line
    assert list(out.iterdir()) == []
