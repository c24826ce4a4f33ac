"""What the Android and iOS renderers need to generate the task-level API (issue 14).

A build with a task (``ProjectSpec.task``, :mod:`mobilegen.tasks.spec`) ships a wrapped graph whose
boundary is fixed (mobilegen.tasks.graph): image tasks take ``image`` (uint8 ``[1, H, W, 3]``, RGB, HWC),
audio tasks take ``pcm`` (float32 ``[1, N]`` holding 16-bit sample values: the Objective-C API has no
int16 tensors; int16/int32 graphs are carried too), and a classifier with in-graph top-k returns ``scores`` (float32
``[1, K]``) and ``indices`` (int64 ``[1, K]``). The native step before the graph (shorter side resized to
``resize`` with ``--resize-filter``'s filter, then a centre crop to ``crop``) is ported line for line from
:mod:`mobilegen.tasks.reference` into ``ImageInput`` (Kotlin) / ``ImageInput`` (Swift).

Labels never reach code: they ship as a data file (:data:`LABELS_FILE`, :func:`labels_text`), read by
the generated ``Labels.parse``. Only the label *count* (an int) is written into code. The device task
tests replay the task golden files of :mod:`mobilegen.tasks.golden`, found beside the golden vectors
(``<golden folder>/task/cases.json``); without them those tests are not generated.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from mobilegen.errors import InternalError
from mobilegen.spec import IOSpec, TensorSpec

if TYPE_CHECKING:
    from mobilegen.artifacts import ProjectSpec
    from mobilegen.tasks.spec import TaskSpec

LABELS_FILE = "labels.txt"
TEXT_KINDS = ("text-embedding", "text-classification", "token-classification")
TASK_KINDS = ("image-classification", "image", "audio", *TEXT_KINDS)
TOKENIZER_FILE = "tokenizer.json"  # the generated tokenizers' asset (mobilegen.tasks.text.asset.to_asset), shipped as data
TEXT_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
EMBEDDING_OUTPUT = "embedding"
IMAGE_INPUT = "image"
PCM_INPUT = "pcm"
SCORES_OUTPUT = "scores"
INDICES_OUTPUT = "indices"
# Element types the pcm input may have: the 16-bit samples are widened natively when the graph takes
# int32 or float32 (the Objective-C API has no int16 tensors, ort_enums.h), never rescaled.
PCM_DTYPES = ("int16", "int32", "float32")


@dataclass(frozen=True)
class MobileTask:
    """The task as the generated wrappers see it (graph tensor names, native resize/crop, labels)."""

    kind: str
    labels: tuple[str, ...]
    resize: int  # shorter side after the native resize; 0 = no resize
    crop_h: int  # native centre crop; 0 = none
    crop_w: int
    softmax: bool
    graph_top_k: int  # K of the in-graph TopK; 0 = the graph returns every score
    image: TensorSpec | None = None
    pcm: TensorSpec | None = None
    resize_filter: str = "antialias"  # mobilegen.tasks.spec.RESIZE_FILTERS: antialias | bilinear
    sample_rate: int = 0  # audio: Hz
    state: tuple[tuple[TensorSpec, TensorSpec], ...] = ()  # audio --state: (input, the output that updates it)
    window: int = 0  # audio: samples per run (the pcm input's fixed length); 0 = any length
    scores: TensorSpec | None = None
    indices: TensorSpec | None = None
    text_inputs: tuple[TensorSpec, ...] = ()  # text tasks: input_ids, attention_mask[, token_type_ids] int64 [1, L]
    embedding: TensorSpec | None = None  # text-embedding: float32 [1, H]

    @property
    def is_image(self) -> bool:
        return self.kind in ("image-classification", "image")

    @property
    def is_text(self) -> bool:
        return self.kind in TEXT_KINDS

    @property
    def is_classification(self) -> bool:
        """Classes with labels (``Labels``, ``Scores``, ``classify``): image/text classification, audio with labels."""
        return self.kind in ("image-classification", "text-classification", "token-classification") or (self.kind == "audio" and bool(self.labels))


def _find(tensors: Sequence[TensorSpec], name: str) -> TensorSpec | None:
    return next((t for t in tensors if t.name == name), None)


def _bug(message: str) -> InternalError:
    return InternalError(message, hint="the task's wrapped graph does not have the boundary the wrappers expect; this is a bug")


def _check_image(t: TensorSpec | None, crop: tuple[int, int] | None) -> TensorSpec:
    if t is None or t.dtype != "uint8" or len(t.shape) != 4 or t.shape[3] != 3:
        raise _bug(f"an image task's graph needs an input {IMAGE_INPUT!r} uint8 [1, H, W, 3], got {t}")
    if crop is not None and t.is_static and tuple(t.shape[1:3]) != tuple(crop):
        raise _bug(f"the crop {crop[0]}x{crop[1]} differs from the graph's image size {t.shape_str()}")
    return t


def mobile_task(task: TaskSpec | None, io: IOSpec) -> MobileTask | None:
    """The wrappers' view of ``task`` on the graph ``io``; None without a task. Raises InternalError when the
    graph's boundary is not the wrapped one (a pipeline bug, not a user error)."""
    if task is None:
        return None
    if task.kind not in TASK_KINDS:
        raise _bug(f"unknown task kind {task.kind!r}")
    crop = tuple(task.crop) if task.crop is not None else None
    if crop is not None and (len(crop) != 2 or min(crop) <= 0):
        raise _bug(f"bad crop {crop}")
    resize = (task.resize if task.resize is not None else max(crop)) if task.is_image and crop else 0
    if task.is_image and task.resize_filter not in ("antialias", "bilinear"):
        raise _bug(f"unknown resize filter {task.resize_filter!r}")
    if task.is_image and (crop is None or resize < max(crop)):
        raise _bug(f"an image task needs a crop and a resize at least as large, got {crop} / {task.resize}")
    image = pcm = scores = indices = None
    if task.kind in TEXT_KINDS:
        return _mobile_text_task(task, io)
    if task.kind == "audio":
        pcm = _find(io.inputs, PCM_INPUT)
        if pcm is None or pcm.dtype not in PCM_DTYPES or len(pcm.shape) != 2:
            raise _bug(f"an audio task's graph needs an input {PCM_INPUT!r} [1, N] of {'/'.join(PCM_DTYPES)}, got {pcm}")
        if not task.sample_rate or task.sample_rate <= 0:
            raise _bug(f"an audio task needs a sample rate, got {task.sample_rate!r}")
    else:
        image = _check_image(_find(io.inputs, IMAGE_INPUT), crop)
    state = []
    for name_in, name_out in task.state:
        t_in, t_out = _find(io.inputs, name_in), _find(io.outputs, name_out)
        if t_in is None or t_out is None or t_in.dtype != "float32" or not t_in.is_static or t_out.shape != t_in.shape:
            raise _bug(f"--state {name_in}={name_out} does not name a float32 input and an output of its fixed shape")
        state.append((t_in, t_out))
    if len(io.inputs) != 1 + len(state):
        raise _bug(f"a task's graph takes exactly one input (and its --state inputs), got {', '.join(t.name for t in io.inputs)}")
    state_outputs = {t.name for _, t in state}
    graph_top_k = 0
    if task.kind == "image-classification" or (task.kind == "audio" and task.labels):
        scores = _find(io.outputs, SCORES_OUTPUT) or next((t for t in io.outputs if t.dtype == "float32" and t.name not in state_outputs), None)
        if scores is None or scores.dtype != "float32":
            raise _bug(f"a classifier's graph needs a float32 output {SCORES_OUTPUT!r}, got {scores}")
        indices = _find(io.outputs, INDICES_OUTPUT)
        if indices is not None:
            if indices.dtype != "int64":
                raise _bug(f"output {INDICES_OUTPUT!r} must be int64, got {indices.dtype}")
            k = scores.shape[-1] if scores.shape else None
            graph_top_k = k if isinstance(k, int) else int(task.top_k or 0)
    return MobileTask(
        kind=task.kind,
        labels=tuple(task.labels),
        resize=int(resize),
        crop_h=int(crop[0]) if crop else 0,
        crop_w=int(crop[1]) if crop else 0,
        softmax=bool(task.softmax),
        graph_top_k=int(graph_top_k),
        resize_filter=str(task.resize_filter),
        sample_rate=int(task.sample_rate or 0),
        state=tuple(state),
        window=int(pcm.shape[1]) if pcm is not None and isinstance(pcm.shape[1], int) else 0,
        image=image,
        pcm=pcm,
        scores=scores,
        indices=indices,
    )


