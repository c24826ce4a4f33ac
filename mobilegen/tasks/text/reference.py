"""The Python reference tokenizer: :func:`encode` gives the ids, attention mask and token type ids Hugging
Face ``tokenizers`` gives for one text (``add_special_tokens=True``), from a :class:`TokenizerSpec` alone.

Pure Python (``unicodedata`` for NFD/NFC/NFKD/NFKC; character classes and lowercasing from
:mod:`mobilegen.tasks.text.chars`). It is the definition the generated Kotlin and Swift tokenizers port,
step for step:

1. added tokens: the non-normalized ones are cut out of the raw text (leftmost-longest), the rest of the
   text is normalized, then the normalized ones are cut out of it;
2. every remaining piece goes through the pre-tokenizers, each piece of theirs through the model;
3. truncation (reserving room for the template's special tokens), the template, padding.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import cache

from mobilegen.tasks.text import chars
from mobilegen.tasks.text.spec import (
    AddedToken,
    Behavior,
    BertNormalizer,
    BertPreTokenizer,
    Bpe,
    ByteLevel,
    Digits,
    Lowercase,
    Metaspace,
    Prepend,
    Punctuation,
    Replace,
    SplitLiteral,
    Strip,
    StripAccents,
    TokenizerError,
    TokenizerSpec,
    UnicodeNormalizer,
    Unigram,
    Whitespace,
    WhitespaceSplit,
    WordPiece,
)

UNK_PENALTY = 10.0  # tokenizers' K_UNK_PENALTY (Unigram)


@dataclass(frozen=True)
class Encoding:
    ids: tuple[int, ...]
    attention_mask: tuple[int, ...]
    type_ids: tuple[int, ...]


# --- normalization -------------------------------------------------------------------------------------


def unicode_normalize(form: str, text: str) -> str:
    """``unicodedata.normalize`` between the characters of ``norm_keep`` (:mod:`chars`), which stay as they
    are: tokenizers' normalization tables are older than every platform's."""
    keep = chars.char_class("norm_keep")
    out: list[str] = []
    start = 0
    for i, c in enumerate(text):
        if c in keep:
            out += [unicodedata.normalize(form, text[start:i]), c]  # type: ignore[arg-type]
            start = i + 1
    out.append(unicodedata.normalize(form, text[start:]))  # type: ignore[arg-type]
    return "".join(out)


def _lower(text: str) -> str:
    table = chars.lower_map()
    return "".join(table.get(c, c) for c in text)


def _normalize_one(step: object, text: str) -> str:
    if isinstance(step, BertNormalizer):
        if step.clean_text:
            control, space = chars.char_class("bert_control"), chars.char_class("bert_space")
            text = "".join(" " if c in space else c for c in text if c not in control)
        if step.handle_chinese_chars:
            chinese = chars.char_class("chinese")
            text = "".join(f" {c} " if c in chinese else c for c in text)
        if step.strip_accents:
            mn = chars.char_class("bert_mn")
            text = "".join(c for c in unicode_normalize("NFD", text) if c not in mn)
        if step.lowercase:
            text = _lower(text)
        return text
    if isinstance(step, UnicodeNormalizer):
        return unicode_normalize(step.form, text)
    if isinstance(step, Lowercase):
        return _lower(text)
    if isinstance(step, StripAccents):
        mark = chars.char_class("mark")
        return "".join(c for c in text if c not in mark)
    if isinstance(step, Replace):
        return text.replace(step.pattern, step.content)
    if isinstance(step, Prepend):
        return step.prepend + text if text else text
    if isinstance(step, Strip):
        space = chars.char_class("whitespace")
        start, end = 0, len(text)
        if step.left:
            while start < end and text[start] in space:
                start += 1
        if step.right:
            while end > start and text[end - 1] in space:
                end -= 1
        return text[start:end]
    raise TokenizerError(f"normalizer {type(step).__name__} is not supported")


def normalize(spec: TokenizerSpec, text: str) -> str:
    for step in spec.normalizers:
        text = _normalize_one(step, text)
    return text


# --- splitting -----------------------------------------------------------------------------------------

# A piece of text on its way to the model, and whether it begins at the start of the input
# (Metaspace's prepend_scheme "first" looks at that).
Piece = tuple[str, bool]


def split_segments(segments: list[tuple[int, int, bool]], behavior: Behavior) -> list[tuple[int, int]]:
    """tokenizers' ``NormalizedString::split``: (start, end, is_match) segments covering a text, in order,
    into the spans kept, per ``behavior``."""
    out: list[tuple[int, int]] = []
    if behavior == "Removed":
        return [(a, b) for a, b, m in segments if not m]
    if behavior == "Isolated":
        return [(a, b) for a, b, _ in segments]
    previous = False
    if behavior == "Contiguous":
        for a, b, m in segments:
            if m == previous and out:
                out[-1] = (out[-1][0], b)
            else:
                out.append((a, b))
            previous = m
        return out
    if behavior == "MergedWithPrevious":
        for a, b, m in segments:
            if m and not previous and out:
                out[-1] = (out[-1][0], b)
            else:
                out.append((a, b))
            previous = m
        return out
    # MergedWithNext
    for a, b, m in reversed(segments):
        if m and not previous and out:
            out[-1] = (a, out[-1][1])
        else:
            out.append((a, b))
        previous = m
    return out[::-1]


def char_segments(text: str, is_match: object) -> list[tuple[int, int, bool]]:
    """Every character ``is_match`` accepts is a match of its own; the runs between them are not."""
    if not text:
        return [(0, 0, False)]
    out: list[tuple[int, int, bool]] = []
    last = 0
    for i, c in enumerate(text):
        if is_match(c):  # type: ignore[operator]
            if last < i:
                out.append((last, i, False))
            out.append((i, i + 1, True))
            last = i + 1
    if last < len(text):
        out.append((last, len(text), False))
    return out


def literal_segments(text: str, pattern: str, invert: bool = False) -> list[tuple[int, int, bool]]:
    if not text:
        return [(0, 0, False)]
    out: list[tuple[int, int, bool]] = []
    last, i = 0, text.find(pattern)
    while i >= 0:
        if last < i:
            out.append((last, i, invert))
        out.append((i, i + len(pattern), not invert))
        last = i + len(pattern)
        i = text.find(pattern, last)
    if last < len(text):
        out.append((last, len(text), invert))
    return out


def _apply_split(piece: Piece, segments: list[tuple[int, int, bool]], behavior: Behavior) -> list[Piece]:
    text, at_start = piece
    return [(text[a:b], at_start and a == 0) for a, b in split_segments(segments, behavior) if b > a]


def gpt2_spans(text: str) -> list[tuple[int, int]]:
    """The matches of GPT-2's pattern ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``,
    written out (no regex engine: its Unicode tables are those of :mod:`chars`)."""
    letter, number, space = chars.char_class("bl_letter"), chars.char_class("bl_number"), chars.char_class("bl_space")

    def other(c: str) -> bool:
        return c not in space and c not in letter and c not in number

    n, i, out = len(text), 0, []
    while i < n:
        c = text[i]
        if c == "'" and i + 1 < n:
            if text[i + 1] in "stmd":
                out.append((i, i + 2))
                i += 2
                continue
            if i + 2 < n and text[i + 1 : i + 3] in ("re", "ve", "ll"):
                out.append((i, i + 3))
                i += 3
                continue
        j = i + 1 if c == " " and i + 1 < n else i
        matched = False
        for klass in (letter.__contains__, number.__contains__, other):
            if klass(text[j]):
                k = j + 1
                while k < n and klass(text[k]):
                    k += 1
                out.append((i, k))
                i, matched = k, True
                break
        if matched:
            continue
        # whitespace: the run, but its last character if a non-space follows (it then prefixes that)
        k = i + 1
        while k < n and text[k] in space:
            k += 1
        if k < n and k - 1 > i:
            k -= 1
        out.append((i, k))
        i = k
    return out


@cache
def byte_chars() -> tuple[str, ...]:
    """GPT-2's bytes_to_unicode: every byte as a printable character."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return tuple(table[b] for b in range(256))


