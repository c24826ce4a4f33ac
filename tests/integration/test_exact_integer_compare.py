"""Integer and bool outputs are compared exactly by every generated test (issue 26 item 3).

* Kotlin, on the JVM: the generated ``ModelSupport`` and ``GoldenVectors`` (pure Kotlin) are compiled with
  kotlinc and run: 1001 vs 1000 of an int64 output is a mismatch (``atol + rtol·|e|`` accepted it), so is
  2^53 + 1 vs 2^53 (equal as doubles); golden tensors widen to long exactly.
* The generated golden tests (Kotlin androidTest, Swift XCTest; no Android device or Swift toolchain here)
  send integer outputs to the exact comparison and float ones to the tolerance: checked on the rendered
  source of a model with an int64 and a uint8 output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from android_specs import make_specs as android_specs
from ci import missing_tool
from ios_specs import make_specs as ios_specs
from ts_parsers import parser

from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.targets.android.project import render_android
from mobilegen.targets.ios.project import render_ios
from mobilegen.verify.golden import GoldenCase, encode_mgv

REPO = Path(__file__).resolve().parents[2]
DEFAULT_KOTLINC = REPO / ".tools" / "node_modules" / "kotlin-compiler" / "bin" / "kotlinc"

HARNESS = """
package mgexact

import java.io.File
import com.example.tiny_cnn.GoldenVectors
import com.example.tiny_cnn.ModelSupport