def _mobile_text_task(task: TaskSpec, io: IOSpec) -> MobileTask:
    ins = [_find(io.inputs, n) for n in TEXT_INPUTS]
    text_inputs = tuple(t for t in ins if t is not None)
    if ins[0] is None or len(text_inputs) != len(io.inputs) or any(t.dtype != "int64" or len(t.shape) != 2 for t in text_inputs):
        raise _bug(f"a text task's graph takes int64 [1, L] {', '.join(TEXT_INPUTS)}, got {', '.join(t.name for t in io.inputs)}")
    embedding = scores = None
    if task.kind == "text-embedding":
        embedding = _find(io.outputs, EMBEDDING_OUTPUT)
        if embedding is None or embedding.dtype != "float32" or len(embedding.shape) != 2:
            raise _bug(f"a text-embedding graph returns float32 [1, H] {EMBEDDING_OUTPUT!r}, got {embedding}")
    else:
        scores = _find(io.outputs, SCORES_OUTPUT)
        if scores is None or scores.dtype != "float32" or not isinstance(scores.shape[-1], int):
            raise _bug(f"a text classifier's graph returns float32 {SCORES_OUTPUT!r}, got {scores}")
    return MobileTask(
        kind=task.kind, labels=tuple(task.labels), resize=0, crop_h=0, crop_w=0, softmax=True, graph_top_k=0,
        scores=scores, text_inputs=text_inputs, embedding=embedding,
    )


