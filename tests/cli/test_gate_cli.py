"""The verification gate from the command line (issue 11): --range, --sample cases and --sample-only,
degenerate references (--allow-degenerate), and a reference model that raises (exit 10)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from cli_helpers import assert_fails, build_threads_left, invoke, private_tmpdir
from torch import nn

VOCAB = 100


class Vocab(nn.Module):
    """Token ids → logits through an Embedding: ids ≥ VOCAB make PyTorch raise."""

    def __init__(self) -> None:
        super().__init__()
        self.e = nn.Embedding(VOCAB, 8)
        self.l = nn.Linear(8, 3)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.l(self.e(ids).mean(1))


class UntrainedBatchNorm(nn.Module):
    """What a random-init model with untrained BatchNorm statistics gives: outputs around 1e-22."""

    def __init__(self) -> None:
        super().__init__()
        self.l = nn.Linear(4, 3)
        self.bn = nn.BatchNorm1d(3)
        self.bn.running_var.fill_(1e36)  # statistics never updated by training, scale never learned
        nn.init.constant_(self.bn.weight, 1e-4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.l(x))


class IgnoresInput(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l(x * 0)


class AlmostIgnoresInput(nn.Module):
    """Outputs that differ between cases, but by less than the tolerance (~1e-5)."""

    def __init__(self) -> None:
        super().__init__()
        self.l = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l(x * 1e-5)


class Infinite(nn.Module):
    """±Inf everywhere: what a division by an input times zero gives."""

    def __init__(self) -> None:
        super().__init__()
        self.l = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l(x) / (x[:, :3] * 0)


class Loud(nn.Module):
    """Refuses inputs outside [-100, 100] with its own error."""

    def __init__(self) -> None:
        super().__init__()
        self.l = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if bool(x.abs().max() > 100.0):
            raise ValueError("inputs must be normalised to [-100, 100]")
        return self.l(x)


class LogitsAndTiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.vocab = Vocab()

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.vocab(ids)
        return y, y * 1e-22


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("gate-models")
    torch.manual_seed(0)
    ids, x = torch.zeros(1, 16, dtype=torch.long), torch.zeros(2, 4)
    paths = {name: d / f"{name}.pt" for name in ("vocab", "bn", "constant", "almost", "inf", "loud", "two")}
    torch.jit.save(torch.jit.trace(Vocab().eval(), ids), str(paths["vocab"]))
    torch.jit.save(torch.jit.trace(UntrainedBatchNorm().eval(), x), str(paths["bn"]))
    torch.jit.save(torch.jit.trace(IgnoresInput().eval(), x), str(paths["constant"]))
    torch.jit.save(torch.jit.trace(AlmostIgnoresInput().eval(), x), str(paths["almost"]))
    torch.jit.save(torch.jit.trace(Infinite().eval(), x), str(paths["inf"]))
    torch.jit.save(torch.jit.script(Loud().eval()), str(paths["loud"]))
    torch.jit.save(torch.jit.trace(LogitsAndTiny().eval(), ids), str(paths["two"]))
    return paths


@pytest.fixture(autouse=True)
def _tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from private_tmpdir(tmp_path, monkeypatch)


def _left(tmp_path: Path) -> list[str]:
    """What a run left in tmp_path besides the private TMPDIR and the test's own inputs."""
    return sorted(p.name for p in tmp_path.iterdir() if p.name != "TMPDIR" and p.suffix != ".npz")


IDS = ("--input", "ids:1x16:int64")


# --- --range --------------------------------------------------------------------------------------


def test_range_draws_token_ids_the_model_accepts(models: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "v.onnx"
    r = invoke("export", models["vocab"], "-o", out, *IDS, "--range", f"ids={VOCAB - 10}:{VOCAB}", "--json")
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)["verification"]["rows"]
    assert [row["case"] for row in rows] == ["ids:1x16", "ids:1x16 #2"] and all(row["passed"] for row in rows)


