"""Swift text from model-derived names: the one identifier sanitizer and the one string-literal escaper.

Everything a template writes into Swift source that came from a model (tensor names, the model name)
goes through this module:

* :func:`swift_string` — a complete ``"…"`` literal. ``\\`` is escaped first, so ``\\(`` can never
  start an interpolation; ``"`` is escaped, so nothing closes the literal early; every control and
  non-ASCII character becomes ``\\u{X}``, so the generated file is pure ASCII and no line break or
  bidi control can end up in it. Extended delimiters (``#"…"#``) and multi-line literals are never used.
* :func:`swift_identifier` / :class:`SwiftNamer` — ASCII lowerCamelCase identifiers; a leading digit
  gets a ``_`` prefix (the Core ML way: ``"963"`` → ``_963``); a Swift keyword (every reserved word and
  the contextual ones that bite in declarations) gets a ``_`` suffix (never backticks); collisions are
  resolved in declaration order with ``_2``, ``_3`` … ; :meth:`SwiftNamer.claim_group` does the same for a
  family of derived names (``x`` / ``xShape``) at once, so they cannot collide with another family.
* :func:`swift_type_name` / :func:`check_type_name` — PascalCase type names (``--name``).
* :func:`swift_comment` — text for a ``//`` line comment (one line, no comment delimiters).

Facts: swift-book ``LexicalStructure.md`` (keywords; string escapes ``\\0 \\\\ \\t \\n \\r \\" \\'``
and ``\\u{n}`` with 1–8 hex digits naming a Unicode scalar value).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any

from mobilegen.errors import RenderError, UsageError

# Keywords used in declarations / statements / expressions and types (all need backticks as names).
_RESERVED_DECLARATIONS = (
    "associatedtype borrowing class consuming deinit enum extension fileprivate func import init inout "
    "internal let nonisolated open operator precedencegroup private protocol public rethrows static struct "
    "subscript typealias var"
)
_RESERVED_STATEMENTS = (
    "break case catch continue default defer do else fallthrough for guard if in repeat return switch "
    "throw where while"
)
_RESERVED_EXPRESSIONS = "Any as await catch false is nil rethrows self Self super throw throws true try _"
# Contextual keywords: legal as names outside their context, but several bite in declarations
# (``Type``/``Protocol``/``self`` as members; ``some``/``any``/``async``... in type positions) and they
# read badly; treat them all as reserved so the rule stays simple.
_CONTEXTUAL = (
    "actor any associativity async convenience didSet distributed dynamic each final get indirect infix "
    "isolated lazy left macro mutating none nonmutating optional override package postfix precedence "
    "prefix Protocol required right set some Type unowned weak willSet consume copy discard"
)
# Compiler-directive words that follow ``#`` / ``@`` — harmless as names, listed for readability.
SWIFT_KEYWORDS: frozenset[str] = frozenset(
    " ".join((_RESERVED_DECLARATIONS, _RESERVED_STATEMENTS, _RESERVED_EXPRESSIONS, _CONTEXTUAL)).split()
)

# Type names the generated package (or an app importing it) uses; a model type must not shadow them.
_SHADOWED_TYPES = frozenset(
    """
    Any AnyObject Array Bool Bundle Character Data Date Dictionary DispatchQueue Double Error Float Float16
    Float32 Float64 Int Int8 Int16 Int32 Int64 UInt UInt8 UInt16 UInt32 UInt64 Never NSError NSLock
    NSMutableData NSNumber Optional Result Sendable Set String URL FileManager ProcessInfo Task
    XCTest XCTestCase Foundation SwiftUI App Scene View ContentView Text Button Picker Package
    PackageDescription OnnxRuntimeBindings Self Type Protocol LocalizedError Equatable Hashable
    Codable Identifiable Comparable Swift Dispatch ObjectiveC Darwin UIKit AppKit CoreML Combine
    GoldenVectors
    """.split()
)

_TYPE_NAME_RE = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_MAX_TYPE_NAME = 64


def _ascii_fold(text: str) -> str:
    """Latin letters with accents → plain ASCII letters (``café`` → ``cafe``); other characters kept."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9]+", _ascii_fold(text))


