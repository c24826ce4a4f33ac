"""Text tasks (``--task text-embedding | text-classification | token-classification``): the flags, the
model's IO they need, the parity gate in the build, and the numpy reference of the in-graph post-processing.

The wrapped graph (:func:`mobilegen.tasks.text.graph.wrap_text`) takes what the generated tokenizer gives —
``input_ids``, ``attention_mask`` and (when the model takes them) ``token_type_ids``, int64 ``[1, L]`` — and
returns ``embedding`` float32 ``[1, H]`` (mean over the attention mask or the first token, then L2
normalisation) or ``scores`` (softmax: ``[1, C]`` per text, ``[1, L, C]`` per token). ``L`` stays dynamic
unless a target's provider fixes it (its ``fixed-dims`` fix) or the model was exported at a fixed length; the
tokenizer then pads to ``L`` and truncates to it.

Importable without numpy or onnx (the CLI parses the flags with it); what needs them is imported inside.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from mobilegen.errors import UsageError
from mobilegen.tasks.spec import (
    EMBEDDING_OUTPUT,
    IDS_INPUT,
    MASK_INPUT,
    MAX_SAMPLE_BYTES,
    MAX_SAMPLE_TEXTS,
    POOLINGS,
    SCORES_OUTPUT,
    TYPES_INPUT,
    TaskFlags,
    TaskKind,
    TaskSpec,
    read_labels,
)

if TYPE_CHECKING:
    import numpy as np

    from mobilegen.spec import IOSpec, TensorSpec
    from mobilegen.tasks.text.parity import LengthStats, ParityReport
    from mobilegen.tasks.text.spec import TokenizerSpec

TEXT_INPUTS = (IDS_INPUT, MASK_INPUT, TYPES_INPUT)
_OTHER_FLAGS = ("resize", "resize_filter", "crop", "mean", "std", "scale", "channels", "layout", "sample_rate", "state", "top_k")
# Model types whose sentence embedding is known to be the CLS token when no sentence-transformers config says.
_CLS_MODEL_TYPES: frozenset[str] = frozenset()
DEFAULT_MAX_LENGTH = 512


def text_task_from_flags(kind: TaskKind, f: TaskFlags, given: list[str]) -> TaskSpec:
    """The text task the flags describe: every flag error a one-line UsageError, before any heavy work.
    The tokenizer is read here too, so an unsupported component is refused before the export."""
    from mobilegen.tasks.text.spec import load

    wrong = [n for n in _OTHER_FLAGS if n in given]
    if wrong:
        flag = "--" + wrong[0].replace("_", "-")
        raise UsageError(f"{flag} is not for --task {kind}", hint=f"drop {flag}: text tasks take --tokenizer, --sample, --labels, --pooling and --normalize")
    if kind != "text-embedding":
        for name in ("pooling", "normalize"):
            if getattr(f, name) is not None:
                raise UsageError(f"--{name} is for --task text-embedding, not --task {kind}", hint=f"drop --{name}")
    elif f.labels is not None:
        raise UsageError("--labels is for text-classification or token-classification, not --task text-embedding", hint="drop --labels")
    if f.softmax and kind == "text-embedding":
        raise UsageError("--softmax is for classification tasks, not --task text-embedding", hint="drop --softmax")
    model_dir = f.model.parent if f.model is not None else None
    tok_path = f.tokenizer
    if tok_path is None:
        found = model_dir / "tokenizer.json" if model_dir is not None else None
        if found is None or not found.is_file():
            raise UsageError(
                f"--task {kind} needs the model's tokenizer: no tokenizer.json beside the model",
                hint="pass --tokenizer DIR|tokenizer.json (the folder save_pretrained wrote, with a fast tokenizer)",
            )
        tok_path = found
    tok = load(tok_path)  # TokenizerError (exit 2) naming an unsupported component
    texts = read_texts(f.sample) if f.sample is not None else ()
    spec = TaskSpec(kind=kind, tokenizer=tok_path, texts=texts, softmax=kind != "text-embedding", max_length=tok.truncation.max_length if tok.truncation else None)
    folders = [p for p in (tok_path if tok_path.is_dir() else tok_path.parent, model_dir) if p is not None]
    if kind == "text-embedding":
        pooling, normalize, source = _embedding_defaults(folders)
        if f.pooling is not None:
            if f.pooling not in POOLINGS:
                raise UsageError(f"unknown --pooling {f.pooling!r}", hint="--pooling is one of " + ", ".join(POOLINGS))
            pooling, source = f.pooling, "--pooling"
        if f.normalize is not None:
            normalize = f.normalize
        return replace(spec, pooling=cast(Literal["mean", "cls"], pooling), normalize=normalize, pooling_source=source)
    labels = read_labels(f.labels) if f.labels is not None else _config_labels(folders)
    return replace(spec, labels=labels)


def read_texts(path: Path) -> tuple[str, ...]:
    """``--sample FILE`` of a text task: UTF-8 text, one text per line (blank lines skipped)."""
    hint = "give a UTF-8 text file with one sample text per line"
    if not os.path.lexists(path) or not path.is_file():
        raise UsageError(f"--sample {path} is not a file", hint=hint)
    data = path.read_bytes()[: MAX_SAMPLE_BYTES + 1]
    if len(data) > MAX_SAMPLE_BYTES:
        raise UsageError(f"--sample {path} is over {MAX_SAMPLE_BYTES >> 20} MiB", hint=hint)
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        raise UsageError(f"--sample {path} is not UTF-8 text (byte {err.start}); a text task takes sample texts, not arrays", hint=hint) from None
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    texts = tuple(line for line in lines if line.strip())
    if not texts:
        raise UsageError(f"--sample {path} holds no text", hint=hint)
    if len(texts) > MAX_SAMPLE_TEXTS:
        raise UsageError(f"--sample {path} has {len(texts)} texts, over {MAX_SAMPLE_TEXTS}", hint="give a representative subset")
    return texts


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None


def _embedding_defaults(folders: list[Path]) -> tuple[str, bool, str]:
    """Pooling and normalisation as the sentence-transformers config beside the model/tokenizer says
    (``1_Pooling/config.json``, ``modules.json``); else mean pooling and L2 normalisation (sentence-transformers'
    defaults for a plain transformer)."""
    for folder in folders:
        modules = _json(folder / "modules.json")
        if not isinstance(modules, list):
            continue
        pooling, source = "mean", f"{folder / 'modules.json'}"
        for m in modules:
            if isinstance(m, dict) and str(m.get("type", "")).endswith("Pooling"):
                cfg = _json(folder / str(m.get("path", "")) / "config.json")
                if isinstance(cfg, dict) and cfg.get("pooling_mode_cls_token") and not cfg.get("pooling_mode_mean_tokens"):
                    pooling = "cls"
                source = f"sentence-transformers config in {folder}"
        normalize = any(isinstance(m, dict) and str(m.get("type", "")).endswith("Normalize") for m in modules)
        return pooling, normalize, source
    for folder in folders:
        cfg = _json(folder / "config.json")
        if isinstance(cfg, dict) and cfg.get("model_type") in _CLS_MODEL_TYPES:
            return "cls", True, f"model_type {cfg.get('model_type')} in {folder / 'config.json'}"
    return "mean", True, "default"


def _config_labels(folders: list[Path]) -> tuple[str, ...]:
    """The labels of the Hugging Face ``config.json`` beside the model (``id2label``, in id order); () when none."""
    from mobilegen.tasks.spec import _label as check_label

    for folder in folders:
        cfg = _json(folder / "config.json")
        if isinstance(cfg, dict) and isinstance(cfg.get("id2label"), dict):
            try:
                pairs = sorted((int(k), str(v)) for k, v in cfg["id2label"].items())
            except ValueError:
                continue
            if [k for k, _ in pairs] == list(range(len(pairs))):
                return tuple(check_label(folder / "config.json", i + 1, v) for i, (_, v) in enumerate(pairs))
    return ()


# --- against the model --------------------------------------------------------------------------------


def text_input_names(io_inputs: tuple[TensorSpec, ...] | list[TensorSpec]) -> list[tuple[str, str]]:
    """(graph name, model name) for each model input: the mask by a name holding "mask", token types by
    "type", the ids the one left."""
    out = []
    for t in io_inputs:
        low = t.name.lower()
        out.append((MASK_INPUT if "mask" in low else TYPES_INPUT if "type" in low else IDS_INPUT, t.name))
    return out


def resolve_text(spec: TaskSpec, io: IOSpec) -> TaskSpec:
    """``spec`` checked against the model's IO: int64 ``[1|batch, L]`` inputs (ids, attention mask, token
    types), one output of the shape the task needs; the sequence length fixed when the inputs fix it."""
    names = text_input_names(io.inputs)
    graph = [g for g, _ in names]
    listed = ", ".join(f"{t.name} {t.dtype} {t.shape_str()}" for t in io.inputs)
    if graph.count(IDS_INPUT) != 1 or len(set(graph)) != len(graph):
        raise UsageError(
            f"--task {spec.kind} needs a model taking input_ids (and attention_mask, token_type_ids), this one takes {listed}",
            hint="export the model with its inputs named input_ids, attention_mask and token_type_ids (as Hugging Face names them)",
        )
    if spec.kind == "text-embedding" and spec.pooling == "mean" and MASK_INPUT not in graph:
        raise UsageError(f"--pooling mean needs the model's attention_mask input, this one takes {listed}", hint="export the model with an attention_mask input, or pass --pooling cls")
    seq: set[int | str] = set()
    for t in io.inputs:
        if t.dtype != "int64" or len(t.shape) != 2 or not (t.shape[0] == 1 or isinstance(t.shape[0], str)):
            raise UsageError(f"--task {spec.kind} needs int64 [1, sequence] inputs, {t.name!r} is {t.dtype} {t.shape_str()}", hint="export the model with token ids of shape [1, L]")
        seq.add(t.shape[1])
    if len(seq) != 1:
        raise UsageError(f"the model's text inputs disagree on the sequence length ({listed})", hint="export every text input with the same sequence dim")
    (length,) = seq
    seq_len = length if isinstance(length, int) else None
    _check_text_outputs(spec, io, seq_len)
    labels = spec.labels
    if spec.is_classifier:
        classes = _classes(io)
        if labels and len(labels) != classes:
            raise UsageError(f"the labels name {len(labels)} classes but the model has {classes}", hint="give one label per class, in class order (--labels FILE.txt)")
        labels = labels or tuple(str(i) for i in range(classes))
    max_length = spec.max_length
    if seq_len is not None:
        max_length = seq_len
    return replace(spec, text_inputs=tuple(names), seq_len=seq_len, max_length=max_length or DEFAULT_MAX_LENGTH, labels=labels)


def _classes(io: IOSpec) -> int:
    last = io.outputs[0].shape[-1]
    return int(last) if isinstance(last, int) else 0


def _check_text_outputs(spec: TaskSpec, io: IOSpec, seq_len: int | None) -> None:
    y = io.outputs[0] if io.outputs else None
    if y is None or y.dtype != "float32":
        raise UsageError(f"--task {spec.kind} needs a float32 first output, the model's is {y and y.dtype}", hint="return the hidden states or the logits first from forward")
    if spec.kind == "text-embedding":
        ok = (len(y.shape) == 3 and isinstance(y.shape[2], int)) or (len(y.shape) == 2 and isinstance(y.shape[1], int))
        want = "[1, L, hidden] hidden states (or a [1, hidden] sentence embedding)"
    elif spec.kind == "text-classification":
        ok = len(y.shape) == 2 and isinstance(y.shape[1], int)
        want = "[1, classes] logits"
    else:
        ok = len(y.shape) == 3 and isinstance(y.shape[2], int)
        want = "[1, L, classes] per-token logits"
    if not ok:
        raise UsageError(f"--task {spec.kind} needs the model's first output to be {want}, {y.name!r} is {y.shape_str()}", hint="return it first from forward (other outputs are dropped)")
    if spec.kind == "text-embedding" and len(y.shape) == 2 and spec.pooling == "cls":
        raise UsageError(f"--pooling cls needs [1, L, hidden] hidden states, the model already returns {y.shape_str()}", hint="drop --pooling")


# --- the gate in the build ----------------------------------------------------------------------------


def tokenizer_for(spec: TaskSpec) -> TokenizerSpec:
    """The tokenizer the app runs: the file's, truncated to the sequence length, padded to it when fixed."""
    from mobilegen.tasks.text.spec import Padding, load

    assert spec.tokenizer is not None
    tok = load(spec.tokenizer, max_length=spec.max_length)
    if spec.seq_len is not None:
        tok = replace(tok, padding=Padding(spec.seq_len, tok.padding.direction if tok.padding else "Right", pad_id(tok), tok.padding.pad_type_id if tok.padding else 0))
    else:
        tok = replace(tok, padding=None)
    return tok