# --- labels as data ----------------------------------------------------------------------------------


def labels_text(labels: Sequence[str]) -> str:
    """The labels file: UTF-8, one label per ``\\n``-terminated line (mobilegen.tasks.spec.labels_text).
    Labels are read back by splitting on ``\\n`` only, so a label may hold quotes, ``$``, ``\\(`` or any
    printable Unicode, but no line break: mobilegen.tasks.spec.read_labels refuses those; this refuses them
    again for specs built in code."""
    for label in labels:
        if any(c in "\n\r" or 0xD800 <= ord(c) <= 0xDFFF for c in label):
            raise InternalError(f"label {label!r} holds a line break or a lone surrogate", hint="labels are one line of text each")
    return "".join(f"{label}\n" for label in labels)


def parse_labels(text: str) -> list[str]:
    """Inverse of :func:`labels_text`, written like the generated Kotlin and Swift readers."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# --- render context (shared by both languages) -------------------------------------------------------


def _tensor_ctx(tensors: Sequence[dict[str, Any]], t: TensorSpec | None) -> dict[str, Any] | None:
    if t is None:
        return None
    found = next((c for c in tensors if c["name"] == t.name), None)
    if found is None:
        raise InternalError(f"no render context for task tensor {t.name!r}")
    return found


def _count(t: TensorSpec) -> int:
    n = 1
    for d in t.shape:
        n *= int(d)
    return n


def task_context(task: MobileTask | None, inputs: Sequence[dict[str, Any]], outputs: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The ``task`` entry of a render context: the task tensors' own contexts (``image``, ``pcm``,
    ``scores``, ``indices``, as the target renderer built them) plus the native constants. None without a task."""
    if task is None:
        return None
    image = task.image
    return {
        "kind": task.kind,
        "is_image": task.is_image,
        "is_classification": task.is_classification,
        "is_audio": task.kind == "audio",
        "label_count": len(task.labels),
        "labels_file": LABELS_FILE,
        "resize": task.resize,
        "antialias": task.resize_filter == "antialias",
        "crop_h": task.crop_h,
        "crop_w": task.crop_w,
        "softmax": task.softmax,
        "graph_top_k": task.graph_top_k,
        "image": _tensor_ctx(inputs, image),
        "image_static": bool(image is not None and image.is_static),
        "pcm": _tensor_ctx(inputs, task.pcm),
        "pcm_dtype": task.pcm.dtype if task.pcm is not None else "",
        "pcm_static": bool(task.pcm is not None and task.pcm.is_static),
        "sample_rate": task.sample_rate,
        "window": task.window,
        "state": [
            {"input": _tensor_ctx(inputs, t_in), "output": _tensor_ctx(outputs, t_out), "size": _count(t_in), "index": i}
            for i, (t_in, t_out) in enumerate(sorted(task.state, key=lambda p: [c["name"] for c in inputs].index(p[0].name)))
        ],  # in the graph's input order (Swift's memberwise Input init takes its arguments in that order)
        "scores": _tensor_ctx(outputs, task.scores),
        "indices": _tensor_ctx(outputs, task.indices),
        # text tasks (the generated tokenizer feeds these; mobilegen.tasks.text)
        "is_text": task.is_text,
        "is_embedding": task.kind == "text-embedding",
        "is_text_classification": task.kind == "text-classification",
        "is_token_classification": task.kind == "token-classification",
        "text_inputs": [{"tensor": _tensor_ctx(inputs, t), "role": t.name} for t in task.text_inputs],
        "text_static": all(t.is_static for t in task.text_inputs),
        "embedding": _tensor_ctx(outputs, task.embedding),
        "class_count": int(task.scores.shape[-1]) if task.scores is not None and isinstance(task.scores.shape[-1], int) else 0,
        "tokenizer_file": TOKENIZER_FILE,
    }


