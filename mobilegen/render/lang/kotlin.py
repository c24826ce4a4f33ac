"""Kotlin text from untrusted names: one identifier sanitizer, one string-literal escaper.

Model-derived text (tensor names, model names, package names) reaches generated Kotlin / Gradle
Kotlin DSL only through this module:

* :func:`identifier` / :func:`unique_identifiers` — ASCII identifiers, no leading digit, Kotlin hard
  keywords and Java reserved words suffixed with ``_``, collisions disambiguated deterministically;
  :func:`disambiguate_groups` — the same for families of derived names (``x`` / ``xShape``,
  ``X_NAME`` / ``X_SHAPE``), collision-free as a whole;
* :func:`string_literal` — a complete double-quoted literal (``\\\\ \\" \\$ \\n \\r \\t \\b``; other
  control characters and all non-ASCII as ``\\uXXXX``, surrogate pairs above the BMP);
* :func:`line_comment` — text safe after ``//`` (one line, no comment delimiters);
* :func:`validate_package` / :func:`derive_package`, :func:`validate_class_name` /
  :func:`derive_class_name`.

Sources: kotlinlang.org/docs/keyword-reference.html (hard keywords), kotlinlang.org/docs/characters.html
(escapes), JLS §3.9 (Java keywords; R / BuildConfig are Java), developer.android.com/studio/build/application-id.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from mobilegen.errors import RenderError

KOTLIN_HARD_KEYWORDS = frozenset(
    "as break class continue do else false for fun if in interface is null object package return super "
    "this throw true try typealias typeof val var when while".split()
)
JAVA_RESERVED = frozenset(
    "abstract assert boolean break byte case catch char class const continue default do double else enum "
    "extends final finally float for goto if implements import instanceof int interface long native new "
    "package private protected public return short static strictfp super switch synchronized this throw "
    "throws transient try void volatile while true false null _ var yield record sealed permits".split()
)
RESERVED_WORDS = KOTLIN_HARD_KEYWORDS | JAVA_RESERVED

_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+")
_PACKAGE_SEGMENT = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]*$")
_CLASS_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")


def _ascii_fold(text: str) -> str:
    """Drop accents (é → e) and everything else outside ASCII."""
    decomposed = unicodedata.normalize("NFKD", text)
    return decomposed.encode("ascii", "ignore").decode("ascii")


def _parts(text: str) -> list[str]:
    return _ALNUM_RUN.findall(_ascii_fold(text))


def _camel(parts: Sequence[str], *, upper_first: bool) -> str:
    out = []
    for i, p in enumerate(parts):
        if i == 0 and not upper_first:
            # "CO2" → "co2", "inputIDs" → "inputIDs"
            out.append(p.lower() if p.upper() == p else p[0].lower() + p[1:])
        else:
            out.append(p[0].upper() + p[1:])
    return "".join(out)


def identifier(name: str, *, style: str = "camel", fallback: str = "value", avoid: Iterable[str] = ()) -> str:
    """One Kotlin identifier for ``name``.

    ``style``: ``camel`` (properties), ``pascal`` (types), ``constant`` (SCREAMING_SNAKE). Empty
    results become ``fallback``; a leading digit gets a ``_`` prefix (Core ML's convention); reserved
    words and names in ``avoid`` get a ``_`` suffix. The result always matches ``[A-Za-z_][A-Za-z0-9_]*``.
    """
    parts = _parts(name)
    if style == "camel":
        text = _camel(parts, upper_first=False) if parts else ""
    elif style == "pascal":
        text = _camel(parts, upper_first=True) if parts else ""
    elif style == "constant":
        text = "_".join(_split_camel(p) for p in parts).upper() if parts else ""
    else:
        raise ValueError(f"unknown identifier style {style!r}")
    if not text:
        text = fallback
    if text[0].isdigit():
        text = "_" + text
    avoid_set = set(avoid)
    while text in RESERVED_WORDS or text in avoid_set:
        text += "_"
    return text


def _split_camel(part: str) -> str:
    """``inputIds`` → ``input_Ids`` (upper-cased later); runs of capitals stay together."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", part)


def disambiguate(bases: Sequence[str], *, taken: Iterable[str] = ()) -> list[str]:
    """Make ``bases`` unique in order: the first keeps its name, later duplicates get ``_2``, ``_3``…

    A suffixed name never steals a name another entry has as its own base, nor one in ``taken``.
    """
    taken_set = set(taken)
    all_bases = set(bases)
    used: set[str] = set()
    out: list[str] = []
    for base in bases:
        candidate = base
        if candidate in used or candidate in taken_set:
            n = 2
            while True:
                candidate = f"{base}_{n}"
                if candidate not in used and candidate not in taken_set and candidate not in all_bases:
                    break
                n += 1
        used.add(candidate)
        out.append(candidate)
    return out


def disambiguate_groups(
    bases: Sequence[str], suffixes: Sequence[str], *, taken: Iterable[str] = ()
) -> list[str]:
    """One stem per base such that every derived name ``stem + suffix`` is unique over all entries.

    For each base, in order, the stem is the base itself when all its derived names are free, else
    the first ``base_2``, ``base_3``… whose derived names are all free. Free means: not in ``taken``,
    not derived from an earlier stem, and (for a suffixed stem) not derived from another entry's own
    base. So no two derived names of the whole set are ever equal, and none is in ``taken`` — by
    construction, whatever the bases are (``out`` then ``out_shape`` with suffixes ``("", "Shape")``:
    ``out``/``outShape`` and ``outShape_2``/``outShape_2Shape``; the shape of stem S is always S + suffix).
    """
    if not suffixes:
        raise ValueError("disambiguate_groups needs at least one suffix")
    taken_set = set(taken)
    natural = {base + sfx for base in bases for sfx in suffixes}
    used: set[str] = set()
    out: list[str] = []
    for base in bases:
        stem = base
        if any(stem + sfx in used or stem + sfx in taken_set for sfx in suffixes):
            n = 2
            while True:
                stem = f"{base}_{n}"
                derived = [stem + sfx for sfx in suffixes]
                if not any(d in used or d in taken_set or d in natural for d in derived):
                    break
                n += 1
        used.update(stem + sfx for sfx in suffixes)
        out.append(stem)
    return out


