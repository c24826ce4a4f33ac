"""The ``--task`` flags of the build commands (android, ios, package), declared once (mobilegen.tasks)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from mobilegen.tasks.spec import TaskSpec

TaskOpt = Annotated[
    str | None,
    typer.Option(
        "--task",
        metavar="TASK",
        help="Wrap the model in pre/post-processing: image-classification, image, audio, text-embedding, text-classification "
        "or token-classification (see docs/tasks.md).",
    ),
]
LabelsOpt = Annotated[Path | None, typer.Option("--labels", metavar="FILE.txt", help="image-classification: the class names, one per line, UTF-8 (shipped as a data file).")]
ResizeOpt = Annotated[int | None, typer.Option("--resize", metavar="N", help="Image tasks: scale the shorter side to N pixels before the centre crop (default: the crop's larger side).")]
ResizeFilterOpt = Annotated[
    str | None,
    typer.Option(
        "--resize-filter",
        metavar="FILTER",
        help="Image tasks: antialias (default: Pillow's BILINEAR resize, its filter widened when shrinking, as torchvision's "
        "Resize(antialias=True)) or bilinear (2x2 taps, no antialiasing: the earlier resize).",
    ),
]
StateOpt = Annotated[
    str | None,
    typer.Option(
        "--state",
        metavar="IN=OUT",
        help="audio: a model input fed with an output of the previous window (zeros first), e.g. state=stateN; "
        "comma-separated for several. The wrappers get a streaming helper (<Name>Stream) with reset().",
    ),
]
CropOpt = Annotated[str | None, typer.Option("--crop", metavar="HxW", help="Image tasks: centre crop HxW, the model's image size (default: from its input shape).")]
MeanOpt = Annotated[str | None, typer.Option("--mean", metavar="A,B,C", help="Image tasks: subtracted per channel after --scale, e.g. 0.485,0.456,0.406 (default 0).")]
StdOpt = Annotated[str | None, typer.Option("--std", metavar="A,B,C", help="Image tasks: divided per channel after --mean, e.g. 0.229,0.224,0.225 (default 1).")]
ScaleOpt = Annotated[str | None, typer.Option("--scale", metavar="S", help="Image tasks: pixel (0..255) multiplier, a number or a fraction, e.g. 1/255 (default 1).")]
ChannelsOpt = Annotated[str | None, typer.Option("--channels", metavar="ORDER", help="Image tasks: the channel order the model expects: rgb (default) or bgr.")]
LayoutOpt = Annotated[str | None, typer.Option("--layout", metavar="LAYOUT", help="Image tasks: the model's input layout: nchw (default) or nhwc.")]
SampleRateOpt = Annotated[int | None, typer.Option("--sample-rate", metavar="HZ", help="audio: the model's sample rate (mono 16-bit PCM).")]
SoftmaxOpt = Annotated[bool, typer.Option("--softmax", help="Task models: softmax over the class scores, in the graph.")]
TokenizerOpt = Annotated[
    Path | None,
    typer.Option("--tokenizer", metavar="DIR|tokenizer.json", help="Text tasks: the model's Hugging Face tokenizer (default: the tokenizer.json beside the model)."),
]
PoolingOpt = Annotated[str | None, typer.Option("--pooling", metavar="MODE", help="text-embedding: mean (over the attention mask) or cls, in the graph (default: the sentence-transformers config, else mean).")]
NormalizeOpt = Annotated[
    bool | None,
    typer.Option("--normalize/--no-normalize", help="text-embedding: L2-normalise the embedding in the graph (default: as the sentence-transformers config, else on)."),
]
TopKOpt = Annotated[int | None, typer.Option("--top-k", metavar="K", help='Task models: the K best classes in the graph (outputs "scores" and "indices").')]


def task_spec(
    task: str | None,
    labels: Path | None,
    resize: int | None,
    crop: str | None,
    mean: str | None,
    std: str | None,
    scale: str | None,
    channels: str | None,
    layout: str | None,
    sample_rate: int | None,
    softmax: bool,
    top_k: int | None,
    *,
    resize_filter: str | None = None,
    state: str | None = None,
    tokenizer: Path | None = None,
    pooling: str | None = None,
    normalize: bool | None = None,
    sample: Path | None = None,
    model: Path | None = None,
) -> TaskSpec | None:  # imported lazily: keeps --help fast
    from mobilegen.tasks.dispatch import task_from_flags
    from mobilegen.tasks.spec import TaskFlags

    flags = TaskFlags(
        task, labels, resize, crop, mean, std, scale, channels, layout, sample_rate, softmax, top_k, resize_filter=resize_filter, state=state,
        tokenizer=tokenizer, pooling=pooling, normalize=normalize, sample=sample if task is not None else None, model=model,
    )
    return task_from_flags(flags)
