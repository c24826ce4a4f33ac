"""The task spec (``--task`` and its flags): what happens to a photo or a sound before the model, and to
its scores after. Importable without torch, onnx or numpy (the CLI parses flags with it).

Flags are parsed and checked here before any heavy work (:func:`mobilegen.tasks.dispatch.task_from_flags`); what needs the model
(its input shape, its class count) is checked right after the export (:func:`resolve`). Labels are read
from a UTF-8 file, one per line, and refused when they could not survive being read back as lines on
both platforms (control or line-break characters, NUL bytes, overlong labels): labels are data, they
never go into generated code.
"""

from __future__ import annotations

import math
import os
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

from mobilegen.errors import UsageError

if TYPE_CHECKING:
    from mobilegen.infra.json_types import JSONValue
    from mobilegen.spec import IOSpec, TensorSpec

TaskKind = Literal["image-classification", "image", "audio", "text-embedding", "text-classification", "token-classification"]
TEXT_KINDS: tuple[str, ...] = ("text-embedding", "text-classification", "token-classification")
TASK_KINDS: tuple[str, ...] = ("image-classification", "image", "audio", *TEXT_KINDS)
POOLINGS: tuple[str, ...] = ("mean", "cls")
CHANNELS = ("rgb", "bgr")
LAYOUTS = ("nchw", "nhwc")
# --resize-filter: antialias = Pillow's BILINEAR (its triangle filter widened when shrinking, as torchvision's
# Resize(antialias=True) on PIL images); bilinear = 2x2 taps, no antialiasing (the earlier behaviour).
ResizeFilter = Literal["antialias", "bilinear"]
RESIZE_FILTERS: tuple[str, ...] = ("antialias", "bilinear")

# Audio: mono; samples as 16-bit integers (runPcm16) or floats in [-1, 1] (runFloat), mobilegen.tasks.reference.
AUDIO_CHANNELS = 1
SAMPLE_FORMATS = ("int16", "float")

# The wrapped graph's IO names (mobilegen.tasks.graph).
IMAGE_INPUT, PCM_INPUT, SCORES_OUTPUT, INDICES_OUTPUT = "image", "pcm", "scores", "indices"
# Text tasks: the wrapped graph's inputs (int64 [1, L]; the model's own names are renamed) and embedding output.
IDS_INPUT, MASK_INPUT, TYPES_INPUT, EMBEDDING_OUTPUT = "input_ids", "attention_mask", "token_type_ids", "embedding"
MAX_SAMPLE_TEXTS = 10_000
MAX_SAMPLE_BYTES = 8 << 20

MAX_LABELS_BYTES = 4 << 20
MAX_LABELS = 100_000
MAX_LABEL_CHARS = 256
MAX_SIDE = 8192  # --resize / --crop bound: a larger image side is not a mobile model input
MAX_SAMPLE_RATE = 1_000_000
MAX_TOP_K = 100_000


