"""A BERT-shaped text classifier that really learned something, for the int8 activation-rule tests.

Token ids (vocabulary 40, length 12, id 0 = padding) with an attention mask: each sequence holds 4..12
real tokens, noise ids 5..39 and one marker (id 1); the class is the id after the marker, mod 4. The model is
what the fix stage leaves of a Hugging Face encoder: word + position embeddings, post-LayerNorm blocks with
the LayerNorm written out (ReduceMean, Sub, Pow, Sqrt, Div: the decomposition NNAPI runs), the attention
mask added to the scores as ``(1 - mask) * finfo(float32).min`` (transformers' extended mask), mean pooling
over the real tokens and a Linear head. Trained a few seconds on the CPU (seeded), exported with the
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

VOCAB, LENGTH, CLASSES = 40, 12, 4


@dataclass(frozen=True)
class TextModel:
    onnx_path: Path
    calibration: dict[str, np.ndarray]  # input -> [N, 1, 12] int64
    held_out: dict[str, np.ndarray]
    labels: np.ndarray
    torch_accuracy: float


def sequences(rng: np.random.Generator, n: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Noise ids 5..39 with one marker (id 1) somewhere before the last real token: the class is the id
    right after the marker, mod 4 — a model must attend from position to position to get it (a uniform
    attention, which a broken mask gives, cannot)."""
    ids = np.zeros((n, 1, LENGTH), np.int64)
    mask = np.zeros((n, 1, LENGTH), np.int64)
    labels = np.zeros(n, np.int64)
    for i in range(n):
        length = int(rng.integers(4, LENGTH + 1))
        ids[i, 0, :length] = rng.integers(5, VOCAB, length)
        p = int(rng.integers(0, length - 1))
        ids[i, 0, p] = 1
        labels[i] = (ids[i, 0, p + 1] - 5) % CLASSES
        mask[i, 0, :length] = 1
    return {"input_ids": ids, "attention_mask": mask}, labels


def _model() -> Any:
    import torch
    import torch.nn as nn

    class LayerNorm(nn.Module):  # written out, as the fix stage decomposes LayerNormalization for NNAPI
        def __init__(self, d: int) -> None:
            super().__init__()
            self.weight, self.bias = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            mu = x.mean(-1, keepdim=True)
            dev = x - mu
            return dev / torch.sqrt((dev * dev).mean(-1, keepdim=True) + 1e-12) * self.weight + self.bias

    class Block(nn.Module):
        def __init__(self, d: int, heads: int) -> None:
            super().__init__()
            self.heads, self.d = heads, d
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
            self.ln1, self.ln2 = LayerNorm(d), LayerNorm(d)
            self.ff1, self.ff2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

        def forward(self, h: torch.Tensor, add_mask: torch.Tensor) -> torch.Tensor:
            b, t, _ = h.shape
            dh = self.d // self.heads

            def split(z: torch.Tensor) -> torch.Tensor:
                return z.reshape(b, t, self.heads, dh).transpose(1, 2)

            # the scale on q, the mask added to the MatMul's output (transformers' sdpa path exports so)
            scores = split(self.q(h) / math.sqrt(dh)) @ split(self.k(h)).transpose(-1, -2) + add_mask
            o = (torch.softmax(scores, -1) @ split(self.v(h))).transpose(1, 2).reshape(b, t, self.d)
            h = self.ln1(h + self.o(o))
            return self.ln2(h + self.ff2(torch.relu(self.ff1(h))))

    class Encoder(nn.Module):
        def __init__(self, d: int = 32) -> None:
            super().__init__()
            self.words, self.positions = nn.Embedding(VOCAB, d), nn.Embedding(LENGTH, d)
            self.ln = LayerNorm(d)
            self.blocks = nn.ModuleList([Block(d, 2), Block(d, 2)])
            self.head = nn.Linear(d, CLASSES)

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            pos = torch.arange(input_ids.shape[-1]).unsqueeze(0)
            h = self.ln(self.words(input_ids) + self.positions(pos))
            m = attention_mask.to(torch.float32)
            add_mask = ((1.0 - m) * torch.finfo(torch.float32).min)[:, None, None, :]
            for block in self.blocks:
                h = block(h, add_mask)
            pooled = (h * m[..., None]).sum(1) / m.sum(1, keepdim=True)
            return self.head(pooled)

    return Encoder()


def build(out: Path) -> TextModel:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(0)
        rng = np.random.default_rng(0)
        model = _model()
        train, y = sequences(rng, 2048)
        cal, _ = sequences(rng, 48)
        held, labels = sequences(rng, 200)
        train_classifier(model, (train["input_ids"][:, 0], train["attention_mask"][:, 0]), y, epochs=12, lr=3e-3)
        with torch.no_grad():
            logits = model(torch.from_numpy(held["input_ids"][:, 0]), torch.from_numpy(held["attention_mask"][:, 0]))
        acc = float((logits.argmax(-1).numpy() == labels).mean())
        path = out / "bert.onnx"
        example = (torch.from_numpy(held["input_ids"][0]), torch.from_numpy(held["attention_mask"][0]))
        torch.onnx.export(model, example, str(path), dynamo=False, input_names=["input_ids", "attention_mask"],
                          output_names=["logits"], opset_version=17, do_constant_folding=True)  # fmt: skip
        return TextModel(path, cal, held, labels, acc)
    finally:
        torch.set_num_threads(threads)


_BUILT: dict[str, TextModel] = {}


@pytest.fixture(scope="session")
def text_classifier(tmp_path_factory: pytest.TempPathFactory) -> TextModel:
    if "bert" not in _BUILT:
        _BUILT["bert"] = build(tmp_path_factory.mktemp("quant-bert"))
    return _BUILT["bert"]