def pad_id(tok: TokenizerSpec) -> int:
    if tok.padding is not None:
        return tok.padding.pad_id
    ids = {t.content: t.id for t in tok.added_tokens}
    return next((ids[p] for p in ("[PAD]", "<pad>", "<|padding|>") if p in ids), 0)


def gate(spec: TaskSpec) -> tuple[TokenizerSpec, ParityReport, LengthStats | None]:
    """The build's tokenizer gate: the Python reference against Hugging Face ``tokenizers`` on the sample
    texts plus the hard cases (exit 5 naming a text that differs), and the sample texts' token lengths."""
    from mobilegen.tasks.text import parity

    tok = tokenizer_for(spec)
    hf = parity.hf_tokenizer(spec.tokenizer or "", max_length=spec.max_length)
    if tok.padding is not None and tok.padding.length is not None:
        hf.enable_padding(direction=tok.padding.direction.lower(), pad_id=tok.padding.pad_id, pad_type_id=tok.padding.pad_type_id, length=tok.padding.length, pad_token=tok.id_to_token().get(tok.padding.pad_id, "[PAD]"))
    else:
        hf.no_padding()
    report = parity.check(tok, hf, parity.corpus(spec.texts))
    stats = parity.length_stats(tok, spec.texts) if spec.texts else None
    return tok, report, stats


