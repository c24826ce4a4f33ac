"""The reference implementation of a task spec in numpy (and Pillow, to read images): the definition the
Kotlin and Swift wrappers port line for line, the gate's pre/post-processing around the original model,
and a tool for the ML engineer to check data against.

The native step, :func:`resize_crop` (outside the graph: NNAPI needs a static input shape)
----------------------------------------------------------------------------------------------------
Input: an RGB image of ``h`` rows and ``w`` columns, 8 bits per channel (alpha, if any, is dropped
without compositing: flatten translucent images first). Output: the ``ch × cw`` centre crop (``crop``)
of the image scaled so that its shorter side is ``N`` (``--resize N``, or ``max(ch, cw)`` without it);
uint8, row-major HWC, RGB. All integer arithmetic is exact; all floating-point arithmetic is IEEE
double, in exactly this order:

1. Resized size (integer floor division, as torchvision's ``Resize(N)``)::

       if h <= w:  nh = N;  nw = N * w // h
       else:       nw = N;  nh = N * h // w

   (``N ≥ max(ch, cw)`` is checked when the spec is made, so the crop always fits; with a square crop
   and no ``--resize``, an image of the crop's size is left as it is)

2. Crop offset in the resized image (floor): ``top = (nh - ch) // 2``, ``left = (nw - cw) // 2``.
3. For each output row ``i`` (and likewise each column ``j`` with ``w``, ``nw``, ``left``): the source
   coordinate with half-pixel centres, clamped::

       s  = double((2 * (top + i) + 1) * h) / double(2 * nh) - 0.5
       s  = min(max(s, 0.0), double(h - 1))
       y0 = floor(s);  y1 = min(y0 + 1, h - 1);  fy = s - y0

4. Bilinear, no antialiasing, per channel (``p[y][x]`` as double)::

       a = p[y0][x0] + (p[y0][x1] - p[y0][x0]) * fx
       b = p[y1][x0] + (p[y1][x1] - p[y1][x0]) * fx
       v = a + (b - a) * fy
       out = min(max(floor(v + 0.5), 0), 255)

Unlike torchvision/Pillow, downscaling does not antialias (a plain 2×2 bilinear tap): cheap, exact to
port, and what the model was verified with. Crop offsets floor where torchvision rounds half to even
(≤ 1 pixel apart for an odd margin).

In the graph (``mobilegen.tasks.graph``), and here in float32, in this order
------------------------------------------------------------------------------
``x = float32(pixel)`` → channel swap (``--channels bgr``) → ``x * scale`` → ``x - mean`` → ``x / std``
→ transpose to the model's layout; after the model: softmax (``--softmax``), then the ``K`` largest
scores in descending order, ties to the lower index (``--top-k``). Audio: ``x = float32(sample) /
32768``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from mobilegen.errors import UsageError
from mobilegen.tasks.spec import TaskSpec

if TYPE_CHECKING:
    from PIL import Image

Runner = Callable[[dict[str, np.ndarray]], list[np.ndarray]]
PCM_SCALE = 32768.0


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
    """Source indices (low, high) and weights of ``count`` output coordinates from ``offset`` (step 3)."""
    k = np.arange(offset, offset + count, dtype=np.int64)
    s = ((2 * k + 1) * size).astype(np.float64) / float(2 * resized) - 0.5
    s = np.minimum(np.maximum(s, 0.0), float(size - 1))
    lo = np.floor(s).astype(np.int64)
    hi = np.minimum(lo + 1, size - 1)
    return lo, hi, s - lo


def resized_size(h: int, w: int, spec: TaskSpec) -> tuple[int, int]:
    """Step 1: the image size after scaling its shorter side to ``resize`` (default: the crop's larger side)."""
    if spec.crop is None:
        raise UsageError("the task has no crop size", hint="pass --crop HxW or resolve the spec against the model")
    n = spec.resize if spec.resize is not None else max(spec.crop)
    return (n, n * w // h) if h <= w else (n * h // w, n)


def resize_crop(image: Image.Image | np.ndarray, spec: TaskSpec) -> np.ndarray:
    """The native step: the ``crop`` (h × w × 3 uint8 RGB) the graph's ``image`` input takes."""
    rgb = rgb_array(image)
    h, w = rgb.shape[:2]
    nh, nw = resized_size(h, w, spec)
    ch, cw = spec.crop or (0, 0)
    y0, y1, fy = _taps(h, nh, (nh - ch) // 2, ch)
    x0, x1, fx = _taps(w, nw, (nw - cw) // 2, cw)
    p = rgb.astype(np.float64)
    fx3, fy3 = fx[None, :, None], fy[:, None, None]
    a = p[y0][:, x0] + (p[y0][:, x1] - p[y0][:, x0]) * fx3
    b = p[y1][:, x0] + (p[y1][:, x1] - p[y1][:, x0]) * fx3
    v = a + (b - a) * fy3
    out: np.ndarray = np.minimum(np.maximum(np.floor(v + 0.5), 0.0), 255.0).astype(np.uint8)
    return out


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


def wrap_reference(inner: Runner, inner_input: str, spec: TaskSpec) -> Runner:
    """The gate's reference for a wrapped model: this module's pre-processing, the original model (PyTorch,
    or the source ONNX model), this module's post-processing."""

    def run(arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        (graph_input,) = arrays.values()
        return postprocess_outputs(inner({inner_input: model_input(graph_input, spec)}), spec)

    return run


def load_image(path: Any) -> np.ndarray:
    """An image file (any format Pillow reads) as ``h × w × 3`` uint8 RGB."""
    from PIL import Image

    with Image.open(path) as img:
        return rgb_array(img)