def test_range_beyond_the_vocabulary_is_the_models_own_failure(models: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "v.onnx"
    line = assert_fails(invoke("export", models["vocab"], "-o", out, *IDS, "--range", "ids=0:30522"), 10,
                        "the PyTorch model failed on the verification inputs ids:1x16:int64 in [", "(seeded, seed 0)",
                        "RuntimeError: index out of range in self", "not the export's")
    assert "output checks differ" not in line
    assert _left(tmp_path) == []


def test_a_reference_failure_in_a_two_model_build_is_reported_and_leaves_nothing(models: dict[str, Path], tmp_path: Path) -> None:
    """A package build's reference failure (its models are written and verified in threads later on) is
    reported with exit 10, no output and no thread left running."""
    out = tmp_path / "pkg"
    assert_fails(invoke("package", models["vocab"], "--android", "--ios", "--nnapi", "--coreml", "-o", out, *IDS, "--range", "ids=0:30522"), 10,
                 "the PyTorch model failed on the verification inputs", "RuntimeError: index out of range in self")
    assert _left(tmp_path) == []
    assert build_threads_left() == []


def test_reference_error_is_given_whole(models: dict[str, Path], tmp_path: Path) -> None:
    r = invoke("convert", models["loud"], "-o", tmp_path / "l.ort", "--input", "x:1x4", "--range", "x=200:300", "--json")
    assert r.exit_code == 10
    data = json.loads(r.stdout)
    assert data["error"] == "reference" and data["exit_code"] == 10
    assert data["message"].endswith("(seeded, seed 0): ValueError: inputs must be normalised to [-100, 100]")
    assert "x:1x4:float32 in [2" in data["message"]
    assert _left(tmp_path) == []


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--range", "idz=0:5"), "--range idz=0:5: the model has no input 'idz'"),
        (("--range", "ids=5:5"), "--range ids=5:5: LO must be below HI"),
        (("--range", "ids:0:5"), "--range ids:0:5 is not NAME=LO:HI"),
        (("--range", "ids=0:1e30"), "--range ids=0:1e30: input 'ids' is int64, so LO and HI must be integers"),
        (("--range", f"ids=0:{2**63 + 1}"), "is outside what int64 holds"),
        (("--sample-only",), "--sample-only needs --sample"),
    ],
)
def test_gate_flag_errors(models: dict[str, Path], tmp_path: Path, args: tuple[str, ...], needle: str) -> None:
    assert_fails(invoke("export", models["vocab"], "-o", tmp_path / "v.onnx", *IDS, *args), 2, needle)
    assert _left(tmp_path) == []


# --- --sample cases -------------------------------------------------------------------------------


def test_sample_cases_added_or_alone(models: dict[str, Path], tmp_path: Path) -> None:
    sample = tmp_path / "s.npz"
    np.savez(sample, ids=np.arange(3 * 16).reshape(3, 1, 16) % VOCAB)
    r = invoke("export", models["vocab"], "-o", tmp_path / "a.onnx", *IDS, "--sample", sample, "--json")
    assert r.exit_code == 0, r.stderr
    # sample cases are labelled by their origin, not like seeded ones (`ids:1x16 #3`)
    assert [row["case"] for row in json.loads(r.stdout)["verification"]["rows"]] == ["ids:1x16", "ids:1x16 #2", "s.npz[0]", "s.npz[1]", "s.npz[2]"]
    r = invoke("export", models["vocab"], "-o", tmp_path / "b.onnx", *IDS, "--sample", sample, "--sample-only")
    assert r.exit_code == 0, r.stderr
    assert "s.npz[2]" in r.stderr and "#" not in r.stderr  # the human table says the same


