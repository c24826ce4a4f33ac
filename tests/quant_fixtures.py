"""Models that really learned something, for the quantization tests (issue 13).

Two classifiers train in a few seconds on seeded synthetic tasks (CPU), are exported to ONNX with the
TorchScript exporter (fixed batch of one: what NNAPI wants) and come with calibration and held-out
arrays. Import the fixtures into a test module (``from quant_fixtures import cnn_classifier``); the
trained model is built once per test session whichever modules import it.

- ``cnn_classifier``: 1×16×16 images with a bar, a cross, a square or a diagonal (4 classes) under noise,
  a 3-conv CNN (one depthwise) with a Linear head; input ``x`` ``[1,1,16,16]``, output ``logits`` ``[1,4]``.
- ``transformer_classifier``: 12 tokens × 16 features; the class is which of 4 prototype vectors is
  planted at 3 random positions among noise tokens; one pre-LayerNorm attention block (hand-written,
  2 heads) with an MLP, mean pooled, Linear head; input ``x`` ``[1,12,16]``, output ``logits`` ``[1,4]``.

Calibration and held-out arrays carry a leading samples axis over the model's batch dim of one
(``{"x": [N,1,16,16]}``): the form ``--calibration FILE.npz`` takes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

CLASSES = 4
CALIB_SAMPLES = 64
HELD_OUT_SAMPLES = 240


@dataclass(frozen=True)
class TrainedModel:
    onnx_path: Path
    calibration: dict[str, np.ndarray]  # input name -> [N, *input shape[1:]]
    held_out: dict[str, np.ndarray]
    labels: np.ndarray  # held-out labels, [N]
    torch_accuracy: float  # the trained model's held-out accuracy in PyTorch

    def __iter__(self) -> Any:  # (onnx path, calibration, held-out, labels)
        return iter((self.onnx_path, self.calibration, self.held_out, self.labels))


def _images(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    labels = rng.integers(0, CLASSES, n)
    x = rng.normal(0.0, 0.9, (n, 1, 16, 16)).astype(np.float32)
    for i, c in enumerate(labels):
        r, s = rng.integers(3, 13, 2)
        img = x[i, 0]
        if c == 0:  # horizontal bar
            img[r, 2:14] += 1.5
        elif c == 1:  # vertical bar
            img[2:14, s] += 1.5
        elif c == 2:  # filled square
            r, s = min(r, 10), min(s, 10)
            img[r : r + 4, s : s + 4] += 1.5
        else:  # diagonal
            for k in range(-4, 5):
                if 0 <= r + k < 16 and 0 <= s + k < 16:
                    img[r + k, s + k] += 1.5
    return x, labels


def _sequences(rng: np.random.Generator, n: int, protos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    labels = rng.integers(0, CLASSES, n)
    x = rng.normal(0.0, 1.0, (n, 12, 16)).astype(np.float32)
    for i, c in enumerate(labels):
        pos = rng.choice(12, 3, replace=False)
        x[i, pos] = protos[c] + rng.normal(0.0, 1.0, (3, 16))
    return x, labels


def _cnn() -> Any:
    import torch.nn as nn

    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 16, 3, padding=1, groups=16),  # depthwise: per-tensor vs per-channel matters here
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 4 * 4, 384),  # most of the weights: the .ort size ratio measures them
        nn.ReLU(),
        nn.Linear(384, CLASSES),
    )


def _encoder() -> Any:
    import torch
    import torch.nn as nn

    class Encoder(nn.Module):
        def __init__(self, d: int = 32, heads: int = 2) -> None:
            super().__init__()
            self.heads, self.d = heads, d
            self.embed = nn.Linear(16, d)
            self.norm1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.norm2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, d))
            self.head = nn.Linear(d, CLASSES)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, _ = x.shape
            h = self.embed(x)
            q, k, v = self.qkv(self.norm1(h)).chunk(3, dim=-1)
            dh = self.d // self.heads

            def split(z: torch.Tensor) -> torch.Tensor:
                return z.reshape(b, t, self.heads, dh).transpose(1, 2)

            att = torch.softmax(split(q) @ split(k).transpose(-1, -2) / math.sqrt(dh), dim=-1)
            o = (att @ split(v)).transpose(1, 2).reshape(b, t, self.d)
            h = h + self.proj(o)
            h = h + self.mlp(self.norm2(h))
            return self.head(h.mean(dim=1))

    return Encoder()


def train_classifier(model: Any, inputs: tuple[np.ndarray, ...], y: np.ndarray, *, epochs: int, lr: float) -> None:
    """Adam on cross-entropy, batches of 64 in a fresh torch.randperm order each epoch (seed torch before:
    the order is the seed's), then eval mode. ``inputs`` are the model's positional inputs, samples first."""
    import torch

    xs, ys = [torch.from_numpy(x) for x in inputs], torch.from_numpy(y).long()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(len(ys))
        for i in range(0, len(ys), 64):
            idx = perm[i : i + 64]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(*(x[idx] for x in xs)), ys[idx])
            loss.backward()
            opt.step()
    model.eval()


def _build(kind: str, out: Path) -> TrainedModel:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the machine is shared: one thread trains as fast and never oversubscribes
    try:
        return _build_single_threaded(kind, out)
    finally:
        torch.set_num_threads(threads)


def _build_single_threaded(kind: str, out: Path) -> TrainedModel:
    import torch

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    if kind == "cnn":
        model = _cnn()
        make = _images
        epochs, lr = 4, 3e-3
    else:
        model = _encoder()
        protos = rng.normal(0.0, 0.6, (CLASSES, 16)).astype(np.float32)

        def make(r: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
            return _sequences(r, n, protos)

        epochs, lr = 12, 3e-3
    x_train, y_train = make(rng, 1536)
    x_cal, _ = make(rng, CALIB_SAMPLES)
    x_held, y_held = make(rng, HELD_OUT_SAMPLES)
    train_classifier(model, (x_train,), y_train, epochs=epochs, lr=lr)
    with torch.no_grad():
        acc = float((model(torch.from_numpy(x_held)).argmax(-1).numpy() == y_held).mean())
    path = out / f"{kind}.onnx"
    torch.onnx.export(
        model,
        (torch.from_numpy(x_held[:1]),),
        str(path),
        dynamo=False,
        input_names=["x"],
        output_names=["logits"],
        opset_version=17,
        do_constant_folding=True,
    )
    return TrainedModel(path, {"x": x_cal}, {"x": x_held}, y_held, acc)


_BUILT: dict[str, TrainedModel] = {}


def trained(kind: str, factory: pytest.TempPathFactory) -> TrainedModel:
    """The trained ``cnn`` or ``transformer``, built once per session."""
    if kind not in _BUILT:
        _BUILT[kind] = _build(kind, factory.mktemp(f"quant-{kind}"))
    return _BUILT[kind]


def onnx_accuracy(path: Path, held_out: dict[str, np.ndarray], labels: np.ndarray, *, optimized: bool = True) -> float:
    """Top-1 accuracy of an ONNX classifier on ``held_out`` (one sample per run, as the app runs it).
    ``optimized=False`` runs a QDQ model unfused (its reference semantics; an x86 host without VNNI
    saturates in its fused s8 kernels, see mobilegen/quantize/accuracy.py)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    if not optimized:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    (name, arr), = held_out.items()
    hits = [int(np.argmax(sess.run(None, {name: arr[i : i + 1]})[0])) == int(labels[i]) for i in range(len(labels))]
    return float(np.mean(hits))


@pytest.fixture(scope="session")
def cnn_classifier(tmp_path_factory: pytest.TempPathFactory) -> TrainedModel:
    return trained("cnn", tmp_path_factory)


@pytest.fixture(scope="session")
def transformer_classifier(tmp_path_factory: pytest.TempPathFactory) -> TrainedModel:
    return trained("transformer", tmp_path_factory)