def tokenizer_record(tok: TokenizerSpec, report: ParityReport, stats: LengthStats | None) -> dict[str, Any]:
    """The report's and manifest's tokenizer section."""
    return {
        "algorithm": type(tok.model).__name__,
        "vocab_size": tok.vocab_size,
        "components": list(tok.components),
        "max_length": tok.truncation.max_length if tok.truncation else None,
        "padding": tok.padding.length if tok.padding else None,
        "parity": report.to_json(),
        "sample_lengths": stats.to_json() if stats else None,
    }


def describe_tokenizer(rec: dict[str, Any]) -> str:
    """One line for the report from :func:`tokenizer_record`: algorithm, vocabulary, components, the gate, lengths."""
    parity = rec.get("parity") or {}
    parts = [
        f"{rec.get('algorithm')}, vocabulary {rec.get('vocab_size')}",
        ", ".join(str(c) for c in rec.get("components") or [] if str(c) != str(rec.get("algorithm"))) or "no normalizer or pre-tokenizer",
        f"truncation at {rec.get('max_length')}" + (f", padded to {rec.get('padding')}" if rec.get("padding") else ", no padding (any length)"),
        f"parity gate: {parity.get('strings')} texts ({parity.get('tokens')} ids) identical to Hugging Face tokenizers, {parity.get('mismatches')} mismatches",
        "generated Kotlin and Swift tokenizers read the shipped asset (vocabulary as data)",
    ]
    lengths = rec.get("sample_lengths")
    if isinstance(lengths, dict):
        parts.append(
            f"--sample token lengths: median {lengths.get('p50')}, p90 {lengths.get('p90')}, p99 {lengths.get('p99')}, longest {lengths.get('longest')}"
            f"; {lengths.get('truncated')} of {lengths.get('texts')} truncated at {lengths.get('max_length')}"
        )
    return "; ".join(parts)


