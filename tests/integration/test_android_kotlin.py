"""The generated Android Kotlin, checked with real tools (no Android SDK needed):

* every .kt / .kts parses with tree-sitter-kotlin (no ERROR / MISSING nodes);
* the ORT-only core and the JVM helpers compile with kotlinc against tests/shims/ort_java;
* the compiled golden-vector reader reads .mgv files written by mobilegen.verify.golden, value for value;
* hostile tensor / model / package names always give a tree that parses and compiles, with no code
  injected (hypothesis; all examples are compiled in one kotlinc run).

kotlinc is slow (10-20 s per run): the fixed trees compile once per session, the hostile ones once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from android_specs import make_specs
from ci import missing_tool
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ts_parsers import parser

from mobilegen.artifacts import ProjectSpec
from mobilegen.errors import UsageError
from mobilegen.render.lang import kotlin as kt
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.targets.android.project import KOTLIN_TYPES, AndroidOptions, render_android
from mobilegen.verify.golden import GoldenCase, decode_mgv, encode_mgv

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SHIM = REPO / "tests" / "shims" / "ort_java"
DEFAULT_KOTLINC = REPO / ".tools" / "node_modules" / "kotlin-compiler" / "bin" / "kotlinc"


def _missing_tool(what: str) -> None:
    missing_tool(f"{what} not found; run `make tools` (or set $KOTLINC)")


def _kotlinc() -> Path:
    path = Path(os.environ["KOTLINC"]) if os.environ.get("KOTLINC") else DEFAULT_KOTLINC
    if not path.is_file():
        _missing_tool(f"kotlinc ({path})")
    if shutil.which("javac") is None or shutil.which("java") is None:
        _missing_tool("a JDK 17 (javac/java)")
    return path


def _stdlib(kotlinc: Path) -> Path:
    jar = kotlinc.resolve().parent.parent / "lib" / "kotlin-stdlib.jar"
    if not jar.is_file():
        _missing_tool(f"kotlin-stdlib.jar next to {kotlinc}")
    return jar


def _run(cmd: list[str], what: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        pytest.fail(f"{what} failed (exit {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}")
    return proc


def _compile(kotlinc: Path, shim_classes: Path, sources: list[Path], out_jar: Path) -> None:
    _run(
        [str(kotlinc), "-nowarn", "-cp", str(shim_classes), "-d", str(out_jar), *map(str, sources)],
        "kotlinc",
    )


def _bench_sources(tree: Path) -> list[Path]:
    """The benchmark's measuring core (androidTest, package <package>.bench): ORT and the JDK only."""
    return sorted(tree.glob("*/src/androidTest/kotlin/**/bench/*.kt"))


def _core_sources(tree: Path) -> list[Path]:
    """The ORT-only core and the pure-Kotlin helpers of a rendered project (no Android, no tests)."""
    main = [p for p in tree.glob("*/src/main/kotlin/**/*.kt") if p.relative_to(tree).parts[0] != "app"]
    return sorted(p for p in main if not p.name.endswith("Android.kt"))


# --- tree-sitter -------------------------------------------------------------------------------------

# parser("kotlin") skips only the tests that parse when tree-sitter-kotlin is not installed.


def _walk(node) -> Iterator:  # type: ignore[no-untyped-def]
    yield node
    for child in node.children:
        yield from _walk(child)


def _parse_problems(path: Path) -> list[str]:
    tree = parser("kotlin").parse(path.read_bytes())
    problems = []
    for node in _walk(tree.root_node):
        if node.type == "ERROR" or node.is_missing:
            problems.append(f"{path.name}:{node.start_point[0] + 1}: {node.type} {node.text[:60]!r}")
    return problems


def _kotlin_files(tree: Path) -> list[Path]:
    return sorted(p for p in tree.rglob("*") if p.suffix in (".kt", ".kts"))


