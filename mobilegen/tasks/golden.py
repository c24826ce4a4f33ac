"""Task golden files: a few generated photos (or sounds) and what the built model answers for them, for
the generated device tests to replay through ``classify(...)`` / ``run(...)``. Nothing is downloaded:
the images are gradients and shapes of different sizes and aspect ratios, made here.

Format (``<golden folder>/task/``, one per shipped model: ``golden/task`` or ``golden/<target>/task``)::

    cases.json      {"format": 1, "kind": "image-classification", "input": "image",
                     "cases": [{"name": "gradient_64x48", "width": 64, "height": 48,
                                "pixels": "gradient_64x48.rgba", "vectors": "gradient_64x48.mgv",
                                "top_k": [{"label": "cat", "index": 3, "score": 0.91}, ...]}, ...]}
                    (audio cases: {"name", "samples", "pcm": "NAME.pcm", "vectors"}; "top_k" only for
                    classifiers — image-classification, audio with --labels: the best min(5, classes)
                    classes — or --top-k — best first, equal scores by lower index)
    NAME.rgba       width × height × 4 bytes: RGBA8, row-major, top row first, alpha 255 (opaque, so
                    premultiplied and straight alpha read the same)
    NAME.pcm        samples × 2 bytes: int16 little-endian, mono
    NAME.mgv        mobilegen.verify.golden's device format (as golden.mgv): the graph's input — for an image the
                    exact output of the native resize/crop (``mobilegen.tasks.reference.resize_crop``), so
                    a port can be checked value for value — and the built model's outputs for it

Labels in ``cases.json`` are JSON strings (data, like ``labels.txt``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mobilegen.tasks.reference import classifications, resize_crop
from mobilegen.tasks.spec import TaskSpec
from mobilegen.verify.golden import GoldenCase, encode_mgv

FORMAT = 1
TASK_GOLDEN = "task"  # the folder inside a model's golden folder
TOP_K_DEFAULT = 5
# (name, height, width): landscape, odd-sized portrait, square larger than any crop, extreme panorama
IMAGE_SIZES = (("gradient", 48, 64), ("rings", 91, 37), ("checker", 200, 200), ("stripes", 30, 120))
AUDIO_CASES = ("chirp", "tone_noise")


@dataclass(frozen=True)
class GoldenInput:
    """One generated photo/sound: its raw data (RGBA8 h×w×4, or int16 samples) and the graph's input."""

    name: str
    raw: np.ndarray
    graph_input: np.ndarray  # image uint8 [1, H, W, 3] after the native step; pcm float32 [1, N]


def _image(kind: str, h: int, w: int) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    u, v = x / max(w - 1, 1), y / max(h - 1, 1)
    if kind == "gradient":
        rgb = np.stack([u * 255, v * 255, (1 - u) * 200 + 30], axis=-1)
    elif kind == "rings":
        r = np.hypot(u - 0.5, (v - 0.5) * h / w)
        ring = (np.sin(r * 40) > 0).astype(np.float64)
        rgb = np.stack([40 + 180 * ring, 200 - 120 * ring, 60 + 90 * v], axis=-1)
    elif kind == "checker":
        cell = ((x // 25 + y // 25) % 2).astype(np.float64)
        rgb = np.stack([30 + 40 * cell, 60 + 150 * cell, 230 - 100 * cell * u], axis=-1)
    else:  # stripes
        band = ((x // 10) % 3).astype(np.int64)
        rgb = np.zeros((h, w, 3))
        for c in range(3):
            rgb[..., c] = np.where(band == c, 230.0, 40.0) + 20 * v
    rgba = np.concatenate([np.clip(np.floor(rgb + 0.5), 0, 255), np.full((h, w, 1), 255.0)], axis=-1)
    return rgba.astype(np.uint8)


def _sound(kind: str, n: int, rate: int) -> np.ndarray:
    t = np.arange(n, dtype=np.float64) / rate
    if kind == "chirp":
        wave = 0.6 * np.sin(2 * np.pi * (200 + 1800 * t / max(t[-1], 1e-9) / 2) * t)
    else:
        wave = 0.4 * np.sin(2 * np.pi * 440 * t) + 0.1 * np.random.default_rng(0).standard_normal(n)
    pcm: np.ndarray = np.clip(np.round(wave * 32767), -32768, 32767).astype(np.int16)
    return pcm


def golden_inputs(spec: TaskSpec, samples: int | None = None) -> list[GoldenInput]:
    """The generated cases for ``spec`` (resolved: crop known). Audio needs the model's sample count."""
    if spec.is_image:
        out = []
        for kind, h, w in IMAGE_SIZES:
            rgba = _image(kind, h, w)
            out.append(GoldenInput(f"{kind}_{w}x{h}", rgba, resize_crop(rgba, spec)[None]))
        return out
    n = samples or spec.sample_rate or 16000
    return [GoldenInput(kind, pcm, pcm.astype(np.float32)[None]) for kind in AUDIO_CASES for pcm in [_sound(kind, n, spec.sample_rate or 16000)]]


def write_task_golden(
    folder: Path,
    spec: TaskSpec,
    inputs: list[GoldenInput],
    run: Callable[[dict[str, np.ndarray]], list[np.ndarray]],
    output_names: list[str],
    state: dict[str, np.ndarray] | None = None,
) -> Path:
    """``folder/task/``: every case's raw data, its vectors (input and ``run``'s outputs) and cases.json.
    ``state``: the ``--state`` inputs of a fresh stream (zeros), fed with every case and kept in its vectors."""
    dest = folder / TASK_GOLDEN
    dest.mkdir(parents=True, exist_ok=True)
    cases = []
    for g in inputs:
        feeds = {spec.input_name: g.graph_input, **(state or {})}
        outputs = run(feeds)
        vectors = f"{g.name}.mgv"
        (dest / vectors).write_bytes(encode_mgv(GoldenCase(feeds, dict(zip(output_names, outputs, strict=True)))))
        case: dict[str, object] = {"name": g.name}
        if spec.is_image:
            raw_name = f"{g.name}.rgba"
            case |= {"width": int(g.raw.shape[1]), "height": int(g.raw.shape[0]), "pixels": raw_name}
            (dest / raw_name).write_bytes(np.ascontiguousarray(g.raw, dtype=np.uint8).tobytes())
        else:
            raw_name = f"{g.name}.pcm"
            case |= {"samples": int(g.raw.size), "pcm": raw_name}
            (dest / raw_name).write_bytes(g.raw.astype("<i2").tobytes())
        case["vectors"] = vectors
        if spec.is_classifier:
            k = spec.top_k or TOP_K_DEFAULT
            scores = [o for n, o in zip(output_names, outputs, strict=True) if n not in spec.state_outputs]
            case["top_k"] = [{"label": label, "index": i, "score": s} for label, i, s in classifications(scores, spec)[:k]]
        cases.append(case)
    doc = {"format": FORMAT, "kind": spec.kind, "input": spec.input_name, "cases": cases}
    (dest / "cases.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return dest