def unique_identifiers(
    names: Sequence[str], *, style: str = "camel", fallback: str = "value", taken: Iterable[str] = ()
) -> list[str]:
    """Sanitize every name, then disambiguate deterministically (declaration order).

    Empty names fall back to ``fallback`` + position (``input0``, ``input1``…).
    """
    taken_list = list(taken)
    bases = [identifier(n, style=style, fallback=f"{fallback}{i}", avoid=taken_list) for i, n in enumerate(names)]
    return disambiguate(bases, taken=taken_list)


# --- string literals -------------------------------------------------------------------------

_SIMPLE_ESCAPES = {"\\": "\\\\", '"': '\\"', "$": "\\$", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b"}


def escape_string(text: str) -> str:
    """The body of a Kotlin ``"…"`` literal for ``text`` (no quotes). Printable ASCII stays literal."""
    out: list[str] = []
    for ch in text:
        cp = ord(ch)
        if 0xD800 <= cp <= 0xDFFF:
            raise RenderError(
                f"name {text!r} contains a lone UTF-16 surrogate (U+{cp:04X}), which no Kotlin string can hold",
                hint="rename the tensor/model to valid Unicode text",
            )
        if ch in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[ch])
        elif 0x20 <= cp < 0x7F:
            out.append(ch)
        elif cp <= 0xFFFF:
            out.append(f"\\u{cp:04X}")
        else:
            v = cp - 0x10000
            out.append(f"\\u{0xD800 + (v >> 10):04X}\\u{0xDC00 + (v & 0x3FF):04X}")
    return "".join(out)


def string_literal(text: str) -> str:
    """A complete Kotlin string literal, quotes included."""
    return '"' + escape_string(text) + '"'


def line_comment(text: str) -> str:
    """Text safe to put after ``//``: one line, printable, no ``/*`` or ``*/``."""
    cleaned = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "\r\n\u0085\u2028\u2029" or cat in ("Cc", "Cf", "Cs", "Zl", "Zp", "Co", "Cn"):
            cleaned.append(" ")
        else:
            cleaned.append(ch)
    out = "".join(cleaned)
    while "/*" in out or "*/" in out:
        out = out.replace("/*", "/ *").replace("*/", "* /")
    return out


# --- packages and class names --------------------------------------------------------------------


def package_problems(package: str) -> list[str]:
    """Every reason ``package`` is not a usable Android namespace / Kotlin package (empty = valid)."""
    problems: list[str] = []
    segments = package.split(".")
    if len(segments) < 2:
        problems.append("needs at least two segments, e.g. com.example.model")
    for seg in segments:
        if not seg:
            problems.append("has an empty segment")
        elif not _PACKAGE_SEGMENT.match(seg):
            problems.append(f"segment {seg!r} must start with a letter and use only [a-zA-Z0-9_]")
        elif seg in RESERVED_WORDS:
            problems.append(f"segment {seg!r} is a Kotlin or Java keyword")
    return problems


def validate_package(package: str) -> bool:
    return not package_problems(package)


def derive_package(model_name: str, *, prefix: str = "com.example") -> str:
    """``com.example.<model>``: lower-case, ``[a-z0-9_]``, starting with a letter."""
    seg = "_".join(p.lower() for p in _parts(model_name))
    if not seg or not seg[0].isalpha():
        seg = "model" + (("_" + seg) if seg else "")
    while seg in RESERVED_WORDS:
        seg += "_"
    return f"{prefix}.{seg}"


def class_name_problems(name: str, *, reserved: Iterable[str] = ()) -> list[str]:
    problems: list[str] = []
    if not _CLASS_NAME.match(name):
        problems.append("must be PascalCase ASCII: an upper-case letter, then letters and digits")
    if name in RESERVED_WORDS:
        problems.append("is a Kotlin or Java keyword")
    if name in set(reserved):
        problems.append("clashes with a class the generated project already defines")
    return problems


def validate_class_name(name: str, *, reserved: Iterable[str] = ()) -> bool:
    return not class_name_problems(name, reserved=reserved)


def derive_class_name(model_name: str, *, reserved: Iterable[str] = ()) -> str:
    """PascalCase from the model name; ``Model`` when nothing usable is left."""
    name = _camel(_parts(model_name), upper_first=True) if _parts(model_name) else "Model"
    if not name[0].isalpha():
        name = "Model" + name
    reserved_set = set(reserved)
    while name in RESERVED_WORDS or name in reserved_set:
        name += "Model"
    return name


def kebab(text: str, *, fallback: str = "model") -> str:
    """``TinyCnn`` → ``tiny-cnn`` (Gradle module names: ``[a-z0-9-]``)."""
    parts = [_split_camel(p).replace("_", "-").lower() for p in _parts(text)]
    out = "-".join(parts) or fallback
    return out if out[0].isalpha() else f"{fallback}-{out}"


def snake(text: str, *, fallback: str = "model") -> str:
    """``TinyCnn`` → ``tiny_cnn`` (asset folders, raw-resource-safe)."""
    return kebab(text, fallback=fallback).replace("-", "_")


FILTERS: dict[str, Callable[..., Any]] = {
    "kt_str": string_literal,
    "kt_escape": escape_string,
    "kt_ident": identifier,
    "kt_comment": line_comment,
}
