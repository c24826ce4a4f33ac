"""The task's place in a build (``--task``): wrap the exported model right after the export, so the fix
stage, the gate, the coverage analysis and the golden vectors all see the wrapped model; verify it
against this package's reference pre/post-processing around the original model; ship the labels and
the task golden files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen.errors import InternalError
from mobilegen.notices import Notice
from mobilegen.spec import onnx_io_spec
from mobilegen.tasks.dispatch import resolve
from mobilegen.tasks.golden import golden_inputs as make
from mobilegen.tasks.golden import write_task_golden
from mobilegen.tasks.graph import wrap
from mobilegen.tasks.reference import initial_state, wrap_reference
from mobilegen.tasks.spec import TaskSpec, duplicate_labels, labels_text
from mobilegen.verify import stage as verify_stage
from mobilegen.verify.gate import Expected, ort_runner, reference_outputs, reference_subject
from mobilegen.verify.stage import reference_for

if TYPE_CHECKING:
    import numpy as np

    from mobilegen.artifacts import JSONValue, LoadedModel, OnnxModel, ShippedModel
    from mobilegen.notices import Notice
    from mobilegen.options import BuildOptions
    from mobilegen.tasks.golden import GoldenInput
    from mobilegen.tasks.text.spec import TokenizerSpec
    from mobilegen.verify.gate import Expected, VerifyOptions

LABELS_FILE = "model/labels.txt"  # package-relative; the renderers ship it as a data file
# The seeded verification inputs of the wrapped graph span the input's whole range.
_SEED_RANGES = {"image": "0:256", "pcm": "-32768:32768"}


TOKENIZER_FILE = "model/tokenizer.json"  # text tasks: the generated tokenizers' asset (mobilegen.tasks.text.asset.to_asset)


@dataclass(frozen=True)
class TaskFiles:
    """What a build with a task wrote: the labels (None without), and each model's task golden folder."""

    labels: Path | None
    golden: dict[str, Path]  # target name -> <golden folder>/task
    tokenizer: Path | None = None  # text tasks: the tokenizer asset
    tokenizer_record: dict[str, JSONValue] | None = None  # text tasks: algorithm, vocabulary, parity, lengths


@dataclass(frozen=True)
class TextGate:
    """A text task's tokenizer, as the app runs it, and what the build's parity gate measured."""

    tokenizer: TokenizerSpec
    record: dict[str, JSONValue]


def wrap_exported(exported: OnnxModel, spec: TaskSpec) -> tuple[OnnxModel, TaskSpec]:
    """The exported model wrapped in the task's nodes (in memory), and the spec resolved against it."""
    resolved = resolve(spec, exported.io)
    if exported.proto is None:
        raise InternalError("the task wrapper needs the in-memory model; the export stage did not keep it")
    if resolved.is_text:
        from mobilegen.tasks.text.graph import wrap_text

        proto = wrap_text(exported.proto, resolved)
        return replace(exported, proto=proto, io=onnx_io_spec(proto)), resolved
    proto = wrap(exported.proto, resolved)
    return replace(exported, proto=proto, io=onnx_io_spec(proto)), resolved


def text_gate(spec: TaskSpec, prepared: OnnxModel) -> tuple[TaskSpec, TextGate, list[Notice]]:
    """A text task after the targets fixed its dims (a provider's fixed dims fix the sequence length): the sequence length
    the app pads to, then the tokenizer parity gate (exit 5 naming a text that differs) — before the
    reference runs and anything is written. A notice when fixed-length samples would be truncated."""
    from mobilegen.notices import Notice
    from mobilegen.spec import TensorSpec
    from mobilegen.tasks.text.task import gate, tokenizer_record

    ids: TensorSpec = next(t for t in prepared.io.inputs if t.name == spec.input_name)
    length = ids.shape[1]
    if isinstance(length, int) and spec.seq_len != length:
        spec = replace(spec, seq_len=length, max_length=length)
    tok, report, stats = gate(spec)
    out: list[Notice] = []
    if stats is not None and stats.truncated:
        out.append(
            Notice(
                "texts-truncated",
                "warning",
                f"{stats.truncated} of {stats.texts} --sample texts are longer than the model's {stats.max_length} tokens "
                f"(longest {stats.longest}, 99th percentile {stats.p99}): the tokenizer cuts them, the model sees their start only",
            )
        )
    return spec, TextGate(tok, tokenizer_record(tok, report, stats)), out


def notices(spec: TaskSpec) -> list[Notice]:
    """A warning when labels repeat: accepted (a dataset may name two classes alike, as ImageNet's two
    "crane"s), but ``classify`` then returns the same name for different classes."""
    dups = duplicate_labels(spec.labels)
    if not dups:
        return []
    shown = "; ".join(f"{label!r} on lines {', '.join(map(str, lines))}" for label, lines in list(dups.items())[:3])
    more = f" and {len(dups) - 3} more" if len(dups) > 3 else ""
    text = (
        f"--labels names {len(dups)} label{'s' if len(dups) != 1 else ''} more than once ({shown}{more}): "
        "classify returns the same name for those classes (their indices differ); rename them if they are different classes"
    )
    return [Notice("duplicate-labels", "warning", text)]