@dataclass(frozen=True)
class TaskSpec:
    """Pre- and post-processing around a model. ``x = (pixel*scale - mean)/std`` per channel."""

    kind: TaskKind
    labels: tuple[str, ...] = ()  # image-classification (from --labels FILE.txt, one per line, UTF-8)
    resize: int | None = None  # shorter side, pixels (native, before the graph); None: max(crop)
    crop: tuple[int, int] | None = None  # (height, width) centre crop (native); the graph's fixed image size
    mean: tuple[float, ...] = (0.0, 0.0, 0.0)
    std: tuple[float, ...] = (1.0, 1.0, 1.0)
    scale: float = 1.0
    channels: Literal["rgb", "bgr"] = "rgb"  # the channel order the model expects
    layout: Literal["nchw", "nhwc"] = "nchw"  # the model's own input layout
    sample_rate: int | None = None  # audio
    softmax: bool = False
    top_k: int | None = None
    resize_filter: ResizeFilter = "antialias"  # how the native step resamples (mobilegen.tasks.reference)
    window: int | None = None  # audio: samples per run (the model's fixed input length); None: any length
    # audio, --state IN=OUT: model inputs fed with an output of the previous window (zeros at first / reset)
    state: tuple[tuple[str, str], ...] = ()
    # Text tasks (mobilegen.tasks.text.task): the tokenizer.json, pooling and L2 normalisation (embeddings),
    # the --sample texts, and — resolved against the model — the graph's text inputs and its sequence length.
    tokenizer: Path | None = None
    pooling: Literal["mean", "cls"] | None = None
    pooling_source: str = ""  # where the pooling/normalize defaults came from (the report says it)
    normalize: bool = False
    texts: tuple[str, ...] = ()
    text_inputs: tuple[tuple[str, str], ...] = ()  # (graph name input_ids|attention_mask|token_type_ids, the model's name)
    seq_len: int | None = None  # fixed sequence length; None: any length (up to max_length)
    max_length: int | None = None  # the tokenizer's truncation length

    @property
    def is_image(self) -> bool:
        return self.kind in ("image-classification", "image")

    @property
    def is_text(self) -> bool:
        return self.kind in TEXT_KINDS

    @property
    def is_classifier(self) -> bool:
        """Classes with labels: image-classification, and audio given --labels (a keyword spotter, an audio tagger)."""
        return self.kind in ("image-classification", "text-classification", "token-classification") or (self.kind == "audio" and bool(self.labels))

    @property
    def input_name(self) -> str:
        return IMAGE_INPUT if self.is_image else IDS_INPUT if self.is_text else PCM_INPUT

    @property
    def state_inputs(self) -> tuple[str, ...]:
        return tuple(i for i, _ in self.state)

    @property
    def state_outputs(self) -> tuple[str, ...]:
        return tuple(o for _, o in self.state)

    @property
    def output_names(self) -> tuple[str, ...]:
        """The outputs the task names (``--top-k``: scores, indices); empty: the model's output keeps its name."""
        if self.kind == "text-embedding":
            return (EMBEDDING_OUTPUT,)
        if self.is_text:
            return (SCORES_OUTPUT,)
        return (SCORES_OUTPUT, INDICES_OUTPUT) if self.top_k is not None else ()

    def channel_values(self, values: tuple[float, ...]) -> tuple[float, float, float]:
        """``mean``/``std`` for three channels (one value stands for all three)."""
        return (values[0],) * 3 if len(values) == 1 else (values[0], values[1], values[2])

    def record(self) -> dict[str, JSONValue]:
        """The manifest's ``options.task`` and the report's task section (labels by count: they are a file)."""
        rec: dict[str, JSONValue] = {"kind": self.kind}
        if self.is_text:
            rec |= {
                "inputs": [g for g, _ in self.text_inputs],
                "sequence_length": self.seq_len,
                "max_length": self.max_length,
            }
            if self.kind == "text-embedding":
                rec |= {"pooling": self.pooling, "normalize": self.normalize, "defaults_from": self.pooling_source or None}
            if self.is_classifier:
                rec["labels"] = len(self.labels)
            return rec
        if self.is_image:
            rec |= {
                "resize": self.resize,
                "resize_filter": self.resize_filter,
                "crop": list(self.crop) if self.crop else None,
                "mean": list(self.mean),
                "std": list(self.std),
                "scale": self.scale,
                "channels": self.channels,
                "layout": self.layout,
            }
        else:
            rec |= {
                "sample_rate": self.sample_rate,
                "audio_channels": AUDIO_CHANNELS,
                "sample_formats": list(SAMPLE_FORMATS),
                "window": self.window,
                "state": [{"input": i, "output": o} for i, o in self.state],
            }
        if self.is_classifier:
            rec["labels"] = len(self.labels)
        rec |= {"softmax": self.softmax, "top_k": self.top_k}
        return rec