# --- the numpy reference of the graph's post-processing ------------------------------------------------


def model_feeds(arrays: dict[str, np.ndarray], spec: TaskSpec) -> dict[str, np.ndarray]:
    """The wrapped graph's text inputs → the model's own input names (and dtypes)."""
    return {model: arrays[g] for g, model in spec.text_inputs}


def postprocess(outputs: list[np.ndarray], arrays: dict[str, np.ndarray], spec: TaskSpec) -> list[np.ndarray]:
    """What the wrapper graph appends, in numpy (sentence-transformers' Pooling and Normalize modules; a softmax)."""
    import numpy as np

    y = np.asarray(outputs[0], dtype=np.float32)
    if spec.kind == "text-embedding":
        if y.ndim == 3:
            if spec.pooling == "cls":
                y = y[:, 0, :]
            else:
                mask = np.asarray(arrays[MASK_INPUT]).astype(np.float32)[..., None]
                y = (y * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        if spec.normalize:
            y = y / np.maximum(np.sqrt((y * y).sum(axis=-1, keepdims=True)), 1e-12)
        return [y.astype(np.float32)]
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return [(e / e.sum(axis=-1, keepdims=True)).astype(np.float32)]


def graph_feeds(tok: TokenizerSpec, spec: TaskSpec, text: str) -> dict[str, np.ndarray]:
    """The wrapped graph's inputs for ``text`` (what the generated tokenizer gives the model)."""
    import numpy as np

    from mobilegen.tasks.text.reference import encode

    e = encode(tok, text)
    values = {IDS_INPUT: e.ids, MASK_INPUT: e.attention_mask, TYPES_INPUT: e.type_ids}
    return {g: np.asarray([values[g]], dtype=np.int64) for g, _ in spec.text_inputs}


OUTPUT_NAMES = {"text-embedding": EMBEDDING_OUTPUT, "text-classification": SCORES_OUTPUT, "token-classification": SCORES_OUTPUT}


# --- golden cases: text → ids → outputs ---------------------------------------------------------------

GOLDEN_TEXTS = ("Hello, world!", "The quick brown fox jumps over the lazy dog.", "Café naïve façade — 日本語のテキスト 😀")
MAX_GOLDEN_SAMPLES = 2


def golden_texts(spec: TaskSpec) -> list[tuple[str, str]]:
    """(name, text) of the golden cases: three fixed texts and the first sample texts."""
    cases = [(f"text_{i}", t) for i, t in enumerate(GOLDEN_TEXTS)]
    cases += [(f"sample_{i}", t) for i, t in enumerate(spec.texts[:MAX_GOLDEN_SAMPLES])]
    return cases
