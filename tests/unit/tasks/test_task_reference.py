"""mobilegen.tasks.reference: the native resize/crop is exactly the algorithm its docstring defines (a
scalar, line-for-line port here is what Kotlin/Swift port), the normalisation and post-processing."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from PIL import Image

from mobilegen.errors import UsageError
from mobilegen.tasks.reference import (
    classifications,
    normalize,
    pcm_to_float,
    postprocess,
    postprocess_outputs,
    preprocess,
    resize_crop,
    top_k,
)
from mobilegen.tasks.spec import TaskSpec

SPEC = TaskSpec("image-classification", ("a", "b", "c", "d"), crop=(6, 5), mean=(0.5, 0.4, 0.3), std=(0.2, 0.25, 0.3), scale=1 / 255)


def scalar_resize_crop(p: list[list[list[int]]], n: int | None, ch: int, cw: int) -> list[list[list[int]]]:
    """The docstring's algorithm in plain Python ints and floats, as a port would write it."""
    h, w = len(p), len(p[0])
    n = n if n is not None else max(ch, cw)
    if h <= w:
        nh, nw = n, n * w // h
    else:
        nw, nh = n, n * h // w
    top, left = (nh - ch) // 2, (nw - cw) // 2

    def tap(k: int, size: int, resized: int) -> tuple[int, int, float]:
        s = float((2 * k + 1) * size) / float(2 * resized) - 0.5
        s = min(max(s, 0.0), float(size - 1))
        lo = math.floor(s)
        return lo, min(lo + 1, size - 1), s - lo

    out = []
    for i in range(ch):
        y0, y1, fy = tap(top + i, h, nh)
        row = []
        for j in range(cw):
            x0, x1, fx = tap(left + j, w, nw)
            px = []
            for c in range(3):
                a = float(p[y0][x0][c]) + (float(p[y0][x1][c]) - float(p[y0][x0][c])) * fx
                b = float(p[y1][x0][c]) + (float(p[y1][x1][c]) - float(p[y1][x0][c])) * fx
                v = a + (b - a) * fy
                px.append(int(min(max(math.floor(v + 0.5), 0), 255)))
            row.append(px)
        out.append(row)
    return out


@pytest.mark.parametrize(("h", "w", "resize", "crop"), [(6, 5, None, (6, 5)), (48, 64, None, (6, 5)), (40, 7, None, (6, 5)), (5, 90, None, (3, 11)), (91, 37, 9, (6, 5)), (7, 300, 8, (8, 8)), (5, 5, 17, (3, 11)), (1, 1, None, (4, 4))])
def test_resize_crop_is_the_documented_algorithm(h: int, w: int, resize: int | None, crop: tuple[int, int]) -> None:
    rng = np.random.default_rng(h * 1000 + w)
    img = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    spec = replace(SPEC, resize=resize, crop=crop)
    got = resize_crop(img, spec)
    assert got.dtype == np.uint8 and got.shape == (*crop, 3)
    assert got.tolist() == scalar_resize_crop(img.tolist(), resize, *crop)


def test_same_size_is_identity_and_pillow_input_matches() -> None:
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, size=(5, 5, 3), dtype=np.uint8)
    square = replace(SPEC, crop=(5, 5))
    assert np.array_equal(resize_crop(img, square), img)
    rgba = np.concatenate([img, np.full((5, 5, 1), 7, np.uint8)], axis=-1)  # alpha dropped, not composited
    assert np.array_equal(resize_crop(rgba, square), img)
    assert np.array_equal(resize_crop(Image.fromarray(rgba, "RGBA"), square), img)
    assert np.array_equal(resize_crop(Image.fromarray(img), square), img)
    assert resize_crop(np.zeros((6, 5, 3), np.uint8), SPEC).shape == (6, 5, 3)


def test_bad_images() -> None:
    for bad in (np.zeros((0, 4, 3), np.uint8), np.zeros((4, 4, 3), np.float32), np.zeros((4, 4), np.uint8)):
        with pytest.raises(UsageError):
            resize_crop(bad, SPEC)


def test_normalize_order_layout_and_channels() -> None:
    px = np.array([[[[10, 128, 250]]]], dtype=np.uint8)  # 1x1x1x3
    x = normalize(px, SPEC)
    want = (np.array([10, 128, 250], np.float32) * np.float32(1 / 255) - np.float32([0.5, 0.4, 0.3])) / np.float32([0.2, 0.25, 0.3])
    assert x.shape == (1, 3, 1, 1) and x.dtype == np.float32 and np.array_equal(x[0, :, 0, 0], want)
    bgr = normalize(px, replace(SPEC, channels="bgr", layout="nhwc"))
    want_bgr = (np.array([250, 128, 10], np.float32) * np.float32(1 / 255) - np.float32([0.5, 0.4, 0.3])) / np.float32([0.2, 0.25, 0.3])
    assert bgr.shape == (1, 1, 1, 3) and np.array_equal(bgr[0, 0, 0], want_bgr)
    assert preprocess(np.zeros((12, 10, 3), np.uint8), SPEC).shape == (1, 3, 6, 5)


def test_post_processing() -> None:
    logits = np.array([[1.0, 3.0, 3.0, -1.0]], dtype=np.float32)
    spec = replace(SPEC, softmax=True, top_k=3)
    scores, indices = postprocess_outputs([logits], spec)
    assert indices.tolist() == [[1, 2, 0]] and indices.dtype == np.int64  # equal scores: lower index first
    assert scores.dtype == np.float32 and math.isclose(float(np.exp(logits).sum() * scores[0, 0]), float(np.exp(3.0)), rel_tol=1e-6)
    assert postprocess(logits, spec) == classifications([scores, indices], spec)
    assert [c[0] for c in postprocess(logits, replace(SPEC, labels=()), k=2)] == ["1", "2"]
    assert top_k(np.array([[5.0, 5.0, 5.0]]), 2)[1].tolist() == [[0, 1]]
    assert postprocess_outputs([logits], SPEC) == [logits]


def test_pcm() -> None:
    pcm = np.array([-32768, 0, 16384, 32767], dtype=np.int16)
    x = pcm_to_float(pcm)
    assert x.shape == (1, 4) and x.dtype == np.float32 and x[0].tolist() == [-1.0, 0.0, 0.5, 32767 / 32768]