def test_sample_that_is_a_torch_file_is_refused(models: dict[str, Path], tmp_path: Path) -> None:
    tok = tmp_path / "tok.pt"
    torch.save({"ids": torch.zeros(1, 16, dtype=torch.long)}, tok)  # a zip, as an .npz is: np.load would open it
    r = invoke("export", models["vocab"], "-o", tmp_path / "v.onnx", *IDS, "--sample", tok)
    assert_fails(r, 2, f"--sample {tok} is not an .npz of arrays (np.savez)")
    assert "archive/" not in r.stderr  # the zip's entries are not listed as arrays
    assert _left(tmp_path) == ["tok.pt"]


def test_sample_case_the_model_refuses(models: dict[str, Path], tmp_path: Path) -> None:
    sample = tmp_path / "s.npz"
    np.savez(sample, ids=np.stack([np.zeros((1, 16), np.int64), np.full((1, 16), 500, np.int64)]))
    assert_fails(invoke("export", models["vocab"], "-o", tmp_path / "v.onnx", *IDS, "--sample", sample, "--sample-only"), 10,
                 "ids:1x16:int64 in [500, 500] (--sample s.npz, case 2 of 2)", "index out of range")
    assert _left(tmp_path) == []


def test_sample_arrays_that_disagree_on_cases(models: dict[str, Path], tmp_path: Path) -> None:
    sample = tmp_path / "s.npz"
    np.savez(sample, ids=np.zeros((2, 2, 1, 16), np.int64))
    assert_fails(invoke("export", models["vocab"], "-o", tmp_path / "v.onnx", *IDS, "--sample", sample), 2,
                 f"--sample {sample}: array 'ids' has shape (2, 2, 1, 16), the model takes 1x16 (one case) or Nx1x16 (N cases)")
    assert _left(tmp_path) == []


# --- degenerate references ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "why", "hint"),
    [
        ("bn", "every reference value is within atol=0.0001 of zero (largest |value| ", "BatchNorm"),
        ("constant", "its reference is the same in all 2 cases although their inputs differ, so an export that ignores", "ignores the model's inputs, or saturates"),
        ("almost", "its reference varies across the 2 cases by at most ", "ignores the model's inputs, or saturates"),
        ("inf", "12 of its 12 reference values are NaN or Inf, so the gate can only match", "the model or its inputs are broken"),
    ],
)
def test_degenerate_reference_fails_the_gate(models: dict[str, Path], tmp_path: Path, model: str, why: str, hint: str) -> None:
    out = tmp_path / "d.ort"
    r = invoke("convert", models[model], "-o", out, "--input", "x:2x4")
    line = assert_fails(r, 5, "verification is inconclusive: output 'output' of the PyTorch model is degenerate", why, hint)
    assert "--allow-degenerate" in line
    assert ("BatchNorm" in line) == (model == "bn")  # each reason its own hint
    if model == "almost":
        assert "same in all" not in line and ", within the tolerance (atol=0.0001, rtol=0.001), although their inputs differ" in line
    assert "RuntimeWarning" not in r.stderr and "invalid value" not in r.stderr
    assert "output checks differ" not in line
    assert _left(tmp_path) == []


