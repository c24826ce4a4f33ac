"""Replaying a corpus through the generated Kotlin tokenizer on the JVM (kotlinc + java, no Android).

:func:`compile_harness` compiles ``Tokenizer.kt`` with a small ``main`` once; :func:`replay` runs it on an
asset and a corpus and returns, per text, the ids, attention mask and token type ids it printed (one JSON
object a line), ready for :func:`mobilegen.tasks.text.parity.compare` against Hugging Face ``tokenizers``.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from mobilegen.errors import VerificationError
from mobilegen.tasks.text.generate import KOTLIN_SUBPACKAGE, kotlin_source
from mobilegen.tasks.text.parity import Triple

PACKAGE = "mobilegen.harness"
MAIN_CLASS = "mobilegen.harness.ReplayKt"

HARNESS_TEMPLATE = """package mobilegen.harness

import java.io.File
import mobilegen.harness.{sub}.MiniJson
import mobilegen.harness.{sub}.Tokenizer

// args: asset, corpus (one JSON string a line). Prints one JSON object a line: ids, mask, type_ids.
fun main(args: Array<String>) {
    val tokenizer = Tokenizer.fromJson(File(args[0]).readText(Charsets.UTF_8))
    val out = StringBuilder()
    for (line in File(args[1]).readLines(Charsets.UTF_8)) {
        val e = tokenizer.encode(MiniJson.parse(line) as String)
        out.append("{\\"ids\\":[").append(e.ids.joinToString(",")).append("],\\"mask\\":[")
            .append(e.attentionMask.joinToString(",")).append("],\\"type_ids\\":[").append(e.typeIds.joinToString(",")).append("]}\\n")
    }
    print(out)
}
"""
HARNESS = HARNESS_TEMPLATE.replace("{sub}", KOTLIN_SUBPACKAGE)


def stdlib_jar(kotlinc: Path) -> Path:
    return kotlinc.resolve().parent.parent / "lib" / "kotlin-stdlib.jar"


def _run(cmd: list[str], what: str, timeout: int = 900) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", timeout=timeout)
    if proc.returncode != 0:
        raise VerificationError(f"{what} failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}", hint="see the compiler or JVM output above")
    return proc.stdout


def compile_harness(kotlinc: Path, workdir: Path) -> Path:
    """``Tokenizer.kt`` (package ``mobilegen.harness.text``) and the replay ``main``, compiled into a jar."""
    workdir.mkdir(parents=True, exist_ok=True)
    source = workdir / "Tokenizer.kt"
    source.write_text(kotlin_source(PACKAGE), encoding="utf-8")
    main = workdir / "Replay.kt"
    main.write_text(HARNESS, encoding="utf-8")
    jar = workdir / "tokenizer-harness.jar"
    _run([str(kotlinc), "-nowarn", "-d", str(jar), str(source), str(main)], "kotlinc (the tokenizer harness)")
    return jar


def replay(jar: Path, kotlinc: Path, asset: Path, texts: Sequence[str], workdir: Path) -> list[Triple]:
    """The Kotlin tokenizer's encodings of ``texts`` with ``asset``."""
    corpus = workdir / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(t) + "\n" for t in texts), encoding="utf-8")
    classpath = os.pathsep.join([str(jar), str(stdlib_jar(kotlinc))])
    out = _run(["java", "-Dfile.encoding=UTF-8", "-cp", classpath, MAIN_CLASS, str(asset), str(corpus)], "the Kotlin tokenizer")
    triples = []
    for line in out.splitlines():
        doc = json.loads(line)
        triples.append((tuple(doc["ids"]), tuple(doc["mask"]), tuple(doc["type_ids"])))
    return triples