@dataclass(frozen=True)
class TaskFlags:
    """The raw flags, as the CLI and mobilegen.toml give them."""

    task: str | None = None
    labels: Path | None = None
    resize: int | None = None
    crop: str | None = None
    mean: str | None = None
    std: str | None = None
    scale: str | None = None
    channels: str | None = None
    layout: str | None = None
    sample_rate: int | None = None
    softmax: bool = False
    top_k: int | None = None
    resize_filter: str | None = None
    state: str | None = None
    tokenizer: Path | None = None
    pooling: str | None = None
    normalize: bool | None = None
    sample: Path | None = None  # text tasks: --sample is a UTF-8 text file, one text per line
    model: Path | None = None  # where a tokenizer.json / config.json beside the model is looked for


_IMAGE_FLAGS = ("resize", "resize_filter", "crop", "mean", "std", "scale", "channels", "layout")


def task_kind_from_flags(f: TaskFlags) -> tuple[TaskKind, list[str]] | None:
    """The checks every task's flags share: the kind ``--task`` names and the task flags given (None
    without ``--task``); every flag error is a one-line UsageError. mobilegen.tasks.dispatch goes on per kind."""
    given = [name for name in (*_IMAGE_FLAGS, "labels", "sample_rate", "top_k", "state") if getattr(f, name) is not None]
    given += ["softmax"] if f.softmax else []
    text_given = [name for name in ("tokenizer", "pooling", "normalize") if getattr(f, name) is not None]
    if f.task is None or f.task not in TEXT_KINDS:
        if text_given and f.task is not None and f.task in TASK_KINDS:
            raise UsageError(f"--{text_given[0]} is for text tasks, not --task {f.task}", hint=f"drop --{text_given[0]}")
        if text_given and f.task is None:
            raise UsageError(f"--{text_given[0]} needs --task", hint="add --task text-embedding, text-classification or token-classification")
    if f.task is None:
        if given:
            raise UsageError(f"--{given[0].replace('_', '-')} needs --task", hint=_needs_task_hint(given[0]))
        return None
    if f.task not in TASK_KINDS:
        raise UsageError(f"unknown --task {f.task!r}", hint="--task is one of " + ", ".join(TASK_KINDS))
    return cast(TaskKind, f.task), given


def media_task_from_flags(kind: TaskKind, f: TaskFlags) -> TaskSpec:
    """An image or audio task's spec from its flags (after :func:`task_kind_from_flags`)."""
    _check_flag_kinds(kind, f)
    spec = TaskSpec(kind=kind, softmax=f.softmax, top_k=_top_k(f.top_k))
    if kind == "audio":
        if f.sample_rate is None:
            raise UsageError("--task audio needs --sample-rate", hint="pass the model's sample rate in Hz, e.g. --sample-rate 16000")
        if not 1 <= f.sample_rate <= MAX_SAMPLE_RATE:
            raise UsageError(f"--sample-rate {f.sample_rate} is out of range", hint=f"give a rate in Hz between 1 and {MAX_SAMPLE_RATE}, e.g. 16000")
        state = parse_state(f.state) if f.state is not None else ()
        return replace(spec, sample_rate=f.sample_rate, labels=read_labels(f.labels) if f.labels is not None else (), state=state)
    labels: tuple[str, ...] = ()
    if kind == "image-classification":
        if f.labels is None:
            raise UsageError("--task image-classification needs --labels", hint="pass --labels FILE.txt: the class names, one per line, UTF-8")
        labels = read_labels(f.labels)
    crop = parse_crop(f.crop) if f.crop is not None else None
    resize = _side("--resize", f.resize) if f.resize is not None else None
    if resize is not None and crop is not None and resize < max(crop):
        raise UsageError(
            f"--resize {resize} is smaller than --crop {crop[0]}x{crop[1]}",
            hint=f"the shorter side is scaled to --resize, then the centre {crop[0]}x{crop[1]} is cut out: give --resize ≥ {max(crop)}",
        )
    return replace(
        spec,
        labels=labels,
        resize=resize,
        crop=crop,
        mean=parse_floats("--mean", f.mean) if f.mean is not None else spec.mean,
        std=_std(f.std) if f.std is not None else spec.std,
        scale=parse_scale(f.scale) if f.scale is not None else spec.scale,
        channels=cast(Literal["rgb", "bgr"], _choice("--channels", f.channels, CHANNELS)) if f.channels is not None else "rgb",
        layout=cast(Literal["nchw", "nhwc"], _choice("--layout", f.layout, LAYOUTS)) if f.layout is not None else "nchw",
        resize_filter=cast(ResizeFilter, _choice("--resize-filter", f.resize_filter, RESIZE_FILTERS)) if f.resize_filter is not None else "antialias",
    )


