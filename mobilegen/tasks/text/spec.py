"""A Hugging Face ``tokenizer.json`` read into one frozen, typed :class:`TokenizerSpec`.

Only what can be reproduced exactly on the phone is accepted: WordPiece, BPE (byte-level GPT-2/RoBERTa, and
SentencePiece-style with byte fallback) and Unigram models; the normalizers, pre-tokenizers and
post-processors listed in :data:`SUPPORTED`. Anything else is refused in one line naming the component
(:class:`TokenizerError`, exit 2). The decoder is ignored (ids are all the model needs).

The spec is also the asset the generated Kotlin/Swift tokenizers read (:func:`mobilegen.tasks.text.asset.to_asset`): JSON with the
vocabulary as data and the character classes (:mod:`mobilegen.tasks.text.chars`) the components need.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mobilegen.errors import UsageError

ASSET_FORMAT = "mobilegen-tokenizer"
ASSET_VERSION = 1


class TokenizerError(UsageError):
    """A tokenizer.json that cannot be read, or that uses a component mobilegen cannot reproduce."""

    kind = "tokenizer"


# --- normalizers ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BertNormalizer:
    clean_text: bool
    handle_chinese_chars: bool
    strip_accents: bool  # None in the file means "as lowercase"
    lowercase: bool
    type: Literal["Bert"] = "Bert"


@dataclass(frozen=True)
class UnicodeNormalizer:
    form: Literal["NFD", "NFC", "NFKD", "NFKC"]
    type: Literal["Unicode"] = "Unicode"


@dataclass(frozen=True)
class Lowercase:
    type: Literal["Lowercase"] = "Lowercase"


@dataclass(frozen=True)
class StripAccents:
    type: Literal["StripAccents"] = "StripAccents"


@dataclass(frozen=True)
class Replace:
    """Every (non-overlapping, left to right) occurrence of a literal string replaced."""

    pattern: str
    content: str
    type: Literal["Replace"] = "Replace"


@dataclass(frozen=True)
class Prepend:
    prepend: str
    type: Literal["Prepend"] = "Prepend"


@dataclass(frozen=True)
class Strip:
    left: bool
    right: bool
    type: Literal["Strip"] = "Strip"


Normalizer = BertNormalizer | UnicodeNormalizer | Lowercase | StripAccents | Replace | Prepend | Strip

# --- pre-tokenizers ------------------------------------------------------------------------------------

Behavior = Literal["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]


@dataclass(frozen=True)
class BertPreTokenizer:
    type: Literal["Bert"] = "Bert"


@dataclass(frozen=True)
class ByteLevel:
    add_prefix_space: bool
    use_regex: bool
    type: Literal["ByteLevel"] = "ByteLevel"


@dataclass(frozen=True)
class Whitespace:
    """``\\w+|[^\\w\\s]+``"""

    type: Literal["Whitespace"] = "Whitespace"


@dataclass(frozen=True)
class WhitespaceSplit:
    type: Literal["WhitespaceSplit"] = "WhitespaceSplit"


@dataclass(frozen=True)
class Metaspace:
    replacement: str
    prepend_scheme: Literal["always", "first", "never"]
    split: bool
    type: Literal["Metaspace"] = "Metaspace"


@dataclass(frozen=True)
class SplitLiteral:
    """The Split pre-tokenizer with a literal string pattern (a regex pattern is refused)."""

    pattern: str
    behavior: Behavior
    invert: bool
    type: Literal["Split"] = "Split"


@dataclass(frozen=True)
class Punctuation:
    behavior: Behavior
    type: Literal["Punctuation"] = "Punctuation"


@dataclass(frozen=True)
class Digits:
    individual_digits: bool
    type: Literal["Digits"] = "Digits"


PreTokenizer = BertPreTokenizer | ByteLevel | Whitespace | WhitespaceSplit | Metaspace | SplitLiteral | Punctuation | Digits

# --- models --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)  # hashed by identity (the reference caches its tables per model)
class WordPiece:
    vocab: dict[str, int]
    unk_token: str
    continuing_subword_prefix: str
    max_input_chars_per_word: int
    type: Literal["WordPiece"] = "WordPiece"


@dataclass(frozen=True, eq=False)  # hashed by identity (the reference caches its tables per model)
class Bpe:
    vocab: dict[str, int]
    merges: tuple[tuple[str, str], ...]  # in rank order
    unk_token: str | None
    continuing_subword_prefix: str
    end_of_word_suffix: str
    fuse_unk: bool
    byte_fallback: bool
    ignore_merges: bool
    type: Literal["BPE"] = "BPE"


@dataclass(frozen=True, eq=False)  # hashed by identity (the reference caches its tables per model)
class Unigram:
    pieces: tuple[tuple[str, float], ...]  # id -> (piece, log probability)
    unk_id: int | None
    byte_fallback: bool
    type: Literal["Unigram"] = "Unigram"


Model = WordPiece | Bpe | Unigram

# --- the rest ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AddedToken:
    id: int
    content: str
    special: bool
    normalized: bool
    lstrip: bool
    rstrip: bool
    single_word: bool


@dataclass(frozen=True)
class TemplatePiece:
    """One item of the single-sequence template: the sequence itself (``ids`` empty) or special-token ids."""

    type_id: int
    ids: tuple[int, ...] = ()
    is_sequence: bool = False


@dataclass(frozen=True)
class Truncation:
    max_length: int
    direction: Literal["Right", "Left"] = "Right"


@dataclass(frozen=True)
class Padding:
    length: int | None  # Fixed(n); None: to the sequence's own length (BatchLongest on one text)
    direction: Literal["Right", "Left"] = "Right"
    pad_id: int = 0
    pad_type_id: int = 0
    pad_to_multiple_of: int | None = None


@dataclass(frozen=True)
class TokenizerSpec:
    """Everything needed to turn a text into the ids, attention mask and token type ids the model takes."""

    model: Model
    normalizers: tuple[Normalizer, ...]
    pre_tokenizers: tuple[PreTokenizer, ...]
    template: tuple[TemplatePiece, ...]  # single-sequence post-processing; () adds nothing
    added_tokens: tuple[AddedToken, ...]
    truncation: Truncation | None
    padding: Padding | None
    source: str = ""  # where it was read from (for messages)
    components: tuple[str, ...] = field(default=())  # e.g. ("BertNormalizer", "BertPreTokenizer", ...)

    @property
    def vocab_size(self) -> int:
        ids = [t.id for t in self.added_tokens]
        if isinstance(self.model, Unigram):
            ids.append(len(self.model.pieces) - 1)
        else:
            ids.extend(self.model.vocab.values())
        return max(ids) + 1 if ids else 0

    def id_to_token(self) -> dict[int, str]:
        out: dict[int, str] = {}
        if isinstance(self.model, Unigram):
            out.update((i, p) for i, (p, _) in enumerate(self.model.pieces))
        else:
            out.update((i, t) for t, i in self.model.vocab.items())
        out.update((t.id, t.content) for t in self.added_tokens)
        return out

    def char_classes(self) -> tuple[str, ...]:
        """The :data:`chars.CLASSES` the components use (what the asset must carry)."""
        need: set[str] = set()
        for n in self.normalizers:
            if isinstance(n, BertNormalizer):
                need |= {"bert_control", "bert_space"} if n.clean_text else set()
                need |= {"chinese"} if n.handle_chinese_chars else set()
                need |= {"bert_mn", "norm_keep"} if n.strip_accents else set()
            elif isinstance(n, StripAccents):
                need.add("mark")
            elif isinstance(n, UnicodeNormalizer):
                need.add("norm_keep")
        for p in self.pre_tokenizers:
            if isinstance(p, BertPreTokenizer):
                need |= {"whitespace", "bert_punct"}
            elif isinstance(p, WhitespaceSplit):
                need.add("whitespace")
            elif isinstance(p, Whitespace):
                need |= {"word", "word_space"}
            elif isinstance(p, Punctuation):
                need.add("punct")
            elif isinstance(p, Digits):
                need.add("digit")
            elif isinstance(p, ByteLevel) and p.use_regex:
                need |= {"bl_letter", "bl_number", "bl_space"}
        for t in self.added_tokens:
            if t.lstrip or t.rstrip:
                need.add("whitespace")
        return tuple(sorted(need))

    def uses_lowercase(self) -> bool:
        return any(isinstance(n, Lowercase) or (isinstance(n, BertNormalizer) and n.lowercase) for n in self.normalizers)


# --- reading tokenizer.json ----------------------------------------------------------------------------


def _refuse(where: str, what: str, source: str) -> TokenizerError:
    return TokenizerError(
        f"{source}: {where} {what} is not supported",
        hint="mobilegen generates WordPiece, BPE and Unigram tokenizers with the components listed in docs/tasks.md; "
        "use a tokenizer.json made of those",
    )


def _get(d: dict[str, Any], key: str, default: Any, source: str, where: str) -> Any:
    if not isinstance(d, dict):
        raise TokenizerError(f"{source}: {where} is not an object", hint="pass a tokenizer.json written by Hugging Face tokenizers")
    return d.get(key, default)


def _normalizers(node: Any, source: str) -> list[Normalizer]:
    if node is None:
        return []
    kind = _get(node, "type", None, source, "normalizer")
    if kind == "Sequence":
        return [n for sub in node.get("normalizers", []) for n in _normalizers(sub, source)]
    if kind == "BertNormalizer":
        lower = bool(node.get("lowercase", True))
        strip = node.get("strip_accents")
        return [
            BertNormalizer(
                clean_text=bool(node.get("clean_text", True)),
                handle_chinese_chars=bool(node.get("handle_chinese_chars", True)),
                strip_accents=lower if strip is None else bool(strip),
                lowercase=lower,
            )
        ]
    if kind in ("NFD", "NFC", "NFKD", "NFKC"):
        return [UnicodeNormalizer(kind)]
    if kind == "Lowercase":
        return [Lowercase()]
    if kind == "StripAccents":
        return [StripAccents()]
    if kind == "Prepend":
        return [Prepend(str(node["prepend"]))]
    if kind == "Strip":
        return [Strip(bool(node.get("strip_left", True)), bool(node.get("strip_right", True)))]
    if kind == "Replace":
        pattern = node.get("pattern", {})
        if not isinstance(pattern, dict) or "String" not in pattern:
            raise _refuse("normalizer", "Replace with a regex pattern", source)
        if pattern["String"] == "":
            raise _refuse("normalizer", "Replace with an empty pattern", source)
        return [Replace(str(pattern["String"]), str(node.get("content", "")))]
    if kind == "Precompiled" and not node.get("precompiled_charsmap"):
        return []  # an empty charsmap changes nothing
    raise _refuse("normalizer", str(kind), source)


_BEHAVIORS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")


def _behavior(node: dict[str, Any], default: str, source: str, where: str) -> Behavior:
    value = node.get("behavior", default)
    if value not in _BEHAVIORS:
        raise _refuse(where, f"behavior {value}", source)
    return value  # type: ignore[no-any-return]


def _pre_tokenizers(node: Any, source: str) -> list[PreTokenizer]:
    if node is None:
        return []
    kind = _get(node, "type", None, source, "pre-tokenizer")
    if kind == "Sequence":
        return [p for sub in node.get("pretokenizers", []) for p in _pre_tokenizers(sub, source)]
    if kind == "BertPreTokenizer":
        return [BertPreTokenizer()]
    if kind == "ByteLevel":
        return [ByteLevel(bool(node.get("add_prefix_space", True)), bool(node.get("use_regex", True)))]
    if kind == "Whitespace":
        return [Whitespace()]
    if kind == "WhitespaceSplit":
        return [WhitespaceSplit()]
    if kind == "Metaspace":
        scheme = node.get("prepend_scheme")
        if scheme is None:  # files from tokenizers < 0.14
            scheme = "always" if node.get("add_prefix_space", True) else "never"
        if scheme not in ("always", "first", "never"):
            raise _refuse("pre-tokenizer", f"Metaspace prepend_scheme {scheme}", source)
        replacement = str(node.get("replacement", "\u2581"))
        if len(replacement) != 1:
            raise _refuse("pre-tokenizer", f"Metaspace replacement {replacement!r} (not one character)", source)
        return [Metaspace(replacement, scheme, bool(node.get("split", True)))]
    if kind == "Split":
        pattern = node.get("pattern", {})
        if not isinstance(pattern, dict) or "String" not in pattern or pattern["String"] == "":
            raise _refuse("pre-tokenizer", "Split with a regex pattern", source)
        return [SplitLiteral(str(pattern["String"]), _behavior(node, "Isolated", source, "pre-tokenizer Split"), bool(node.get("invert", False)))]
    if kind == "Punctuation":
        return [Punctuation(_behavior(node, "Isolated", source, "pre-tokenizer Punctuation"))]
    if kind == "Digits":
        return [Digits(bool(node.get("individual_digits", False)))]
    raise _refuse("pre-tokenizer", str(kind), source)


def _vocab_ids(vocab: Any, source: str) -> dict[str, int]:
    if not isinstance(vocab, dict) or not all(isinstance(v, int) and v >= 0 for v in vocab.values()):
        raise TokenizerError(f"{source}: model.vocab is not a token -> id object", hint="pass a tokenizer.json written by Hugging Face tokenizers")
    return {str(k): int(v) for k, v in vocab.items()}


def _model(node: Any, source: str) -> Model:
    kind = _get(node, "type", None, source, "model")
    if kind is None:  # old files: guess as tokenizers does
        kind = "BPE" if "merges" in node else "WordPiece" if "continuing_subword_prefix" in node else "Unigram"
    if kind == "WordPiece":
        vocab = _vocab_ids(node.get("vocab"), source)
        unk = str(node.get("unk_token", "[UNK]"))
        if unk not in vocab:
            raise TokenizerError(f"{source}: WordPiece unk_token {unk!r} is not in the vocabulary", hint="fix the tokenizer.json")
        return WordPiece(vocab, unk, str(node.get("continuing_subword_prefix", "##")), int(node.get("max_input_chars_per_word", 100)))
    if kind == "BPE":
        if node.get("dropout") not in (None, 0, 0.0):
            raise _refuse("model", "BPE with dropout (random tokenization)", source)
        vocab = _vocab_ids(node.get("vocab"), source)
        merges: list[tuple[str, str]] = []
        for m in node.get("merges", []):
            pair = m.split(" ") if isinstance(m, str) else m
            if len(pair) != 2:
                raise TokenizerError(f"{source}: BPE merge {m!r} is not a pair", hint="fix the tokenizer.json")
            merges.append((str(pair[0]), str(pair[1])))
        unk = node.get("unk_token")
        return Bpe(
            vocab,
            tuple(merges),
            None if unk is None else str(unk),
            str(node.get("continuing_subword_prefix") or ""),
            str(node.get("end_of_word_suffix") or ""),
            bool(node.get("fuse_unk", False)),
            bool(node.get("byte_fallback", False)),
            bool(node.get("ignore_merges", False)),
        )
    if kind == "Unigram":
        pieces = tuple((str(p), float(s)) for p, s in node.get("vocab", []))
        unk_id = node.get("unk_id")
        return Unigram(pieces, None if unk_id is None else int(unk_id), bool(node.get("byte_fallback", False)))
    raise _refuse("model", str(kind), source)


def _token_id(name: str, spec_ids: dict[str, int], source: str) -> int:
    if name not in spec_ids:
        raise TokenizerError(f"{source}: post-processor token {name!r} is not in the vocabulary", hint="fix the tokenizer.json")
    return spec_ids[name]


def _template(node: Any, ids: dict[str, int], source: str) -> list[TemplatePiece]:
    if node is None:
        return []
    kind = _get(node, "type", None, source, "post-processor")
    if kind == "Sequence":
        out: list[TemplatePiece] = []
        for sub in node.get("processors", []):
            inner = _template(sub, ids, source)
            if inner and out:
                raise _refuse("post-processor", "Sequence adding special tokens twice", source)
            out = inner or out
        return out
    if kind == "ByteLevel":
        return []  # offsets only
    if kind in ("BertProcessing", "RobertaProcessing"):
        sep, cls = node["sep"], node["cls"]
        return [TemplatePiece(0, (int(cls[1]),)), TemplatePiece(0, is_sequence=True), TemplatePiece(0, (int(sep[1]),))]
    if kind == "TemplateProcessing":
        specials = node.get("special_tokens", {})
        out = []
        for item in node.get("single", []):
            if "Sequence" in item:
                if item["Sequence"].get("id") != "A":
                    raise _refuse("post-processor", "TemplateProcessing single template with sequence B", source)
                out.append(TemplatePiece(int(item["Sequence"].get("type_id", 0)), is_sequence=True))
            elif "SpecialToken" in item:
                name = item["SpecialToken"]["id"]
                if name not in specials:
                    raise TokenizerError(f"{source}: template token {name!r} has no special_tokens entry", hint="fix the tokenizer.json")
                out.append(TemplatePiece(int(item["SpecialToken"].get("type_id", 0)), tuple(int(i) for i in specials[name]["ids"])))
            else:
                raise _refuse("post-processor", f"template item {item!r}", source)
        return out
    raise _refuse("post-processor", str(kind), source)


def from_json(doc: dict[str, Any], source: str = "tokenizer.json", *, max_length: int | None = None) -> TokenizerSpec:
    """The spec of a parsed ``tokenizer.json``. ``max_length`` (the caller's sequence length) replaces the
    file's truncation length, and its fixed padding length when it has one."""
    if not isinstance(doc, dict) or "model" not in doc:
        raise TokenizerError(f"{source} is not a Hugging Face tokenizer.json (no model)", hint="pass the tokenizer.json that save_pretrained writes")
    model = _model(doc["model"], source)
    added = tuple(
        AddedToken(
            int(t["id"]),
            str(t["content"]),
            bool(t.get("special", False)),
            bool(t.get("normalized", not t.get("special", False))),
            bool(t.get("lstrip", False)),
            bool(t.get("rstrip", False)),
            bool(t.get("single_word", False)),
        )
        for t in doc.get("added_tokens") or []
    )
    for t in added:
        if t.single_word:
            raise _refuse("added token", f"{t.content!r} with single_word", source)
    ids = dict(model.vocab) if not isinstance(model, Unigram) else {p: i for i, (p, _) in enumerate(model.pieces)}
    ids.update((t.content, t.id) for t in added)
    template = _template(doc.get("post_processor"), ids, source)
    trunc_node = doc.get("truncation")
    truncation = None
    if trunc_node is not None:
        truncation = Truncation(int(trunc_node.get("max_length", 512)), "Left" if trunc_node.get("direction") == "Left" else "Right")
    pad_node = doc.get("padding")
    padding = None
    if pad_node is not None:
        strategy = pad_node.get("strategy", "BatchLongest")
        length = int(strategy["Fixed"]) if isinstance(strategy, dict) and "Fixed" in strategy else None
        multiple = pad_node.get("pad_to_multiple_of")
        padding = Padding(
            length,
            "Left" if pad_node.get("direction") == "Left" else "Right",
            int(pad_node.get("pad_id", 0)),
            int(pad_node.get("pad_type_id", 0)),
            int(multiple) if multiple else None,
        )
    if max_length is not None:
        if max_length < 1:
            raise TokenizerError(f"max_length {max_length} must be at least 1", hint="pass a positive sequence length")
        truncation = Truncation(max_length, truncation.direction if truncation else "Right")
        if padding is not None and padding.length is not None:
            padding = Padding(max_length, padding.direction, padding.pad_id, padding.pad_type_id, padding.pad_to_multiple_of)
    specials = sum(len(p.ids) for p in template)
    if truncation is not None and truncation.max_length < specials:
        raise TokenizerError(
            f"{source}: max_length {truncation.max_length} leaves no room for the {specials} special tokens",
            hint=f"use a max_length of at least {specials + 1}",
        )
    normalizers = tuple(_normalizers(doc.get("normalizer"), source))
    pre = tuple(_pre_tokenizers(doc.get("pre_tokenizer"), source))
    components = tuple(
        [type(model).__name__]
        + [f"normalizer {type(n).__name__}" for n in normalizers]
        + [f"pre-tokenizer {type(p).__name__}" for p in pre]
    )
    return TokenizerSpec(model, normalizers, pre, tuple(template), added, truncation, padding, source, components)


def tokenizer_file(path: Path) -> Path:
    """``path`` itself, or the ``tokenizer.json`` in a directory (as ``save_pretrained`` writes it)."""
    if path.is_dir():
        candidate = path / "tokenizer.json"
        if not candidate.is_file():
            raise TokenizerError(
                f"{path} has no tokenizer.json",
                hint="pass the directory save_pretrained wrote (with a fast tokenizer) or the tokenizer.json itself",
            )
        return candidate
    if not path.is_file():
        raise TokenizerError(f"tokenizer {path} does not exist", hint="pass a tokenizer.json or the directory holding it")
    return path


def load(path: Path | str, *, max_length: int | None = None) -> TokenizerSpec:
    """Read a ``tokenizer.json`` (or the directory holding it) into a :class:`TokenizerSpec`."""
    file = tokenizer_file(Path(path))
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise TokenizerError(f"{file} cannot be read as JSON: {err}", hint="pass a tokenizer.json written by Hugging Face tokenizers") from err
    return from_json(doc, str(file), max_length=max_length)
