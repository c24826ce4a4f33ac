"""The native resize against Pillow's antialiased resize on large photos (issue 26 item 7).

Four deterministic textured images of 12 MP or more (noise + gradients + high-frequency stripes, each
with a different mix, size and orientation) go through ``mobilegen.tasks.reference.resize_crop`` — the
definition the Kotlin and Swift ``ImageInput`` port — with ``--resize-filter bilinear`` (2×2 taps, the
earlier behaviour) and ``--resize-filter antialias`` (the default), for an ImageNet-style
``--resize 256 --crop 224x224`` and a ``--crop 224x224`` without ``--resize``. The oracle is Pillow:
``Image.resize((nw, nh), Image.BILINEAR)`` (its triangle filter widened by the reduction factor), then
the same centre crop. Prints, per image and spec, the mean and the max absolute difference per channel
value (in 1/255 steps) and the share of values that differ, before (bilinear) and after (antialias).
With torch installed, two more columns: the antialiased resize against ``torch.nn.functional.interpolate(...,
mode="bilinear", antialias=True)`` (what torchvision's ``Resize(antialias=True)`` runs on tensors) on uint8
and on float tensors (rounded once, at the end).

Asserts nothing. About 10 s on this repository's 2-core machine (20 s with the torch columns). ``--size WxH`` overrides the size of
the first image (e.g. a smaller one for a quick look).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

import numpy as np
from PIL import Image

from mobilegen.tasks.reference import resize_crop, resized_size
from mobilegen.tasks.spec import TaskSpec

# (name, width, height, seed): 12 MP landscape, 12 MP portrait, 16 MP 4:3, 12.6 MP 16:9-ish
IMAGES = (("landscape_4000x3000", 4000, 3000, 1), ("portrait_3000x4000", 3000, 4000, 2), ("large_4608x3456", 4608, 3456, 3), ("wide_4800x2640", 4800, 2640, 4))
SPECS = (("resize 256, crop 224", TaskSpec(kind="image", resize=256, crop=(224, 224))), ("crop 224", TaskSpec(kind="image", crop=(224, 224))))


def textured(w: int, h: int, seed: int) -> np.ndarray:
    """An h × w × 3 uint8 image: smooth gradients, uniform noise, and stripes of 2-7 pixel periods at a few
    angles (the frequencies a downscale without a filter aliases), mixed differently per seed."""
    rng = np.random.default_rng(seed)
    y = np.arange(h, dtype=np.float32)[:, None]
    x = np.arange(w, dtype=np.float32)[None, :]
    out = np.empty((h, w, 3), dtype=np.uint8)
    for c in range(3):
        period = float(rng.uniform(2.0, 7.0))
        angle = float(rng.uniform(0.0, np.pi))
        phase = (x * np.float32(np.cos(angle)) + y * np.float32(np.sin(angle))) * np.float32(2 * np.pi / period)
        v = np.float32(60.0 * (c + 1) / 3) * (x / np.float32(w)) + np.float32(50.0) * (y / np.float32(h))  # gradients
        v += np.float32(70.0) * np.sin(phase)  # high-frequency stripes
        v += rng.uniform(-40.0, 40.0, size=(h, w)).astype(np.float32)  # noise
        v += np.float32(110.0)
        out[:, :, c] = np.clip(v, 0, 255).astype(np.uint8)
    return out


def pillow_crop(img: np.ndarray, spec: TaskSpec) -> np.ndarray:
    h, w = img.shape[:2]
    nh, nw = resized_size(h, w, spec)
    ch, cw = spec.crop or (0, 0)
    top, left = (nh - ch) // 2, (nw - cw) // 2
    resized = np.asarray(Image.fromarray(img).resize((nw, nh), Image.BILINEAR))
    return resized[top : top + ch, left : left + cw]


def torch_crop(img: np.ndarray, spec: TaskSpec, as_float: bool) -> np.ndarray | None:
    """torch's antialiased bilinear interpolate of the whole image (uint8 or float tensor), then the crop;
    None without torch."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    h, w = img.shape[:2]
    nh, nw = resized_size(h, w, spec)
    ch, cw = spec.crop or (0, 0)
    top, left = (nh - ch) // 2, (nw - cw) // 2
    x = torch.from_numpy(img).permute(2, 0, 1)[None]
    r = F.interpolate(x.float() if as_float else x, size=(nh, nw), mode="bilinear", antialias=True, align_corners=False)
    out: np.ndarray = r.round().clamp(0, 255).to(torch.uint8)[0].permute(1, 2, 0).numpy()
    return out[top : top + ch, left : left + cw]


def stats(got: np.ndarray, want: np.ndarray) -> tuple[float, int, float]:
    d = np.abs(got.astype(np.int16) - want.astype(np.int16))
    return float(d.mean()), int(d.max()), float((d != 0).mean())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", help="WxH of the first image instead of 4000x3000")
    args = ap.parse_args(argv)
    images = list(IMAGES)
    if args.size:
        w, h = (int(v) for v in args.size.lower().split("x"))
        images[0] = (f"custom_{w}x{h}", w, h, 1)
    import PIL

    print(f"Pillow {PIL.__version__}; differences in 1/255 steps per channel value, to Pillow's BILINEAR resize + the same centre crop")
    header = (
        f"{'image':<22} {'MP':>5} {'spec':<22} {'bilinear mean':>13} {'max':>4} {'differ':>7}   {'antialias mean':>14} {'max':>4} {'differ':>7} {'ms':>6}"
        f"   {'torch u8 mean/max':>17} {'torch f32 mean/max':>18}"
    )
    print(header)
    print("-" * len(header))
    for name, w, h, seed in images:
        img = textured(w, h, seed)
        for label, spec in SPECS:
            want = pillow_crop(img, spec)
            before = stats(resize_crop(img, replace(spec, resize_filter="bilinear")), want)
            t = time.perf_counter()
            after_img = resize_crop(img, spec)
            ms = (time.perf_counter() - t) * 1000
            after = stats(after_img, want)
            extra = []
            for as_float in (False, True):
                t = torch_crop(img, spec, as_float)
                d = stats(after_img, t) if t is not None else None
                extra.append(f"{d[0]:.4f}/{d[1]}" if d is not None else "-")
            print(
                f"{name:<22} {w * h / 1e6:>5.1f} {label:<22} {before[0]:>13.3f} {before[1]:>4} {before[2]:>7.1%}   "
                f"{after[0]:>14.4f} {after[1]:>4} {after[2]:>7.2%} {ms:>6.0f}   {extra[0]:>17} {extra[1]:>18}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