def _lower_camel(words: list[str]) -> str:
    if not words:
        return ""
    first = words[0]
    # "X" → "x", "CO2" → "co2", "ImageInput" → "imageInput", "iOS" → "iOS".
    first = first.lower() if first.isupper() or first.isdigit() else first[0].lower() + first[1:]
    return first + "".join(w[0].upper() + w[1:] for w in words[1:])


def swift_identifier(name: str, *, fallback: str = "value", reserved: Iterable[str] = ()) -> str:
    """One plain, ASCII, lowerCamelCase Swift identifier for ``name`` (no de-duplication).

    Empty results use ``fallback``; a leading digit gets a ``_`` prefix; a keyword, or a name in
    ``reserved`` (members of the generated types), gets a ``_`` suffix.
    """
    ident = _lower_camel(_words(name)) or fallback
    if ident[0].isdigit():
        ident = "_" + ident
    taken = set(reserved)
    while ident in SWIFT_KEYWORDS or ident in taken:
        ident += "_"
    return ident


class SwiftNamer:
    """Deterministic unique identifiers within one scope, assigned in declaration order.

    ``namer.name("a.b")`` → ``aB``; a second ``"a_b"`` → ``aB_2``; a later ``"aB_2"`` (already taken)
    → ``aB2``... — the result is never equal to an earlier result or to a ``reserved`` word.
    """

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self._reserved = frozenset(reserved)
        self._used: set[str] = set()

    def claim(self, ident: str) -> str:
        """Take ``ident`` (already a valid identifier) or the first free ``ident_N``."""
        if not ident or not (ident[0].isalpha() or ident[0] == "_") or not ident.isascii():
            raise RenderError(f"internal: {ident!r} is not a Swift identifier")
        candidate, n = ident, 2
        while candidate in self._used or candidate in self._reserved or candidate in SWIFT_KEYWORDS:
            candidate = f"{ident}_{n}"
            n += 1
        self._used.add(candidate)
        return candidate

    def name(self, text: str, *, fallback: str = "value") -> str:
        return self.claim(swift_identifier(text, fallback=fallback, reserved=self._reserved))

    def _free(self, ident: str) -> bool:
        return ident not in self._used and ident not in self._reserved and ident not in SWIFT_KEYWORDS

    def claim_group(self, ident: str, suffixes: tuple[str, ...]) -> str:
        """Take a stem S such that every ``S + suffix`` is free, claim all of them, and return S.

        S is ``ident`` when all its derived names are free, else the first ``ident_N`` that works; so
        derived names of different stems never meet (``out`` → ``out``/``outShape``, then ``out_shape`` →
        ``outShape_2``/``outShape_2Shape``: the shape of S is always S + "Shape", never another tensor's data).
        """
        if not suffixes:
            raise RenderError("internal: claim_group needs at least one suffix")
        if not ident or not (ident[0].isalpha() or ident[0] == "_") or not ident.isascii():
            raise RenderError(f"internal: {ident!r} is not a Swift identifier")
        stem, n = ident, 2
        while not all(self._free(stem + sfx) for sfx in suffixes):
            stem = f"{ident}_{n}"
            n += 1
        self._used.update(stem + sfx for sfx in suffixes)
        return stem

    def name_group(self, text: str, suffixes: tuple[str, ...], *, fallback: str = "value") -> str:
        """:meth:`claim_group` for the identifier of ``text``."""
        return self.claim_group(swift_identifier(text, fallback=fallback, reserved=self._reserved), suffixes)


def unique_identifiers(names: Iterable[str], *, reserved: Iterable[str] = (), fallback: str = "value") -> list[str]:
    """Sanitize ``names`` in order into distinct identifiers (``fallback`` + position for empty ones)."""
    namer = SwiftNamer(reserved)
    return [namer.name(n, fallback=f"{fallback}{i}") for i, n in enumerate(names)]


# --- string literals -------------------------------------------------------------------------------

