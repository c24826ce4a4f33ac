"""The exporter advisor (issue 27): a TorchScript file whose model splits on the first provider is
compared with the same model through torch.export (torch's TS2EPConverter), measured through the same
graph passes; the notice names both placements and the commands, ``--json`` carries the comparison. A
build that is whole on its first provider pays nothing; a comparison that is not better says nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from cli_helpers import invoke
from torch import nn

import mobilegen.export.advice as advice_mod
from mobilegen.export.advice import Advice, Comparison, Placement, notices


class Split(nn.Module):
    """Linear → CumSum (no NNAPI builder: a CPU node between two NNAPI partitions) → Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.b(torch.cumsum(self.a(x), dim=1))
        return out


class Whole(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = torch.relu(self.a(x))
        return out


def _traced(make: type[nn.Module], path: Path) -> Path:
    """The module made after seeding: its weights, and so its outputs, do not depend on the tests run before
    in this process (a ``Whole`` made earlier could output only zeros after its ReLU: a degenerate reference)."""
    torch.manual_seed(0)
    torch.jit.trace(make().eval(), (torch.randn(1, 4),)).save(str(path))
    return path


def _build(path: Path, out: Path) -> dict[str, Any]:
    r = invoke("android", path, "--nnapi", "--input", "x:1x4", "-o", out, "--json")
    assert r.exit_code == 0, r.stderr
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc


def test_whole_model_gets_no_advice_and_no_second_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    measured: list[str] = []
    monkeypatch.setattr(advice_mod, "_measure", lambda *a, **k: measured.append("x"))
    doc = _build(_traced(Whole, tmp_path / "whole.pt"), tmp_path / "out")
    assert doc["exporter_advice"] is None
    assert measured == []
    assert not any("exporter" in w for w in doc["warnings"])


def test_split_model_is_measured_through_the_other_exporter(tmp_path: Path) -> None:
    doc = _build(_traced(Split, tmp_path / "split.pt"), tmp_path / "out")
    adv = doc["exporter_advice"]
    nnapi = next(c for c in doc["coverage"] if c["ep"] == "nnapi")
    assert (adv["built_exporter"], adv["other_exporter"], adv["not_measured"]) == ("torchscript", "torch.export", None)
    [p] = adv["providers"]
    assert p["provider"] == "nnapi" and p["built"]["partitions"] == len(nnapi["partitions"]) >= 2
    assert p["other"]["exporter"] == "torch.export" and p["other"]["partitions"] >= 1  # measured
    said = [w for w in doc["warnings"] if "exporter places this model better" in w]
    assert bool(said) == adv["better"]  # a notice only when the other exporter places better
    assert any("TS2EPConverter" in c and "split.pt2" in c for c in adv["commands"])


def test_other_exporter_failing_gives_the_commands_without_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch._export.converter as converter

    class Broken:
        def __init__(self, *a: Any) -> None:
            raise RuntimeError("unsupported node prim::Foo")

    monkeypatch.setattr(converter, "TS2EPConverter", Broken)
    doc = _build(_traced(Split, tmp_path / "split.pt"), tmp_path / "out")
    adv = doc["exporter_advice"]
    assert adv["providers"][0]["other"] is None and "unsupported node prim::Foo" in adv["not_measured"]
    [said] = [w for w in doc["warnings"] if w.startswith("with the torchscript exporter: nnapi ")]
    assert "torch.export graphs often partition differently" in said and "failed on it here" in said
    assert "torch.export.save(torch.export.export(model, (torch.zeros(1, 4, dtype=torch.float32),))" in said


def test_no_compare_exporters_skips_the_measurement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    measured: list[str] = []
    monkeypatch.setattr(advice_mod, "_measure", lambda *a, **k: measured.append("x"))
    path = _traced(Split, tmp_path / "split.pt")
    r = invoke("android", path, "--nnapi", "--input", "x:1x4", "-o", tmp_path / "out", "--json", "--no-compare-exporters")
    assert r.exit_code == 0, r.stderr
    adv = json.loads(r.stdout)["exporter_advice"]
    assert measured == [] and adv["not_measured"] == "not measured: --no-compare-exporters"
    assert adv["providers"][0]["other"] is None


SPLIT_ARCH = """
import torch
from torch import nn


class Split(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 2)

    def forward(self, x):
        return self.b(torch.cumsum(self.a(x), dim=1))
"""


def test_module_through_torch_export_is_measured_through_the_torchscript_exporter(tmp_path: Path) -> None:
    """A state_dict + --model-class: torch.export exported it; the advisor runs the TorchScript exporter
    on the same module and reports both (the commands export an .onnx with dynamo=False)."""
    (tmp_path / "split_arch.py").write_text(SPLIT_ARCH, encoding="utf-8")
    torch.manual_seed(0)
    torch.save(Split().state_dict(), tmp_path / "weights.pt")
    r = invoke("android", tmp_path / "weights.pt", "--model-class", f"{tmp_path / 'split_arch.py'}:Split", "--nnapi", "--input", "x:1x4", "-o", tmp_path / "out", "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["onnx"]["exporter"] == "dynamo"
    adv = doc["exporter_advice"]
    assert (adv["built_exporter"], adv["other_exporter"], adv["not_measured"]) == ("torch.export", "torchscript", None)
    [p] = adv["providers"]
    assert p["other"]["exporter"] == "torchscript" and p["other"]["partitions"] >= 1 and p["built"]["partitions"] >= 2
    assert any("dynamo=False" in c and "weights.onnx" in c for c in adv["commands"])
    assert bool([w for w in doc["warnings"] if "exporter places this model better" in w]) == adv["better"]


class Residual(nn.Module):
    """Conv → ReLU → Conv + skip → Conv: XNNPACK refuses the Add (2 partitions); every Conv needs C, H and W known."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 4, 3, padding=1)
        self.b = nn.Conv2d(4, 4, 3, padding=1)
        self.c = nn.Conv2d(4, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.a(x))
        out: torch.Tensor = self.c(y + self.b(y))
        return out


def test_other_exporter_is_measured_with_the_builds_input_shapes(tmp_path: Path) -> None:
    """TS2EPConverter's program leaves C, H and W of the image named; measured as converted, XNNPACK
    took none of its Convs (0/5 nodes, 0 partitions) and the advice called that better. With the build's
    --input shapes applied, both exporters place the model alike: no advice."""
    torch.manual_seed(0)
    torch.jit.trace(Residual().eval(), (torch.randn(1, 3, 8, 8),)).save(str(tmp_path / "res.pt"))
    r = invoke("android", tmp_path / "res.pt", "--xnnpack", "--input", "x:1x3x8x8", "-o", tmp_path / "out", "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    [p] = doc["exporter_advice"]["providers"]
    assert p["built"]["partitions"] == 2 and p["other"] == {**p["built"], "exporter": "torch.export"}, p
    assert p["verdict"] == "same" and not doc["exporter_advice"]["better"]
    assert not any("exporter places this model better" in w for w in doc["warnings"])


def test_quantized_build_is_compared_as_fp32(tmp_path: Path) -> None:
    """--quantize int8 ships a QDQ model (more nodes on NNAPI); the comparison is of fp32 models on both
    sides: the build's side is the one a build without --quantize measures."""
    path = _traced(Split, tmp_path / "split.pt")
    plain = _build(path, tmp_path / "fp32")["exporter_advice"]["providers"]
    r = invoke("android", path, "--nnapi", "--input", "x:1x4", "--quantize", "int8", "--calibration", "random", "-o", tmp_path / "int8", "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    [nnapi] = [c for c in doc["coverage"] if c["ep"] == "nnapi"]
    [p] = doc["exporter_advice"]["providers"]
    assert nnapi["total_nodes"] > p["built"]["total_nodes"]  # the shipped (quantized) model is not the one compared
    assert p["built"] == plain[0]["built"] and p["other"] == plain[0]["other"]


def _advice(built: int, other: int | None, *, also: tuple[int, int] | None = None) -> Advice:
    comparisons = [
        Comparison("nnapi", Placement("torchscript", 500, 526, built), None if other is None else Placement("torch.export", 532, 542, other))
    ]
    if also is not None:
        comparisons.append(Comparison("coreml/mlprogram", Placement("torchscript", 200, 240, also[0]), Placement("torch.export", 200, 240, also[1])))
    why = "" if other is not None else "not measured with --const (…)"
    return Advice("torchscript", "torch.export", tuple(comparisons), why, ("cmd",))


# (3, 3): as many partitions, more nodes on the provider (532 vs 500): better; (3, 8): more nodes in
# more partitions: mixed, no advice
@pytest.mark.parametrize(("built", "other", "said"), [(8, 3, True), (3, 3, True), (3, 8, False), (8, None, True)])
def test_notice_only_when_better_or_unmeasured(built: int, other: int | None, said: bool) -> None:
    out = notices(_advice(built, other))
    assert bool(out) == said
    if out and other is not None:
        assert f"nnapi {built} partitions (500/526 nodes) → {other} partitions (532/542 nodes)" in out[0].text


def test_worse_on_another_provider_is_no_advice() -> None:
    assert notices(_advice(8, 3, also=(2, 2)))  # better on nnapi, the same on coreml
    assert notices(_advice(8, 3, also=(2, 4))) == []  # better on nnapi, worse on coreml


@pytest.mark.parametrize(
    ("built", "other", "verdict"),
    [
        ((25, 4), (1, 1), "mixed"),  # the QA case: fewer partitions, but XNNPACK lost 24 of its 25 nodes
        ((25, 4), (0, 0), "mixed"),
        ((25, 4), (25, 1), "better"),
        ((25, 4), (27, 4), "better"),
        ((25, 4), (24, 4), "worse"),
        ((25, 4), (25, 5), "worse"),
        ((25, 4), (27, 6), "mixed"),
        ((25, 4), (25, 4), "same"),
    ],
)
def test_losing_nodes_on_a_provider_is_never_better(built: tuple[int, int], other: tuple[int, int], verdict: str) -> None:
    c = Comparison("xnnpack", Placement("torchscript", built[0], 29, built[1]), Placement("torch.export", other[0], 29, other[1]))
    assert (c.verdict, c.better, c.worse) == (verdict, verdict == "better", verdict == "worse")
    advice = Advice("torchscript", "torch.export", (c,), "", ("cmd",))
    assert advice.better == (verdict == "better") and bool(notices(advice)) == advice.better
    assert advice.to_dict()["providers"][0]["verdict"] == verdict  # type: ignore[index]


@pytest.mark.parametrize(
    ("built", "other", "verdict"),
    [
        ((92, 92, 1), (89, 89, 1), "same"),  # CoreML takes a traced BERT whole with either exporter
        ((89, 89, 1), (92, 92, 1), "same"),
        ((92, 92, 2), (89, 89, 1), "better"),
        ((92, 92, 1), (89, 89, 2), "worse"),
        ((92, 92, 1), (89, 90, 1), "worse"),  # one node off the provider: not whole any more
    ],
)
def test_a_provider_taking_both_graphs_whole_is_judged_by_partitions(built: tuple[int, int, int], other: tuple[int, int, int], verdict: str) -> None:
    """The two exporters' graphs differ in size: a provider that takes every node of both is not worse off
    with the smaller graph (a review found a traced BERT's better NNAPI placement never advised, because
    CoreML's whole 89-node graph counted as worse than its whole 92-node one)."""
    c = Comparison("coreml/mlprogram", Placement("torchscript", *built), Placement("torch.export", *other))
    assert c.verdict == verdict
    nnapi = Comparison("nnapi", Placement("torchscript", 180, 191, 2), Placement("torch.export", 187, 195, 2))
    advice = Advice("torchscript", "torch.export", (nnapi, c), "", ("cmd",))
    assert advice.better == (verdict in ("same", "better"))


def test_mixed_on_another_provider_is_no_advice() -> None:
    nnapi = Comparison("nnapi", Placement("torchscript", 500, 526, 8), Placement("torch.export", 532, 542, 3))
    fewer = Comparison("xnnpack", Placement("torchscript", 25, 29, 4), Placement("torch.export", 1, 29, 1))
    assert Advice("torchscript", "torch.export", (nnapi,), "", ("cmd",)).better
    assert not Advice("torchscript", "torch.export", (nnapi, fewer), "", ("cmd",)).better


def test_same_placement_is_no_advice() -> None:
    same = Placement("torchscript", 500, 526, 3)
    assert notices(Advice("torchscript", "torch.export", (Comparison("nnapi", same, Placement("torch.export", 500, 526, 3)),), "", ("cmd",))) == []


@pytest.mark.slow
def test_traced_bert_places_better_through_torch_export(tmp_path: Path) -> None:
    """The case of issue 27 at toy size: a traced BERT encoder (attention mask, mean pooling) places worse
    on NNAPI through the TorchScript exporter than through torch.export; the advisor measures it."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=32)
    torch.manual_seed(0)
    bert = transformers.BertModel(cfg).eval()

    class Pooled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = bert

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            o = self.m(input_ids=input_ids, attention_mask=attention_mask, return_dict=False)[0]
            mask = attention_mask.unsqueeze(-1).to(o.dtype)
            out: torch.Tensor = (o * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return out

    ids, am = torch.randint(0, 50, (1, 16)), torch.ones(1, 16, dtype=torch.long)
    with torch.no_grad():
        torch.jit.trace(Pooled().eval(), (ids, am), strict=False).save(str(tmp_path / "enc.pt"))
    r = invoke("android", tmp_path / "enc.pt", "--nnapi", "--input", "input_ids:1x16:int64", "--input", "attention_mask:1x16:int64", "-o", tmp_path / "out", "--json")
    assert r.exit_code == 0, r.stderr
    adv = json.loads(r.stdout)["exporter_advice"]
    [p] = adv["providers"]
    built, other = p["built"], p["other"]

    def refused(c: dict[str, int]) -> int:
        return c["total_nodes"] - c["supported_nodes"]

    # since softmax-mask the traced attention blocks no longer split NNAPI (2 partitions each way here):
    # torch.export still leaves fewer nodes on the CPU
    assert adv["better"] and (other["partitions"] < built["partitions"] or refused(other) < refused(built)), adv
    assert any(w.startswith("the torch.export exporter places this model better") for w in json.loads(r.stdout)["warnings"])
