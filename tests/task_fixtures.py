"""A tiny image classifier trained in a few seconds on synthetic images, for the task (issue 14) tests.

Four classes by colour: reddish, greenish, bluish, grey; each image a noisy gradient. The model takes the
ImageNet-normalised 1x3x32x32 tensor ``mobilegen.tasks.reference.preprocess`` makes, so its accuracy is
measured through the same pre-processing the wrapped graph runs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from mobilegen.tasks.reference import normalize
from mobilegen.tasks.spec import TaskSpec

LABELS = ('red "mg-warm"', "green ${MG_HOME}", "blue \\(mgX)", "grey ☁ 灰色")  # hostile but legal labels: data, never code
SIZE = 32
SPEC = TaskSpec(
    kind="image-classification",
    labels=LABELS,
    crop=(SIZE, SIZE),
    resize=40,
    mean=(0.485, 0.456, 0.406),
    std=(0.229, 0.224, 0.225),
    scale=1 / 255,
    softmax=True,
    top_k=3,
)


def synthetic_images(n: int, rng: np.random.Generator, h: int = SIZE, w: int = SIZE) -> tuple[np.ndarray, np.ndarray]:
    """``n`` uint8 h×w×3 images and their classes."""
    classes = rng.integers(0, 4, size=n)
    base = rng.uniform(60, 140, size=(n, 1, 1, 3))
    for i, c in enumerate(classes):
        if c < 3:
            base[i, 0, 0, c] += rng.uniform(70, 110)
    ramp = np.linspace(-1, 1, w)[None, None, :, None] * rng.uniform(-30, 30, size=(n, 1, 1, 1))
    noise = rng.normal(0, 12, size=(n, h, w, 3))
    return np.clip(base + ramp + noise, 0, 255).astype(np.uint8), classes


class TinyCnn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(8, len(LABELS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def train_classifier(seed: int = 0) -> tuple[nn.Module, float]:
    """The trained model (eval mode) and its accuracy on fresh images (well above the 25 % of chance)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    net = TinyCnn()
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny net: threads only add contention on a shared machine
    try:
        for _ in range(40):
            imgs, cls = synthetic_images(48, rng)
            x = torch.from_numpy(normalize(imgs, SPEC))
            loss = nn.functional.cross_entropy(net(x), torch.from_numpy(cls))
            opt.zero_grad()
            loss.backward()
            opt.step()
    finally:
        torch.set_num_threads(threads)
    net.eval()
    imgs, cls = synthetic_images(256, rng)
    with torch.no_grad():
        pred = net(torch.from_numpy(normalize(imgs, SPEC))).argmax(1).numpy()
    return net, float(np.mean(pred == cls))


def write_classifier(d: Path) -> tuple[Path, Path, float]:
    """The trained classifier as TorchScript (1x3x32x32) and its labels file; and its accuracy."""
    net, acc = train_classifier()
    model = d / "colours.pt"
    torch.jit.save(torch.jit.trace(net, torch.zeros(1, 3, SIZE, SIZE)), str(model))
    labels = d / "labels.txt"
    labels.write_text("".join(f"{x}\n" for x in LABELS), encoding="utf-8")
    return model, labels, acc
