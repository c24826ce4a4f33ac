"""A traced TorchScript file's example inputs, read without running code from it (mobilegen.load.traced_inputs):
torch 2.13's own archives give shapes and dtypes; anything else gives nothing."""

from __future__ import annotations

import os
import pickle
import zipfile
from pathlib import Path

import torch
from torch import nn

from mobilegen.load.traced_inputs import MAX_ENTRY_BYTES, input_flags, read_traced_inputs
from mobilegen.spec import TensorSpec


class Two(nn.Module):
    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return ids.float() * mask


class Pair(nn.Module):
    def forward(self, xs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return xs[0] + xs[1]


def _saved(module: torch.jit.ScriptModule, path: Path) -> torch.jit.ScriptModule:
    torch.jit.save(module, str(path))
    return torch.jit.load(str(path))  # type: ignore[no-untyped-call,no-any-return]


def _with_entry(src: Path, dest: Path, data: bytes) -> Path:
    """``src`` with its traced-inputs pickle replaced by ``data``."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, data if info.filename.endswith("/traced_inputs.pkl") else zin.read(info))
    return dest


def test_traced_archive_gives_shapes_and_dtypes(tmp_path: Path) -> None:
    loaded = _saved(torch.jit.trace(Two(), (torch.zeros(1, 5, dtype=torch.int64), torch.ones(1, 5))), tmp_path / "two.pt")  # type: ignore[no-untyped-call]
    got = read_traced_inputs(tmp_path / "two.pt", loaded)
    assert got == (TensorSpec("ids", "int64", (1, 5)), TensorSpec("mask", "float32", (1, 5)))
    assert input_flags(got, ["ids", "mask"]) == ("--input ids:1x5:int64 --input mask:1x5", True)
    assert input_flags((), ["ids"]) == ("--input ids:SHAPE[:DTYPE]", False)


def test_scripted_or_nested_inputs_give_nothing(tmp_path: Path) -> None:
    scripted = _saved(torch.jit.script(Two()), tmp_path / "s.pt")
    assert read_traced_inputs(tmp_path / "s.pt", scripted) == ()
    pair = _saved(torch.jit.trace(Pair(), ((torch.ones(2), torch.ones(2)),)), tmp_path / "pair.pt")  # type: ignore[no-untyped-call]
    assert read_traced_inputs(tmp_path / "pair.pt", pair) == ()


def test_hostile_or_oversized_entries_give_nothing_and_run_nothing(tmp_path: Path) -> None:
    loaded = _saved(torch.jit.trace(Two(), (torch.zeros(1, 5, dtype=torch.int64), torch.ones(1, 5))), tmp_path / "two.pt")  # type: ignore[no-untyped-call]
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    evil = _with_entry(tmp_path / "two.pt", tmp_path / "evil.pt", pickle.dumps({"forward": [Evil(), Evil()]}, protocol=2))
    assert read_traced_inputs(evil, loaded) == ()
    assert not marker.exists()
    big = _with_entry(tmp_path / "two.pt", tmp_path / "big.pt", pickle.dumps({"forward": ["x" * MAX_ENTRY_BYTES]}, protocol=2))
    assert read_traced_inputs(big, loaded) == ()
    garbage = _with_entry(tmp_path / "two.pt", tmp_path / "garbage.pt", b"\x80\x02not a pickle")
    assert read_traced_inputs(garbage, loaded) == ()