def verify_options(opts: VerifyOptions, spec: TaskSpec) -> VerifyOptions:
    """Seeded inputs over the wrapped input's whole range (0..255 pixels, 16-bit sample values) unless
    ``--range`` names it or ``--sample-only`` replaces them."""
    if spec.is_text:  # token ids over the vocabulary, a full attention mask, segment 0
        from mobilegen.tasks.text.spec import load

        vocab = load(spec.tokenizer).vocab_size if spec.tokenizer is not None else 2
        want = {"input_ids": f"0:{vocab}", "attention_mask": "1:2", "token_type_ids": "0:1"}
        given = opts.value_ranges()
        extra = [f"{g}={want[g]}" for g, _ in spec.text_inputs if g not in given]
        return opts if opts.sample_only else replace(opts, ranges=(*opts.ranges, *extra))
    name = spec.input_name
    if opts.sample_only or name in opts.value_ranges():
        return opts
    return replace(opts, ranges=(*opts.ranges, f"{name}={_SEED_RANGES[name]}"))


def state_zeros(spec: TaskSpec, model: OnnxModel) -> dict[str, np.ndarray]:
    """``--state``: the state inputs' zeros (a golden case is one window from a fresh stream)."""
    shapes = {t.name: tuple(int(d) for d in t.shape) for t in model.io.inputs if t.name in spec.state_inputs}
    return initial_state(spec, shapes)


def golden_inputs(spec: TaskSpec, wrapped: OnnxModel) -> list[GoldenInput]:
    samples = None
    if not spec.is_image:
        n = wrapped.io.inputs[0].shape[1]
        samples = n if isinstance(n, int) else wrapped.example_sizes.get(n, spec.sample_rate)
    return make(spec, samples)


