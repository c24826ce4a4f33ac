"""A .pt2 exported with the inputs it is given (static shapes, no --input, no --const) is not run once
more before its export only to see them accepted; with --input it is (and a rejection is a usage error)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from mobilegen.export import exporter
from mobilegen.export.stage import load_and_export
from mobilegen.options import ModelOptions


class Picky(torch.nn.Module):
    """Any float tensor: x * 2, then ReLU."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x * 2).relu()


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    calls: list[object] = []
    real = exporter._check_example_run

    def counted(*args: object) -> None:
        calls.append(args)
        real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(exporter, "_check_example_run", counted)
    return calls


def _save(path: Path, dynamic: bool) -> Path:
    x = torch.randn(2, 4)
    shapes = {"x": {0: torch.export.Dim("batch", min=1, max=8)}} if dynamic else None
    torch.export.save(torch.export.export(Picky(), (x,), dynamic_shapes=shapes), str(path))
    return path


def test_static_program_without_input_is_not_run_before_export(tmp_path: Path, runs: list[object]) -> None:
    _loaded, model = load_and_export(_save(tmp_path / "m.pt2", dynamic=False), ModelOptions(), tmp_path / "m.onnx", write=False)
    assert runs == []
    assert [s.shape for s in model.io.inputs] == [(2, 4)]


def test_given_input_is_run_before_export(tmp_path: Path, runs: list[object]) -> None:
    load_and_export(_save(tmp_path / "m.pt2", dynamic=True), ModelOptions(inputs=("x:3x4",)), tmp_path / "m.onnx", write=False)
    assert len(runs) == 1


def test_dynamic_program_is_run_before_export(tmp_path: Path, runs: list[object]) -> None:
    load_and_export(_save(tmp_path / "m.pt2", dynamic=True), ModelOptions(), tmp_path / "m.onnx", write=False)
    assert len(runs) == 1
