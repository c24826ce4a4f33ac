"""The asset the generated Kotlin, Swift and TypeScript tokenizers read: a tokenizer spec as JSON
(vocabulary as data, character classes included), with each ``normalized`` added token in the form
tokenizers matches it by (normalized with :mod:`mobilegen.tasks.text.reference`)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mobilegen.tasks.text import chars
from mobilegen.tasks.text.reference import normalize
from mobilegen.tasks.text.spec import ASSET_FORMAT, ASSET_VERSION, Bpe, TokenizerSpec, WordPiece


def _normalized_added(spec: TokenizerSpec) -> dict[int, str]:
    """The normalized form of every ``normalized`` added token (what tokenizers matches them by)."""
    return {t.id: normalize(spec, t.content) for t in spec.added_tokens if t.normalized}


def to_asset(spec: TokenizerSpec) -> dict[str, Any]:
    """The JSON document the generated tokenizers read (vocabulary as data, character classes included)."""
    model: dict[str, Any]
    if isinstance(spec.model, WordPiece):
        size = max(spec.model.vocab.values()) + 1
        vocab: list[str | None] = [None] * size
        for tok, i in spec.model.vocab.items():
            vocab[i] = tok
        model = {
            "type": "WordPiece",
            "vocab": vocab,
            "unk_id": spec.model.vocab[spec.model.unk_token],
            "prefix": spec.model.continuing_subword_prefix,
            "max_chars": spec.model.max_input_chars_per_word,
        }
    elif isinstance(spec.model, Bpe):
        size = max(spec.model.vocab.values()) + 1
        vocab = [None] * size
        for tok, i in spec.model.vocab.items():
            vocab[i] = tok
        model = {
            "type": "BPE",
            "vocab": vocab,
            "merges": [f"{a} {b}" if " " not in a + b else [a, b] for a, b in spec.model.merges],
            "unk_id": None if spec.model.unk_token is None else spec.model.vocab.get(spec.model.unk_token),
            "prefix": spec.model.continuing_subword_prefix,
            "suffix": spec.model.end_of_word_suffix,
            "fuse_unk": spec.model.fuse_unk,
            "byte_fallback": spec.model.byte_fallback,
            "ignore_merges": spec.model.ignore_merges,
        }
    else:
        model = {
            "type": "Unigram",
            "vocab": [p for p, _ in spec.model.pieces],
            "scores": [s for _, s in spec.model.pieces],
            "unk_id": spec.model.unk_id,
            "byte_fallback": spec.model.byte_fallback,
        }
    normalized = _normalized_added(spec)
    table = chars.shipped()
    return {
        "format": ASSET_FORMAT,
        "version": ASSET_VERSION,
        "model": model,
        "normalizers": [asdict(n) for n in spec.normalizers],
        "pre_tokenizers": [asdict(p) for p in spec.pre_tokenizers],
        "added_tokens": [asdict(t) | {"match": normalized.get(t.id, t.content)} for t in spec.added_tokens],
        "template": [{"type_id": p.type_id, "ids": list(p.ids), "sequence": p.is_sequence} for p in spec.template],
        "truncation": None if spec.truncation is None else asdict(spec.truncation),
        "padding": None if spec.padding is None else asdict(spec.padding),
        "classes": {name: table["classes"][name] for name in spec.char_classes()},
        "lower": table["lower"] if spec.uses_lowercase() else {},
    }


def write_asset(spec: TokenizerSpec, path: Path) -> Path:
    """Write :func:`to_asset` as compact UTF-8 JSON (non-ASCII kept as is)."""
    path.write_text(json.dumps(to_asset(spec), ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    return path
