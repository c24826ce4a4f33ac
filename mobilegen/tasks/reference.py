"""The reference implementation of a task spec in numpy (and Pillow, to read images): the definition the
Kotlin and Swift wrappers port line for line, the gate's pre/post-processing around the original model,
and a tool for the ML engineer to check data against.

The native step, :func:`resize_crop` (outside the graph: an accelerator may need a static input shape)
----------------------------------------------------------------------------------------------------
Input: an RGB image of ``h`` rows and ``w`` columns, 8 bits per channel (alpha, if any, is dropped
without compositing: flatten translucent images first). Output: the ``ch × cw`` centre crop (``crop``)
of the image scaled so that its shorter side is ``N`` (``--resize N``, or ``max(ch, cw)`` without it);
uint8, row-major HWC, RGB. All integer arithmetic is exact; all floating-point arithmetic is IEEE
double, in exactly this order. Only the crop is computed: each output pixel depends on its own row's
and column's taps alone, so this equals resizing the whole image and cutting the crop out.

1. Resized size (integer floor division, as torchvision's ``Resize(N)``)::

       if h <= w:  nh = N;  nw = N * w // h
       else:       nw = N;  nh = N * h // w

   (``N ≥ max(ch, cw)`` is checked when the spec is made, so the crop always fits; with a square crop
   and no ``--resize``, an image of the crop's size is left as it is)

2. Crop offset in the resized image (floor): ``top = (nh - ch) // 2``, ``left = (nw - cw) // 2``.

``--resize-filter antialias`` (the default): Pillow's ``Image.resize(..., Image.BILINEAR)``, bit for bit
(``libImaging/Resample.c``: ``precompute_coeffs``, ``normalize_coeffs_8bpc``, horizontal pass then
vertical pass, 8-bit rounding between them), what torchvision's ``Resize(antialias=True)`` does on a PIL
image. When a side shrinks, the triangle filter widens with the reduction factor, so every source
pixel counts (no aliasing); when it grows, this is plain bilinear.

3a. Per side (rows: ``size = h``, ``resized = nh``, ``offset = top``, ``count = ch``; columns likewise
    with ``w``, ``nw``, ``left``, ``cw``), once::

       scale = double(size) / double(resized);  fs = max(scale, 1.0)
       support = fs;  ksize = int(ceil(support)) * 2 + 1;  inv = 1.0 / fs

    and for each output coordinate ``k = offset + i`` (``i`` in ``0 ..< count``), its first tap and tap
    count, its weights, then its fixed-point weights (``trunc``: truncation toward zero)::

       center = (double(k) + 0.5) * scale
       lo = max(trunc(center - support + 0.5), 0)
       n  = min(trunc(center + support + 0.5), size) - lo
       for t in 0 ..< n:  x = abs((double(lo + t) - center + 0.5) * inv)
                          wt[t] = 1.0 - x if x < 1.0 else 0.0;   ww = ww + wt[t]   (ww from 0.0, in t order)
       for t in 0 ..< n:  wt[t] = wt[t] / ww   (when ww != 0.0)
       q[t] = trunc(0.5 + wt[t] * 4194304.0)   (2^22; taps t ≥ n have q[t] = 0)

4a. Horizontal pass, for every source row ``r`` from ``rows.lo[0]`` to ``rows.lo[ch-1] + rows.n[ch-1] - 1``
    and every crop column ``j``, per channel, in 32-bit (or wider) integers::

       acc = 2^21 + sum over t < cols.n[j] of p[r][cols.lo[j] + t] * cols.q[j][t]
       tmp[r][j] = min(max(acc >> 22, 0), 255)        (>>: arithmetic shift, i.e. floor division)

5a. Vertical pass, for every crop row ``i`` and column ``j``, per channel::

       acc = 2^21 + sum over t < rows.n[i] of tmp[rows.lo[i] + t][j] * rows.q[i][t]
       out[i][j] = min(max(acc >> 22, 0), 255)

``--resize-filter bilinear`` (mobilegen's only resize before the antialiased default): 2×2 taps, no
antialiasing, so a 12 MP photo reduced to 224 aliases (benchmarks/resize_parity.py).

3b. For each output row ``i`` (and likewise each column ``j`` with ``w``, ``nw``, ``left``): the source
    coordinate with half-pixel centres, clamped::

       s  = double((2 * (top + i) + 1) * h) / double(2 * nh) - 0.5
       s  = min(max(s, 0.0), double(h - 1))
       y0 = floor(s);  y1 = min(y0 + 1, h - 1);  fy = s - y0

4b. Bilinear, per channel (``p[y][x]`` as double)::

       a = p[y0][x0] + (p[y0][x1] - p[y0][x0]) * fx
       b = p[y1][x0] + (p[y1][x1] - p[y1][x0]) * fx
       v = a + (b - a) * fy
       out = min(max(floor(v + 0.5), 0), 255)

Crop offsets floor where torchvision's ``CenterCrop`` rounds half to even (≤ 1 pixel apart for an odd
margin).

In the graph (``mobilegen.tasks.graph``), and here in float32, in this order
------------------------------------------------------------------------------
``x = float32(pixel)`` → channel swap (``--channels bgr``) → ``x * scale`` → ``x - mean`` → ``x / std``
→ transpose to the model's layout; after the model: softmax (``--softmax``), then the ``K`` largest
scores in descending order, ties to the lower index (``--top-k``). Audio: ``x = float32(sample) /
32768``.

Camera input (:func:`yuv420_to_rgb`, :func:`orient`, :func:`camera_input`; Kotlin ``FrameSampler``)
-----------------------------------------------------------------------------------------------------
A frame is RGBA_8888, ARGB_8888 or YUV_420_888 (a full-resolution Y plane, U and V at half resolution in
both directions, rounded up). YUV is BT.601 full range (JFIF, what camera YUV buffers carry), 16-bit fixed
point, per pixel ``(x, y)`` with the chroma sample ``(x // 2, y // 2)`` (no chroma interpolation)::

    u = U - 128;  v = V - 128
    R = clamp(Y + ((91881 * v + 32768) >> 16))
    G = clamp(Y + ((-22554 * u - 46802 * v + 32768) >> 16))
    B = clamp(Y + ((116130 * u + 32768) >> 16))        (>>: arithmetic shift; clamp to 0..255)

Then the crop rectangle ``(left, top, right, bottom)`` (columns ``[left, right)``, rows ``[top, bottom)``,
in the frame's own un-rotated coordinates, as CameraX's ``ImageProxy.cropRect``), then the rotation
clockwise by ``rotation`` degrees (0/90/180/270, CameraX's ``rotationDegrees``: what makes the frame
upright), then :func:`resize_crop` on the upright image. The ports never build the converted, cropped
or rotated frame: each reads, per line of the upright image, only the source pixels the taps need.

Audio, natively (:func:`pcm16_input`, :func:`float_input`): mono samples at ``--sample-rate``, ``window``
of them per run when the model's input length is fixed. 16-bit PCM (``runPcm16``) goes in as its sample
values; floats in [-1, 1] (``runFloat``) as ``float32(x) * 32768`` (exact), refused outside [-1, 1].
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from mobilegen.errors import UsageError
from mobilegen.tasks.spec import TaskSpec

if TYPE_CHECKING:
    from PIL import Image

Runner = Callable[[dict[str, np.ndarray]], list[np.ndarray]]
PCM_SCALE = 32768.0
PRECISION_BITS = 22  # Pillow's fixed-point weights for 8-bit images (Resample.c: 32 - 8 - 2)


def rgb_array(image: Image.Image | np.ndarray) -> np.ndarray:
    """An ``h × w × 3`` uint8 RGB array from a Pillow image (any mode; alpha dropped, not composited) or
    from an ``h × w × 3|4`` uint8 array."""
    if not isinstance(image, np.ndarray):
        mode = image.mode
        arr = np.asarray(image.convert("RGBA" if mode in ("RGBA", "LA", "PA", "P") else "RGB"))
    else:
        arr = image
    if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] not in (3, 4) or 0 in arr.shape[:2]:
        raise UsageError(f"an image must be a non-empty h×w×3 (or ×4) uint8 array, got {arr.dtype} {arr.shape}", hint="pass RGB(A) 8-bit pixels")
    return np.ascontiguousarray(arr[:, :, :3])


def _taps(size: int, resized: int, offset: int, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``bilinear`` step 3b: source indices (low, high) and weights of ``count`` output coordinates from ``offset``."""
    k = np.arange(offset, offset + count, dtype=np.int64)
    s = ((2 * k + 1) * size).astype(np.float64) / float(2 * resized) - 0.5
    s = np.minimum(np.maximum(s, 0.0), float(size - 1))
    lo = np.floor(s).astype(np.int64)
    hi = np.minimum(lo + 1, size - 1)
    return lo, hi, s - lo