def _pre_tokenize_one(step: object, piece: Piece) -> list[Piece]:
    text, at_start = piece
    if isinstance(step, BertPreTokenizer):
        space, punct = chars.char_class("whitespace"), chars.char_class("bert_punct")
        out = []
        for p in _apply_split(piece, char_segments(text, space.__contains__), "Removed"):
            out += _apply_split(p, char_segments(p[0], punct.__contains__), "Isolated")
        return out
    if isinstance(step, WhitespaceSplit):
        return _apply_split(piece, char_segments(text, chars.char_class("whitespace").__contains__), "Removed")
    if isinstance(step, Whitespace):
        word, space = chars.char_class("word"), chars.char_class("word_space")
        segments: list[tuple[int, int, bool]] = []
        i = 0
        while i < len(text):
            kind = 0 if text[i] in space else 1 if text[i] in word else 2
            j = i + 1
            while j < len(text) and (0 if text[j] in space else 1 if text[j] in word else 2) == kind:
                j += 1
            segments.append((i, j, kind != 0))
            i = j
        return [(text[a:b], at_start and a == 0) for a, b, keep in segments if keep]
    if isinstance(step, ByteLevel):
        if step.add_prefix_space and not text.startswith(" "):
            text = " " + text
        spans = gpt2_spans(text) if step.use_regex else [(0, len(text))]
        table = byte_chars()
        return [("".join(table[b] for b in text[a:b].encode("utf-8")), at_start and a == 0) for a, b in spans if b > a]
    if isinstance(step, Metaspace):
        text = text.replace(" ", step.replacement)
        if not text.startswith(step.replacement) and (step.prepend_scheme == "always" or (step.prepend_scheme == "first" and at_start)):
            text = step.replacement + text
        if not step.split:
            return [(text, at_start)] if text else []
        return _apply_split((text, at_start), char_segments(text, lambda c: c == step.replacement), "MergedWithNext")
    if isinstance(step, SplitLiteral):
        return _apply_split(piece, literal_segments(text, step.pattern, step.invert), step.behavior)
    if isinstance(step, Punctuation):
        return _apply_split(piece, char_segments(text, chars.char_class("punct").__contains__), step.behavior)
    if isinstance(step, Digits):
        digit = chars.char_class("digit")
        return _apply_split(piece, char_segments(text, digit.__contains__), "Isolated" if step.individual_digits else "Contiguous")
    raise TokenizerError(f"pre-tokenizer {type(step).__name__} is not supported")