# --- fixtures ----------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def fixed_trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("android_fixed")
    out = {}
    for name, (spec, opts) in make_specs(root / "inputs").items():
        out[name] = root / name
        render_android(spec, opts, out[name])
    # --qnn (onnxruntime-android-qnn): its core compiles with the others, its Gradle scripts parse.
    spec, opts = make_specs(root / "qnn_inputs")["android_cnn"]
    out["android_qnn"] = root / "android_qnn"
    qnn = AndroidOptions(qnn=True, qnn_htp_arch=75, nnapi=True, xnnpack=True, package="com.example.qnn")
    render_android(replace(spec, ort_version=""), qnn, out["android_qnn"])
    # Reused output buffers (issue 31): pinned float32/int64/bool/int8 outputs next to dynamic and empty ones.
    spec, opts = make_specs(root / "mixed_inputs")["android_cnn"]
    mixed = IOSpec(
        spec.io.inputs,
        (
            TensorSpec("scores", "float32", (1, 10)),
            TensorSpec("best", "int64", (1,)),
            TensorSpec("mask", "bool", (1, 10)),
            TensorSpec("q", "int8", (2, 3)),
            TensorSpec("boxes", "float32", ("n", 4)),
            TensorSpec("empty", "uint8", (0, 4)),
        ),
    )
    out["android_mixed_outputs"] = root / "android_mixed_outputs"
    render_android(replace(spec, io=mixed), replace(opts, package="com.example.mixed"), out["android_mixed_outputs"])
    return out


@pytest.fixture(scope="session")
def shim_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _kotlinc()
    out = tmp_path_factory.mktemp("ort_shim")
    _run(["javac", "-d", str(out), *map(str, sorted(SHIM.rglob("*.java")))], "javac (ORT shim)")
    return out


HARNESS = """
package mgharness

import java.io.File

fun hex(bytes: ByteArray): String = bytes.joinToString("") { "%02x".format(it.toInt() and 0xFF) }

// Dumps every tensor of a .mgv file: role, name (UTF-8 hex), dtype, shape, then the values
// (int64/uint64 as signed decimals, everything else as raw IEEE-754 bits of toDoubles()).
fun main(args: Array<String>) {
    val g = com.example.tiny_cnn.GoldenVectors.parse(File(args[0]).readBytes())
    for (t in g.inputs + g.outputs) {
        val values = when (t.dtype) {
            7, 13 -> t.asLongArray().joinToString(",")
            else -> t.toDoubles().joinToString(",") { java.lang.Long.toHexString(java.lang.Double.doubleToRawLongBits(it)) }
        }
        println(listOf(if (t.isInput) "in" else "out", hex(t.name.toByteArray(Charsets.UTF_8)), t.dtype, t.shape.joinToString("x"), values).joinToString(" "))
    }
}
"""


BENCH_HARNESS = """
package mgbench

import java.io.File

// The placement the benchmark core reads from an ORT profiling file, and the warm stats of the numbers given,
// as the core's own JSON.
fun main(args: Array<String>) {
    val out = com.example.tiny_cnn.bench.Json.Obj()
    out["placement"] = com.example.tiny_cnn.bench.Placement.fromProfile(File(args[0]).readText())
    out["warm"] = com.example.tiny_cnn.bench.ModelBenchmark.warmStats(args.drop(1).map { it.toDouble() }.toDoubleArray())
    out["text"] = "quote \\" backslash \\\\ ünï 😀"
    println(out)
}
"""