def copy_tokenizer(dest: Path, rel: PurePosixPath, spec: ProjectSpec) -> list[PurePosixPath]:
    """Ship a text task's tokenizer asset (data, never source) at ``dest/rel``; returns what was written."""
    if spec.task is None or spec.task.kind not in TEXT_KINDS:
        return []
    if spec.tokenizer_file is None or not Path(spec.tokenizer_file).is_file():
        raise InternalError("a text task's build has no tokenizer asset", hint="this is a bug in the pipeline")
    target = dest.joinpath(*rel.parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(spec.tokenizer_file, target)
    return [rel]


def write_labels(dest: Path, rel: PurePosixPath, task: TaskSpec | None) -> list[PurePosixPath]:
    """Write the labels file of a classifier (image, or audio with labels) at ``dest/rel``; returns what was written."""
    if task is None or not (task.kind in ("image-classification", "text-classification", "token-classification") or (task.kind == "audio" and task.labels)):
        return []
    target = dest.joinpath(*rel.parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(labels_text(task.labels).encode("utf-8"))
    return [rel]


def task_golden_dir(spec: ProjectSpec) -> Path | None:
    """The task golden folder of ``spec`` (mobilegen.tasks.golden): ``spec.task_golden`` as the build set it,
    else ``<golden folder>/task`` beside the golden vectors; None without a task or when there is none
    (the device task tests then are not generated)."""
    if spec.task is None:
        return None
    folder = spec.task_golden if spec.task_golden is not None else Path(spec.golden_mgv).parent / "task"
    return folder if (folder / "cases.json").is_file() else None


def copy_task_golden(dest: Path, rel: PurePosixPath, source: Path | None) -> list[PurePosixPath]:
    """Copy every file of the task golden folder ``source`` to ``dest/rel``; returns what was written."""
    if source is None:
        return []
    written = []
    for src in sorted(p for p in source.iterdir() if p.is_file()):
        target_rel = rel / src.name
        target = dest.joinpath(*target_rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
        written.append(target_rel)
    return written