def pre_tokenize(spec: TokenizerSpec, pieces: list[Piece]) -> list[Piece]:
    for step in spec.pre_tokenizers:
        pieces = [out for p in pieces for out in _pre_tokenize_one(step, p)]
    return pieces


# --- models --------------------------------------------------------------------------------------------


def _wordpiece(model: WordPiece, word: str) -> list[int]:
    unk = model.vocab[model.unk_token]
    if len(word) > model.max_input_chars_per_word:
        return [unk]
    ids, start = [], 0
    while start < len(word):
        end, found = len(word), None
        while start < end:
            sub = word[start:end]
            if start > 0:
                sub = model.continuing_subword_prefix + sub
            if sub in model.vocab:
                found = model.vocab[sub]
                break
            end -= 1
        if found is None:
            return [unk]
        ids.append(found)
        start = end
    return ids


@cache
def _merge_table(model: Bpe) -> dict[tuple[int, int], tuple[int, int]]:
    """(left id, right id) -> (rank, merged id), as tokenizers keys its merges."""
    table: dict[tuple[int, int], tuple[int, int]] = {}
    prefix = model.continuing_subword_prefix
    for rank, (a, b) in enumerate(model.merges):
        merged = a + b[len(prefix) :]
        if a not in model.vocab or b not in model.vocab or merged not in model.vocab:
            raise TokenizerError(f"BPE merge {a!r} {b!r} uses a token that is not in the vocabulary", hint="fix the tokenizer.json")
        table[(model.vocab[a], model.vocab[b])] = (rank, model.vocab[merged])  # a repeated pair: the last wins
    return table


