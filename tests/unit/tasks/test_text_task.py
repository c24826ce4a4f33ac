"""Text tasks: flags and refusals (before the export), and the in-graph pooling/normalisation/softmax against numpy on onnxruntime."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from mobilegen.errors import UsageError
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.tasks.dispatch import task_from_flags
from mobilegen.tasks.spec import TaskFlags
from mobilegen.tasks.text.graph import wrap_text
from mobilegen.tasks.text.task import postprocess, resolve_text
from tests.text_tokenizers import train_wordpiece


@pytest.fixture(scope="module")
def tok(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_wordpiece(tmp_path_factory.mktemp("tok"))


def flags(**kw: object) -> TaskFlags:
    return TaskFlags(**kw)  # type: ignore[arg-type]


def test_tokenizer_beside_the_model_is_found(tok: Path) -> None:
    spec = task_from_flags(flags(task="text-embedding", model=tok.parent / "model.pt"))
    assert spec is not None and spec.tokenizer == tok and spec.pooling == "mean" and spec.normalize


def test_sentence_transformers_config_sets_pooling_and_normalize(tok: Path, tmp_path: Path) -> None:
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    (tmp_path / "modules.json").write_text(json.dumps([{"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"}]))
    spec = task_from_flags(flags(task="text-embedding", tokenizer=tok, model=tmp_path / "m.pt"))
    assert spec is not None and (spec.pooling, spec.normalize) == ("cls", False)
    spec = task_from_flags(flags(task="text-embedding", tokenizer=tok, model=tmp_path / "m.pt", pooling="mean", normalize=True))
    assert spec is not None and (spec.pooling, spec.normalize) == ("mean", True)


def test_labels_come_from_the_hf_config(tok: Path, tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"id2label": {"1": "positive", "0": "negative"}}))
    spec = task_from_flags(flags(task="text-classification", tokenizer=tok, model=tmp_path / "m.pt"))
    assert spec is not None and spec.labels == ("negative", "positive") and spec.softmax


def test_sample_texts_are_lines(tok: Path, tmp_path: Path) -> None:
    (tmp_path / "s.txt").write_text("one\n\ntwo words\r\n", encoding="utf-8")
    spec = task_from_flags(flags(task="text-embedding", tokenizer=tok, sample=tmp_path / "s.txt"))
    assert spec is not None and spec.texts == ("one", "two words")


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"task": "text-embedding"}, "needs the model's tokenizer"),
        ({"task": "text-embedding", "crop": "224"}, "--crop is not for --task text-embedding"),
        ({"task": "text-classification", "pooling": "mean"}, "--pooling is for --task text-embedding"),
        ({"task": "text-embedding", "pooling": "max"}, "unknown --pooling 'max'"),
        ({"task": "image", "pooling": "mean"}, "--pooling is for text tasks"),
        ({"tokenizer": Path("x")}, "--tokenizer needs --task"),
        ({"task": "text-embedding", "labels": Path("l.txt")}, "--labels is for text-classification"),
    ],
)
def test_flag_refusals_are_one_line(tok: Path, kw: dict[str, object], message: str) -> None:
    if kw.get("task", "").startswith("text") and "tokenizer" not in kw and message != "needs the model's tokenizer":  # type: ignore[union-attr]
        kw = {**kw, "tokenizer": tok}
    with pytest.raises(UsageError) as err:
        task_from_flags(flags(**kw))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_binary_sample_is_refused(tok: Path, tmp_path: Path) -> None:
    (tmp_path / "s.npz").write_bytes(b"PK\x03\x04\xff\xfe")
    with pytest.raises(UsageError, match="not UTF-8 text"):
        task_from_flags(flags(task="text-embedding", tokenizer=tok, sample=tmp_path / "s.npz"))


def _io(*inputs: tuple[str, str, tuple[int | str, ...]], out: tuple[int | str, ...] = (1, 8, 4)) -> IOSpec:
    return IOSpec(inputs=tuple(TensorSpec(n, d, s) for n, d, s in inputs), outputs=(TensorSpec("y", "float32", out),))


def test_resolve_refuses_models_without_ids_or_with_float_inputs(tok: Path) -> None:
    spec = task_from_flags(flags(task="text-embedding", tokenizer=tok))
    assert spec is not None
    with pytest.raises(UsageError, match="needs a model taking input_ids"):
        resolve_text(spec, _io(("attention_mask", "int64", (1, 8))))
    with pytest.raises(UsageError, match="needs int64"):
        resolve_text(spec, _io(("input_ids", "float32", (1, 8)), ("attention_mask", "int64", (1, 8))))
    with pytest.raises(UsageError, match="needs the model's attention_mask"):
        resolve_text(spec, _io(("input_ids", "int64", (1, 8))))
    r = resolve_text(spec, _io(("ids", "int64", (1, 8)), ("mask", "int64", (1, 8))))
    assert r.seq_len == 8 and r.text_inputs == (("input_ids", "ids"), ("attention_mask", "mask"))
    cls = task_from_flags(flags(task="text-classification", tokenizer=tok))
    assert cls is not None
    with pytest.raises(UsageError, match=r"\[1, classes\] logits"):
        resolve_text(cls, _io(("input_ids", "int64", (1, 8))))


def _toy_model(seq: int | str, hidden: int = 6, vocab: int = 30, out_rank: int = 3, classes: int = 3) -> onnx.ModelProto:
    """ids → embedding table (Gather) → [1, L, H] (× mask, so padding matters), or → [1, C] / [1, L, C]."""
    rng = np.random.default_rng(0)
    table = numpy_helper.from_array(rng.standard_normal((vocab, hidden)).astype(np.float32), "table")
    nodes = [helper.make_node("Gather", ["table", "ids"], ["h"], axis=0)]
    inits = [table]
    out_dim: list[int | str] = [1, seq, hidden]
    y = "h"
    if out_rank == 2:
        w = numpy_helper.from_array(rng.standard_normal((hidden, classes)).astype(np.float32), "w")
        inits.append(w)
        nodes += [helper.make_node("ReduceMean", ["h"], ["m"], axes=[1], keepdims=0), helper.make_node("MatMul", ["m", "w"], ["y"])]
        y, out_dim = "y", [1, classes]
    elif classes and out_rank == 4:
        w = numpy_helper.from_array(rng.standard_normal((hidden, classes)).astype(np.float32), "w")
        inits.append(w)
        nodes.append(helper.make_node("MatMul", ["h", "w"], ["y"]))
        y, out_dim = "y", [1, seq, classes]
    g = helper.make_graph(
        nodes, "toy",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", seq]), helper.make_tensor_value_info("mask", TensorProto.INT64, ["batch", seq])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, out_dim)], inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(("pooling", "normalize", "seq"), [("mean", True, 8), ("mean", False, "seq"), ("cls", True, "seq"), ("cls", False, 8)])
def test_pooling_in_the_graph_matches_numpy(tok: Path, pooling: str, normalize: bool, seq: int | str) -> None:
    spec = task_from_flags(flags(task="text-embedding", tokenizer=tok, pooling=pooling, normalize=normalize))
    assert spec is not None
    model = _toy_model(seq)
    spec = resolve_text(spec, _io(("ids", "int64", ("batch", seq)), ("mask", "int64", ("batch", seq)), out=("batch", seq, 6)))
    wrapped = wrap_text(model, spec)
    assert [i.name for i in wrapped.graph.input] == ["input_ids", "attention_mask"] and [o.name for o in wrapped.graph.output] == ["embedding"]
    sess = ort.InferenceSession(wrapped.SerializeToString(), providers=["CPUExecutionProvider"])
    inner = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n_real in (1, 5, 8):
        ids = np.arange(1, 9, dtype=np.int64)[None] * 3 % 30
        mask = (np.arange(8) < n_real).astype(np.int64)[None]
        feeds = {"input_ids": ids, "attention_mask": mask}
        got = sess.run(None, feeds)[0]
        hidden = inner.run(None, {"ids": ids, "mask": mask})[0]
        want = hidden[:, 0] if pooling == "cls" else (hidden * mask[..., None]).sum(1) / mask.sum()
        if normalize:
            want = want / np.linalg.norm(want, axis=-1, keepdims=True)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got, postprocess([hidden], feeds, spec)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("kind", "rank"), [("text-classification", 2), ("token-classification", 4)])
def test_softmax_in_the_graph_matches_numpy(tok: Path, kind: str, rank: int) -> None:
    spec = task_from_flags(flags(task=kind, tokenizer=tok))
    assert spec is not None
    model = _toy_model(8, out_rank=rank)
    out = (1, 3) if rank == 2 else (1, 8, 3)
    spec = resolve_text(spec, _io(("ids", "int64", (1, 8)), ("mask", "int64", (1, 8)), out=out))
    assert spec.labels == ("0", "1", "2")
    wrapped = wrap_text(model, spec)
    ids = (np.arange(8, dtype=np.int64)[None] * 7) % 30
    feeds = {"input_ids": ids, "attention_mask": np.ones((1, 8), np.int64)}
    got = ort.InferenceSession(wrapped.SerializeToString(), providers=["CPUExecutionProvider"]).run(["scores"], feeds)[0]
    logits = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"ids": ids, "mask": feeds["attention_mask"]})[0]
    e = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert got.shape == out