fun main(args: Array<String>) {
    println("int64 " + ModelSupport.mismatches(longArrayOf(1000L, 7L), longArrayOf(1001L, 7L)))
    println("int64-same " + ModelSupport.mismatches(longArrayOf(1000L, 7L), longArrayOf(1000L, 7L)))
    println("int64-2^53 " + ModelSupport.mismatches(longArrayOf(9007199254740993L), longArrayOf(9007199254740992L)))
    println("int32 " + ModelSupport.mismatches(ModelSupport.toLongs(intArrayOf(1000)), ModelSupport.toLongs(intArrayOf(1001))))
    println("uint8 " + ModelSupport.mismatches(ModelSupport.unsignedToLongs(byteArrayOf(-1, 3)), longArrayOf(255L, 4L)))
    println("bool " + ModelSupport.mismatches(ModelSupport.toLongs(booleanArrayOf(true, false)), longArrayOf(1L, 0L)))
    println("float " + ModelSupport.mismatches(doubleArrayOf(1000.0), doubleArrayOf(1001.0), 1e-4, 1e-3))
    val g = GoldenVectors.parse(File(args[0]).readBytes())
    for (t in g.outputs) println("golden " + t.name + " " + t.toLongs().joinToString(","))
}
"""


def _kotlinc() -> Path:
    path = Path(os.environ["KOTLINC"]) if os.environ.get("KOTLINC") else DEFAULT_KOTLINC
    if not path.is_file():
        missing_tool(f"kotlinc ({path}) not found; run `make tools` (or set $KOTLINC)")
    if shutil.which("java") is None:
        missing_tool("a JDK 17 (java) not found")
    return path


def _run(cmd: list[str], what: str) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"{what} failed (exit {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}")
    return proc.stdout


@pytest.mark.slow
def test_kotlin_model_support_compares_integer_outputs_exactly(tmp_path: Path) -> None:
    kotlinc = _kotlinc()
    spec, opts = android_specs(tmp_path / "inputs")["android_cnn"]
    tree = tmp_path / "android"
    render_android(spec, opts, tree)
    sources = sorted(p for p in tree.glob("*/src/main/kotlin/**/*.kt") if p.name in ("ModelSupport.kt", "GoldenVectors.kt"))
    assert len(sources) == 2
    harness = tmp_path / "Harness.kt"
    harness.write_text(HARNESS, encoding="utf-8")
    jar = tmp_path / "exact.jar"
    _run([str(kotlinc), "-nowarn", "-include-runtime", "-d", str(jar), *map(str, sources), str(harness)], "kotlinc")
    mgv = tmp_path / "ints.mgv"
    outputs = {
        "ids": np.array([1000, 9007199254740993, -5], np.int64),
        "mask": np.array([0, 255], np.uint8),
        "flags": np.array([True, False]),
        "count": np.array([2147483647], np.int32),
    }
    mgv.write_bytes(encode_mgv(GoldenCase({"x": np.zeros(1, np.float32)}, outputs)))
    lines = _run(["java", "-cp", str(jar), "mgexact.HarnessKt", str(mgv)], "the Kotlin harness").splitlines()
    got = dict(line.split(" ", 1) for line in lines if not line.startswith("golden "))
    assert got == {
        "int64": "[0]",  # 1001 is not 1000
        "int64-same": "[]",
        "int64-2^53": "[0]",
        "int32": "[0]",
        "uint8": "[1]",
        "bool": "[]",
        "float": "[]",  # float outputs keep their tolerance: 1001 within 1e-4 + 1e-3·1000
    }
    golden = [line.split(" ")[1:] for line in lines if line.startswith("golden ")]
    assert golden == [["ids", "1000,9007199254740993,-5"], ["mask", "0,255"], ["flags", "1,0"], ["count", "2147483647"]]


def _syntax_problems(language: str, source: bytes) -> list[str]:
    todo, bad = [parser(language).parse(source).root_node], []
    while todo:
        node = todo.pop()
        if node.type == "ERROR" or node.is_missing:
            bad.append(f"{node.type} at {node.start_point}")
        todo += node.children
    return bad


def _int_io(io: IOSpec) -> IOSpec:
    return IOSpec(io.inputs, (*io.outputs, TensorSpec("class_id", "int64", (1,)), TensorSpec("mask", "uint8", (1, 4))))


def test_generated_kotlin_golden_test_compares_integer_outputs_exactly(tmp_path: Path) -> None:
    spec, opts = android_specs(tmp_path / "inputs")["android_cnn"]
    tree = tmp_path / "android"
    render_android(replace(spec, io=_int_io(spec.io)), opts, tree)
    (test,) = tree.glob("*/src/androidTest/kotlin/**/*GoldenTest.kt")
    text = test.read_text(encoding="utf-8")
    calls = {m.group(2): m.group(1) for m in re.finditer(r"\b(compare|compareExact)\(failures, TinyCnn\.(\w+)_NAME", text)}
    assert calls == {"LOGITS": "compare", "CLASS_ID": "compareExact", "MASK": "compareExact"}, calls
    assert "ModelSupport.toLongs(outputs.classId)" in text and "ModelSupport.unsignedToLongs(outputs.mask)" in text
    assert "private fun compareExact(failures: MutableList<String>, name: String, expected: LongArray, actual: LongArray)" in text
    assert _syntax_problems("kotlin", text.encode()) == []
    # a float-only model has no exact comparison (and no unused helper)
    plain = tmp_path / "plain"
    render_android(spec, opts, plain)
    (plain_test,) = plain.glob("*/src/androidTest/kotlin/**/*GoldenTest.kt")
    assert "compareExact" not in plain_test.read_text(encoding="utf-8")


def test_generated_swift_golden_vectors_compare_integer_outputs_exactly(tmp_path: Path) -> None:
    spec, opts = ios_specs(tmp_path / "inputs")["ios_cnn"]
    tree = tmp_path / "ios"
    render_ios(replace(spec, io=_int_io(spec.io)), opts, tree)
    (golden,) = tree.glob("Tests/*/GoldenVectors.swift")
    text = golden.read_text(encoding="utf-8")
    body = text[text.index("func mismatches(") : text.index("static func compareExact")]
    calls = re.findall(r"problems \+= Self\.(compare|compareExact)\(\s*\"([^\"]+)\"", body)
    assert calls == [("compare", "logits"), ("compareExact", "class_id"), ("compareExact", "mask")], calls
    # integers stay in their own type: no map to Double on the exact path
    exact = body[body.index('Self.compareExact(\n            "class_id"') :]
    exact = exact[: exact.index("expectedShape")]
    assert "Double(" not in exact and "as: Int64.self" in exact
    helper = text[text.index("static func compareExact") :]
    helper = helper[: helper.index("\n    }\n")]
    assert "<T: BinaryInteger>" in helper and "actual[$0] != expected[$0]" in helper
    assert "atol" not in helper and "rtol" not in helper
    assert _syntax_problems("swift", text.encode()) == []