def antialias_taps(size: int, resized: int, offset: int, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``antialias`` step 3a for ``count`` output coordinates from ``offset`` of a side scaled from ``size``
    to ``resized``: each one's first tap ``lo``, its tap count ``n`` and its ``count × ksize`` fixed-point
    weights ``q`` (0 past ``n``). Pillow's ``precompute_coeffs`` + ``normalize_coeffs_8bpc``, operation for
    operation (the weights are never negative: the triangle filter is not)."""
    scale = float(size) / float(resized)
    fs = max(scale, 1.0)
    support = fs
    ksize = int(math.ceil(support)) * 2 + 1
    inv = 1.0 / fs
    center = (np.arange(offset, offset + count, dtype=np.int64).astype(np.float64) + 0.5) * scale
    lo = np.maximum(np.trunc(center - support + 0.5).astype(np.int64), 0)
    n = np.minimum(np.trunc(center + support + 0.5).astype(np.int64), size) - lo
    wt = np.zeros((count, ksize), dtype=np.float64)
    ww = np.zeros(count, dtype=np.float64)
    for t in range(ksize):
        x = np.abs(((lo + t).astype(np.float64) - center + 0.5) * inv)
        w = np.where((t < n) & (x < 1.0), 1.0 - x, 0.0)
        wt[:, t] = w
        ww = ww + w
    wt = np.where(ww[:, None] != 0.0, wt / np.where(ww != 0.0, ww, 1.0)[:, None], wt)
    q = np.trunc(0.5 + wt * float(1 << PRECISION_BITS)).astype(np.int64)
    return lo, n, q


def _pass(src: np.ndarray, axis: int, lo: np.ndarray, n: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Steps 4a/5a along ``axis`` (0: rows, 1: columns) of ``src`` (uint8, h × w × 3): one output line per
    entry of ``lo``, sums in int64 (never more than 2^31 for 8-bit pixels), rounded and clamped to uint8."""
    acc = np.full((len(lo), src.shape[1], 3) if axis == 0 else (src.shape[0], len(lo), 3), 1 << (PRECISION_BITS - 1), dtype=np.int64)
    last = src.shape[axis] - 1
    for t in range(q.shape[1]):
        index = np.minimum(lo + t, last)  # taps past n weigh 0; the index only has to exist
        weight = np.where(t < n, q[:, t], 0)
        if axis == 0:
            acc += src[index].astype(np.int64) * weight[:, None, None]
        else:
            acc += src[:, index].astype(np.int64) * weight[None, :, None]
    out: np.ndarray = np.minimum(np.maximum(acc >> PRECISION_BITS, 0), 255).astype(np.uint8)
    return out


def resized_size(h: int, w: int, spec: TaskSpec) -> tuple[int, int]:
    """Step 1: the image size after scaling its shorter side to ``resize`` (default: the crop's larger side)."""
    if spec.crop is None:
        raise UsageError("the task has no crop size", hint="pass --crop HxW or resolve the spec against the model")
    n = spec.resize if spec.resize is not None else max(spec.crop)
    return (n, n * w // h) if h <= w else (n * h // w, n)


def resize_crop(image: Image.Image | np.ndarray, spec: TaskSpec) -> np.ndarray:
    """The native step: the ``crop`` (h × w × 3 uint8 RGB) the graph's ``image`` input takes, resized with
    ``spec.resize_filter``."""
    rgb = rgb_array(image)
    h, w = rgb.shape[:2]
    nh, nw = resized_size(h, w, spec)
    ch, cw = spec.crop or (0, 0)
    top, left = (nh - ch) // 2, (nw - cw) // 2
    if spec.resize_filter == "antialias":
        rows = antialias_taps(h, nh, top, ch)
        cols = antialias_taps(w, nw, left, cw)
        first, end = int(rows[0][0]), int((rows[0] + rows[1]).max())  # the source rows the crop needs
        tmp = _pass(rgb[first:end], 1, *cols)
        return _pass(tmp, 0, rows[0] - first, rows[1], rows[2])
    y0, y1, fy = _taps(h, nh, top, ch)
    x0, x1, fx = _taps(w, nw, left, cw)
    p = rgb.astype(np.float64)
    fx3, fy3 = fx[None, :, None], fy[:, None, None]
    a = p[y0][:, x0] + (p[y0][:, x1] - p[y0][:, x0]) * fx3
    b = p[y1][:, x0] + (p[y1][:, x1] - p[y1][:, x0]) * fx3
    v = a + (b - a) * fy3
    out: np.ndarray = np.minimum(np.maximum(np.floor(v + 0.5), 0.0), 255.0).astype(np.uint8)
    return out


YUV_COEFFS = (91881, -22554, -46802, 116130)  # 1.402, 0.344136, 0.714136, 1.772 (JFIF) x 2^16, rounded
YUV_VIDEO_COEFFS = (76309, 104597, -25675, -53279, 132201)  # BT.601 video range (Y 16-235, C 16-240) x 2^16
ROTATIONS = (0, 90, 180, 270)


def yuv420_to_rgb(y: np.ndarray, u: np.ndarray, v: np.ndarray, video_range: bool = False) -> np.ndarray:
    """YUV 4:2:0 planes (``h × w`` luma, ``ceil(h/2) × ceil(w/2)`` chroma; uint8) → ``h × w × 3`` uint8 RGB,
    BT.601 full range in 16-bit fixed point (the module docstring's formula; Kotlin ``FrameSampler.yuv``,
    Swift 420f). ``video_range``: BT.601 video range (Y 16-235, chroma 16-240; Swift 420v), with
    ``l = 76309 * (Y - 16)``: ``R = (l + 104597 v + 32768) >> 16``, ``G = (l - 25675 u - 53279 v + 32768) >> 16``,
    ``B = (l + 132201 u + 32768) >> 16``, clamped (1.164383, 1.596027, 0.391762, 0.812968, 2.017232 × 2^16)."""
    h, w = y.shape
    if u.shape != v.shape or u.shape[0] < (h + 1) // 2 or u.shape[1] < (w + 1) // 2:
        raise UsageError(f"chroma planes {u.shape}/{v.shape} do not cover a {w}x{h} luma plane", hint="pass 4:2:0 planes (half size, rounded up)")
    luma = y.astype(np.int64)
    cu = np.repeat(np.repeat(u.astype(np.int64) - 128, 2, axis=0), 2, axis=1)[:h, :w]
    cv = np.repeat(np.repeat(v.astype(np.int64) - 128, 2, axis=0), 2, axis=1)[:h, :w]
    if video_range:
        ky, kr, kgu, kgv, kb = YUV_VIDEO_COEFFS
        scaled = ky * (luma - 16)
        r = (scaled + kr * cv + 32768) >> 16
        g = (scaled + kgu * cu + kgv * cv + 32768) >> 16
        b = (scaled + kb * cu + 32768) >> 16
    else:
        kr, kgu, kgv, kb = YUV_COEFFS
        r = luma + ((kr * cv + 32768) >> 16)
        g = luma + ((kgu * cu + kgv * cv + 32768) >> 16)
        b = luma + ((kb * cu + 32768) >> 16)
    out: np.ndarray = np.clip(np.stack([r, g, b], axis=-1), 0, 255).astype(np.uint8)
    return out


def orient(rgb: np.ndarray, rotation: int = 0, crop: tuple[int, int, int, int] | None = None) -> np.ndarray:
    """The upright image of a frame: ``crop`` (left, top, right, bottom; in the frame's un-rotated
    coordinates) cut out, then rotated clockwise by ``rotation`` degrees (0/90/180/270)."""
    if rotation not in ROTATIONS:
        raise UsageError(f"rotation must be 0, 90, 180 or 270 degrees, got {rotation}", hint="pass CameraX's rotationDegrees")
    h, w = rgb.shape[:2]
    if crop is not None:
        left, top, right, bottom = crop
        if not (0 <= left < right <= w and 0 <= top < bottom <= h):
            raise UsageError(f"crop {crop} is not a non-empty part of the {w}x{h} frame", hint="pass (left, top, right, bottom) inside the frame")
        rgb = rgb[top:bottom, left:right]
    return np.ascontiguousarray(np.rot90(rgb, k=-(rotation // 90)))


def camera_input(frame: np.ndarray, spec: TaskSpec, rotation: int = 0, crop: tuple[int, int, int, int] | None = None) -> np.ndarray:
    """The graph's input (crop h × w × 3 uint8) from a camera frame already in RGB (``h × w × 3|4``; see
    :func:`yuv420_to_rgb` for YUV): :func:`orient`, then :func:`resize_crop`."""
    return resize_crop(orient(rgb_array(frame), rotation, crop), spec)


def normalize(pixels: np.ndarray, spec: TaskSpec) -> np.ndarray:
    """The in-graph pre-processing on a ``[1, H, W, 3]`` (or ``[H, W, 3]``) uint8 image: the model's
    float32 input, in its layout (batch axis added when missing)."""
    x = pixels if pixels.ndim == 4 else pixels[None]
    x = x.astype(np.float32)
    if spec.channels == "bgr":
        x = x[..., ::-1]
    x = x * np.float32(spec.scale)
    x = x - np.asarray(spec.channel_values(spec.mean), dtype=np.float32)
    x = x / np.asarray(spec.channel_values(spec.std), dtype=np.float32)
    if spec.layout == "nchw":
        x = x.transpose(0, 3, 1, 2)
    return np.ascontiguousarray(x, dtype=np.float32)


def preprocess(image: Image.Image | np.ndarray, spec: TaskSpec) -> np.ndarray:
    """The whole pre-processing of a photo: the model's own float32 input."""
    return normalize(resize_crop(image, spec), spec)


def pcm16_input(pcm: np.ndarray) -> np.ndarray:
    """Audio, ``runPcm16``: mono int16 samples → the wrapped graph's ``pcm`` input, float32 ``[1, N]``
    holding the sample values (the graph divides by 32768)."""
    a = np.asarray(pcm)
    if a.dtype != np.int16:
        raise UsageError(f"16-bit PCM must be int16 samples, got {a.dtype}", hint="pass int16 samples, or floats in [-1, 1] to float_input")
    return a.astype(np.float32).reshape(1, -1)


def float_input(samples: np.ndarray) -> np.ndarray:
    """Audio, ``runFloat``: mono float samples in [-1, 1] (a microphone's normalised floats) → the wrapped
    graph's ``pcm`` input: ``float32(x) * 32768``, exact (a power of two), so the graph's ÷32768 hands the
    model the samples unchanged. A value outside [-1, 1] or not finite is refused: such a buffer holds
    16-bit sample values (pass them as int16), not normalised floats."""
    x = np.asarray(samples, dtype=np.float32).reshape(1, -1)
    bad = ~np.isfinite(x) | (np.abs(x) > 1.0)
    if bad.any():
        i = int(np.argmax(bad.reshape(-1)))
        raise UsageError(
            f"float samples must be finite and in [-1, 1]; sample {i} is {float(x.reshape(-1)[i])!r}",
            hint="16-bit sample values go to pcm16_input as int16; floats are normalised to [-1, 1]",
        )
    out: np.ndarray = x * np.float32(PCM_SCALE)
    return out


def pcm_to_float(pcm: np.ndarray) -> np.ndarray:
    """Audio: 16-bit sample values (int16, or float carrying them) → float32 in [-1, 1)."""
    x: np.ndarray = np.asarray(pcm).astype(np.float32) / np.float32(PCM_SCALE)
    return x if x.ndim == 2 else x.reshape(1, -1)


def softmax(scores: np.ndarray) -> np.ndarray:
    x = np.asarray(scores, dtype=np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    out: np.ndarray = (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
    return out


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest of each row, descending; equal scores: the lower index first (ONNX TopK)."""
    order = np.argsort(-np.asarray(scores), axis=-1, kind="stable")[..., :k].astype(np.int64)
    return np.take_along_axis(np.asarray(scores), order, axis=-1).astype(np.float32), order


def postprocess_outputs(outputs: list[np.ndarray], spec: TaskSpec) -> list[np.ndarray]:
    """The model's outputs → the wrapped graph's: ``[softmax?(y)]``, or ``[scores, indices]`` with top-k."""
    if not spec.softmax and spec.top_k is None:
        return outputs
    y = softmax(outputs[0]) if spec.softmax else np.asarray(outputs[0], dtype=np.float32)
    if spec.top_k is None:
        return [y]
    scores, indices = top_k(y, spec.top_k)
    return [scores, indices]


def postprocess(scores: np.ndarray, spec: TaskSpec, k: int | None = None) -> list[tuple[str, int, float]]:
    """(label, index, score) of the ``k`` best classes (default: ``top_k``, else all), best first, from
    the model's raw ``[1, C]`` output. A class without a label is named by its index."""
    y = softmax(scores) if spec.softmax else np.asarray(scores, dtype=np.float32)
    k = k or spec.top_k or y.shape[-1]
    values, order = top_k(y.reshape(1, -1), k)
    return [(_label(spec, int(i)), int(i), float(s)) for s, i in zip(values[0], order[0], strict=True)]


def classifications(graph_outputs: list[np.ndarray], spec: TaskSpec) -> list[tuple[str, int, float]]:
    """(label, index, score) from the wrapped graph's outputs, best first (what ``classify`` returns)."""
    if spec.top_k is not None:
        scores, indices = graph_outputs[0][0], graph_outputs[1][0]
        return [(_label(spec, int(i)), int(i), float(s)) for s, i in zip(scores, indices, strict=True)]
    values, order = top_k(np.asarray(graph_outputs[0]).reshape(1, -1), int(np.asarray(graph_outputs[0]).size))
    return [(_label(spec, int(i)), int(i), float(s)) for s, i in zip(values[0], order[0], strict=True)]


def _label(spec: TaskSpec, i: int) -> str:
    return spec.labels[i] if i < len(spec.labels) else str(i)


def model_input(graph_input: np.ndarray, spec: TaskSpec) -> np.ndarray:
    """The wrapped graph's input (``image`` uint8 ``[1, H, W, 3]`` / ``pcm``) → the model's own input."""
    return normalize(graph_input, spec) if spec.is_image else pcm_to_float(graph_input)


def wrap_reference(inner: Runner, inner_input: str, spec: TaskSpec, inner_outputs: tuple[str, ...] = ()) -> Runner:
    """The gate's reference for a wrapped model: this module's pre-processing, the original model (PyTorch,
    or the source ONNX model), this module's post-processing. ``--state`` inputs pass through to the model
    unchanged; its state outputs (``inner_outputs`` names the model's outputs) follow the task's outputs
    when the task replaces them (softmax, top-k), else every output keeps its place."""

    def run(arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        feeds = {inner_input: model_input(arrays[spec.input_name], spec)} | {n: arrays[n] for n in spec.state_inputs}
        outputs = inner(feeds)
        if not spec.state or (not spec.softmax and spec.top_k is None):
            return postprocess_outputs(outputs, spec)
        task = [o for n, o in zip(inner_outputs, outputs, strict=True) if n not in spec.state_outputs]
        state = [o for n, o in zip(inner_outputs, outputs, strict=True) if n in spec.state_outputs]
        return [*postprocess_outputs(task, spec), *state]

    return run


def initial_state(spec: TaskSpec, shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """``--state``: every state input's value before the first window and after ``reset()``: zeros (float32)."""
    return {name: np.zeros(shapes[name], dtype=np.float32) for name in spec.state_inputs}


def stream(run: Runner, spec: TaskSpec, shapes: dict[str, tuple[int, ...]], output_names: list[str], windows: list[np.ndarray]) -> list[list[np.ndarray]]:
    """The streaming helper (Kotlin ``<Name>Stream``, Swift ``<Name>.Stream``) on the wrapped graph ``run``:
    each window's graph input (``pcm16_input`` / ``float_input``) with the state the previous window
    returned (zeros first); the outputs of every window, in order."""
    state = initial_state(spec, shapes)
    out = []
    for window in windows:
        outputs = run({spec.input_name: window, **state})
        named = dict(zip(output_names, outputs, strict=True))
        state = {i: named[o] for i, o in spec.state}
        out.append(outputs)
    return out


def load_image(path: Any) -> np.ndarray:
    """An image file (any format Pillow reads) as ``h × w × 3`` uint8 RGB."""
    from PIL import Image

    with Image.open(path) as img:
        return rgb_array(img)