_SIMPLE_ESCAPES = {"\\": "\\\\", '"': '\\"', "\0": "\\0", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def swift_string_body(text: str) -> str:
    """The inside of a ``"…"`` Swift literal for ``text`` (pure printable ASCII). A ``*`` beside a ``/`` is
    written as its unicode escape (``u{2A}`` after a backslash): the same string, but no ``/*`` or ``*/``
    that a tool finding comments without lexing strings (tree-sitter-swift's scanner, some highlighters)
    would take for a comment's start or end."""
    out: list[str] = []
    for i, ch in enumerate(text):
        cp = ord(ch)
        if ch == "*" and "/" in text[max(i - 1, 0) : i] + text[i + 1 : i + 2]:
            out.append("\\u{2A}")
        elif ch in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[ch])
        elif 0x20 <= cp < 0x7F:
            out.append(ch)
        elif 0xD800 <= cp <= 0xDFFF:
            raise RenderError(
                f"name {text!r} contains a lone UTF-16 surrogate, which no Swift string can hold",
                hint="rename the tensor/model to valid Unicode text",
            )
        else:
            out.append(f"\\u{{{cp:X}}}")
    return "".join(out)


def swift_string(text: str) -> str:
    """A complete single-line Swift string literal, quotes included."""
    return '"' + swift_string_body(str(text)) + '"'


def swift_comment(text: str) -> str:
    """``text`` made safe for the rest of a ``//`` line: one line, no comment delimiters."""
    cleaned = []
    for ch in str(text):
        cat = unicodedata.category(ch)
        if ch in "\r\n\x85\u2028\u2029" or cat in ("Cc", "Cf", "Zl", "Zp", "Cs"):
            cleaned.append(" ")
        else:
            cleaned.append(ch)
    line = "".join(cleaned)
    return line.replace("/*", "/ *").replace("*/", "* /")


def swift_float(value: float) -> str:
    """A Swift ``Double`` literal (finite values only)."""
    x = float(value)
    if not math.isfinite(x):
        raise RenderError(f"cannot write {x!r} as a Swift literal", hint="tolerances must be finite numbers")
    text = repr(x)
    return text if any(c in text for c in ".e") else text + ".0"


def swift_int_array(values: Iterable[int]) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


# --- type names ------------------------------------------------------------------------------------


def type_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be the generated type/module name, or None when it can."""
    if not name:
        return "it is empty"
    if not name.isascii() or not _TYPE_NAME_RE.match(name):
        return "a type name is an ASCII letter A–Z followed by letters and digits (PascalCase, no '_' or '-')"
    if len(name) > _MAX_TYPE_NAME:
        return f"it is longer than {_MAX_TYPE_NAME} characters"
    if name in SWIFT_KEYWORDS:
        return "it is a Swift keyword"
    if name in _SHADOWED_TYPES:
        return "it would shadow a Swift/Foundation/SwiftUI type the generated code uses"
    if name.startswith("ORT"):
        return "names starting with 'ORT' belong to ONNX Runtime's Objective-C API"
    return None


def swift_type_name(text: str, *, fallback: str = "Model") -> str:
    """A PascalCase type name derived from arbitrary text (``my-model.v2`` → ``MyModelV2``)."""
    words = _words(str(text))
    name = "".join(w[0].upper() + w[1:] for w in words)
    if not name:
        name = fallback
    if name[0].isdigit():
        name = fallback + name
    name = name[:_MAX_TYPE_NAME]
    if name.startswith("ORT"):
        name = "Ort" + name[3:]
    if type_name_problem(name) is not None:
        name = (name + fallback)[:_MAX_TYPE_NAME]
    if type_name_problem(name) is not None:  # pragma: no cover - fallback itself is always valid
        name = fallback
    return name


def check_type_name(name: str, *, option: str = "--name") -> str:
    """Return ``name`` when it is a usable type name, else raise a UsageError with a suggestion."""
    problem = type_name_problem(name)
    if problem is not None:
        raise UsageError(
            f"{option} {name!r} cannot name the generated Swift type: {problem}",
            hint=f"use a PascalCase name such as {swift_type_name(name)!r}",
        )
    return name


# Jinja filters (templates get values already sanitized; these are for literals/comments).
FILTERS: dict[str, Callable[..., Any]] = {
    "swift_str": swift_string,
    "swift_comment": swift_comment,
    "swift_ident": swift_identifier,
    "swift_type": swift_type_name,
    "swift_float": swift_float,
    "swift_ints": swift_int_array,
}