def _needs_task_hint(flag: str) -> str:
    """The tasks that take ``flag`` (only image-classification takes --labels; audio no image flag)."""
    if flag == "labels":
        return "add --task image-classification (or --task audio for an audio classifier)"
    if flag in _IMAGE_FLAGS:
        return "add --task image-classification or --task image"
    if flag in ("sample_rate", "state"):
        return "add --task audio"
    return "add --task image-classification, --task image or --task audio"


def _check_flag_kinds(kind: TaskKind, f: TaskFlags) -> None:
    if kind == "audio":
        wrong = [n for n in _IMAGE_FLAGS if getattr(f, n) is not None]
        if wrong:
            raise UsageError(f"--{wrong[0].replace('_', '-')} is for image tasks, not --task audio", hint="drop it: audio takes --sample-rate, --labels, --softmax, --top-k and --state")
    elif f.sample_rate is not None:
        raise UsageError(f"--sample-rate is for --task audio, not --task {kind}", hint="drop --sample-rate")
    elif f.state is not None:
        raise UsageError(f"--state is for --task audio, not --task {kind}", hint="drop --state")
    if f.labels is not None and kind not in ("image-classification", "audio"):
        raise UsageError(
            f"--labels is for --task image-classification or --task audio, not --task {kind}",
            hint="drop --labels, or use --task image-classification",
        )


def parse_state(text: str) -> tuple[tuple[str, str], ...]:
    """``--state IN=OUT[,IN2=OUT2]``: each model input fed with the named output of the previous window."""
    pairs = []
    for part in text.split(","):
        name_in, eq, name_out = part.strip().partition("=")
        if not eq or not name_in.strip() or not name_out.strip():
            raise UsageError(f"--state {text!r} is not IN=OUT", hint="name the state input and the output that updates it, e.g. --state state=stateN")
        pairs.append((name_in.strip(), name_out.strip()))
    ins, outs = [i for i, _ in pairs], [o for _, o in pairs]
    if len(set(ins)) != len(ins) or len(set(outs)) != len(outs):
        raise UsageError(f"--state {text!r} names an input or an output twice", hint="one IN=OUT pair per state tensor")
    return tuple(pairs)


