"""The generated tokenizers' sources: the Kotlin one (rendered for its package) and the Swift one (copied
byte-exact). They are template files of the Android and iOS trees, rendered there only for text tasks
(``tokenizer_dir`` / ``tokenizer_swift_file`` in the render contexts); these functions give the same text
to the tests and harnesses that compile or parse them alone."""

from __future__ import annotations

from pathlib import Path

import jinja2

from mobilegen.errors import UsageError
from mobilegen.render.lang import kotlin as kt
from mobilegen.render.tree import templates_root

# Where they live in the template trees.
KOTLIN_TEMPLATE = Path("android", "{{ module }}", "src", "main", "kotlin", "{{ package_path }}", "{{ tokenizer_dir }}", "Tokenizer.kt.jinja")
SWIFT_TEMPLATE = Path("ios", "Sources", "{{ target }}", "{{ tokenizer_swift_file }}")
KOTLIN_SUBPACKAGE = "text"
SWIFT_FILE = "TextTokenizer.swift"


def kotlin_source(package: str) -> str:
    """``Tokenizer.kt`` for the Kotlin package ``<package>.text``."""
    if not kt.validate_package(package):
        raise UsageError(f"{package!r} is not a valid Kotlin package name", hint="use dot-separated identifiers, e.g. com.example.app")
    text = (templates_root() / KOTLIN_TEMPLATE).read_text(encoding="utf-8")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False, trim_blocks=True, lstrip_blocks=True)
    return env.from_string(text).render(package=package)


def swift_source() -> str:
    """``TextTokenizer.swift`` (no package line: copied byte-exact into the Swift target)."""
    return (templates_root() / SWIFT_TEMPLATE).read_text(encoding="utf-8")