def _bpe(model: Bpe, word: str) -> list[int]:
    if model.ignore_merges and word in model.vocab:
        return [model.vocab[word]]
    symbols: list[int] = []
    unk: int | None = None
    unk_id = model.vocab.get(model.unk_token) if model.unk_token is not None else None
    for i, c in enumerate(word):
        s = c
        if i > 0 and model.continuing_subword_prefix:
            s = model.continuing_subword_prefix + s
        if i == len(word) - 1 and model.end_of_word_suffix:
            s = s + model.end_of_word_suffix
        if s in model.vocab:
            if unk is not None:
                symbols.append(unk)
                unk = None
            symbols.append(model.vocab[s])
            continue
        if model.byte_fallback:
            codes = [f"<0x{b:02X}>" for b in s.encode("utf-8")]
            if all(code in model.vocab for code in codes):
                symbols.extend(model.vocab[code] for code in codes)
                continue
        if model.unk_token is not None:
            if unk_id is None:
                raise TokenizerError(f"BPE unk_token {model.unk_token!r} is not in the vocabulary", hint="fix the tokenizer.json")
            if unk is not None and not model.fuse_unk:
                symbols.append(unk)
            unk = unk_id
    if unk is not None:
        symbols.append(unk)
    merges = _merge_table(model)
    while len(symbols) > 1:
        best: tuple[int, int, int] | None = None  # rank, position, new id
        for pos in range(len(symbols) - 1):
            hit = merges.get((symbols[pos], symbols[pos + 1]))
            if hit is not None and (best is None or hit[0] < best[0]):
                best = (hit[0], pos, hit[1])
        if best is None:
            break
        _, pos, new = best
        symbols[pos : pos + 2] = [new]
    return symbols


@cache
def _unigram_index(model: Unigram) -> tuple[dict[str, int], float, int]:
    ids = {}
    for i, (piece, _) in enumerate(model.pieces):
        ids[piece] = i
    longest = max((len(p) for p, _ in model.pieces), default=1)
    return ids, min(s for _, s in model.pieces), longest


def _unigram(model: Unigram, text: str) -> list[int]:
    if not text:
        return []
    ids, min_score, longest = _unigram_index(model)
    unk_score = min_score - UNK_PENALTY
    n = len(text)
    # best[i] = (score, start, id) of the best path ending at character i
    best: list[tuple[float, int, int] | None] = [None] * (n + 1)
    best[0] = (0.0, -1, -1)
    for start in range(n):
        here = best[start]
        assert here is not None
        has_single = False
        for end in range(start + 1, min(n, start + longest) + 1):
            piece = text[start:end]
            if piece not in ids:
                continue
            score = here[0] + model.pieces[ids[piece]][1]
            target = best[end]
            if target is None or score > target[0]:
                best[end] = (score, start, ids[piece])
            if end == start + 1:
                has_single = True
        if not has_single:
            if model.unk_id is None:
                raise TokenizerError("Unigram model has no unk_id but the text needs it", hint="fix the tokenizer.json")
            score = here[0] + unk_score
            target = best[start + 1]
            if target is None or score > target[0]:
                best[start + 1] = (score, start, model.unk_id)
    strings: list[str] = []
    fused: list[str] = []
    end = n
    while end > 0:
        node = best[end]
        assert node is not None
        _, start, token = node
        if token == model.unk_id:  # tokenizers fuses consecutive unknowns (fuse_unk is always true here)
            fused.append(text[start:end])
        else:
            if fused:
                strings.append("".join(reversed(fused)))
                fused = []
            strings.append(text[start:end])
        end = start
    if fused:
        strings.append("".join(reversed(fused)))
    out: list[int] = []
    for s in reversed(strings):
        if s in ids:
            out.append(ids[s])
            continue
        if model.byte_fallback:
            codes = [f"<0x{b:02X}>" for b in s.encode("utf-8")]
            if all(code in ids for code in codes):
                out.extend(ids[code] for code in codes)
                continue
        assert model.unk_id is not None
        out.append(model.unk_id)
    return out


def tokenize_word(spec: TokenizerSpec, word: str) -> list[int]:
    if not word:
        return []
    if isinstance(spec.model, WordPiece):
        return _wordpiece(spec.model, word)
    if isinstance(spec.model, Bpe):
        return _bpe(spec.model, word)
    return _unigram(spec.model, word)


# --- added tokens --------------------------------------------------------------------------------------


