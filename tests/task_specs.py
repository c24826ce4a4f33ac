"""Task projects (issue 14) for the renderer tests: a classifier with and without in-graph top-k, an
image task and an audio task, each with hostile labels where labels exist and real task golden files
(mobilegen.tasks.golden, written with deterministic fake outputs: no model runs).

Imported by tests/unit/test_task_wrappers.py and tests/integration/test_android_tasks.py.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
from project_specs import base_specs

from mobilegen.artifacts import ProjectSpec
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.tasks.golden import golden_inputs, write_task_golden
from mobilegen.tasks.spec import TaskSpec

HOSTILE_LABELS = (
    'say "hi"',
    "$cost ${pwned()}",
    "\\(pwned())",
    "back\\slash \\n not a newline",
    "*/ fun pwned() {} /*",
    '")\nfatalError()\n//'.replace("\n", " "),
    "ünïcødé 日本 😀",
    "\u2028 line separator",
    "tab\there",
    "'single'",
    "",  # not a label a file can give (read_labels refuses it), but the format carries it
)

_CLASSES = len(HOSTILE_LABELS)
PROJECTS: dict[str, tuple[TaskSpec, IOSpec]] = {
    "cls_topk": (
        TaskSpec(kind="image-classification", labels=HOSTILE_LABELS, resize=14, crop=(9, 12), softmax=True, top_k=3),
        IOSpec((TensorSpec("image", "uint8", (1, 9, 12, 3)),), (TensorSpec("scores", "float32", (1, 3)), TensorSpec("indices", "int64", (1, 3)))),
    ),
    "cls_all": (
        TaskSpec(kind="image-classification", labels=HOSTILE_LABELS, crop=(8, 8)),
        IOSpec((TensorSpec("image", "uint8", (1, 8, 8, 3)),), (TensorSpec("scores", "float32", (1, _CLASSES)),)),
    ),
    "image": (
        TaskSpec(kind="image", resize=20, crop=(16, 10), resize_filter="bilinear"),
        IOSpec((TensorSpec("image", "uint8", (1, 16, 10, 3)),), (TensorSpec("features", "float32", (1, 4)),)),
    ),
    "audio": (
        TaskSpec(kind="audio", sample_rate=8000),
        IOSpec((TensorSpec("pcm", "float32", (1, "samples")),), (TensorSpec("logits", "float32", (1, 2)),)),
    ),
    # an audio classifier (--labels) with a fixed window, as a keyword spotter has: AudioInput checks the length
    "audio_window": (
        TaskSpec(kind="audio", labels=("yes", "no"), sample_rate=16000, window=400, softmax=True),
        IOSpec((TensorSpec("pcm", "float32", (1, 400)),), (TensorSpec("logits", "float32", (1, 2)),)),
    ),
    # a model that carries state between windows (silero-vad's state/stateN): the streaming helper
    "audio_stream": (
        TaskSpec(kind="audio", sample_rate=16000, window=400, state=(("state", "stateN"),)),
        IOSpec(
            (TensorSpec("pcm", "float32", (1, 400)), TensorSpec("state", "float32", (2, 1, 128))),
            (TensorSpec("output", "float32", (1, 1)), TensorSpec("stateN", "float32", (2, 1, 128))),
        ),
    ),
}


def _fake_run(io: IOSpec):  # type: ignore[no-untyped-def]
    """Deterministic outputs of the graph's declared shapes."""

    def run(arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        (x,) = arrays.values()
        seed = float(np.asarray(x, dtype=np.float64).mean())
        out = []
        for t in io.outputs:
            n = int(t.shape[-1])  # type: ignore[arg-type]
            if t.dtype == "int64":
                out.append(np.arange(n, dtype=np.int64)[None])
            else:
                out.append((np.sin(np.arange(n) + seed) * 0.5).astype(np.float32)[None])
        return out

    return run


def task_specs(tmp: Path) -> dict[str, ProjectSpec]:
    """name → ProjectSpec with a task; writes each one's golden folder (golden.mgv + task/) under ``tmp``."""
    base, _ = base_specs(tmp / "inputs")
    out = {}
    for name, (task, io) in PROJECTS.items():
        golden = tmp / "golden" / name
        golden.mkdir(parents=True)
        mgv = golden / "golden.mgv"
        mgv.write_bytes(base.golden_mgv.read_bytes())
        write_task_golden(golden, task, golden_inputs(task, samples=400), _fake_run(io), [t.name for t in io.outputs])
        out[name] = replace(base, io=io, task=task, golden_mgv=mgv)
    return out
