"""Text tasks end to end through the CLI (issue 29), on models built from ``transformers`` configs with
tokenizers trained here (tests/text_tokenizers.py):

* a tiny BERT + WordPiece (left truncation and padding) through ``--task text-embedding`` for Android (NNAPI: the
  sequence length fixed) and iOS (CoreML); a tiny RoBERTa + byte-level BPE through ``--task
  text-classification`` at a dynamic sequence length, its labels from the HF config's id2label;
* the shipped ``.ort`` answers what PyTorch + numpy pooling answer on the ids Hugging Face ``tokenizers``
  gives (the independent oracles), the parity gate's record says 0 mismatches, the tokenizer ships as data;
* every generated Kotlin file compiles with kotlinc against the ORT/Android shims, the Swift task file parses;
* a tokenizer whose ids differ fails the build with exit 5 naming the text, before anything is written.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.text_tokenizers import train_byte_level_bpe, train_wordpiece

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SAMPLES = ["A short sentence.", "Another, somewhat longer sentence about phones and tokenizers: café, 日本語, 😀!"]


def _trace(model: object, length: int, dest: Path, with_types: bool, name: str) -> Path:
    import torch

    class WithTypes(torch.nn.Module):
        def __init__(self, m: torch.nn.Module) -> None:
            super().__init__()
            self.m = m

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
            return self.m(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids, return_dict=False)[0]

    class IdsAndMask(torch.nn.Module):
        def __init__(self, m: torch.nn.Module) -> None:
            super().__init__()
            self.m = m

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.m(input_ids=input_ids, attention_mask=attention_mask, return_dict=False)[0]

    ex = [torch.full((1, length), 5, dtype=torch.long), torch.ones(1, length, dtype=torch.long)]
    if with_types:
        ex.append(torch.zeros(1, length, dtype=torch.long))
    path = dest / f"{name}.pt"  # its own name: its own Kotlin package, so one kotlinc run compiles all three
    torch.jit.trace((WithTypes if with_types else IdsAndMask)(model), tuple(ex), strict=False).save(str(path))  # type: ignore[arg-type]
    return path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "mobilegen", *args], capture_output=True, text=True, env=env, timeout=900)


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import torch
    from tokenizers import Tokenizer
    from transformers import BertConfig, BertModel

    root = tmp_path_factory.mktemp("bert")
    tok = train_wordpiece(root)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=Tokenizer.from_file(str(tok)).get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64)
    model = BertModel(cfg).eval()
    pt = _trace(model, 40, tok.parent, with_types=True, name="bert")
    torch.save(model, root / "torch_model.bin")
    samples = root / "samples.txt"
    samples.write_text("\n".join(SAMPLES) + "\n", encoding="utf-8")
    out = root / "pkg"
    shape = "1x40:int64"
    proc = _cli("package", str(pt), "--task", "text-embedding", "--sample", str(samples), "--android", "--nnapi", "--ios", "--coreml", "-o", str(out),
                "--input", f"input_ids:{shape}", "--input", f"attention_mask:{shape}", "--input", f"token_type_ids:{shape}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"out": out, "tok": tok, "root": root, "model": root / "torch_model.bin"}


@pytest.fixture(scope="module")
def roberta(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import torch
    from tokenizers import Tokenizer
    from transformers import RobertaConfig, RobertaForSequenceClassification

    root = tmp_path_factory.mktemp("roberta")
    tok = train_byte_level_bpe(root)
    torch.manual_seed(0)
    cfg = RobertaConfig(vocab_size=Tokenizer.from_file(str(tok)).get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=80, pad_token_id=1, num_labels=3,
                        id2label={0: "negative", 1: "neutral \"quoted\" $x", 2: "positive"}, label2id={"negative": 0, "neutral \"quoted\" $x": 1, "positive": 2})
    model = RobertaForSequenceClassification(cfg).eval()
    pt = _trace(model, 64, tok.parent, with_types=False, name="roberta")
    cfg.save_pretrained(tok.parent)  # config.json beside the model: the labels
    torch.save(model, root / "torch_model.bin")
    out = root / "pkg"
    proc = _cli("package", str(pt), "--task", "text-classification", "--android", "--ios", "-o", str(out),
                "--input", "input_ids:1xseq:int64", "--input", "attention_mask:1xseq:int64")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"out": out, "tok": tok, "root": root, "model": root / "torch_model.bin"}


@pytest.fixture(scope="module")
def tagger(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny BERT token classifier (per-token softmax), dynamic sequence length, labels from --labels."""
    import torch
    from tokenizers import Tokenizer
    from transformers import BertConfig, BertForTokenClassification

    root = tmp_path_factory.mktemp("tagger")
    tok = train_wordpiece(root)
    torch.manual_seed(1)
    cfg = BertConfig(vocab_size=Tokenizer.from_file(str(tok)).get_vocab_size(), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64, num_labels=4)
    model = BertForTokenClassification(cfg).eval()
    pt = _trace(model, 40, tok.parent, with_types=True, name="tagger")
    torch.save(model, root / "torch_model.bin")
    labels = root / "labels.txt"
    labels.write_text("O\nB-PER\nI-PER\nB-LOC\n", encoding="utf-8")
    out = root / "pkg"
    proc = _cli("package", str(pt), "--task", "token-classification", "--labels", str(labels), "--android", "--ios", "-o", str(out),
                "--input", "input_ids:1x40:int64", "--input", "attention_mask:1x40:int64", "--input", "token_type_ids:1x40:int64")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"out": out, "tok": tok, "root": root, "model": root / "torch_model.bin"}