def text_reference(loaded: LoadedModel, exported: OnnxModel, wrapped: OnnxModel, spec: TaskSpec, opts: VerifyOptions, tok: TokenizerSpec) -> tuple[Expected, LoadedModel]:
    """``reference`` for a text task: the original model on the graph's inputs (renamed back to the model's),
    then the numpy pooling / normalisation / softmax — on the seeded ids and on the golden texts' ids."""

    from mobilegen.tasks.text.task import golden_texts, graph_feeds, model_feeds, postprocess
    from mobilegen.verify.gate import Expected, reference_outputs
    from mobilegen.verify.stage import reference_for

    inner, label = reference_for(loaded, exported)

    def runner(arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        return postprocess(inner(model_feeds(arrays, spec)), arrays, spec)

    label = task_reference_label(label)
    expected = reference_outputs(runner, wrapped, opts, reference_label=label)
    texts = golden_texts(spec)
    cases = tuple(graph_feeds(tok, spec, t) for _, t in texts)
    return (
        Expected(
            cases=expected.cases + cases,
            outputs=expected.outputs + tuple(runner(c) for c in cases),
            label=expected.label,
            origins=expected.origins + tuple(f"task golden text {n}" for n, _ in texts),
            labels=expected.labels + tuple(f"text:{n}" for n, _ in texts),
        ),
        replace(loaded, module=None),
    )


def reference(loaded: LoadedModel, exported: OnnxModel, wrapped: OnnxModel, spec: TaskSpec, opts: VerifyOptions) -> tuple[Expected, LoadedModel]:
    """``stages.reference`` for a wrapped model: mobilegen.tasks.reference's pre-processing, the original
    model (PyTorch, or the source ONNX model), its post-processing — on the seeded inputs and on the task
    golden images/sounds, which the gate then verifies every artifact on too."""
    inner, label = reference_for(loaded, exported)
    data_input = next(t.name for t in exported.io.inputs if t.name not in spec.state_inputs)
    runner = wrap_reference(inner, data_input, spec, tuple(t.name for t in exported.io.outputs))
    label = task_reference_label(label)
    expected = reference_outputs(runner, wrapped, opts, reference_label=label)
    extra = golden_inputs(spec, wrapped)
    cases = tuple({spec.input_name: g.graph_input, **state_zeros(spec, wrapped)} for g in extra)
    return (
        Expected(
            cases=expected.cases + cases,
            outputs=expected.outputs + tuple(runner(c) for c in cases),
            label=expected.label,
            origins=expected.origins + tuple(f"task golden {'image' if spec.is_image else 'sound'} {g.name}" for g in extra),
            labels=expected.labels + tuple(f"{spec.input_name}:{g.name}" for g in extra),
        ),
        replace(loaded, module=None),
    )


def task_reference_label(label: str) -> str:
    """The reference's name in the gate's messages, as a noun phrase: "the PyTorch model wrapped in
    mobilegen.tasks' reference pre/post-processing" (a parenthesised remark of the inner label stays last)."""
    subject, paren, remark = reference_subject(label).partition(" (")
    return f"{subject} wrapped in mobilegen.tasks' reference pre/post-processing" + (f" ({remark}" if paren else "")


def write_text_files(root: Path, spec: TaskSpec, gate: TextGate, models: Sequence[ShippedModel]) -> TaskFiles:
    """A text task's files: the tokenizer asset (``model/tokenizer.json``, mobilegen's format: the
    vocabulary as data), the labels of a classifier, and per shipped model its text golden cases."""
    from mobilegen.tasks.text.asset import write_asset
    from mobilegen.tasks.text.golden import write_text_golden
    from mobilegen.verify.gate import ort_runner

    asset = root / TOKENIZER_FILE
    asset.parent.mkdir(parents=True, exist_ok=True)
    write_asset(gate.tokenizer, asset)
    labels = None
    if spec.labels:
        labels = root / LABELS_FILE
        labels.write_bytes(labels_text(spec.labels).encode("utf-8"))
    golden: dict[str, Path] = {}
    for m in models:
        folder = write_text_golden(root / m.golden, spec, gate.tokenizer, ort_runner(m.converted().path), [o.name for o in m.onnx.io.outputs])
        golden |= {t: folder for t in m.targets}
    return TaskFiles(labels, golden, asset, gate.record)


def write_files(root: Path, spec: TaskSpec, wrapped: OnnxModel, models: Sequence[ShippedModel]) -> TaskFiles:
    """``model/labels.txt`` and, per shipped model, ``<its golden folder>/task/``: the golden cases with
    that model's own outputs (onnxruntime CPU, its shipped ``.ort``, as its golden vectors are: a quantized
    ``.onnx`` with every graph optimisation fuses QDQ into host integer kernels, which saturate on x86
    without VNNI and can flip a class the ``.ort`` does not)."""
    labels = None
    if spec.labels:
        labels = root / LABELS_FILE
        labels.parent.mkdir(parents=True, exist_ok=True)
        labels.write_bytes(labels_text(spec.labels).encode("utf-8"))
    inputs = golden_inputs(spec, wrapped)
    golden: dict[str, Path] = {}
    for m in models:
        folder = write_task_golden(
            root / m.golden, spec, inputs, ort_runner(m.converted().path), [o.name for o in m.onnx.io.outputs], state_zeros(spec, m.onnx)
        )
        golden |= {t: folder for t in m.targets}
    return TaskFiles(labels, golden)


def record(spec: TaskSpec | None, files: TaskFiles | None, root: Path) -> dict[str, JSONValue] | None:
    """The manifest's ``options.task``: the spec, and where its files are in the package."""
    if spec is None:
        return None
    rec = spec.record()
    if files is not None:
        rec["labels_file"] = files.labels.relative_to(root).as_posix() if files.labels else None
        rec["golden"] = {t: p.relative_to(root).as_posix() for t, p in sorted(files.golden.items())}
        if files.tokenizer is not None:
            rec["tokenizer_file"] = files.tokenizer.relative_to(root).as_posix()
            rec["tokenizer"] = files.tokenizer_record
    return rec


# --- the build's task steps: each leaves a build without --task as it is ---------------------------------


def wrap_build(exported: OnnxModel, opts: BuildOptions) -> tuple[tuple[OnnxModel, BuildOptions], list[Notice]]:
    """``--task``: the exported model wrapped in the task's nodes, the options with the resolved task and
    its seeded ranges, and the task's notices."""
    if opts.task is None:
        return (exported, opts), []
    wrapped, task = wrap_exported(exported, opts.task)
    return (wrapped, replace(opts, task=task, verify=verify_options(opts.verify, task))), notices(task)


def text_gate_build(opts: BuildOptions, prepared: OnnxModel) -> tuple[tuple[BuildOptions, TextGate | None], list[Notice]]:
    """A text task's :func:`text_gate` on the prepared model (its sequence length as shipped); the options
    with the task's final sequence length. Nothing for other builds."""
    if opts.task is None or not opts.task.is_text:
        return (opts, None), []
    task, gate, gate_notices = text_gate(opts.task, prepared)
    return (replace(opts, task=task), gate), gate_notices


def build_reference(
    loaded: LoadedModel, exported: OnnxModel, model: OnnxModel, opts: BuildOptions, gate: TextGate | None = None
) -> tuple[Expected, LoadedModel]:
    """The reference's outputs: the original model inside mobilegen.tasks' reference pre/post-processing
    (``--task``; a text task's on its golden texts too), else the model itself (:func:`mobilegen.verify.stage.reference`)."""
    if opts.task is None:
        return verify_stage.reference(loaded, model, opts.verify)
    if gate is not None:
        return text_reference(loaded, exported, model, opts.task, opts.verify, gate.tokenizer)
    return reference(loaded, exported, model, opts.task, opts.verify)


def build_files(root: Path, opts: BuildOptions, wrapped: OnnxModel, models: Sequence[ShippedModel], gate: TextGate | None = None) -> TaskFiles | None:
    """:func:`write_files` (a text task: :func:`write_text_files`) for a build with ``--task``; None without."""
    if opts.task is None:
        return None
    if gate is not None:
        return write_text_files(root, opts.task, gate, models)
    return write_files(root, opts.task, wrapped, models)