def _choice(flag: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise UsageError(f"unknown {flag} {value!r}", hint=f"{flag} is one of " + ", ".join(choices))
    return value


def _side(flag: str, value: int) -> int:
    if not 1 <= value <= MAX_SIDE:
        raise UsageError(f"{flag} {value} is out of range", hint=f"give a size in pixels between 1 and {MAX_SIDE}")
    return value


def check_output_names(spec: TaskSpec | None, output_names: tuple[str, ...]) -> None:
    """``--output-name`` with ``--top-k``: refused (exit 2) before any work — the task names the shipped
    outputs, and the renamed model output would only feed its TopK node, named nowhere."""
    if spec is not None and spec.output_names and output_names:
        names = " and ".join(spec.output_names)
        raise UsageError(
            f"--output-name has no effect with --top-k: the task names its outputs {names}",
            hint="drop --output-name (without --top-k the output keeps the model's name, which --output-name sets)",
        )


def _top_k(value: int | None) -> int | None:
    if value is not None and not 1 <= value <= MAX_TOP_K:
        raise UsageError(f"--top-k {value} is out of range", hint="give a count ≥ 1 and at most the model's class count, e.g. --top-k 5")
    return value


def parse_crop(text: str) -> tuple[int, int]:
    """``HxW`` (or one number for a square) → (height, width)."""
    parts = text.strip().lower().split("x")
    try:
        if len(parts) not in (1, 2):
            raise ValueError
        dims = [int(p) for p in parts]
    except ValueError:
        raise UsageError(f"--crop {text!r} is not HxW", hint="give the height and width in pixels, e.g. --crop 224x224") from None
    h, w = dims if len(dims) == 2 else (dims[0], dims[0])
    return _side("--crop height", h), _side("--crop width", w)


def parse_floats(flag: str, text: str) -> tuple[float, ...]:
    """One number (every channel) or three, comma-separated; each finite."""
    try:
        values = tuple(float(Fraction(p.strip())) for p in text.split(","))
    except (ValueError, ZeroDivisionError, OverflowError):
        raise UsageError(f"{flag} {text!r} is not a list of numbers", hint=f"give one value or three, e.g. {flag} 0.485,0.456,0.406") from None
    if len(values) not in (1, 3) or not all(math.isfinite(v) for v in values):
        raise UsageError(f"{flag} {text!r} needs one finite value or three (one per channel)", hint=f"e.g. {flag} 0.485,0.456,0.406")
    return values


def _std(text: str) -> tuple[float, ...]:
    values = parse_floats("--std", text)
    if any(v == 0.0 for v in values):
        raise UsageError(f"--std {text!r} has a zero", hint="the pixels are divided by --std: give non-zero values, e.g. --std 0.229,0.224,0.225")
    return values


def parse_scale(text: str) -> float:
    """A number or a fraction (``1/255``), finite and non-zero."""
    try:
        value = float(Fraction(text.strip()))
    except (ValueError, ZeroDivisionError, OverflowError):
        raise UsageError(f"--scale {text!r} is not a number", hint="give a number or a fraction, e.g. --scale 1/255") from None
    if value == 0.0 or not math.isfinite(value):
        raise UsageError(f"--scale {text!r} must be finite and non-zero", hint="e.g. --scale 1/255")
    return value


# Characters a label may not hold: anything a line reader on either platform could split on or choke on
# (Swift's `.newlines` splits on U+0085, U+2028, U+2029; Kotlin's readLine on \r and \n), control
# characters, and unassigned/surrogate code points.
_REFUSED_CATEGORIES = {"Cc", "Zl", "Zp", "Cs", "Cn"}


def read_labels(path: Path) -> tuple[str, ...]:
    """The labels of a UTF-8 text file, one per line (``\\n`` or ``\\r\\n``; a leading BOM and blank lines at
    the end are ignored; a blank line before the last label is an error). A label is kept byte for byte
    otherwise: quotes, ``$``, backslashes and any printable Unicode are data. Duplicates are accepted
    (ImageNet names two classes "crane"): :func:`duplicate_labels` finds them for a build warning."""
    hint = "give a UTF-8 text file with one class name per line"
    if not os.path.lexists(path):
        raise UsageError(f"--labels {path} does not exist", hint=hint)
    if not path.is_file():
        raise UsageError(f"--labels {path} is not a regular file", hint=hint)
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_LABELS_BYTES + 1)
    except OSError as err:
        raise UsageError(f"cannot read --labels {path}: {err.strerror or err}", hint="check its permissions") from err
    if len(data) > MAX_LABELS_BYTES:
        raise UsageError(f"--labels {path} is over {MAX_LABELS_BYTES >> 20} MiB", hint=hint)
    if b"\x00" in data:
        raise UsageError(f"--labels {path} holds NUL bytes (a binary file?)", hint=hint)
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        raise UsageError(f"--labels {path} is not UTF-8 text (byte {err.start})", hint="save it as UTF-8") from None
    if not text.strip():
        raise UsageError(f"--labels {path} is empty", hint=hint)
    lines = text.split("\n")
    while not lines[-1].strip(" \t\r"):  # the final newline, and blank lines after the last label
        lines.pop()
    if len(lines) > MAX_LABELS:
        raise UsageError(f"--labels {path} has {len(lines)} lines, over {MAX_LABELS}", hint=hint)
    return tuple(_label(path, n, line.removesuffix("\r")) for n, line in enumerate(lines, 1))


