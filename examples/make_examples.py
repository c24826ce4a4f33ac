"""Make the bundled example models (committed next to this script; rerun to regenerate).

* ``mobilenet_tiny.pt``  — a MobileNetV2-style CNN (inverted residuals, depthwise convs, ReLU6,
  BatchNorm, global pooling, classifier) saved as TorchScript. Input ``image`` 1x3x64x64.
* ``encoder_tiny.pt2``   — a small transformer encoder (token embedding, learned positions,
  multi-head attention, LayerNorm, GELU MLP, mean pooling, classifier) saved with
  ``torch.export.save``, with a dynamic sequence length. Input ``tokens`` int64 1x16.

Weights are random but seeded, so the files are reproducible. Run: ``python examples/make_examples.py``.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).resolve().parent


def conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = [
        nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
    ]
    if act:
        layers.append(nn.ReLU6(inplace=True))
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.block = nn.Sequential(
            conv_bn(cin, hidden, 1),
            conv_bn(hidden, hidden, 3, stride, groups=hidden),
            conv_bn(hidden, cout, 1, act=False),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.use_res else y


class MobileNetTiny(nn.Module):
    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            conv_bn(3, 16, 3, 2),
            InvertedResidual(16, 16, 1, 1),
            InvertedResidual(16, 24, 2, 4),
            InvertedResidual(24, 24, 1, 4),
            InvertedResidual(24, 32, 2, 4),
            conv_bn(32, 64, 1),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(64, num_classes)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.features(image))
        return self.classifier(torch.flatten(x, 1))


class EncoderTiny(nn.Module):
    def __init__(self, vocab: int = 100, dim: int = 32, heads: int = 4, layers: int = 2, max_len: int = 64, classes: int = 3) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, max_len, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 2, dropout=0.0, activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) + self.pos[:, : tokens.shape[1]]
        x = self.norm(self.encoder(x))
        return self.head(x.mean(dim=1))


def main() -> None:
    torch.manual_seed(0)
    cnn = MobileNetTiny().eval()
    with torch.no_grad():  # give BatchNorm non-trivial statistics
        for m in cnn.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    torch.jit.save(torch.jit.trace(cnn, torch.randn(1, 3, 64, 64)), str(HERE / "mobilenet_tiny.pt"))

    torch.manual_seed(1)
    enc = EncoderTiny().eval()
    seq = torch.export.Dim("seq", min=2, max=64)
    ep = torch.export.export(enc, (torch.randint(0, 100, (1, 16)),), dynamic_shapes={"tokens": {1: seq}})
    torch.export.save(ep, str(HERE / "encoder_tiny.pt2"))
    print("wrote", HERE / "mobilenet_tiny.pt", "and", HERE / "encoder_tiny.pt2")


if __name__ == "__main__":
    main()
