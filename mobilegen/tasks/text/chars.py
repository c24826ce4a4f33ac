"""Character classes exactly as Hugging Face ``tokenizers`` draws them, as data.

``tokenizers`` classifies characters with Unicode tables compiled into its Rust crates (``unicode_categories``,
Rust's own ``char`` tables, Oniguruma's), each of its own Unicode version: e.g. its "control" set is
Cc/Cf/Co without unassigned code points, and its punctuation predates Unicode 9. Python's ``unicodedata``,
the JVM's ``Character`` and Apple's Foundation each know another version. So the tokenizers this package
generates never ask their platform which class a character is in: they read these ranges from the asset.

The ranges ship in ``chars.json`` beside this module; :func:`probe` recomputes them from the installed
``tokenizers`` (a test checks that the shipped data equals what the library does).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

DATA_FILE = Path(__file__).with_name("chars.json")

# class name -> what it is (in tokenizers' source terms)
CLASSES: dict[str, str] = {
    "bert_control": "removed by BertNormalizer(clean_text): NUL, U+FFFD and is_other (Cc/Cf/Co) but tab/LF/CR",
    "bert_space": "turned into a space by BertNormalizer(clean_text): tab/LF/CR and char::is_whitespace",
    "chinese": "padded with spaces by BertNormalizer(handle_chinese_chars)",
    "bert_mn": "dropped by BertNormalizer(strip_accents) after NFD (is_mark_nonspacing)",
    "mark": "dropped by the StripAccents normalizer (is_combining_mark)",
    "whitespace": "split on by BertPreTokenizer and WhitespaceSplit (char::is_whitespace)",
    "bert_punct": "isolated by BertPreTokenizer (ASCII punctuation or Unicode P*)",
    "punct": "isolated by the Punctuation pre-tokenizer",
    "digit": "split off by the Digits pre-tokenizer (char::is_numeric)",
    "word": "\\w of the Whitespace pre-tokenizer's \\w+|[^\\w\\s]+",
    "word_space": "\\s of the Whitespace pre-tokenizer",
    "bl_letter": "\\p{L} of ByteLevel's GPT-2 pattern",
    "bl_number": "\\p{N} of ByteLevel's GPT-2 pattern",
    "bl_space": "\\s of ByteLevel's GPT-2 pattern",
    "norm_keep": "left as they are by Unicode normalization: unassigned in tokenizers' (old) normalization tables "
    "but decomposed, reordered or assigned by a newer Unicode (the platforms' normalizers run between them)",
}

Ranges = tuple[tuple[int, int], ...]  # inclusive [first, last] code point ranges, sorted


@dataclass(frozen=True)
class CharClass:
    """A set of code points as sorted inclusive ranges, with a binary-search membership test."""

    name: str
    ranges: Ranges

    def __contains__(self, ch: str) -> bool:
        cp = ord(ch)
        i = bisect.bisect_right(self._starts(), cp) - 1
        return i >= 0 and cp <= self.ranges[i][1]

    def _starts(self) -> list[int]:
        return _starts(self.ranges)


@cache
def _starts(ranges: Ranges) -> list[int]:
    return [a for a, _ in ranges]


def to_ranges(points: Iterable[int]) -> Ranges:
    out: list[tuple[int, int]] = []
    for cp in sorted(set(points)):
        if out and out[-1][1] == cp - 1:
            out[-1] = (out[-1][0], cp)
        else:
            out.append((cp, cp))
    return tuple(out)


@cache
def shipped() -> dict[str, Any]:
    """The shipped tables: {"tokenizers": version probed, "classes": {name: [[a, b], ...]}, "lower": {...}}."""
    data: dict[str, Any] = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    return data


def char_class(name: str) -> CharClass:
    return _char_class(name)


@cache
def _char_class(name: str) -> CharClass:
    return CharClass(name, tuple((int(a), int(b)) for a, b in shipped()["classes"][name]))


@cache
def lower_map() -> dict[str, str]:
    """Per-character lowercase as tokenizers does it (Rust ``char::to_lowercase``, one character at a time:
    no final-sigma context), for every character it changes."""
    return {chr(int(k)): v for k, v in shipped()["lower"].items()}


# --- probing the installed tokenizers ------------------------------------------------------------------

ALL_POINTS = tuple(cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)


def _by_normalizer(normalize: Callable[[str], str], sep: str, keep: Callable[[str, str], bool], points: tuple[int, ...]) -> set[int]:
    """Code points c for which ``keep(c, normalized c)`` holds, all normalized in one call with ``sep``
    between characters (``sep`` must come through unchanged and appear in no output)."""
    cps = [cp for cp in points if chr(cp) != sep]
    out = normalize(sep + sep.join(chr(cp) for cp in cps) + sep).split(sep)[1:-1]
    if len(out) != len(cps):
        raise RuntimeError(f"probe separator {sep!r} did not survive normalization")
    return {cp for cp, seg in zip(cps, out, strict=True) if keep(chr(cp), seg)}


def _isolated(
    pre_tokenize: Callable[[str], list[tuple[str, tuple[int, int]]]], sep: str, points: tuple[int, ...]
) -> tuple[set[int], set[int]]:
    """(code points a pre-tokenizer puts in a piece of their own, code points no piece covers) with ``sep``
    between characters."""
    cps = [cp for cp in points if chr(cp) != sep]
    text = sep + sep.join(chr(cp) for cp in cps) + sep
    pieces = pre_tokenize(text)
    alone = {start for _, (start, end) in pieces if end - start == 1}
    covered = bytearray(len(text))
    for _, (start, end) in pieces:
        covered[start:end] = b"\x01" * (end - start)
    isolated, dropped = set(), set()
    for i, cp in enumerate(cps):
        pos = 1 + 2 * i
        if pos in alone:
            isolated.add(cp)
        elif not covered[pos]:
            dropped.add(cp)
    return isolated, dropped


def _norm_keep(points: tuple[int, ...]) -> set[int]:
    """Code points tokenizers' normalizers treat as unassigned (no decomposition, combining class 0) where
    Python's ``unicodedata`` does not agree, and every code point unassigned in ``unicodedata``: a newer
    Unicode (the JVM's, Foundation's) must not normalize them either."""
    import unicodedata

    from tokenizers import normalizers as nm

    nfkd = nm.NFKD().normalize_str
    keep = _by_normalizer(nfkd, "\x00", lambda c, s: s != unicodedata.normalize("NFKD", c), points)
    keep |= {cp for cp in points if unicodedata.category(chr(cp)) == "Cn"}
    nfd = nm.NFD().normalize_str
    for cp in points:
        c = chr(cp)
        if unicodedata.combining(c) == 0:
            continue
        # A mark sorts against U+0301 (class 230) or U+0316 (class 220); an unassigned character blocks both.
        sorts = any(nfd("a" + c + m) == nfd("a" + m + c) for m in ("\u0301", "\u0316"))
        if not sorts:
            keep.add(cp)
    return keep


def probe(points: tuple[int, ...] = ALL_POINTS) -> dict[str, Any]:
    """Every class of :data:`CLASSES` and the lowercase map, measured on the installed ``tokenizers`` for
    ``points`` (all code points but surrogates by default: about two minutes)."""
    import tokenizers
    from tokenizers import normalizers as nm
    from tokenizers import pre_tokenizers as pt

    def bert(**kw: bool) -> Callable[[str], str]:
        args = {"clean_text": False, "handle_chinese_chars": False, "strip_accents": False, "lowercase": False} | kw
        return nm.BertNormalizer(**args).normalize_str

    classes: dict[str, set[int]] = {}
    classes["bert_control"] = _by_normalizer(bert(clean_text=True), "a", lambda c, s: s == "", points)
    classes["bert_space"] = _by_normalizer(bert(clean_text=True), "a", lambda c, s: s == " ", points)
    classes["chinese"] = _by_normalizer(bert(handle_chinese_chars=True), "\x00", lambda c, s: s == f" {c} ", points)
    classes["bert_mn"] = _by_normalizer(bert(strip_accents=True), "\x00", lambda c, s: s == "", points)
    classes["mark"] = _by_normalizer(nm.StripAccents().normalize_str, "\x00", lambda c, s: s == "", points)
    bert_punct, dropped = _isolated(pt.BertPreTokenizer().pre_tokenize_str, "a", points)
    classes["bert_punct"], classes["whitespace"] = bert_punct, dropped
    classes["punct"] = _isolated(pt.Punctuation().pre_tokenize_str, "a", points)[0]
    classes["digit"] = _isolated(pt.Digits(individual_digits=True).pre_tokenize_str, "a", points)[0]
    other, word_space = _isolated(pt.Whitespace().pre_tokenize_str, "a", points)
    classes["word_space"] = word_space
    classes["word"] = set(points) - other - word_space
    byte_level = pt.ByteLevel(add_prefix_space=False, use_regex=True).pre_tokenize_str
    # With "!" between them, a letter or a digit is a piece of its own, a "[^\s\p{L}\p{N}]" joins the "!"s.
    alone_bang, _ = _isolated(byte_level, "!", points)
    alone_a, _ = _isolated(byte_level, "a", points)
    alone_1, _ = _isolated(byte_level, "1", points)
    letters = alone_bang & alone_1 - alone_a | ({ord("a")} & set(points))
    numbers = alone_bang & alone_a - alone_1 | ({ord("1")} & set(points))
    others = alone_a & alone_1 - alone_bang | ({ord("!")} & set(points))
    classes["bl_letter"], classes["bl_number"] = letters, numbers
    classes["bl_space"] = set(points) - letters - numbers - others
    classes["norm_keep"] = _norm_keep(points)
    lowered = _by_normalizer(nm.Lowercase().normalize_str, "\x00", lambda c, s: s != c, points)
    low = nm.Lowercase().normalize_str
    return {
        "tokenizers": tokenizers.__version__,
        "classes": {name: [list(r) for r in to_ranges(classes[name])] for name in CLASSES},
        "lower": {str(cp): low(chr(cp)) for cp in sorted(lowered)},
    }


def write_shipped(path: Path = DATA_FILE) -> None:
    """Regenerate ``chars.json`` from the installed ``tokenizers`` (scripts/ and tests call this)."""
    path.write_text(json.dumps(probe(), separators=(",", ":"), sort_keys=True) + "\n", encoding="utf-8")
