"""The tokenizer parity gate: Hugging Face ``tokenizers`` (the oracle) and a candidate tokenizer (the Python
reference, or the generated Kotlin/Swift one replaying the corpus) must give the same ids, attention mask and
token type ids on every text of a corpus — the user's sample texts plus :func:`hard_cases` — or the build
fails with exit 5 naming the text.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen.errors import VerificationError
from mobilegen.tasks.text import reference
from mobilegen.tasks.text.spec import TokenizerSpec, tokenizer_file

if TYPE_CHECKING:
    from tokenizers import Tokenizer

Triple = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]  # ids, attention mask, type ids


class TokenizerParityError(VerificationError):
    """A tokenizer gave other ids than Hugging Face tokenizers on a text."""

    kind = "tokenizer-parity"


@dataclass(frozen=True)
class ParityReport:
    candidate: str
    strings: int
    tokens: int  # ids compared, padding included
    seconds_reference: float  # Hugging Face tokenizers
    seconds_candidate: float

    def to_json(self) -> dict[str, object]:
        return {
            "candidate": self.candidate,
            "strings": self.strings,
            "tokens": self.tokens,
            "mismatches": 0,
            "seconds_reference": round(self.seconds_reference, 3),
            "seconds_candidate": round(self.seconds_candidate, 3),
        }


# Texts that have broken tokenizers before: every one is in every corpus.
HARD_CASES: tuple[str, ...] = (
    "",
    " ",
    "   ",
    "\t\n\r",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "café naïve résumé façade coöperate Ångström",
    "CAFÉ NAÏVE RÉSUMÉ",
    "e\u0301 a\u0300 o\u0308 n\u0303",  # combining marks after their base
    "\u0301\u0300 leading combining marks",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u036b\u0357",  # zalgo
    "日本語のテキストを分割する",
    "中文字符和English混合",
    "한국어 텍스트 처리",
    "ｆｕｌｌｗｉｄｔｈ　ＡＢＣ　１２３",
    "😀 😃 👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️",
    "emoji😀glued😃together",
    "שלום עולם",
    "مرحبا بالعالم",
    "English עברית العربية mixed",
    "\u202eright-to-left override\u202c",
    "control \x00\x01\x02\x07\x1b\x7f characters",
    "zero\u200bwidth\u200cjoiner\u200dand\ufeffbom",
    "soft\u00adhyphen",
    "non\u00a0breaking\u2009thin\u3000ideographic spaces",
    "line\u2028separator\u2029paragraph",
    "tabs\tand\nnewlines\r\nand\x0bvertical\x0cfeeds",
    "     runs      of        spaces     ",
    "a" * 101,
    "supercalifragilisticexpialidocious" * 4,
    "x" * 300,
    " ".join(["word"] * 200),
    "1234567890 3.14159 -42 1e10 ١٢٣ ४५६ ½ ² ⅷ",
    "$100.00, 50% off!!! (really?) [yes] {no} <maybe>",
    "!!!???...,,,;;;:::---___***",
    "\"quoted\" 'single' `back` «guillemets» „low“",
    "don't won't it's we're they've I'm you'll he'd",
    "DON'T IT'S",
    "https://example.com/path?query=1&b=2#frag",
    "user@example.com #hashtag @mention",
    "snake_case camelCase PascalCase kebab-case",
    "İstanbul ΣΟΦΙΑ ὈΔΥΣΣΕΎΣ straße ß ǅ ﬁ ﬀ",
    "Ⅻ ℌ ℍ ℕ № ™ ℃ Å",
    "ﾊﾝｶｸ ｶﾀｶﾅ",
    "ä" * 120,
    "\ufffd replacement \ufffd",
    "\U0001d54f\U0001d56a\U0001d55f double-struck",
    "\ue000\uf8ff private use",
    "mixed\u0000null",
    "[CLS] [SEP] [PAD] [MASK] [UNK] <s> </s> <pad> <unk> <mask> <|endoftext|>",
    "text[SEP]glued<s>to</s>specials",
    "spaces   <mask>  around\t<mask>\u3000specials",
    "New York, new york, NEW YORK: Mobilegen",
    "ŉ ǰ ΐ ẖ ﬓ",
    "ﷺ ﷻ",
    "तुम्हारा नाम क्या है",
    "ภาษาไทยไม่มีช่องว่าง",
    "Ελληνικά κείμενα με τόνους",
    "Кириллица и ЁЖИК",
    "  leading and trailing  ",
    "end with space ",
    "\u2581metaspace\u2581char",
    "ĠĊ byte-level look-alikes",
    # Newer than tokenizers' normalization tables (Unicode 12-14): JVM/Foundation must leave them alone.
    "new \U0001fbf5\U0001f16c a\u1ac1\u0301 \u0898x \U0001f970",
)

WORDS: tuple[str, ...] = (
    "the", "of", "and", "model", "phone", "token", "embedding", "sentence", "running", "unbelievable",
    "tokenization", "internationalization", "Android", "iOS", "Kotlin", "Swift", "ONNX", "Runtime",
    "GPU", "HTTPS", "YouTube", "hello", "world", "data", "science", "über", "Straße", "naïve", "façade",
    "São", "Paulo", "Zürich", "Kraków", "Ελλάδα", "Москва", "東京", "北京", "서울", "القاهرة", "ירושלים",
    "मुंबई", "กรุงเทพ", "Hà", "Nội", "İzmir", "Ísland", "Øresund", "Łódź", "señor", "año", "coração",
    "2024", "3.5", "100%", "$9.99", "#1", "e-mail", "self-driving", "don't", "it's", "O'Neil", "C++",
    "x86_64", "v1.2.3", "😀", "🚀", "✨", "👍🏽", "™", "©", "→", "∑", "∞", "√2", "π", "½",
)

# Unicode blocks drawn from (assigned long ago: every table agrees on them).
RANGES: tuple[tuple[int, int], ...] = (
    (0x20, 0x7E), (0xA0, 0xFF), (0x100, 0x17F), (0x370, 0x3FF), (0x400, 0x4FF), (0x5D0, 0x5EA),
    (0x621, 0x64A), (0x900, 0x97F), (0xE01, 0xE3A), (0x3041, 0x3096), (0x30A1, 0x30FA), (0x4E00, 0x9FA5),
    (0xAC00, 0xD7A3), (0x300, 0x36F), (0x2000, 0x206F), (0x2190, 0x21FF), (0x2200, 0x22FF), (0xFF01, 0xFF5E),
    (0x1F600, 0x1F64F), (0x1F300, 0x1F5FF), (0x0, 0x1F),
)


def generated(count: int, seed: int = 29) -> list[str]:
    """``count`` deterministic texts: words of :data:`WORDS` and runs of characters from :data:`RANGES`,
    joined by assorted whitespace and punctuation."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 12)):
            if rng.random() < 0.6:
                word = rng.choice(WORDS)
                parts.append(word.upper() if rng.random() < 0.15 else word)
            else:
                lo, hi = rng.choice(RANGES)
                parts.append("".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 8))))
            parts.append(rng.choice([" ", " ", " ", "  ", "\t", "\n", ", ", ". ", "-", "", "\u00a0", "'"]))
        out.append("".join(parts).rstrip(" ") if rng.random() < 0.8 else "".join(parts))
    return out


