"""tree-sitter parsers for the generated Kotlin and Swift.

tree-sitter and its grammars are optional (dev extras): without them the tests that parse code skip —
a module whose every test parses calls ``parser()`` at import, one where only some do calls it inside
those — and every other test still runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tree_sitter import Parser

_PARSERS: dict[str, Parser] = {}


def parser(language: str) -> Parser:
    """A parser for ``language`` ("kotlin", "swift"); skips the caller when tree-sitter or the grammar is
    not installed."""
    if language not in _PARSERS:
        tree_sitter = pytest.importorskip("tree_sitter")
        grammar = pytest.importorskip(f"tree_sitter_{language}")
        _PARSERS[language] = tree_sitter.Parser(tree_sitter.Language(grammar.language()))
    return _PARSERS[language]
