"""The text tokenizers' spec, Python reference and parity gate, against Hugging Face ``tokenizers`` (the
oracle): the real all-MiniLM-L6-v2 WordPiece tokenizer and byte-level BPE, Unigram, WordPiece and
SentencePiece-style BPE tokenizers trained here, each on the 500-text corpus (hard cases included)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from text_tokenizers import TRAINED, minilm_tokenizer

from mobilegen.errors import UsageError, VerificationError
from mobilegen.tasks.text import asset as text_asset
from mobilegen.tasks.text import chars, parity, reference
from mobilegen.tasks.text import spec as text_spec
from mobilegen.tasks.text.spec import TokenizerError

pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def tokenizer_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tokenizers")
    return {"minilm": minilm_tokenizer(), **{name: train(root) for name, train in TRAINED.items()}}


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return parity.corpus(["A user's own sample text.", "Ünïcödé sample ✓"], total=500)


def test_corpus_has_the_hard_cases_and_is_deterministic(texts: list[str]) -> None:
    assert len(texts) == 500 == len(set(texts))
    assert texts[:2] == ["A user's own sample text.", "Ünïcödé sample ✓"]
    assert set(parity.HARD_CASES) <= set(texts)
    assert parity.corpus(["A user's own sample text.", "Ünïcödé sample ✓"], total=500) == texts
    joined = "".join(texts)
    for probe in ("", "\u200b", "\u0301", "日", "😀", "\u05e9", "\x00", "\u3000"):
        assert probe in joined
    assert any(len(t) > 100 and " " not in t for t in texts), "a word longer than max_input_chars_per_word"


@pytest.mark.parametrize("name", ["minilm", *TRAINED])
def test_reference_matches_hf_tokenizers(name: str, tokenizer_files: dict[str, Path], texts: list[str]) -> None:
    path = tokenizer_files[name]
    spec = text_spec.load(path)
    report = parity.check(spec, parity.hf_tokenizer(path), texts)
    assert report.strings == 500 and report.tokens > 500
    # The corpus reaches the interesting paths: unknowns, truncation, padding.
    encodings = [reference.encode(spec, t) for t in texts]
    assert any(0 in e.attention_mask for e in encodings) or spec.padding is None
    if spec.truncation is not None:
        assert max(len(e.ids) for e in encodings) == max(spec.truncation.max_length, spec.padding.length or 0 if spec.padding else 0)


def test_minilm_spec(tokenizer_files: dict[str, Path]) -> None:
    spec = text_spec.load(tokenizer_files["minilm"].parent)  # the directory save_pretrained writes
    assert isinstance(spec.model, text_spec.WordPiece) and spec.vocab_size == 30522
    assert spec.normalizers == (text_spec.BertNormalizer(True, True, True, True),)
    assert spec.pre_tokenizers == (text_spec.BertPreTokenizer(),)
    assert [p.ids for p in spec.template] == [(101,), (), (102,)]
    assert spec.truncation == text_spec.Truncation(128) and spec.padding is not None and spec.padding.length == 128
    assert reference.encode(spec, "Hello, world!").ids[:5] == (101, 7592, 1010, 2088, 999)


def test_max_length_from_the_caller(tokenizer_files: dict[str, Path], texts: list[str]) -> None:
    for name in ("minilm", "byte_level_bpe", "unigram"):
        path = tokenizer_files[name]
        spec = text_spec.load(path, max_length=24)
        assert spec.truncation is not None and spec.truncation.max_length == 24
        parity.check(spec, parity.hf_tokenizer(path, max_length=24), texts[:200])
    assert len(reference.encode(text_spec.load(tokenizer_files["minilm"], max_length=24), "x").ids) == 24
    with pytest.raises(TokenizerError, match="leaves no room for the 2 special tokens"):
        text_spec.load(tokenizer_files["minilm"], max_length=1)


def test_gate_fails_with_exit_5_naming_the_text(tokenizer_files: dict[str, Path], texts: list[str]) -> None:
    path = tokenizer_files["minilm"]
    spec = text_spec.load(path)
    tok = parity.hf_tokenizer(path)

    def broken(spec: text_spec.TokenizerSpec, text: str) -> reference.Encoding:
        e = reference.encode(spec, text)
        return e if "日本語" not in text else replace(e, ids=(*e.ids[:3], 100, *e.ids[4:]))

    with pytest.raises(VerificationError) as info:
        parity.check(spec, tok, texts, encode=broken, candidate="broken")
    err = info.value
    assert err.exit_code == 5 and isinstance(err, parity.TokenizerParityError)
    assert "日本語のテキストを分割する" in err.message and "1 of 500" in err.message
    assert err.data["tokenizer_parity"] == {"candidate": "broken", "strings": 500, "mismatches": 1}
    # A spec that lost its lowercasing (a broken port of the normalizer) fails the same way.
    cased = replace(spec, normalizers=(text_spec.BertNormalizer(True, True, True, False),))
    with pytest.raises(parity.TokenizerParityError, match="A user's own sample text"):
        parity.check(cased, tok, texts)
    # Only the attention mask differs: still a failure, and it says so.
    def unmasked(spec: text_spec.TokenizerSpec, text: str) -> reference.Encoding:
        e = reference.encode(spec, text)
        return replace(e, attention_mask=(1,) * len(e.ids)) if text == "" else e

    with pytest.raises(parity.TokenizerParityError) as info:
        parity.check(spec, tok, texts, encode=unmasked)
    assert "attention mask" in info.value.details[0]


def _doc(**changes: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "version": "1.0",
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "a": 1}},
    }
    doc.update(changes)
    return doc


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"}}, "model WordLevel"),
        ({"normalizer": {"type": "Precompiled", "precompiled_charsmap": "AAAA"}}, "normalizer Precompiled"),
        ({"normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Nmt"}]}}, "normalizer Nmt"),
        ({"normalizer": {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}}, "Replace with a regex pattern"),
        ({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Removed", "invert": False}}, "Split with a regex"),
        ({"pre_tokenizer": {"type": "UnicodeScripts"}}, "pre-tokenizer UnicodeScripts"),
        ({"pre_tokenizer": {"type": "CharDelimiterSplit", "delimiter": "x"}}, "pre-tokenizer CharDelimiterSplit"),
        ({"post_processor": {"type": "Fancy"}}, "post-processor Fancy"),
        ({"added_tokens": [{"id": 1, "content": "a", "single_word": True, "special": True}]}, "single_word"),
        (
            {"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "dropout": 0.1}},
            "BPE with dropout",
        ),
    ],
)
def test_unsupported_components_are_refused_naming_them(changes: dict[str, object], named: str, tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(_doc(**changes)), encoding="utf-8")
    with pytest.raises(TokenizerError) as info:
        text_spec.load(path)
    err = info.value
    assert isinstance(err, UsageError) and err.exit_code == 2
    assert named in err.message and "\n" not in err.one_line()
    assert str(path) in err.message


def test_bad_paths_and_files(tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match="has no tokenizer.json"):
        text_spec.load(tmp_path)
    with pytest.raises(TokenizerError, match="does not exist"):
        text_spec.load(tmp_path / "missing.json")
    (tmp_path / "tokenizer.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(TokenizerError, match="cannot be read as JSON"):
        text_spec.load(tmp_path)
    (tmp_path / "tokenizer.json").write_text("[]", encoding="utf-8")
    with pytest.raises(TokenizerError, match="not a Hugging Face tokenizer.json"):
        text_spec.load(tmp_path)


def test_asset_carries_the_vocabulary_and_only_the_classes_used(tokenizer_files: dict[str, Path], tmp_path: Path) -> None:
    spec = text_spec.load(tokenizer_files["minilm"])
    asset = json.loads(text_asset.write_asset(spec, tmp_path / "t.json").read_text(encoding="utf-8"))
    assert asset["format"] == "mobilegen-tokenizer" and asset["version"] == 1
    assert len(asset["model"]["vocab"]) == 30522 and asset["model"]["vocab"][101] == "[CLS]"
    assert sorted(asset["classes"]) == ["bert_control", "bert_mn", "bert_punct", "bert_space", "chinese", "norm_keep", "whitespace"]
    assert asset["lower"]["304"] == "i\u0307"  # İ, as Rust lowercases it
    bpe = json.loads(text_asset.write_asset(text_spec.load(tokenizer_files["byte_level_bpe"]), tmp_path / "b.json").read_text(encoding="utf-8"))
    assert sorted(bpe["classes"]) == ["bl_letter", "bl_number", "bl_space", "whitespace"]  # whitespace: <mask> lstrip
    assert bpe["lower"] == {}
    assert bpe["template"][0]["ids"] == [0] and bpe["template"][2]["ids"] == [2]


def test_shipped_character_classes_are_what_tokenizers_does() -> None:
    """chars.json against the installed tokenizers, on every code point below U+3400 and a spread of the
    rest (the full probe takes minutes: chars.write_shipped())."""
    points = tuple(cp for cp in [*range(0x3400), *range(0x3400, 0x110000, 61), 0x1F600, 0x1F970, 0xE0001, 0x10FFFF] if not 0xD800 <= cp <= 0xDFFF)
    probed = chars.probe(points)
    for name in chars.CLASSES:
        klass = chars.char_class(name)
        want = {cp for a, b in probed["classes"][name] for cp in range(a, b + 1)}
        got = {cp for cp in points if chr(cp) in klass}
        assert got == want, f"{name}: {sorted(got ^ want)[:10]}; after a tokenizers upgrade run chars.write_shipped()"
    lower = chars.lower_map()
    assert {str(cp): v for cp in points if (v := lower.get(chr(cp))) is not None} == probed["lower"]


def test_directory_with_the_tokenizer(tokenizer_files: dict[str, Path], tmp_path: Path) -> None:
    shutil.copy(tokenizer_files["unigram"], tmp_path / "tokenizer.json")
    spec = text_spec.load(tmp_path)
    assert isinstance(spec.model, text_spec.Unigram)
    assert spec.pre_tokenizers == (text_spec.Metaspace("\u2581", "always", True),)
    assert spec.padding is not None and spec.padding.pad_to_multiple_of == 8


def test_gate_in_one_call_and_length_stats(tokenizer_files: dict[str, Path]) -> None:
    spec, report = parity.gate(tokenizer_files["minilm"].parent, ["my own sample"], max_length=64, total=120)
    assert report.strings == 120 and report.to_json()["mismatches"] == 0
    assert spec.truncation is not None and spec.truncation.max_length == 64
    texts = ["a", "a b c", " ".join(["word"] * 100)]
    stats = parity.length_stats(spec, texts)
    assert (stats.texts, stats.p50, stats.longest, stats.truncated, stats.max_length) == (3, 5, 102, 1, 64)
    assert stats.to_json()["p99"] == 102


def test_kotlin_source_refuses_a_hostile_package() -> None:
    from mobilegen.tasks.text import generate

    assert "package com.example.ok.text\n" in generate.kotlin_source("com.example.ok")
    for bad in ('x"; pwned()', "com.example.\n}", "class", ""):
        with pytest.raises(UsageError):
            generate.kotlin_source(bad)
