"""What `export` and the builds tell a new user about the exporter they got and the flags to add:
a gate that fails after a real TorchScript fallback says why; a TorchScript file's exporter is no
fallback; the missing-shape hint of a traced file carries its example inputs' shapes and dtypes; a
scripted model's Python scalar arguments take `--const`; `export -o X.ort` is refused."""

from __future__ import annotations

import getpass
import json
import os
import pickle
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import onnx
import pytest
import torch
from cli_helpers import assert_fails, invoke, private_tmpdir
from onnx import TensorProto, helper
from torch import nn

# x:1x4 — the export traces the seed-0 case (sum > 0: x * 2); the gate's seed-2 case sums below 0.
BRANCH = '''
import torch
from torch import nn


class Branch(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(1))

    def forward(self, x):
        if x.sum() > 0:
            return x * 2 * self.w
        return x - self.w
'''


class Scaled(nn.Module):
    def forward(self, x: torch.Tensor, scale: float, n: int) -> torch.Tensor:
        return x * scale + n


class Embed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.emb(input_ids) * attention_mask.unsqueeze(-1)
        return out


class Lin(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.lin(x)
        return out


@pytest.fixture(autouse=True)
def _tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # torchinductor_USER: the cache folder torch._dynamo makes in the temp folder when torch.export first runs
    yield from private_tmpdir(tmp_path, monkeypatch, ignore=frozenset({".ses", f"torchinductor_{getpass.getuser()}"}))


@pytest.fixture
def out(tmp_path: Path) -> Path:
    d = tmp_path / "out"
    d.mkdir()
    return d


def _branch_module(tmp_path: Path) -> Path:
    d = tmp_path / "models"
    d.mkdir()
    (d / "qa_branch_arch.py").write_text(BRANCH)
    return d


def _assert_explains_the_fallback(line: str) -> None:
    assert "output checks differ from PyTorch" in line, line
    assert "TorchScript exporter, a fallback because torch.export failed: Could not guard on data-dependent expression" in line
    assert "in forward: `if x.sum() > 0:`" in line  # the model's line torch.export failed on
    assert "keeps only the branch the example inputs took" in line
    assert "torch.where" in line and "torch.cond" in line
    assert "loosen --atol" not in line  # tolerances cannot bring back the other branch


def test_gate_after_fallback_says_why_state_dict_export(tmp_path: Path, out: Path) -> None:
    d = _branch_module(tmp_path)
    torch.save({"w": torch.ones(1)}, d / "weights.pt")
    r = invoke("export", d / "weights.pt", "--model-class", f"{d / 'qa_branch_arch.py'}:Branch", "--input", "x:1x4", "-o", out / "m.onnx")
    _assert_explains_the_fallback(assert_fails(r, 5))
    assert list(out.iterdir()) == []


def test_gate_after_fallback_says_why_in_a_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out: Path) -> None:
    d = _branch_module(tmp_path)
    monkeypatch.syspath_prepend(str(d))
    import qa_branch_arch

    try:
        torch.save(qa_branch_arch.Branch(), d / "branch.pt")
        r = invoke("android", d / "branch.pt", "--trust-pickle", "--input", "x:1x4", "-o", out / "pkg", "--json")
    finally:
        sys.modules.pop("qa_branch_arch", None)
    assert r.exit_code == 5, r.stderr
    doc = json.loads(r.stdout)
    _assert_explains_the_fallback(f"{doc['message']} — {doc['hint']}")
    assert list(out.iterdir()) == []


def test_torchscript_file_is_no_fallback(tmp_path: Path, out: Path) -> None:
    src = tmp_path / "lin.pt"
    torch.jit.save(torch.jit.script(Lin().eval()), str(src))
    r = invoke("export", src, "--input", "x:2x4", "-o", out / "a.onnx")
    assert r.exit_code == 0, r.stderr
    assert "fell back" not in r.stderr and "cannot trace a TorchScript module" not in r.stderr
    assert "exported with the TorchScript exporter (a TorchScript file)" in r.stderr
    r = invoke("export", src, "--input", "x:2x4", "-o", out / "b.onnx", "--json")
    doc = json.loads(r.stdout)
    assert (doc["exporter"], doc["fallback_reason"]) == ("torchscript", None)
    assert not any("fell back" in n for n in doc["notes"])
    assert sorted(p.name for p in out.iterdir()) == ["a.onnx", "b.onnx"]