def _label(path: Path, line_no: int, label: str) -> str:
    where = f"--labels {path} line {line_no}"
    if not label.strip():
        raise UsageError(f"{where} is empty", hint="give every class a name (an unused class can be named e.g. 'unused')")
    if len(label) > MAX_LABEL_CHARS:
        raise UsageError(f"{where} is {len(label)} characters long, over {MAX_LABEL_CHARS}", hint="shorten the class name")
    for ch in label:
        if unicodedata.category(ch) in _REFUSED_CATEGORIES:
            raise UsageError(f"{where} holds the character U+{ord(ch):04X} ({unicodedata.category(ch)})", hint="labels are printable text, one per line")
    return label


def duplicate_labels(labels: tuple[str, ...]) -> dict[str, list[int]]:
    """Each label given more than once, with its line numbers (from 1), in file order."""
    lines: dict[str, list[int]] = {}
    for n, label in enumerate(labels, 1):
        lines.setdefault(label, []).append(n)
    return {label: ns for label, ns in lines.items() if len(ns) > 1}


def labels_text(labels: tuple[str, ...]) -> str:
    """The labels file the package ships: UTF-8, ``\\n`` after every label, no BOM."""
    return "".join(f"{label}\n" for label in labels)


# --- against the model --------------------------------------------------------------------------------


def resolve_media(spec: TaskSpec, io: IOSpec) -> TaskSpec:
    """An image or audio ``spec`` checked against the exported model's IO, with the crop filled in from its
    input shape (mobilegen.tasks.dispatch.resolve picks this or the text one). One-line UsageErrors name the mismatch."""
    _check_state(spec, io)
    data_inputs = [t for t in io.inputs if t.name not in spec.state_inputs]
    if len(data_inputs) != 1:
        names = ", ".join(t.name for t in io.inputs)
        more = ", or name state inputs with --state IN=OUT" if spec.kind == "audio" else ""
        raise UsageError(f"--task {spec.kind} needs a model with one input, this one has {len(io.inputs)} ({names})", hint=f"bind the others with --const{more}, or drop --task")
    x = data_inputs[0]
    if x.dtype != "float32":
        raise UsageError(f"--task {spec.kind} needs a float32 model input, {x.name!r} is {x.dtype}", hint="export the model with a float32 input, or drop --task")
    spec = _resolve_image(spec, x) if spec.is_image else _resolve_audio(spec, x)
    if spec.softmax or spec.top_k is not None or spec.is_classifier:
        _check_scores(spec, io)
    return spec


def _batch_ok(d: int | str) -> bool:
    return d == 1 or isinstance(d, str)


def _resolve_image(spec: TaskSpec, x: TensorSpec) -> TaskSpec:
    shape = x.shape
    want = "1x3xHxW" if spec.layout == "nchw" else "1xHxWx3"
    c_axis, h_axis, w_axis = (1, 2, 3) if spec.layout == "nchw" else (3, 1, 2)
    if len(shape) != 4 or not _batch_ok(shape[0]) or shape[c_axis] not in (3,) and not isinstance(shape[c_axis], str):
        other = "--layout nhwc" if spec.layout == "nchw" else "--layout nchw"
        raise UsageError(f"--task {spec.kind} with --layout {spec.layout} needs a {want} input, {x.name!r} is {x.shape_str()}", hint=f"check the layout ({other}?) and the model's --input shape")
    h, w = shape[h_axis], shape[w_axis]
    if isinstance(h, int) and isinstance(w, int):
        if spec.crop is not None and spec.crop != (h, w):
            raise UsageError(
                f"--crop {spec.crop[0]}x{spec.crop[1]} does not match the model's input {x.name!r} ({x.shape_str()}: {h}x{w})",
                hint=f"pass --crop {h}x{w}, or export the model for {spec.crop[0]}x{spec.crop[1]} images",
            )
        spec = replace(spec, crop=(h, w))
    elif spec.crop is None:
        raise UsageError(f"the model's input {x.name!r} ({x.shape_str()}) has no fixed image size", hint="pass --crop HxW: the image size the model runs at")
    assert spec.crop is not None
    if spec.resize is not None and spec.resize < max(spec.crop):
        raise UsageError(
            f"--resize {spec.resize} is smaller than the model's {spec.crop[0]}x{spec.crop[1]} input",
            hint=f"give --resize ≥ {max(spec.crop)}, or leave it out (the shorter side is then scaled to {max(spec.crop)})",
        )
    return spec


