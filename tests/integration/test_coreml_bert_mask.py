"""CoreML takes a BERT encoder with its attention mask whole (issue 27): a 2-layer, hidden-32 BertModel from
a ``transformers`` config (random weights, offline) called with ``input_ids`` and ``attention_mask``,
saved traced (TorchScript) and with torch.export, through ``mobilegen fix --ep coreml``.

As exported, the mask is boolean (Cast to bool, Flatten/Gather/Reshape or GatherND, And, Where) and the
traced model guards each Softmax against its -inf mask with IsNaN/Where: CoreML in the pinned iOS
runtime (1.24.2) refuses all of it, 3 partitions. After the fix stage: every node, one partition, and
the verification gate (onnxruntime against PyTorch) passed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_helpers import invoke

pytestmark = pytest.mark.slow

S = 16


def _save(path: Path, exporter: str) -> Path:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
    bert = transformers.BertModel(config).eval()

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    ids = torch.randint(0, 100, (1, S))
    mask = torch.ones(1, S, dtype=torch.int64)
    mask[0, 10:] = 0
    with torch.no_grad():
        if exporter == "traced":
            torch.jit.trace(Encoder().eval(), (ids, mask), strict=False).save(str(path))
        else:
            torch.export.save(torch.export.export(Encoder().eval(), (ids, mask)), str(path))
    return path


@pytest.mark.parametrize("exporter", ["traced", "export"])
def test_coreml_takes_bert_with_its_mask_whole(tmp_path: Path, exporter: str) -> None:
    src = _save(tmp_path / ("bert.pt" if exporter == "traced" else "bert.pt2"), exporter)
    r = invoke(
        "fix", src, "--ep", "coreml", "--input", f"input_ids:1x{S}:int64", "--input", f"attention_mask:1x{S}:int64",
        "--range", "input_ids=0:100", "-o", tmp_path / "fixed.onnx", "--json",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["verification"]["passed"]
    (report,) = doc["reports"]
    before = report["before"]
    assert before["partitions"] > 1 and before["supported_nodes"] < before["total_nodes"], before
    assert report["supported_nodes"] == report["total_nodes"] and len(report["partitions"]) == 1, (before, report["nodes"])
    kept = {f["pass"] for f in report["fixes"]}
    assert "bool-mask" in kept
    assert ("softmax-mask" if exporter == "traced" else "gathernd-gather") in kept, kept