def _manifest_task(out: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((out / "manifest.json").read_text())["options"]["task"]  # type: ignore[no-any-return]


def test_gate_record_and_the_tokenizer_ships_as_data(bert: dict[str, Path], roberta: dict[str, Path]) -> None:
    for case, algorithm, seq in ((bert, "WordPiece", 40), (roberta, "Bpe", None)):
        task = _manifest_task(case["out"])
        rec = task["tokenizer"]
        assert rec["algorithm"] == algorithm and rec["parity"]["mismatches"] == 0 and rec["parity"]["strings"] >= 500
        assert task["sequence_length"] == seq
        shipped = sorted(p.relative_to(case["out"]).as_posix() for p in case["out"].rglob("tokenizer.json"))
        assert any("src/main/assets/" in p for p in shipped) and any("/Resources/tokenizer.json" in p for p in shipped)
        assert not list(case["out"].rglob("*.kt")) or all("vocab" not in p.read_text(encoding="utf-8")[:0] for p in case["out"].rglob("*.kt"))
        tokens_in_source = [p for p in [*case["out"].rglob("*.kt"), *case["out"].rglob("*.swift")] if "[UNK]" in p.read_text(encoding="utf-8") or "Ġthe" in p.read_text(encoding="utf-8")]
        assert tokens_in_source == []
    assert _manifest_task(bert["out"])["tokenizer"]["sample_lengths"]["texts"] == len(SAMPLES)
    assert _manifest_task(roberta["out"])["labels"] == 3
    assert (roberta["out"] / "model" / "labels.txt").read_text(encoding="utf-8") == "negative\nneutral \"quoted\" $x\npositive\n"


def _torch_reference(model_file: Path, ids: list[int], mask: list[int], kind: str) -> np.ndarray:
    import torch

    model = torch.load(model_file, weights_only=False)
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), attention_mask=torch.tensor([mask]), return_dict=False)[0].numpy()
    if kind == "text-embedding":
        m = np.asarray(mask, dtype=np.float32)[None, :, None]
        v = (out * m).sum(1) / m.sum(1)
        return v / np.linalg.norm(v, axis=-1, keepdims=True)  # type: ignore[no-any-return]
    e = np.exp(out - out.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)  # type: ignore[no-any-return]