def _resolve_audio(spec: TaskSpec, x: TensorSpec) -> TaskSpec:
    if len(x.shape) != 2 or not _batch_ok(x.shape[0]):
        raise UsageError(f"--task audio needs a 1xSAMPLES input, {x.name!r} is {x.shape_str()}", hint="export the model with a [1, samples] waveform input")
    n = x.shape[1]
    return replace(spec, window=n if isinstance(n, int) else None)


def _check_state(spec: TaskSpec, io: IOSpec) -> None:
    """Each --state pair: a float32 model input with a fixed shape, and an output of the same dtype and shape."""
    ins = {t.name: t for t in io.inputs}
    outs = {t.name: t for t in io.outputs}
    hint = "name the model's state input and the output that updates it: --state IN=OUT"
    for name_in, name_out in spec.state:
        t_in, t_out = ins.get(name_in), outs.get(name_out)
        if t_in is None:
            raise UsageError(f"--state {name_in}={name_out}: the model has no input {name_in!r} (inputs: {', '.join(ins)})", hint=hint)
        if t_out is None:
            raise UsageError(f"--state {name_in}={name_out}: the model has no output {name_out!r} (outputs: {', '.join(outs)})", hint=hint)
        if t_in.dtype != "float32" or not t_in.is_static:
            raise UsageError(f"--state {name_in}={name_out}: the state input must be float32 with a fixed shape, it is {t_in.dtype} {t_in.shape_str()}", hint="export the model with a fixed state shape")
        if t_out.dtype != t_in.dtype or tuple(t_out.shape) != tuple(t_in.shape):
            raise UsageError(f"--state {name_in}={name_out}: the output is {t_out.dtype} {t_out.shape_str()}, the input {t_in.dtype} {t_in.shape_str()}", hint="the output that updates a state has the state's dtype and shape")
    if len(spec.state_outputs) >= len(io.outputs):
        raise UsageError("--state names every output of the model", hint="the model needs an output besides its state")


def _check_scores(spec: TaskSpec, io: IOSpec) -> None:
    what = {"image-classification": "--task image-classification", "audio": "--task audio with --labels"}.get(spec.kind, "") if spec.is_classifier else ""
    what = what or ("--top-k" if spec.top_k is not None else "--softmax")
    outputs = [t for t in io.outputs if t.name not in spec.state_outputs]  # --state outputs are not scores
    if len(outputs) != 1:
        raise UsageError(f"{what} needs a model with one output (its class scores), this one has {len(outputs)}", hint="return the class scores alone from forward")
    y = outputs[0]
    if len(y.shape) != 2 or not _batch_ok(y.shape[0]) or not isinstance(y.shape[1], int):
        raise UsageError(f"{what} needs a 1xCLASSES output, {y.name!r} is {y.shape_str()}", hint="return the class scores as a [1, classes] tensor")
    classes = y.shape[1]
    n_classes = f"{classes} class{'' if classes == 1 else 'es'}"
    if spec.is_classifier and len(spec.labels) != classes:
        n_labels = f"{len(spec.labels)} label{'' if len(spec.labels) == 1 else 's'}"
        raise UsageError(f"--labels has {n_labels} but the model has {n_classes} (output {y.name!r} is {y.shape_str()})", hint="give one label per class, in class order")
    if spec.top_k is not None and spec.top_k > classes:
        raise UsageError(f"--top-k {spec.top_k} is more than the model's {n_classes}", hint=f"give --top-k ≤ {classes}")
    if spec.softmax and classes == 1:  # checked before the export too (mobilegen.export.early_checks): a softmax over one score is 1
        raise UsageError(
            f"--softmax over one class: output {y.name!r} is {y.shape_str()}, and a softmax over one class is always 1",
            hint="drop --softmax (a single logit's probability is its sigmoid: apply torch.sigmoid in forward)",
        )


