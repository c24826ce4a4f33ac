"""tree-sitter parsers for the generated Kotlin and Swift.

tree-sitter and its grammars are optional (dev extras): without them the tests that parse code skip —
a module whose every test parses calls ``parser()`` at import, one where only some do calls it inside
those — and every other test still runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

_PARSERS: dict[str, Parser] = {}


def parser(language: str) -> Parser:
    """A parser for ``language`` ("kotlin", "swift"); skips the caller when tree-sitter or the grammar is
    not installed."""
    if language not in _PARSERS:
        tree_sitter = pytest.importorskip("tree_sitter")
        grammar = pytest.importorskip(f"tree_sitter_{language}")
        _PARSERS[language] = tree_sitter.Parser(tree_sitter.Language(grammar.language()))
    return _PARSERS[language]


def walk(node: Node) -> Iterator[Node]:
    """``node`` and every node below it, depth first."""
    yield node
    for child in node.children:
        yield from walk(child)


def node_text(node: Node | None) -> str:
    return node.text.decode() if node is not None and node.text is not None else ""


def is_subscript(call: Node) -> bool:
    """tree-sitter-swift parses ``a[i]`` as a call whose arguments open with ``[``."""
    suffix = next(c for c in call.children if c.type == "call_suffix")
    args = next((c for c in suffix.children if c.type == "value_arguments"), None)
    return args is not None and args.child_count > 0 and args.children[0].type == "["


def call_labels(call: Node) -> tuple[tuple[str, ...], bool]:
    """A Swift call's argument labels (``_`` for unlabeled) and whether it has a trailing closure."""
    suffix = next(c for c in call.children if c.type == "call_suffix")
    labels: list[str] = []
    trailing = False
    for part in suffix.children:
        if part.type == "value_arguments":
            for arg in part.children:
                if arg.type == "value_argument":
                    label = arg.child_by_field_name("name")
                    labels.append(node_text(label).strip() if label is not None else "_")
        elif part.type in ("lambda_literal", "annotated_lambda"):
            trailing = True
    return tuple(labels), trailing