@pytest.fixture(scope="session")
def fixed_jar(fixed_trees: dict[str, Path], shim_classes: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    kotlinc = _kotlinc()
    work = tmp_path_factory.mktemp("kotlin_fixed")
    harness = work / "Harness.kt"
    harness.write_text(HARNESS, encoding="utf-8")
    bench_harness = work / "BenchHarness.kt"
    bench_harness.write_text(BENCH_HARNESS, encoding="utf-8")
    sources = [s for tree in fixed_trees.values() for s in (*_core_sources(tree), *_bench_sources(tree))] + [harness, bench_harness]
    jar = work / "fixed.jar"
    _compile(kotlinc, shim_classes, sources, jar)
    return jar


# --- tests on the two fixed trees ----------------------------------------------------------------


def test_core_sources_are_the_ort_only_core(fixed_trees: dict[str, Path]) -> None:
    names = sorted(p.name for p in _core_sources(fixed_trees["android_cnn"]))
    assert names == ["GoldenVectors.kt", "ModelSupport.kt", "TinyCnn.kt"]
    core = (fixed_trees["android_cnn"] / "tiny-cnn/src/main/kotlin/com/example/tiny_cnn/TinyCnn.kt").read_text()
    assert "import android." not in core and "OrtEnvironment.getEnvironment()" in core
    assert ".close()" in core and "env.close()" not in core


def test_every_kotlin_file_parses(fixed_trees: dict[str, Path]) -> None:
    problems = []
    count = 0
    for tree in fixed_trees.values():
        for path in _kotlin_files(tree):
            count += 1
            problems += _parse_problems(path)
    assert count >= 2 * 11
    assert not problems, "\n".join(problems)


def test_core_and_helpers_compile(fixed_jar: Path) -> None:
    import zipfile

    with zipfile.ZipFile(fixed_jar) as jar:
        names = set(jar.namelist())
    assert "com/example/tiny_cnn/TinyCnn.class" in names
    assert "com/example/textmodel/TextModel$Inputs.class" in names
    assert "com/example/textmodel/GoldenVectors.class" in names
    assert "com/example/tiny_cnn/TinyCnn$PinnedOutputs.class" in names
    assert "com/example/mixed/TinyCnn$PinnedOutputs.class" in names


def _all_dtypes_case() -> GoldenCase:
    rng = np.random.default_rng(7)
    inputs = {
        "f32 \"quoted\" $x": rng.standard_normal((2, 3)).astype(np.float32),
        "f64": rng.standard_normal((4,)),
        "i8": rng.integers(-128, 128, (5,), dtype=np.int8),
        "u8": rng.integers(0, 256, (1, 5), dtype=np.uint8),
        "i16": rng.integers(-(2**15), 2**15, (3,), dtype=np.int16),
        "u16": rng.integers(0, 2**16, (3,), dtype=np.uint16),
        "i32": rng.integers(-(2**31), 2**31, (2, 2), dtype=np.int32),
        "u32": rng.integers(0, 2**32, (3,), dtype=np.uint32),
        "scalar": np.array(3.25, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    outputs = {
        "i64": np.array([-(2**63), 2**63 - 1, 0, -5], dtype=np.int64),
        "u64": np.array([0, 2**64 - 1, 2**53 + 1], dtype=np.uint64),
        "bool": np.array([[True, False, True]]),
        "f16": np.array([0.5, -2.0, 65504.0, 6e-8, np.inf], dtype=np.float16),
        "ünïcødé 😀": rng.standard_normal((1, 2, 2)).astype(np.float32),
    }
    return GoldenCase(inputs, outputs)


def test_kotlin_golden_reader_agrees_with_python(fixed_jar: Path, tmp_path: Path) -> None:
    mgv = tmp_path / "all.mgv"
    mgv.write_bytes(encode_mgv(_all_dtypes_case()))
    # The reference is what Python reads back (note: encode_mgv stores a 0-d array with shape (1,)).
    case = decode_mgv(mgv.read_bytes())
    kotlinc = _kotlinc()
    classpath = os.pathsep.join([str(fixed_jar), str(_stdlib(kotlinc))])
    proc = _run(["java", "-cp", classpath, "mgharness.HarnessKt", str(mgv)], "the Kotlin golden reader")
    lines = proc.stdout.splitlines()
    tensors = [("in", n, a) for n, a in case.inputs.items()] + [("out", n, a) for n, a in case.outputs.items()]
    assert len(lines) == len(tensors)
    from mobilegen.spec import DTYPES

    for line, (role, name, arr) in zip(lines, tensors, strict=True):
        got_role, got_name, got_dtype, got_shape, *rest = line.split(" ")
        got_values = rest[0] if rest else ""
        assert got_role == role
        assert bytes.fromhex(got_name).decode("utf-8") == name
        assert int(got_dtype) == DTYPES[str(arr.dtype)]
        assert got_shape == "x".join(str(d) for d in arr.shape)
        flat = arr.reshape(-1)
        if arr.dtype in (np.int64, np.uint64):
            expected = [str(v) for v in flat.view(np.int64)]
        else:
            expected = [format(int(b) & 0xFFFFFFFFFFFFFFFF, "x") for b in flat.astype(np.float64).view(np.int64)]
        assert (got_values.split(",") if got_values else []) == expected, name


# --- hostile names (hypothesis) ----------------------------------------------------------------------

HOSTILE = [
    '"',
    "$",
    "${pwned()}",
    "$pwned",
    "*/ fun pwned() {} /*",
    "/*",
    "\\",
    '\\"); pwned(); val x = ("',
    'x"); pwned(); //',
    "\n} fun pwned() {\n",
    "\u2028pwned()",
    "é",
    "😀",
    "日本語",
    "class",
    "fun",
    "in",
    "int",
    "object",
    "1abc",
    "123",
    "",
    " ",
    "a.b",
    "a_b",
    "a-b",
    "aB",
    "ab",
    "inputs",
    "close",
    "INPUT_NAMES",
    "TAG",
    "Companion",
    "model",
    "MODEL_NAME",
    "input_names",
    "run",
    "options",
    "env",
    "session",
    "outputs",
    "out",
    "out_shape",
]

# Names of members the generated wrapper declares (and near misses): all in one model, compiled.
MEMBER_NAMES = [
    "model",
    "MODEL_NAME",
    "input_names",
    "close",
    "run",
    "options",
    "env",
    "session",
    "outputs",
    "Companion",
    "out",
    "out_shape",
    "outShape",
    "TAG",
    "ACCELERATED_ATOL",
    "lock",
    "create",
]
_names = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=10))
_dims = st.lists(st.one_of(st.integers(1, 4), st.sampled_from(["batch", "seq"])), min_size=0, max_size=3)
_tensor = st.tuples(_names, st.sampled_from(sorted(KOTLIN_TYPES)), _dims)


def _unique_by_name(items: list[tuple[str, str, list]]) -> list[tuple[str, str, list]]:  # type: ignore[type-arg]
    seen: set[str] = set()
    out = []
    for name, dtype, dims in items:
        if name not in seen:
            seen.add(name)
            out.append((name, dtype, dims))
    return out


def _is_pwned_code(path: Path) -> list[str]:
    """Calls to or declarations of ``pwned`` anywhere in the syntax tree (strings and comments are inert)."""
    tree = parser("kotlin").parse(path.read_bytes())
    hits = []
    for node in _walk(tree.root_node):
        if node.type == "call_expression" and node.children and node.children[0].text == b"pwned":
            hits.append(f"{path.name}:{node.start_point[0] + 1}: call {node.text[:60]!r}")
        if node.type == "function_declaration":
            name = node.child_by_field_name("name")
            if name is not None and name.text == b"pwned":
                hits.append(f"{path.name}:{node.start_point[0] + 1}: fun pwned")
    return hits


def test_hostile_names_parse_compile_and_inject_nothing(
    shim_classes: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    kotlinc = _kotlinc()
    root = tmp_path_factory.mktemp("android_hostile")
    model = root / "model.ort"
    model.write_bytes(b"fake")
    mgv = root / "golden.mgv"
    mgv.write_bytes(encode_mgv(GoldenCase({"x": np.zeros(1, np.float32)}, {})))
    rendered: list[Path] = []

    @given(
        model_name=_names,
        package=st.one_of(st.none(), st.sampled_from(HOSTILE + ["com.example.ok", "org.in.x", "a.b"])),
        inputs=st.lists(_tensor, min_size=1, max_size=3),
        outputs=st.lists(_tensor, min_size=1, max_size=3),
        nnapi=st.booleans(),
        xnnpack=st.booleans(),
    )
    @settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def example(model_name, package, inputs, outputs, nnapi, xnnpack) -> None:  # type: ignore[no-untyped-def]
        index = len(rendered)
        ins = [TensorSpec(n, d, tuple(s)) for n, d, s in _unique_by_name(inputs)]
        outs = [TensorSpec(n, d, tuple(s)) for n, d, s in _unique_by_name(outputs) if n not in {t.name for t in ins}]
        if not outs:
            outs = [TensorSpec("out" * (index + 2), "float32", (1,))]
        spec = ProjectSpec(
            model_name=model_name,
            io=IOSpec(tuple(ins), tuple(outs)),
            model_file=model,
            golden_mgv=mgv,
            atol=1e-4,
            rtol=1e-3,
            mobilegen_version=model_name,
        )
        if package is not None and not kt.validate_package(package):
            with pytest.raises(UsageError):
                render_android(spec, AndroidOptions(package=package), root / f"bad{index}")
            assert not (root / f"bad{index}").exists(), "nothing half-written is left behind"
            package = None
        # Every example is compiled in the same kotlinc run: give each its own package.
        base = package or kt.derive_package(model_name)
        opts = AndroidOptions(nnapi=nnapi, xnnpack=xnnpack, package=f"{base}.ex{index}")
        dest = root / f"ex{index}"
        render_android(spec, opts, dest)
        problems = []
        for path in _kotlin_files(dest):
            problems += _parse_problems(path)
            problems += _is_pwned_code(path)
        assert not problems, "\n".join(problems)
        rendered.append(dest)

    example()
    assert rendered
    # Every member-like name at once, as inputs (dynamic, so shape properties exist) and as outputs.
    half = len(MEMBER_NAMES) // 2
    members = ProjectSpec(
        model_name="model",
        io=IOSpec(
            tuple(TensorSpec(n, "float32", (1, "n")) for n in MEMBER_NAMES[:half]),
            tuple(TensorSpec(n, "float32", (2,)) for n in MEMBER_NAMES[half:]),
        ),
        model_file=model,
        golden_mgv=mgv,
        atol=1e-4,
        rtol=1e-3,
    )
    dest = root / "members"
    render_android(members, AndroidOptions(nnapi=True, nnapi_flags=("fp16",), package="com.example.members"), dest)
    problems = [p for path in _kotlin_files(dest) for p in _parse_problems(path)]
    assert not problems, "\n".join(problems)
    rendered.append(dest)
    sources = [s for tree in rendered for s in _core_sources(tree)]
    _compile(kotlinc, shim_classes, sources, root / "hostile.jar")


def test_benchmark_core_reads_profiles_like_python(fixed_jar: Path, shim_classes: Path, tmp_path: Path) -> None:
    """The device benchmark's Kotlin profile reader gives the placement mobilegen.bench.profile gives, on
    a file desktop onnxruntime recorded (and on the same file with XNNPACK and NNAPI placements spliced
    in); its JSON writer escapes text so Python reads it back."""
    import json

    from bench_helpers import record_profile, with_providers

    from mobilegen.bench.profile import read_profile

    recorded = record_profile(tmp_path, ["CPUExecutionProvider"])
    mixed = with_providers(
        recorded, tmp_path / "mixed.json", {"conv0": "XnnpackExecutionProvider", "relu0": "XnnpackExecutionProvider", "add0": "NnapiExecutionProvider"}
    )
    kotlinc = _kotlinc()
    classpath = os.pathsep.join([str(fixed_jar), str(shim_classes), str(_stdlib(kotlinc))])  # the shim: only loaded, never run
    for profile in (recorded, mixed):
        proc = _run(["java", "-cp", classpath, "mgbench.BenchHarnessKt", str(profile), "3", "1", "2", "5", "4"], "the Kotlin benchmark core")
        doc = json.loads(proc.stdout)
        assert doc["placement"] == read_profile(profile).to_json()
        assert doc["warm"] == {"n": 5, "min": 1.0, "p50": 3.0, "p90": 5.0, "mean": 3.0}
        assert doc["text"] == 'quote " backslash \\ ünï 😀'
    assert json.loads(_run(["java", "-cp", classpath, "mgbench.BenchHarnessKt", str(mixed), "1"], "core").stdout)["placement"]["partitions"] == 2