def test_allow_degenerate_accepts_it_knowingly(models: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "d.onnx"
    r = invoke("export", models["bn"], "-o", out, "--input", "x:2x4", "--allow-degenerate", "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert any("output 'output' was not verified: every reference value is within atol" in n for n in data["notes"])
    assert all("accepted with --allow-degenerate" in row["note"] for row in data["verification"]["rows"])
    assert [row["status"] for row in data["verification"]["rows"]] == ["unverified", "unverified"]
    assert data["verification"]["unverified"] == ["output"]
    assert out.is_file()
    r = invoke("export", models["bn"], "-o", out, "--input", "x:2x4", "--allow-degenerate", "--force")
    assert r.exit_code == 0, r.stderr
    assert " ok " not in r.stderr and r.stderr.count("unverified") >= 2  # the table's status column, not "ok"
    assert "verification: 2 checks unverified (--allow-degenerate)" in r.stderr


def test_allow_degenerate_with_inf_reference_is_accepted_quietly(models: dict[str, Path], tmp_path: Path) -> None:
    # ±Inf matched by ±Inf: no RuntimeWarning on stderr, and the rows pass the comparison (unverified)
    r = invoke("export", models["inf"], "-o", tmp_path / "i.onnx", "--input", "x:2x4", "--allow-degenerate", "--json")
    assert r.exit_code == 0, r.stderr
    assert "RuntimeWarning" not in r.stderr and "invalid value" not in r.stderr
    assert {row["status"] for row in json.loads(r.stdout)["verification"]["rows"]} == {"unverified"}


def test_build_records_ranges_and_reports_accepted_outputs(models: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    r = invoke("package", models["two"], "--android", "-o", out, *IDS, "--range", f"ids=50:{VOCAB}", "--allow-degenerate")
    assert r.exit_code == 0, r.stderr
    assert "verification: 4 checks passed, 4 unverified (--allow-degenerate)" in r.stderr  # not "8 checks passed"
    manifest = json.loads((out / "manifest.json").read_text())
    (warning,) = [w for w in manifest["warnings"] if "not verified" in w]
    assert warning.startswith("output 'output_1' was not verified")
    rows = manifest["verification"]["rows"]
    assert {row["status"] for row in rows if row["output"] == "output_1"} == {"unverified"}
    assert {row["status"] for row in rows if row["output"] == "output_0"} == {"pass"}
    assert manifest["verification"]["unverified"] == ["output_1"]
    report = (out / "report" / "report.md").read_text()
    assert "output\\_1' was not verified" in report
    assert "| unverified |" in report and "1 output unverified ('output\\_1', accepted with --allow-degenerate)" in report
    assert "class=\"warn\">unverified</td>" in (out / "report" / "report.html").read_text()
    tolerances = json.loads((out / "golden" / "tolerances.json").read_text())
    assert tolerances["ranges"] == {"ids": [50, VOCAB]} and tolerances["allow_degenerate"] is True
    options = json.loads((out / "manifest.json").read_text())["options"]
    assert options["ranges"] == {"ids": [50, VOCAB]} and options["allow_degenerate"] is True and options["sample_only"] is False
    with np.load(out / "golden" / "golden.npz") as z:
        ids = z["input:ids"]
    assert ids.min() >= 50 and ids.max() < VOCAB  # the golden vectors replay the ranged inputs
    r = invoke("verify", out, "--json")
    assert r.exit_code == 0, r.stderr
    checked = json.loads(r.stdout)
    assert {g["output"]: g["status"] for g in checked["golden"]} == {"output_0": "pass", "output_1": "unverified"}
    assert checked["unverified"] == ["output_1"]
    r = invoke("verify", out)
    assert r.exit_code == 0, r.stderr
    assert "unverified: 'output_1': the build accepted a degenerate reference (--allow-degenerate)" in r.stderr
    # both outputs of both golden cases (golden.npz, golden_case1.npz) replayed
    assert {g["case"] for g in checked["golden"]} == {"golden/golden.npz", "golden/golden_case1.npz"}
    assert "golden vectors: 2 checks passed, 2 unverified (--allow-degenerate)" in r.stderr


def test_onnx_reference_failure_names_the_source_once(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    table = numpy_helper.from_array(np.arange(40, dtype=np.float32).reshape(10, 4), "table")
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4])
    graph = helper.make_graph([helper.make_node("Gather", ["table", "ids"], ["y"])], "g", [ids], [y], [table])
    path = tmp_path / "gather.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    r = invoke("convert", path, "-o", tmp_path / "g.ort", "--range", "ids=20:30")
    line = assert_fails(r, 10, "error: the source ONNX model (no PyTorch model given) failed on the verification inputs ids:1x3:int64 in [2",
                        "indices element out of data bounds")
    assert "the the" not in line
    assert r.stderr.startswith("error:")  # no onnxruntime log line of its own before it
    assert _left(tmp_path) == ["gather.onnx"]
