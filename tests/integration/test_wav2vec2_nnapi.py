"""wav2vec2 (a small `transformers` config, random weights, offline) through the fix stage for NNAPI: every
node in one partition, verified against PyTorch (issue 27: 169/190 nodes in 8 partitions before)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_wav2vec2_goes_whole_to_nnapi(tmp_path: Path) -> None:
    import torch

    T = pytest.importorskip("transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from mobilegen.commands.fix import FixOptions, fix_model
    from mobilegen.options import ModelOptions
    from mobilegen.verify.gate import VerifyOptions

    torch.manual_seed(0)
    # the base models' layout, shrunk: GroupNorm after the first conv (feat_extract_norm="group"), GELU
    # between Conv1ds, a grouped positional conv with weight norm, post-LN encoder layers
    inner = T.Wav2Vec2Model(T.Wav2Vec2Config(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, conv_dim=(8, 8, 8),
        conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3), num_conv_pos_embeddings=8, num_conv_pos_embedding_groups=2,
    )).eval()
    for name, p in inner.named_parameters():  # away from the initial unit scales and zero biases
        if "norm" in name or name.endswith("bias"):
            torch.nn.init.normal_(p, mean=1.0 if name.endswith("weight") else 0.0, std=0.2)

    class Wrap(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_values: torch.Tensor) -> torch.Tensor:
            return self.inner(input_values)[0]

    path = tmp_path / "wav2vec2.pt2"
    torch.export.save(torch.export.export(Wrap().eval(), (torch.randn(1, 1600),)), str(path))
    result = fix_model(path, tmp_path / "fixed.onnx", FixOptions(eps=("nnapi",)), ModelOptions(inputs=("input_values:1x1600",)),
                       VerifyOptions(), force=False)
    (before,), (after,) = result.before, result.reports
    assert {n.op_type for n in before.nodes if not n.supported} >= {"InstanceNormalization", "Gelu", "Conv", "IsNaN", "Where"}
    kept = {f.name for f in result.applied}
    assert {"instancenorm", "nan-guard", "gelu", "conv1d-2d", "layernorm"} <= kept, result.tried
    assert after.supported_nodes == after.total_nodes and len(after.partitions) == 1, [
        (n.op_type, n.reasons) for n in after.nodes if not n.supported
    ]
    assert result.verification["passed"] is True