def corpus(samples: Iterable[str] = (), *, total: int = 500) -> list[str]:
    """The user's ``samples``, then :data:`HARD_CASES`, then generated texts up to ``total`` (no duplicates)."""
    out: list[str] = []
    seen: set[str] = set()
    for text in [*samples, *HARD_CASES]:
        if text not in seen:
            seen.add(text)
            out.append(text)
    for text in generated(max(0, total - len(out)) + 50):
        if len(out) >= total:
            break
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def hf_tokenizer(path: Path | str, *, max_length: int | None = None) -> Tokenizer:
    """The Hugging Face tokenizer of ``path`` (a tokenizer.json or its directory), with ``max_length`` set
    the way :func:`mobilegen.tasks.text.spec.load` sets it."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_file(Path(path))))
    if max_length is not None:
        trunc = tok.truncation or {}
        tok.enable_truncation(max_length, direction=trunc.get("direction", "right"))
        pad = tok.padding
        if pad is not None and pad.get("length") is not None:
            tok.enable_padding(
                direction=pad["direction"], pad_id=pad["pad_id"], pad_type_id=pad["pad_type_id"], pad_token=pad["pad_token"],
                length=max_length, pad_to_multiple_of=pad["pad_to_multiple_of"],
            )
    return tok


def hf_encode(tok: Tokenizer, texts: Sequence[str]) -> list[Triple]:
    out = []
    for text in texts:
        e = tok.encode(text)
        out.append((tuple(e.ids), tuple(e.attention_mask), tuple(e.type_ids)))
    return out


def compare(texts: Sequence[str], expected: Sequence[Triple], got: Sequence[Triple], candidate: str) -> int:
    """The number of ids compared; raises :class:`TokenizerParityError` naming every text that differs."""
    if len(got) != len(texts):
        raise TokenizerParityError(
            f"the {candidate} tokenizer answered {len(got)} texts of {len(texts)}", hint="this is a bug in mobilegen's tokenizer"
        )
    details = []
    for text, want, have in zip(texts, expected, got, strict=True):
        if want != have:
            what = "ids" if want[0] != have[0] else "attention mask" if want[1] != have[1] else "token type ids"
            details.append(f"{text[:80]!r}: {what} {list(have[0][:12])}… where tokenizers gives {list(want[0][:12])}…")
    if details:
        raise TokenizerParityError(
            f"the {candidate} tokenizer differs from Hugging Face tokenizers on {len(details)} of {len(texts)} texts, "
            f"first {details[0].split(': ')[0]}",
            hint="the generated tokenizer would feed the model other ids than it was trained with; report this text",
            details=details[:20],
            data={"tokenizer_parity": {"candidate": candidate, "strings": len(texts), "mismatches": len(details)}},
        )
    return sum(len(e[0]) for e in expected)


def check(
    spec: TokenizerSpec,
    tok: Tokenizer,
    texts: Sequence[str],
    *,
    encode: Callable[[TokenizerSpec, str], reference.Encoding] = reference.encode,
    candidate: str = "Python reference",
) -> ParityReport:
    """The gate: ``encode`` (the Python reference by default) against Hugging Face ``tokenizers`` on ``texts``."""
    t0 = time.perf_counter()
    expected = hf_encode(tok, texts)
    t1 = time.perf_counter()
    got = []
    for text in texts:
        e = encode(spec, text)
        got.append((e.ids, e.attention_mask, e.type_ids))
    t2 = time.perf_counter()
    count = compare(texts, expected, got, candidate)
    return ParityReport(candidate, len(texts), count, t1 - t0, t2 - t1)


def gate(
    path: Path | str, samples: Sequence[str] = (), *, max_length: int | None = None, total: int = 500
) -> tuple[TokenizerSpec, ParityReport]:
    """The build's gate in one call: read ``path`` (a tokenizer.json or its directory), then check the
    Python reference against Hugging Face ``tokenizers`` on :func:`corpus` of ``samples``. Raises
    :class:`~mobilegen.tasks.text.spec.TokenizerError` (exit 2) for an unsupported tokenizer and
    :class:`TokenizerParityError` (exit 5) for a text whose ids differ."""
    from mobilegen.tasks.text.spec import load

    spec = load(path, max_length=max_length)
    return spec, check(spec, hf_tokenizer(path, max_length=max_length), corpus(samples, total=total))


@dataclass(frozen=True)
class LengthStats:
    """Token counts of sample texts (special tokens included, before truncation and padding): what a fixed
    sequence length would cut."""

    texts: int
    p50: int
    p90: int
    p99: int
    longest: int
    truncated: int  # texts longer than ``max_length``
    max_length: int | None

    def to_json(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in ("texts", "p50", "p90", "p99", "longest", "truncated", "max_length")}


def length_stats(spec: TokenizerSpec, texts: Sequence[str]) -> LengthStats:
    """The token-length distribution of ``texts`` under ``spec`` (nearest-rank percentiles)."""
    specials = sum(len(p.ids) for p in spec.template)
    counts = sorted(len(reference.tokens(spec, t)) + specials for t in texts)
    limit = spec.truncation.max_length if spec.truncation is not None else None

    def pct(q: int) -> int:
        return counts[min(len(counts) - 1, max(0, -(-len(counts) * q // 100) - 1))] if counts else 0

    return LengthStats(
        len(counts), pct(50), pct(90), pct(99), counts[-1] if counts else 0,
        sum(c > limit for c in counts) if limit is not None else 0, limit,
    )