def _find_added(text: str, tokens: list[tuple[str, AddedToken]]) -> list[tuple[int, int, AddedToken | None]]:
    """tokenizers' AddedVocabulary::find_matches: leftmost-longest matches of the added tokens, with their
    lstrip/rstrip, and the unmatched runs between them."""
    if not text:
        return [(0, 0, None)]
    space = chars.char_class("whitespace") if any(t.lstrip or t.rstrip for _, t in tokens) else None
    out: list[tuple[int, int, AddedToken | None]] = []
    last, i = 0, 0
    while i < len(text):
        hit: tuple[str, AddedToken] | None = None
        for pattern, tok in tokens:
            if pattern and text.startswith(pattern, i) and (hit is None or len(pattern) > len(hit[0])):
                hit = (pattern, tok)
        if hit is None:
            i += 1
            continue
        start, stop = i, i + len(hit[0])
        if hit[1].lstrip and space is not None:
            while start > last and text[start - 1] in space:
                start -= 1
        if hit[1].rstrip and space is not None:
            while stop < len(text) and text[stop] in space:
                stop += 1
        if last < start:
            out.append((last, start, None))
        out.append((start, stop, hit[1]))
        last = i = stop
    if last < len(text):
        out.append((last, len(text), None))
    return out


def _pieces(spec: TokenizerSpec, text: str) -> list[tuple[str, bool, AddedToken | None]]:
    """(text, starts the input, added token or None) after cutting the added tokens out and normalizing."""
    raw = [(t.content, t) for t in spec.added_tokens if not t.normalized]
    norm = [(normalize(spec, t.content), t) for t in spec.added_tokens if t.normalized]
    out: list[tuple[str, bool, AddedToken | None]] = []
    for a, b, tok in _find_added(text, raw) if raw else [(0, len(text), None)]:
        if tok is not None:
            out.append((text[a:b], a == 0, tok))
            continue
        piece = normalize(spec, text[a:b])
        if not piece:
            continue
        for c, d, tok2 in _find_added(piece, norm) if norm else [(0, len(piece), None)]:
            if d > c:
                out.append((piece[c:d], a == 0 and c == 0, tok2))
    return out


# --- the whole encode ----------------------------------------------------------------------------------


def tokens(spec: TokenizerSpec, text: str) -> list[int]:
    """The model's ids for ``text``, before truncation, special tokens and padding."""
    ids: list[int] = []
    for piece, at_start, tok in _pieces(spec, text):
        if tok is not None:
            ids.append(tok.id)
            continue
        for word, _ in pre_tokenize(spec, [(piece, at_start)]):
            ids.extend(tokenize_word(spec, word))
    return ids


def encode(spec: TokenizerSpec, text: str) -> Encoding:
    """What ``tokenizers.Tokenizer.encode(text)`` gives: ids, attention mask, token type ids."""
    ids = tokens(spec, text)
    specials = sum(len(p.ids) for p in spec.template)
    if spec.truncation is not None:
        keep = spec.truncation.max_length - specials
        if len(ids) > keep:
            ids = ids[:keep] if spec.truncation.direction == "Right" else ids[len(ids) - keep :]
    out_ids: list[int] = []
    type_ids: list[int] = []
    if spec.template:
        for item in spec.template:
            part = ids if item.is_sequence else list(item.ids)
            out_ids += part
            type_ids += [item.type_id] * len(part)
    else:
        out_ids, type_ids = list(ids), [0] * len(ids)
    mask = [1] * len(out_ids)
    if spec.padding is not None:
        pad = spec.padding
        length = pad.length if pad.length is not None else len(out_ids)
        if pad.pad_to_multiple_of and length % pad.pad_to_multiple_of:
            length += pad.pad_to_multiple_of - length % pad.pad_to_multiple_of
        missing = length - len(out_ids)
        if missing > 0:
            if pad.direction == "Right":
                out_ids += [pad.pad_id] * missing
                type_ids += [pad.pad_type_id] * missing
                mask += [0] * missing
            else:
                out_ids = [pad.pad_id] * missing + out_ids
                type_ids = [pad.pad_type_id] * missing + type_ids
                mask = [0] * missing + mask
    return Encoding(tuple(out_ids), tuple(mask), tuple(type_ids))