def describe(rec: Mapping[str, object]) -> str:
    """One line for the report and the READMEs from a manifest's ``options.task`` (:meth:`TaskSpec.record`)."""
    parts = [str(rec.get("kind"))]
    if str(rec.get("kind")) in TEXT_KINDS:
        seq = rec.get("sequence_length")
        parts.append(f"text → tokenizer (native, generated) → ids [1, {seq}]" if seq else "text → tokenizer (native, generated) → ids [1, any length]")
        if rec.get("kind") == "text-embedding":
            parts.append(f"in the graph: {rec.get('pooling')} pooling over the attention mask" + (", L2 normalisation" if rec.get("normalize") else ""))
        else:
            parts.append("in the graph: softmax" + (" per token" if rec.get("kind") == "token-classification" else ""))
        if rec.get("labels"):
            parts.append(f"{rec.get('labels')} labels ({rec.get('labels_file')})")
        return "; ".join(parts)
    if rec.get("kind") == "audio":
        window = rec.get("window")
        length = f"{window} samples per run" if isinstance(window, int) else "any number of samples per run"
        parts.append(f"mono at {rec.get('sample_rate')} Hz, {length}: 16-bit PCM (runPcm16) or floats in [-1, 1] (runFloat, ×32768 natively), ÷32768 in the graph")
        state = rec.get("state")
        if isinstance(state, list) and state:
            pairs = ", ".join(f"{p.get('output')} → {p.get('input')}" for p in state if isinstance(p, dict))
            parts.append(f"state carried between windows ({pairs}; zeros first) by the streaming helper")
    else:
        crop = rec.get("crop") or ["?", "?"]
        size = f"{crop[0]}x{crop[1]}" if isinstance(crop, list) and len(crop) == 2 else "?"
        scaled = f"shorter side to {rec.get('resize') or _max(crop)} px"
        # A manifest from before --resize-filter has no key: its packages resized bilinearly.
        how = (
            "bilinear, half-pixel centres, no antialias"
            if rec.get("resize_filter", "bilinear") == "bilinear"
            else "antialiased bilinear, as Pillow's Image.resize BILINEAR"
        )
        parts.append(f"native: {scaled} ({how}), centre crop {size}")
        parts.append(
            f"in the graph: uint8 RGB → {'BGR → ' if rec.get('channels') == 'bgr' else ''}×{rec.get('scale'):.6g} "
            f"− mean {_nums(rec.get('mean'))} ÷ std {_nums(rec.get('std'))} → {str(rec.get('layout')).upper()}"
            if isinstance(rec.get("scale"), (int, float))
            else "in the graph: uint8 RGB → normalised"
        )
    if rec.get("labels"):
        parts.append(f"{rec.get('labels')} labels ({rec.get('labels_file')})")
    post = [p for p in ("softmax" if rec.get("softmax") else "", f"top-{rec.get('top_k')}" if rec.get("top_k") else "") if p]
    if post:
        parts.append("after the model: " + ", ".join(post))
    return "; ".join(parts)


def _max(crop: object) -> object:
    return max(crop) if isinstance(crop, list) and crop and all(isinstance(c, int) for c in crop) else "?"


def _nums(values: object) -> str:
    return "(" + ", ".join(f"{v:g}" for v in values) + ")" if isinstance(values, list) else "?"
