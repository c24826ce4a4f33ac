"""What each model input expects (issue 31): layout, dtype, shape, value range, normalization, channel
order and resize policy, as the generated ``INPUTS.md`` and the wrappers' constants state it.

A ``--task`` build knows all of it: the wrapped graph (mobilegen.tasks.graph) takes raw RGB bytes
(uint8 ``[1, H, W, 3]``, 0..255) and applies ``(pixel*scale - mean)/std`` and the model's own layout
inside the graph; the native ``ImageInput`` resizes and crops. A plain model only tells its dtype and
shape: the layout may be *guessed* from the shape (stated as a guess, never as a fact) and everything
else is ``unknown``, with the hint to rebuild with ``--task``. Tensor names never steer the guess (a
hostile name cannot change what the contract claims), and every field is plain text the templates
escape (kt_str / swift_str / md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mobilegen.spec import IOSpec, TensorSpec

if TYPE_CHECKING:
    from mobilegen.tasks.spec import TaskSpec

UNKNOWN = "unknown"
REBUILD_HINT = (
    "rebuild with --task (image-classification, image, audio, text-embedding, text-classification or "
    "token-classification; see docs/tasks.md) so that the package carries the preprocessing and states this contract"
)
# Kotlin constant suffixes of one input's contract (none ends with another, so base + suffix stays unique).
KOTLIN_SUFFIXES = ("_LAYOUT", "_LAYOUT_GUESSED", "_DTYPE", "_VALUE_RANGE", "_NORMALIZATION", "_CHANNEL_ORDER", "_RESIZE")
_FLOATS = ("float32", "float64", "float16", "bfloat16")
_INTS = ("int64", "int32")


@dataclass(frozen=True)
class InputContract:
    """One input's contract. ``source``: ``task`` (every field known), ``guess`` (layout guessed from the
    shape), or ``unknown`` (only dtype and shape known)."""

    name: str
    dtype: str
    shape: str
    layout: str  # NCHW | NHWC | sequence | audio | unknown
    source: str
    value_range: str
    normalization: str
    channel_order: str
    resize: str

    @property
    def layout_guessed(self) -> bool:
        return self.source == "guess"

    @property
    def known(self) -> bool:
        return self.source == "task"


def _fmt(values: tuple[float, ...]) -> str:
    return "(" + ", ".join(f"{v:g}" for v in values) + ")"


def _task_contract(task: TaskSpec, t: TensorSpec) -> InputContract:
    shape = t.shape_str()
    if task.kind == "audio":
        return InputContract(
            t.name, t.dtype, shape, "audio", "task",
            "16-bit PCM sample values (-32768..32767), mono",
            f"none: raw samples at {task.sample_rate} Hz, any scaling happens inside the model",
            "mono", "none (the app resamples to the model's rate)",
        )
    mean, std = task.channel_values(task.mean), task.channel_values(task.std)
    crop = tuple(task.crop) if task.crop is not None else None
    resize = task.resize if task.resize is not None else (max(crop) if crop else 0)
    policy = (
        f"shorter side resized to {resize} ({task.resize_filter}), then the centre {crop[0]}x{crop[1]} cropped "
        "(done by the generated ImageInput)"
        if crop
        else "none"
    )
    return InputContract(
        t.name, t.dtype, shape, "NHWC", "task", "0..255 (uint8 RGB bytes)",
        f"inside the model: x = (pixel*{task.scale:g} - mean)/std, mean {_fmt(mean)}, std {_fmt(std)}, "
        f"model layout {task.layout.upper()}, model channels {task.channels.upper()}",
        "RGB", policy,
    )


_TEXT_RANGES = {
    "input_ids": "token ids of the model's vocabulary, from the generated tokenizer (Tokenizer.encode / TextTokenizer)",
    "attention_mask": "1 for a token, 0 for padding (from the generated tokenizer)",
    "token_type_ids": "segment ids: 0 for a single text (from the generated tokenizer)",
}


def _text_contract(task: TaskSpec, t: TensorSpec) -> InputContract:
    length = t.shape[-1] if t.shape else "?"
    return InputContract(
        t.name, t.dtype, t.shape_str(), "sequence", "task", _TEXT_RANGES[t.name],
        "none: the generated tokenizer (normalizer, pre-tokenizer, special tokens) produces it from text; "
        "text-level API: embed / classify / classifyTokens",
        "n/a",
        f"truncated and padded to {length} tokens by the tokenizer" if isinstance(length, int) else "dynamic length (the text's own)",
    )


def _guess_layout(t: TensorSpec) -> str:
    """NCHW / NHWC / sequence from the shape alone, or unknown (never from the name)."""
    dims = t.shape
    if len(dims) == 4:
        c1, c3 = dims[1], dims[3]
        spatial_nchw = all(not isinstance(d, int) or d >= 8 for d in dims[2:4])
        spatial_nhwc = all(not isinstance(d, int) or d >= 8 for d in dims[1:3])
        if c1 in (1, 3, 4) and spatial_nchw and c3 not in (1, 3, 4):
            return "NCHW"
        if c3 in (1, 3, 4) and spatial_nhwc and c1 not in (1, 3, 4):
            return "NHWC"
        return UNKNOWN
    if len(dims) == 2 and t.dtype in _INTS:
        return "sequence"
    return UNKNOWN


def _plain_contract(t: TensorSpec) -> InputContract:
    layout = _guess_layout(t)
    return InputContract(
        t.name, t.dtype, t.shape_str(), layout, "guess" if layout != UNKNOWN else UNKNOWN,
        UNKNOWN, UNKNOWN, UNKNOWN, UNKNOWN,
    )


def infer_contracts(task: TaskSpec | None, io: IOSpec) -> tuple[InputContract, ...]:
    """Every model input's contract, in input order (pure)."""
    out = []
    for t in io.inputs:
        if task is not None and task.is_text and t.name in _TEXT_RANGES:
            out.append(_text_contract(task, t))
            continue
        is_task_input = task is not None and t.name in ("image", "pcm") and t.name == ("pcm" if task.kind == "audio" else "image")
        out.append(_task_contract(task, t) if task is not None and is_task_input else _plain_contract(t))
    return tuple(out)


def describe_source(c: InputContract) -> str:
    """One sentence on where the contract comes from (for INPUTS.md)."""
    if c.known:
        return "known: the build's --task fixes it"
    if c.layout_guessed:
        return f"layout GUESSED from the shape ({c.layout}-like); everything else unknown — {REBUILD_HINT}"
    return f"unknown beyond dtype and shape — {REBUILD_HINT}"


def contract_rows(contracts: tuple[InputContract, ...]) -> list[dict[str, object]]:
    """Markdown-safe rows for INPUTS.md (every field escaped; names in code spans)."""
    from mobilegen.render.markdown import md_code, md_escape

    return [
        {
            "name": md_code(c.name),
            "dtype": md_escape(c.dtype),
            "shape": md_escape(c.shape),
            "layout": md_escape(c.layout + (" (guess)" if c.layout_guessed else "")),
            "value_range": md_escape(c.value_range),
            "normalization": md_escape(c.normalization),
            "channel_order": md_escape(c.channel_order),
            "resize": md_escape(c.resize),
            "source": md_escape(describe_source(c)),
            "known": c.known,
        }
        for c in contracts
    ]