def test_traced_file_hint_has_its_example_shapes_and_dtypes(tmp_path: Path, out: Path) -> None:
    src = tmp_path / "embed.pt"
    ids, mask = torch.zeros(1, 7, dtype=torch.int64), torch.ones(1, 7)
    torch.jit.save(torch.jit.trace(Embed().eval(), (ids, mask)), str(src))  # type: ignore[no-untyped-call]
    line = assert_fails(invoke("export", src, "-o", out / "m.onnx"), 2, "the input shapes of embed.pt are unknown")
    assert "add --input input_ids:1x7:int64 --input attention_mask:1x7 (the example inputs it was traced with" in line, line
    assert "224" not in line
    r = invoke("inspect", src, "--json")
    assert r.exit_code == 0, r.stderr
    assert "add --input input_ids:1x7:int64 --input attention_mask:1x7 (the example inputs" in json.loads(r.stdout)["notes"][0]
    assert list(out.iterdir()) == []


def test_scripted_file_hint_has_placeholders_not_an_image_shape(tmp_path: Path, out: Path) -> None:
    src = tmp_path / "embed_script.pt"
    torch.jit.save(torch.jit.script(Embed().eval()), str(src))
    line = assert_fails(invoke("export", src, "-o", out / "m.onnx"), 2, "the input shapes of embed_script.pt are unknown")
    assert "add --input input_ids:SHAPE[:DTYPE] --input attention_mask:SHAPE[:DTYPE] (" in line and "224" not in line
    assert list(out.iterdir()) == []


def test_hostile_traced_inputs_run_nothing_and_derive_nothing(tmp_path: Path, out: Path) -> None:
    """The traced-inputs entry is a pickle from the file: a hostile one runs no code and gives no shapes."""
    good = tmp_path / "good.pt"
    torch.jit.save(torch.jit.trace(Lin().eval(), (torch.randn(2, 4),)), str(good))  # type: ignore[no-untyped-call]
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    src = tmp_path / "evil.pt"
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(src, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            hostile = info.filename.endswith("/traced_inputs.pkl")
            zout.writestr(info.filename, pickle.dumps({"forward": [Evil()]}, protocol=2) if hostile else zin.read(info))
    line = assert_fails(invoke("export", src, "-o", out / "m.onnx"), 2, "add --input x:SHAPE[:DTYPE] (")
    assert "2x4" not in line
    assert not marker.exists()
    assert list(out.iterdir()) == []


def test_inspect_suggests_const_for_python_scalar_arguments(tmp_path: Path) -> None:
    src = tmp_path / "scaled.pt"
    torch.jit.save(torch.jit.script(Scaled()), str(src))
    r = invoke("inspect", src, "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [i["name"] for i in doc["inputs"]] == ["x"]
    note = doc["notes"][0]
    assert "--input x:SHAPE[:DTYPE]" in note and "--const scale=VALUE --const n=VALUE" in note, note
    assert "--input scale" not in note and "--input n" not in note
    note = json.loads(invoke("inspect", src, "--const", "scale=0.5", "--json").stdout)["notes"][0]
    assert "--const n=VALUE" in note and "--const scale" not in note, note
    assert sorted(p.name for p in tmp_path.iterdir()) == ["TMPDIR", "scaled.pt"]


def test_export_refuses_an_ort_output(tmp_path: Path, out: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    src = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(src))
    line = assert_fails(invoke("export", src, "-o", out / "m.ort"), 2, f"-o {out / 'm.ort'} does not name an .onnx file", "mobilegen convert")
    assert line.count("error:") == 1
    assert_fails(invoke("export", src, "-o", out / "m.bin", "--force"), 2, "does not name an .onnx file", "m.onnx")
    assert list(out.iterdir()) == []
