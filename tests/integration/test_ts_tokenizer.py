"""The generated TypeScript tokenizer (templates/js/src/tokenizer.ts, the Web and React Native packages'
text tasks) in Node, id for id against Hugging Face ``tokenizers``: the real all-MiniLM-L6-v2 tokenizer
and the byte-level BPE / Unigram / WordPiece / SentencePiece-BPE tokenizers trained in
tests/text_tokenizers.py, each on the 500-text corpus the Kotlin port is tested on (the hard cases
included). tsc compiles the file as the packages do (strict, noUncheckedIndexedAccess), from the Web
package's pinned lock installed offline (.tools/npm-cache)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from js_packages import npm_ci, run
from text_tokenizers import TRAINED, minilm_tokenizer

from mobilegen.render.tree import templates_root
from mobilegen.tasks.text import asset as text_asset
from mobilegen.tasks.text import parity
from mobilegen.tasks.text import spec as text_spec
from mobilegen.tasks.text.parity import Triple

pytestmark = pytest.mark.slow  # an offline npm install and tsc: ~15 s, then ~1 s per tokenizer

REPLAY = """import { readFileSync } from 'node:fs';
import { Tokenizer } from './tokenizer.js';
// argv: asset, corpus (one JSON string a line). Prints one JSON object a line: ids, mask, type_ids.
const tokenizer = Tokenizer.fromJson(readFileSync(process.argv[2], 'utf8'));
const lines = readFileSync(process.argv[3], 'utf8').split('\\n').filter((l) => l !== '');
const out = [];
for (const line of lines) {
  const e = tokenizer.encode(JSON.parse(line));
  out.push(JSON.stringify({ ids: Array.from(e.ids, Number), mask: Array.from(e.attentionMask, Number), type_ids: Array.from(e.typeIds, Number) }));
}
process.stdout.write(out.join('\\n') + '\\n');
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ts_tokenizer")
    lock = json.loads((templates_root() / "web" / "package-lock.json").read_text())
    (root / "package.json").write_text(json.dumps({**lock["packages"][""], "private": True, "type": "module"}))
    shutil.copyfile(templates_root() / "web" / "package-lock.json", root / "package-lock.json")
    npm_ci(root)
    shutil.copyfile(templates_root() / "js" / "src" / "{{ tokenizer_file }}", root / "tokenizer.ts")
    (root / "replay.mjs").write_text(REPLAY)
    options = {"strict": True, "noUncheckedIndexedAccess": True, "target": "ES2022", "module": "ES2022", "moduleResolution": "Bundler",
               "lib": ["ES2022"], "types": [], "declaration": True}
    (root / "tsconfig.json").write_text(json.dumps({"compilerOptions": options, "files": ["tokenizer.ts"]}))
    tsc = run(["node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.json"], root)
    assert tsc.returncode == 0, tsc.stdout + tsc.stderr
    return root


def replay(root: Path, asset: Path, texts: list[str], tmp: Path) -> list[Triple]:
    corpus = tmp / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(t) + "\n" for t in texts), encoding="utf-8")
    done = run(["node", "replay.mjs", str(asset), str(corpus)], root)
    assert done.returncode == 0, done.stderr[-3000:]
    out = []
    for line in done.stdout.splitlines():
        doc = json.loads(line)
        out.append((tuple(doc["ids"]), tuple(doc["mask"]), tuple(doc["type_ids"])))
    return out


@pytest.fixture(scope="module")
def tokenizer_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("trained")
    return {"minilm": minilm_tokenizer(), **{name: train(root) for name, train in TRAINED.items()}}


@pytest.mark.parametrize("name", ["minilm", *TRAINED])
def test_typescript_ids_equal_hf_tokenizers(name: str, harness: Path, tokenizer_files: dict[str, Path], tmp_path: Path) -> None:
    path = tokenizer_files[name]
    asset = text_asset.write_asset(text_spec.load(path), tmp_path / "tokenizer.json")
    texts = parity.corpus(total=500)
    got = replay(harness, asset, texts, tmp_path)
    expected = parity.hf_encode(parity.hf_tokenizer(path), texts)
    assert parity.compare(texts, expected, got, "TypeScript") > 500


def test_typescript_mismatch_fails_the_gate(harness: Path, tokenizer_files: dict[str, Path], tmp_path: Path) -> None:
    """The comparison is live: an asset whose vocabulary lost a token gives other ids, and the gate says so."""
    asset = text_asset.to_asset(text_spec.load(tokenizer_files["minilm"]))
    asset["model"]["vocab"][7592] = None  # "hello"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(asset, ensure_ascii=False), encoding="utf-8")
    texts = ["Hello, world!", "nothing to see"]
    got = replay(harness, path, texts, tmp_path)
    with pytest.raises(parity.TokenizerParityError, match="1 of 2 texts, first 'Hello, world!'"):
        parity.compare(texts, parity.hf_encode(parity.hf_tokenizer(tokenizer_files["minilm"]), texts), got, "TypeScript")
