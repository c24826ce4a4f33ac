"""A small ViT-shaped image classifier that really learned something, for the int8 tests on vision transformers.

Images 3x32x32 (noise background) with one uniformly coloured square in the upper or the lower half; the
class is colour x half (8 classes). The model is what the fix stage leaves of a Hugging Face
``ViTForImageClassification`` for NNAPI: a patch Conv (8x8), a CLS token and position embeddings
initialised as transformers does (normal, std 0.02), pre-LayerNorm blocks with the LayerNorm written out
(ReduceMean, Sub, Mul, Add eps, Sqrt, Div: the decomposition NNAPI runs), the tanh GELU written out, and a
Linear head on the final LayerNorm's CLS row. Trained a few seconds on the CPU (seeded), exported with the
TorchScript exporter at batch one; calibration and held-out arrays have a leading samples axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from quant_fixtures import train_classifier

SIDE, PATCH, CLASSES = 32, 8, 8
COLOURS = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0]], dtype=np.float32)


@dataclass(frozen=True)
class ImageModel:
    onnx_path: Path
    calibration: dict[str, np.ndarray]  # pixel_values -> [N, 1, 3, 32, 32]
    held_out: dict[str, np.ndarray]
    labels: np.ndarray
    torch_accuracy: float


def images(rng: np.random.Generator, n: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Noise (std 0.5) with a square of side 8..16 in one colour, in the upper or the lower half."""
    x = rng.normal(0.0, 0.5, (n, 1, 3, SIDE, SIDE)).astype(np.float32)
    labels = np.empty(n, np.int64)
    for i in range(n):
        colour, lower = int(rng.integers(len(COLOURS))), int(rng.integers(2))
        s = int(rng.integers(8, SIDE // 2 + 1))
        c, r = int(rng.integers(0, SIDE - s + 1)), int(rng.integers(0, SIDE // 2 - s + 1)) + lower * (SIDE // 2)
        x[i, 0, :, r : r + s, c : c + s] = (COLOURS[colour] * 2.0 - 1.0)[:, None, None]
        labels[i] = 2 * colour + lower
    return {"pixel_values": x}, labels


def _model() -> Any:
    import torch
    import torch.nn as nn

    class LayerNorm(nn.Module):  # written out, as the fix stage decomposes LayerNormalization for NNAPI
        def __init__(self, d: int) -> None:
            super().__init__()
            self.weight, self.bias = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            dev = x - x.mean(-1, keepdim=True)
            return dev / torch.sqrt((dev * dev).mean(-1, keepdim=True) + 1e-12) * self.weight + self.bias

    def gelu(x: torch.Tensor) -> torch.Tensor:  # the tanh GELU, written out (no Pow)
        return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    class Block(nn.Module):
        def __init__(self, d: int, heads: int) -> None:
            super().__init__()
            self.heads, self.d = heads, d
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
            self.ln1, self.ln2 = LayerNorm(d), LayerNorm(d)
            self.ff1, self.ff2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

        def forward(self, h: torch.Tensor) -> torch.Tensor:
            b, t, _ = h.shape
            dh = self.d // self.heads

            def split(z: torch.Tensor) -> torch.Tensor:
                return z.reshape(b, t, self.heads, dh).transpose(1, 2)

            x = self.ln1(h)
            scores = split(self.q(x) / math.sqrt(dh)) @ split(self.k(x)).transpose(-1, -2)
            h = h + self.o((torch.softmax(scores, -1) @ split(self.v(x))).transpose(1, 2).reshape(b, t, self.d))
            return h + self.ff2(gelu(self.ff1(self.ln2(h))))

    class ViT(nn.Module):
        def __init__(self, d: int = 32) -> None:
            super().__init__()
            self.patches = nn.Conv2d(3, d, PATCH, PATCH)
            tokens = (SIDE // PATCH) ** 2 + 1
            self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)  # transformers' ViT initialisation
            self.positions = nn.Parameter(torch.randn(1, tokens, d) * 0.02)
            self.blocks = nn.ModuleList([Block(d, 2), Block(d, 2)])
            self.ln = LayerNorm(d)
            self.head = nn.Linear(d, CLASSES)

        def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
            p = self.patches(pixel_values).flatten(2).transpose(1, 2)
            h = torch.cat([self.cls.expand(p.shape[0], -1, -1), p], 1) + self.positions
            for block in self.blocks:
                h = block(h)
            return self.head(self.ln(h)[:, 0])

    return ViT()


def build(out: Path) -> ImageModel:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(0)
        rng = np.random.default_rng(0)
        model = _model()
        train, y = images(rng, 2048)
        cal, _ = images(rng, 48)
        held, labels = images(rng, 200)
        train_classifier(model, (train["pixel_values"][:, 0],), y, epochs=8, lr=3e-3)
        with torch.no_grad():
            logits = model(torch.from_numpy(held["pixel_values"][:, 0]))
        acc = float((logits.argmax(-1).numpy() == labels).mean())
        path = out / "vit.onnx"
        example = (torch.from_numpy(held["pixel_values"][0]),)
        torch.onnx.export(model, example, str(path), dynamo=False, input_names=["pixel_values"], output_names=["logits"],
                          opset_version=17, do_constant_folding=True)  # fmt: skip
        return ImageModel(path, cal, held, labels, acc)
    finally:
        torch.set_num_threads(threads)


_BUILT: dict[str, ImageModel] = {}


@pytest.fixture(scope="session")
def vit_classifier(tmp_path_factory: pytest.TempPathFactory) -> ImageModel:
    if "vit" not in _BUILT:
        _BUILT["vit"] = build(tmp_path_factory.mktemp("quant-vit"))
    return _BUILT["vit"]
