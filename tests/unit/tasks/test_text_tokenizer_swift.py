"""The generated Swift tokenizer (no Swift toolchain here): it parses (tree-sitter-swift), calls only
methods it declares or a short list of Swift standard-library / Foundation ones, and — with the Kotlin
one — handles every component and reads every asset key the Python side writes."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ts_parsers import parser

from mobilegen.tasks.text import generate
from mobilegen.tasks.text import spec as s

if TYPE_CHECKING:
    from tree_sitter import Node

SWIFT = generate.swift_source().encode()
KOTLIN = generate.kotlin_source("com.example.app").encode()

# Swift standard library and Foundation methods the tokenizer may call.
KNOWN_METHODS = frozenset(
    """
    append contains filter map compactMap flatMap enumerated reversed reverse insert remove reserveCapacity
    reduce min max prefix suffix dropFirst firstIndex jsonObject init Scalar UnicodeScalarView
    """.split()
)

# One of every component the Python side can write into an asset.
COMPONENTS: list[Any] = [
    s.BertNormalizer(True, True, True, True),
    s.UnicodeNormalizer("NFKC"),
    s.Lowercase(),
    s.StripAccents(),
    s.Replace("a", "b"),
    s.Prepend("x"),
    s.Strip(True, False),
    s.BertPreTokenizer(),
    s.ByteLevel(True, True),
    s.Whitespace(),
    s.WhitespaceSplit(),
    s.Metaspace("\u2581", "first", True),
    s.SplitLiteral("-", "MergedWithPrevious", True),
    s.Punctuation("Contiguous"),
    s.Digits(True),
    s.Truncation(8),
    s.Padding(8, "Left", 0, 0, 4),
    s.AddedToken(1, "x", True, False, True, True, False),
]


def _walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children:
        yield from _walk(child)


def test_swift_tokenizer_parses() -> None:
    tree = parser("swift").parse(SWIFT)
    problems = [f"{n.start_point}: {(n.text or b'')[:60]!r}" for n in _walk(tree.root_node) if n.type == "ERROR" or n.is_missing]
    assert not problems, problems


def test_swift_calls_only_known_methods() -> None:
    tree = parser("swift").parse(SWIFT)
    declared = set()
    called = set()
    for node in _walk(tree.root_node):
        if node.type in ("function_declaration", "property_declaration"):
            name = node.child_by_field_name("name")
            if name is not None and name.text:
                declared.add(name.text.decode())  # a property: subscripted (tree-sitter parses that as a call)
        if node.type == "call_expression" and node.children[0].type == "navigation_expression":
            suffix = node.children[0].children[-1]
            called.add((suffix.text or b"").decode().lstrip("."))
    assert called, "the walk found the method calls"
    assert called - declared - KNOWN_METHODS == set()


def _keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_both_ports_handle_every_component_and_asset_key() -> None:
    types = {c.type for c in COMPONENTS if hasattr(c, "type")} | {"WordPiece", "BPE", "Unigram"}
    behaviors = {"Removed", "Isolated", "Contiguous", "MergedWithPrevious", "MergedWithNext"}
    keys = {k for c in COMPONENTS for k in dataclasses.asdict(c)}
    keys |= {"format", "version", "model", "normalizers", "pre_tokenizers", "added_tokens", "template", "truncation", "padding", "classes", "lower", "match", "sequence"}
    keys |= {"vocab", "merges", "scores", "unk_id", "prefix", "suffix", "max_chars", "fuse_unk", "byte_fallback", "ignore_merges"}
    keys -= {"special", "single_word"}  # written for the record, not needed to encode
    swift, kotlin = SWIFT.decode(), KOTLIN.decode()
    for name in sorted(types | behaviors | keys):
        assert f'"{name}"' in kotlin or (name == "MergedWithNext" and "MergedWithNext" in kotlin), f"Kotlin: {name}"
        assert f'"{name}"' in swift or re.search(rf"// {name}\b", swift), f"Swift: {name}"
    for klass in ("bert_control", "bert_space", "chinese", "bert_mn", "mark", "whitespace", "bert_punct", "punct", "digit", "word", "word_space", "bl_letter", "bl_number", "bl_space", "norm_keep"):
        assert f'"{klass}"' in kotlin and f'"{klass}"' in swift, klass