@pytest.mark.parametrize("which", ["bert", "roberta", "tagger"])
def test_shipped_ort_matches_pytorch_on_hf_tokenizer_ids(which: str, request: pytest.FixtureRequest) -> None:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    case = request.getfixturevalue(which)
    kind = {"bert": "text-embedding", "roberta": "text-classification", "tagger": "token-classification"}[which]
    hf = Tokenizer.from_file(str(case["tok"]))
    for ort_file in sorted(case["out"].glob("model/*/model.ort")):
        sess = ort.InferenceSession(str(ort_file), providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        for text in [*SAMPLES, "Hello, world!", "x" * 90]:
            e = hf.encode(text)
            feeds = {"input_ids": [e.ids], "attention_mask": [e.attention_mask], "token_type_ids": [e.type_ids]}
            got = sess.run(None, {n: np.asarray(feeds[n], dtype=np.int64) for n in names})[0]
            want = _torch_reference(case["model"], e.ids, e.attention_mask, kind)
            np.testing.assert_allclose(got, want, atol=2e-5, rtol=1e-4, err_msg=f"{ort_file} on {text!r}")


def test_text_golden_cases_hold_hf_ids(bert: dict[str, Path]) -> None:
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(str(bert["tok"]))
    doc = json.loads(next(bert["out"].glob("golden/**/task/cases.json")).read_text(encoding="utf-8"))
    assert doc["kind"] == "text-embedding" and doc["inputs"] == ["input_ids", "attention_mask", "token_type_ids"]
    assert len(doc["cases"]) == 5
    for case in doc["cases"]:
        assert case["input_ids"] == hf.encode(case["text"]).ids


def test_kotlin_text_api_compiles(bert: dict[str, Path], roberta: dict[str, Path], tagger: dict[str, Path], tmp_path: Path) -> None:
    from test_android_kotlin import SHIM, _kotlinc, _run

    kotlinc = _kotlinc()
    coroutines = kotlinc.resolve().parent.parent / "lib" / "kotlinx-coroutines-core-jvm.jar"
    shims = tmp_path / "shims"
    sources = sorted(SHIM.rglob("*.java")) + sorted((REPO / "tests" / "shims" / "android_sdk").rglob("*.java"))
    _run(["javac", "-d", str(shims), *map(str, sources)], "javac (ORT + Android shims)")
    kt = []
    for case in (bert, roberta, tagger):
        tree = case["out"] / "android"
        kt += sorted(p for p in tree.glob("*/src/main/kotlin/**/*.kt") if p.relative_to(tree).parts[0] != "app")
        kt += sorted(tree.glob("*/src/androidTest/kotlin/**/*TaskTest.kt")) + sorted(tree.glob("*/src/androidTest/kotlin/**/*GoldenTest.kt"))
    assert any(p.name == "Tokenizer.kt" for p in kt) and sum(p.name.endswith("Task.kt") for p in kt) == 3
    assert sum(p.name.endswith("TaskTest.kt") for p in kt) == 3  # the golden texts replayed on the device
    kt += [_readme_snippet(case["out"], tmp_path) for case in (bert, roberta, tagger)]
    # each model has its own name, hence its own Kotlin package: one kotlinc run for the three projects
    _run([str(kotlinc), "-nowarn", "-cp", os.pathsep.join([str(shims), str(coroutines)]), "-d", str(tmp_path / "text.jar"), *map(str, kt)],
         "kotlinc (text task projects)")


def _readme_snippet(out: Path, tmp_path: Path) -> Path:
    """The text-task example of the project's README, compiled with the library: its calls exist as written."""
    readme = (out / "android" / "README.md").read_text(encoding="utf-8")
    assert "audio contract" not in readme
    blocks = re.findall(r"```kotlin\n(.*?)```", readme, flags=re.S)
    (snippet,) = [b for b in blocks if ".text(context)" in b]
    task = next(p for p in (out / "android").glob("*/src/main/kotlin/**/*Task.kt"))
    package = re.search(r"^package (\S+)", task.read_text(encoding="utf-8"), flags=re.M).group(1)  # type: ignore[union-attr]
    class_name = task.name.removesuffix("Task.kt")
    dest = tmp_path / f"{class_name}Readme.kt"
    body = "\n".join("    " + line for line in snippet.splitlines())
    dest.write_text(f"package {package}\n\nfun readmeExample(model: {class_name}, context: android.content.Context) {{\n{body}\n}}\n", encoding="utf-8")
    return dest


def test_swift_text_api_parses(bert: dict[str, Path], roberta: dict[str, Path], tagger: dict[str, Path]) -> None:
    from test_ios_swift import syntax_problems

    for case, api in ((bert, "func embed("), (roberta, "func classify(_ text: String"), (tagger, "func classifyTokens(_ text: String")):
        files = {p.name: p.read_bytes() for p in (case["out"] / "ios").rglob("*.swift")}
        task = next(v for k, v in files.items() if k.endswith("+Task.swift"))
        assert api.encode() in task and "TextTokenizer.swift" in files
        readme = (case["out"] / "ios" / "README.md").read_text(encoding="utf-8")
        assert "tokenizer.json" in readme and "audio" not in readme.split("Task API", 1)[1].split("\n\n", 1)[0]
        call = api.removeprefix("func ").split("(")[0]
        assert f"try await model.{call}(" in readme, call
        assert b"func testTokenizerMatchesHuggingFace()" in next(v for k, v in files.items() if k.endswith("TaskTests.swift"))
        # the asset the wrapper loads with Bundle.module is a declared resource (SwiftPM bundles no undeclared .json)
        sources = next((case["out"] / "ios" / "Sources").iterdir())
        assert (sources / "Resources" / "tokenizer.json").is_file()
        assert '.copy("Resources/tokenizer.json")' in (case["out"] / "ios" / "Package.swift").read_text(encoding="utf-8")
        for name, source in files.items():
            assert syntax_problems(source) == [], name


def test_a_tokenizer_that_differs_fails_the_build_with_exit_5(bert: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The oracle is swapped for one that lowercases nothing (as if the generated tokenizer had dropped a
    normalizer): the build stops at the gate, exit 5, naming a text, and writes nothing."""
    from cli_helpers import invoke

    from mobilegen.tasks.text import parity

    doc = json.loads(bert["tok"].read_text(encoding="utf-8"))
    doc["normalizer"] = {"type": "NFC"}
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc), encoding="utf-8")
    real = parity.hf_tokenizer
    monkeypatch.setattr(parity, "hf_tokenizer", lambda path, max_length=None: real(other, max_length=max_length))
    out = tmp_path / "pkg"
    shape = "1x40:int64"
    result = invoke("package", bert["tok"].parent / "bert.pt", "--task", "text-embedding", "--ios", "-o", out,
                    "--input", f"input_ids:{shape}", "--input", f"attention_mask:{shape}", "--input", f"token_type_ids:{shape}")
    assert result.exit_code == 5, result.stderr
    assert "differs from Hugging Face tokenizers" in result.stderr and "first '" in result.stderr
    assert not out.exists()
