"""TypeScript text from model-derived names: the one string-literal escaper and the type-name maker.

Everything a template writes into TypeScript (or JSON) from a model or a user (tensor names, the model
name) goes through this module. Tensor names never become identifiers: the generated code keys its
typed input/output objects by quoted string literals, so any name (``</script>``, ``a"b``, a keyword)
stays a valid, exact property key.

* :func:`ts_string` — a complete ``"…"`` literal, valid in TypeScript, JavaScript and JSON: JSON's
  escaping with every non-ASCII character as ``\\uXXXX`` (so U+2028/U+2029 and bidi controls never
  reach the file) and ``<``, ``>``, ``&`` escaped too, so the text can never close a ``<script>`` element
  when the code is inlined into HTML.
* :func:`ts_comment` — text for a ``//`` or ``/** */`` comment (one line, no comment delimiters).
* :func:`ts_type_name` — a PascalCase ASCII class name (``--name`` or the model's file name).
* :func:`npm_name` — an npm package name (lowercase, URL-safe, ≤ 214 characters).

Facts: ECMA-262 §12.9.4 (string literals; ``\\uXXXX`` escapes), §12.7 (identifier names; reserved
words), RFC 8259 §7 (JSON strings), HTML Living Standard §4.12.1.3 (``</script`` ends a script element),
npm docs "package.json › name".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from mobilegen.errors import UsageError

# ECMAScript reserved words, strict-mode ones, TypeScript's type keywords, and the globals a generated
# class must not shadow in its own module.
TS_RESERVED = frozenset(
    """
    break case catch class const continue debugger default delete do else enum export extends false finally
    for function if import in instanceof new null return super switch this throw true try typeof var void
    while with implements interface let package private protected public static yield await any boolean
    never number object string symbol undefined unknown bigint declare type namespace module
    Array Object String Number Boolean BigInt Symbol Error Promise Map Set Record Partial Readonly
    Float32Array Float64Array Int8Array Uint8Array Int16Array Uint16Array Int32Array Uint32Array
    BigInt64Array BigUint64Array InferenceSession Tensor
    """.split()
)

_HTML_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}


def ts_string(value: str) -> str:
    """``value`` as one double-quoted TS/JS/JSON string literal, pure ASCII, safe inside ``<script>``."""
    if not isinstance(value, str):
        raise TypeError(f"ts_string expects str, got {type(value).__name__}")
    text = json.dumps(value, ensure_ascii=True)
    return re.sub(r"[<>&]", lambda m: _HTML_UNSAFE[m.group(0)], text)


def ts_comment(value: str) -> str:
    """One line of comment text: control characters become spaces, ``*/`` cannot close a block comment,
    non-ASCII (and ``<``, ``>``, ``&``) becomes ``\\uXXXX``-style text so no bidi control reaches the file."""
    out = []
    for ch in str(value):
        if ch.isascii() and ch.isprintable():
            out.append(ch)
        elif ch.isascii():
            out.append(" ")
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\u{{{ord(ch):x}}}")
    return re.sub(r"[<>&]", lambda m: _HTML_UNSAFE[m.group(0)], "".join(out).replace("*/", "* /"))


def ts_type_name(text: str, fallback: str = "Model") -> str:
    """PascalCase ASCII identifier from free text (``mobilenet_tiny`` → ``MobilenetTiny``)."""
    words = re.findall(r"[A-Za-z0-9]+", text)
    name = "".join(w[:1].upper() + w[1:] for w in words) or fallback
    if name[0].isdigit():
        name = fallback + name
    if name in TS_RESERVED:
        name += "Model"
    return name


def check_type_name(name: str) -> str:
    """``--name`` as given, or a UsageError saying why it cannot name the generated class."""
    if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", name or ""):
        raise UsageError(
            f"--name {name!r} cannot name the generated TypeScript class: it must be ASCII PascalCase",
            hint=f"use a name such as {ts_type_name(name or 'Model')!r}",
        )
    if name in TS_RESERVED:
        raise UsageError(f"--name {name!r} is a reserved word or global in TypeScript", hint=f"use {name + 'Model'!r}")
    return name


def npm_name(text: str, prefix: str) -> str:
    """An npm package name: ``prefix-<slug>`` (lowercase letters, digits, ``-``)."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "model"
    return f"{prefix}-{slug}"[:214]


def ts_number(value: float) -> str:
    """A float as a TS numeric literal (``repr`` round-trips; ``inf``/``nan`` are refused)."""
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"not a finite number: {value!r}")
    return repr(float(value))


FILTERS: dict[str, Callable[..., Any]] = {
    "ts_str": ts_string,
    "ts_comment": ts_comment,
}
