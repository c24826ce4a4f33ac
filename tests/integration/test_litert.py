"""``--runtime litert`` end to end (needs the [litert] extra: `make test-litert` runs it in its own environment;
the main environment skips it).

The oracle is PyTorch: the build's verification gate runs the .tflite with ai-edge-litert on the same seeded
cases as the .onnx/.ort and against the same reference outputs (the golden vectors). The generated Kotlin is
compiled with kotlinc against tests/shims/litert_kotlin, whose signatures are copied from LiteRT's sources.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

pytestmark = [
    pytest.mark.litert,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("litert_torch") is None, reason="litert-torch not installed (make test-litert runs this)"),
]

from ci import missing_tool  # noqa: E402
from cli_helpers import assert_fails, invoke  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "mobilenet_tiny.pt"
SHIM = REPO / "tests" / "shims" / "litert_kotlin"
SDK_SHIM = REPO / "tests" / "shims" / "android_sdk"
KOTLINC = Path(os.environ["KOTLINC"]) if os.environ.get("KOTLINC") else REPO / ".tools" / "node_modules" / "kotlin-compiler" / "bin" / "kotlinc"


def _tokens_model(path: Path) -> Path:
    """A static int64-token model (embedding, mean, linear) as torch.export's .pt2: the int64 → int32 path."""
    import torch
    from torch import nn

    class Tokens(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(50, 16)
            self.fc = nn.Linear(16, 4)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.fc(self.emb(ids).mean(dim=1))

    torch.manual_seed(0)
    ep = torch.export.export(Tokens().eval(), (torch.zeros(1, 8, dtype=torch.int64),))
    torch.export.save(ep, str(path))
    return path


def _build(out: Path, *args: object) -> dict:  # type: ignore[type-arg]
    r = invoke("android", *args, "--runtime", "litert", "-o", out, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("litert")
    out = {"cnn": d / "cnn", "tokens": d / "tokens", "int8": d / "int8"}
    results = {
        "cnn": _build(out["cnn"], EXAMPLE, "--input", "image:1x3x64x64"),
        "tokens": _build(out["tokens"], _tokens_model(d / "tokens.pt2"), "--range", "ids=0:50", "--package", "com.example.tokens"),
        "int8": _build(out["int8"], EXAMPLE, "--input", "image:1x3x64x64", "--quantize", "int8", "--calibration", "random", "--package", "com.example.q"),
    }
    for name, r in results.items():
        (d / f"{name}.result.json").write_text(json.dumps(r))  # beside the package: verify refuses unlisted files
    return out


def _rows(build: Path) -> list[dict]:  # type: ignore[type-arg]
    return json.loads((build.parent / f"{build.name}.result.json").read_text())["verification"]["rows"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", ["cnn", "tokens"])
def test_the_tflite_is_gated_against_pytorch_beside_the_ort(builds: dict[str, Path], name: str) -> None:
    rows = _rows(builds[name])
    litert = [r for r in rows if r["artifact"] == "litert"]
    ort = [r for r in rows if r["artifact"] == "ort"]
    assert litert and len(litert) == len(ort)  # every case, every output
    assert all(r["passed"] and r["max_abs"] < 1e-4 and r["cosine"] > 0.9999 for r in litert), litert
    manifest = json.loads((builds[name] / "manifest.json").read_text())
    (rec,) = manifest["options"]["runtimes"]
    assert rec["runtime"] == "litert" and rec["platforms"] == ["android"] and rec["file"] == "model/model.tflite"
    assert (builds[name] / rec["file"]).stat().st_size == rec["bytes"]


def test_the_host_gate_agrees_with_an_independent_litert_run(builds: dict[str, Path]) -> None:
    """The shipped .tflite, run with LiteRT's CompiledModel API (not the gate's Interpreter), reproduces
    PyTorch's golden outputs."""
    from ai_edge_litert.compiled_model import CompiledModel
    from ai_edge_litert.hardware_accelerator import HardwareAccelerator

    golden = np.load(builds["cnn"] / "golden" / "golden.npz")
    cm = CompiledModel.from_file(str(builds["cnn"] / "model" / "model.tflite"), hardware_accel=HardwareAccelerator.CPU)
    ins, outs = cm.create_input_buffers(0), cm.create_output_buffers(0)
    ins[0].write(np.ascontiguousarray(golden["input:image"], dtype=np.float32).reshape(-1))
    cm.run_by_index(0, ins, outs)
    expected = golden["output:output"]
    got = np.asarray(outs[0].read(expected.size, np.float32)).reshape(expected.shape)
    assert np.abs(got - expected).max() < 1e-4


def test_int8_goes_through_the_accuracy_gate(builds: dict[str, Path]) -> None:
    manifest = json.loads((builds["int8"] / "manifest.json").read_text())
    (rec,) = manifest["options"]["runtimes"]
    acc = rec["quantization"]["accuracy"]
    assert rec["quantization"]["mode"] == "int8" and acc["passed"] and acc["samples"] >= 2
    assert acc["outputs"][0]["cosine"] >= acc["min_cosine"]
    from mobilegen.backends.litert import inspect

    shipped = inspect(builds["int8"] / "model" / "model.tflite")
    assert shipped.int8_io  # the int8 model replaced the fp32 one it was judged against
    assert not (builds["int8"] / "model" / "model.int8.tflite").exists()


def test_int8_below_the_accuracy_threshold_fails_with_exit_5(tmp_path: Path) -> None:
    out = tmp_path / "o"
    r = invoke("android", EXAMPLE, "--input", "image:1x3x64x64", "--runtime", "litert", "--quantize", "int8", "--calibration", "random",
               "--min-cosine", "0.99999999", "-o", out)
    assert_fails(r, 5, "the quantized model lost too much accuracy", "cosine")
    assert not out.exists()


def test_the_project_is_on_litert_only(builds: dict[str, Path]) -> None:
    android = builds["cnn"] / "android"
    text = "\n".join(p.read_text(errors="replace") for p in android.rglob("*") if p.is_file() and p.suffix in (".kt", ".kts", ".toml"))
    assert "onnxruntime" not in text and "ai.onnxruntime" not in text
    assert 'litert = "2.3.0"' in (android / "gradle" / "libs.versions.toml").read_text()
    assert 'include(":mobilenet-tiny")' in (android / "settings.gradle.kts").read_text()
    assets = list(android.rglob("model.tflite"))
    assert len(assets) == 1 and assets[0].read_bytes() == (builds["cnn"] / "model" / "model.tflite").read_bytes()
    (wrapper,) = android.rglob("MobilenetTiny.kt")
    src = wrapper.read_text()
    # the accelerator chain, each accelerator alone, the CPU last, every failure reported
    assert "Accelerator.GPU" in src and "Accelerator.NPU" in src and "chain.add(Accelerator.CPU)" in src
    assert src.index("Accelerator.GPU") < src.index("Accelerator.NPU") < src.index("chain.add(Accelerator.CPU)")
    assert "skipped.add(" in src and "writeFloat(inputs.image)" in src
    tokens = _wrapper(builds["tokens"]).read_text()
    assert "writeInt(narrow(" in tokens
    q = _wrapper(builds["int8"]).read_text()
    assert "writeInt8(quantize(inputs.image, " in q and "dequantize(outs[0].readInt8(), " in q


def _wrapper(build: Path) -> Path:
    (found,) = (p for p in (build / "android").rglob("*.kt") if "/src/main/" in p.as_posix())
    return found


def test_the_project_has_golden_and_benchmark_instrumented_tests(builds: dict[str, Path]) -> None:
    """androidTest: the golden-vector test and the benchmark on the LiteRT wrapper; their golden vectors are the
    package's (PyTorch's outputs) for a float model, the int8 .tflite's own outputs on the same inputs for int8."""
    from mobilegen.backends.litert import host_runner
    from mobilegen.verify.golden import decode_mgv

    for name in ("cnn", "int8"):
        tests = builds[name] / "android" / "mobilenet-tiny" / "src" / "androidTest"
        kt = {p.relative_to(tests).as_posix().split("/")[-1] for p in tests.rglob("*.kt")}
        assert kt == {"MobilenetTinyGoldenTest.kt", "MobilenetTinyBenchmarkTest.kt", "GoldenVectors.kt", "LiteRtBenchmark.kt"}, kt
    asset = decode_mgv(next((builds["cnn"] / "android").rglob("androidTest/assets/**/*.mgv")).read_bytes())
    package = decode_mgv((builds["cnn"] / "golden" / "golden.mgv").read_bytes())
    assert asset.inputs.keys() == package.inputs.keys() and all(np.array_equal(asset.outputs[k], package.outputs[k]) for k in package.outputs)
    q = decode_mgv(next((builds["int8"] / "android").rglob("androidTest/assets/**/*.mgv")).read_bytes())
    ref = decode_mgv((builds["int8"] / "golden" / "golden.mgv").read_bytes())
    assert all(np.array_equal(q.inputs[k], ref.inputs[k]) for k in ref.inputs)
    (got,) = host_runner(builds["int8"] / "model" / "model.tflite")(dict(ref.inputs))
    (out,) = q.outputs.values()
    assert np.array_equal(out, got) and not np.array_equal(out, next(iter(ref.outputs.values())))
    src = _wrapper(builds["int8"]).read_text()
    assert "const val ACCELERATED_ATOL: Double = " in src


JVM_HARNESS = """package com.example.mobilenet_tiny

import android.app.Instrumentation
import android.content.Context
import android.content.pm.ApplicationInfo
import android.content.res.AssetManager
import android.os.Bundle
import androidx.test.platform.app.InstrumentationRegistry
import com.example.mobilenet_tiny.bench.DeviceInfo
import com.example.mobilenet_tiny.bench.LiteRtBenchmark
import com.example.mobilenet_tiny.bench.LiteRtConfigs
import java.io.File
import org.junit.AssumptionViolatedException

class HarnessContext(private val files: File) : Context() {
    override fun getAssets(): AssetManager = AssetManager()
    override fun getApplicationInfo(): ApplicationInfo = ApplicationInfo()
    override fun getFilesDir(): File = files
}

class HarnessInstrumentation(private val c: Context) : Instrumentation() {
    override fun getContext(): Context = c
    override fun getTargetContext(): Context = c
}

// args: files dir [, benchmark JSON out]. Runs the generated instrumented golden test's methods as JUnit would.
fun main(args: Array<String>) {
    val context = HarnessContext(File(args[0]))
    InstrumentationRegistry.registerInstance(HarnessInstrumentation(context), Bundle())
    val test = MobilenetTinyGoldenTest()
    val cases = listOf<Pair<String, () -> Unit>>("cpu" to { test.goldenVectorsOnCpu() }, "accelerated" to { test.goldenVectorsAccelerated() })
    for ((name, body) in cases) {
        val verdict = try { body(); "PASS" } catch (e: AssumptionViolatedException) { "SKIP " + e.message } catch (e: AssertionError) { "FAIL " + e.message }
        println(("$name " + verdict).replace("\\n", " "))
    }
    if (args.size > 1) {
        val model = context.assets.open(MobilenetTiny.MODEL_ASSET).use { it.readBytes() }
        val golden = GoldenVectors.parse(context.assets.open(MobilenetTiny.GOLDEN_ASSET).use { it.readBytes() })
        val json = LiteRtBenchmark(model, golden) { o -> MobilenetTiny.newInstance(context, o) }
            .run(LiteRtConfigs.ALL, 3, 1, DeviceInfo("JVM harness", null, "JVM", null))
        File(args[1]).writeText(json)
    }
}
"""

FAKES = REPO / "tests" / "fakes"


@pytest.fixture(scope="module")
def compiled(builds: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every generated project's Kotlin (main and androidTest) compiled with kotlinc against the LiteRT and Android
    shims, with two JVM harnesses; and the runtime fakes (tests/fakes) they run against."""
    if not KOTLINC.is_file() or shutil.which("javac") is None:
        missing_tool(f"kotlinc ({KOTLINC}) and a JDK; run `make tools`")
    root = tmp_path_factory.mktemp("kotlin")
    sdk, fakes = root / "sdk", root / "fakes"
    subprocess.run(["javac", "-d", str(sdk), *map(str, sorted(SDK_SHIM.rglob("*.java")))], check=True, capture_output=True)
    java_fakes = sorted((FAKES / "android_sdk").rglob("*.java")) + sorted((FAKES / "android_test").rglob("*.java"))
    subprocess.run(["javac", "-cp", str(sdk), "-d", str(fakes), *map(str, java_fakes)], check=True, capture_output=True)
    sources = sorted(SHIM.rglob("*.kt")) + [p for b in builds.values() for p in sorted((b / "android").rglob("*.kt"))]
    harness = root / "Harness.kt"  # runs the int8 wrapper's own quantize/dequantize on the JVM (no LiteRT needed)
    harness.write_text(
        "package com.example.q\n"
        "fun main(args: Array<String>) {\n"
        "    val xs = args[0].split(\",\").map { it.toFloat() }.toFloatArray()\n"
        "    val q = MobilenetTiny.quantize(xs, args[1].toFloat(), args[2].toInt())\n"
        "    println(q.joinToString(\",\"))\n"
        "    println(MobilenetTiny.dequantize(q, args[3].toFloat(), args[4].toInt()).joinToString(\",\"))\n"
        "}\n",
        encoding="utf-8",
    )
    jvm_harness = root / "JvmHarness.kt"
    jvm_harness.write_text(JVM_HARNESS, encoding="utf-8")
    jar = root / "out.jar"
    # against the fakes first (AssetManager's hidden no-argument constructor), then the shims
    cp = os.pathsep.join([str(fakes), str(sdk)])
    proc = subprocess.run([str(KOTLINC), "-nowarn", "-cp", cp, "-d", str(jar), *map(str, sources), str(harness), str(jvm_harness)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-6000:]
    fake_litert = root / "fake-litert.jar"  # the fake's Model.kt / TensorBuffer.kt with the shim's Common.kt / LiteRtException.kt
    fake_sources = sorted((FAKES / "litert_kotlin").rglob("*.kt")) + [p for p in sorted(SHIM.rglob("*.kt")) if p.name in ("Common.kt", "LiteRtException.kt")]
    proc = subprocess.run([str(KOTLINC), "-nowarn", "-cp", cp, "-d", str(fake_litert), *map(str, fake_sources)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-6000:]
    stdlib = KOTLINC.resolve().parent.parent / "lib" / "kotlin-stdlib.jar"
    return {"jar": jar, "sdk": sdk, "fakes": fakes, "fake_litert": fake_litert, "stdlib": stdlib}


def test_the_wrappers_compile_against_the_litert_api(builds: dict[str, Path], compiled: dict[str, Path]) -> None:
    jar = compiled["jar"]

    # The oracle: LiteRT's own quantization parameters of the int8 model (its Interpreter), and TFLite's
    # affine int8 formula q = clamp(round(x / scale) + zero_point), x = (q - zero_point) * scale.
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(builds["int8"] / "model" / "model.tflite"))
    runner = it.get_signature_runner()
    (inp,) = runner.get_input_details().values()
    (outp,) = runner.get_output_details().values()
    (s_in, z_in), (s_out, z_out) = inp["quantization"], outp["quantization"]
    xs = np.linspace(-6.0, 6.0, 97, dtype=np.float32) + np.float32(0.013)  # past both clamps, no .5 ties
    stdlib = compiled["stdlib"]
    run = subprocess.run(["java", "-cp", os.pathsep.join([str(jar), str(stdlib)]), "com.example.q.HarnessKt", ",".join(map(repr, xs.tolist())),
                          repr(float(s_in)), str(z_in), repr(float(s_out)), str(z_out)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    q_line, dq_line = run.stdout.split()
    expected_q = np.clip(np.round(xs / np.float32(s_in)) + z_in, -128, 127).astype(np.int8)
    assert np.array_equal(np.array(q_line.split(","), dtype=np.int64), expected_q.astype(np.int64))
    got_dq = np.array(dq_line.split(","), dtype=np.float32)
    assert np.allclose(got_dq, (expected_q.astype(np.float32) - z_out) * np.float32(s_out), rtol=0, atol=1e-6)


def test_verify_reruns_the_golden_vectors_on_the_tflite(builds: dict[str, Path]) -> None:
    r = invoke("verify", builds["cnn"], "--json")
    assert r.exit_code == 0, r.stderr
    rows = [g for g in json.loads(r.stdout)["golden"] if g["model"] == "model/model.tflite"]
    assert rows and all(g["passed"] and g["max_abs"] < 1e-4 for g in rows), rows


def test_bench_times_the_tflite_beside_the_ort_rows(builds: dict[str, Path]) -> None:
    """``mobilegen bench`` on the package: the ORT rows, then the .tflite on ai-edge-litert in the same schema;
    the session it times reproduces PyTorch's golden outputs from the golden inputs (so the row timed the
    right model on the right inputs); a bare .tflite is one row, hashed as its bytes."""
    import hashlib

    from bench_helpers import assert_runtime_row_timed

    from mobilegen.backends.litert import open_session
    from mobilegen.bench import run_host_bench

    result = run_host_bench(builds["cnn"], runs=3, warmup=1)
    assert_runtime_row_timed(result, builds["cnn"], "litert", "ai-edge-litert", "model/model.tflite", open_session, runs=3)

    tflite = builds["cnn"] / "model" / "model.tflite"
    r = invoke("bench", tflite, "--runs", "2", "--warmup", "0", "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ort_version"] == "none" and doc["model_sha256"] == hashlib.sha256(tflite.read_bytes()).hexdigest()
    assert [(c["name"], c["status"], c["warm"]["n"]) for c in doc["configurations"]] == [("litert", "ok", 2)]


def test_bench_of_an_unloadable_tflite_is_a_load_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"garbage")
    assert_fails(invoke("bench", bad, "-o", tmp_path / "r.json"), 3, "ai-edge-litert cannot load bad.tflite")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.tflite"]


def _run_harness(compiled: dict[str, Path], build: Path, tmp: Path, outputs: list[np.ndarray], accelerators: str, bench: bool = False) -> tuple[list[str], Path]:
    """The generated androidTest's golden test (and the benchmark) on the JVM, the LiteRT fake returning ``outputs``."""
    assets = tmp / "assets"
    for sub in ("main", "androidTest"):
        shutil.copytree(build / "android" / "mobilenet-tiny" / "src" / sub / "assets", assets, dirs_exist_ok=True)
    out_file, record = tmp / "outputs.txt", tmp / "record.txt"
    out_file.write_text("".join("float:" + ",".join(repr(float(v)) for v in np.asarray(o, np.float32).reshape(-1)) + "\n" for o in outputs))
    props = {"fakeandroid.assets": assets, "fakelitert.inputs": 1, "fakelitert.outputs": out_file, "fakelitert.record": record, "fakelitert.accelerators": accelerators}
    cp = os.pathsep.join(str(compiled[k]) for k in ("fake_litert", "fakes", "jar", "sdk", "stdlib"))
    args = [str(tmp / "files")] + ([str(tmp / "bench.json")] if bench else [])
    proc = subprocess.run(["java", *(f"-D{k}={v}" for k, v in props.items()), "-cp", cp, "com.example.mobilenet_tiny.JvmHarnessKt", *args],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout.splitlines(), record


def test_the_instrumented_tests_run_on_the_jvm_against_a_litert_fake(builds: dict[str, Path], compiled: dict[str, Path], tmp_path: Path) -> None:
    """The generated GoldenTest and LiteRtBenchmark run on the JVM through the wrapper, against tests/fakes' LiteRT
    (it records the inputs written and returns outputs computed by the real LiteRT, ai-edge-litert, from the golden
    inputs): the wrapper writes the golden inputs exactly, the CPU test passes, the accelerated one skips when
    only the CPU compiles and passes when the GPU does, a 0.05 shift fails the CPU test, and the benchmark's JSON
    validates against the result schema with a row per configuration."""
    import jsonschema

    from mobilegen.backends.litert import host_runner
    from mobilegen.bench import schema_document
    from mobilegen.verify.golden import decode_mgv

    build = builds["cnn"]
    golden = decode_mgv(next((build / "android").rglob("androidTest/assets/**/*.mgv")).read_bytes())
    (x,) = golden.inputs.values()
    outputs = host_runner(build / "model" / "model.tflite")(dict(golden.inputs))

    lines, record = _run_harness(compiled, build, tmp_path / "cpu", outputs, "CPU")
    assert lines[0] == "cpu PASS", lines
    assert lines[1].startswith("accelerated SKIP no accelerator compiled the model on this device") and "GPU (LiteRT could not compile" in lines[1], lines
    kind, values = record.read_text().strip().split(":")
    assert kind == "float" and np.array_equal(np.array(values.split(","), dtype=np.float32), x.astype(np.float32).reshape(-1))

    lines, _ = _run_harness(compiled, build, tmp_path / "gpu", outputs, "GPU,CPU", bench=True)
    assert lines == ["cpu PASS", "accelerated PASS"], lines
    doc = json.loads((tmp_path / "gpu" / "bench.json").read_text())
    jsonschema.Draft202012Validator(schema_document()).validate(doc)
    rows = {c["name"]: c for c in doc["configurations"]}
    assert [(n, c["status"], c["ep"], c["providers"]) for n, c in rows.items()] == [
        ("default", "ok", "gpu", ["LiteRT GPU"]), ("gpu", "ok", "gpu", ["LiteRT GPU"]), ("npu", "skipped", "npu", ["LiteRT CPU"]), ("cpu", "ok", "cpu", ["LiteRT CPU"]),
    ]
    assert rows["default"]["shipped_default"] == "android" and rows["cpu"]["warm"]["n"] == 3 and "NPU (LiteRT could not compile" in rows["npu"]["reason"]
    assert doc["model_sha256"] == hashlib.sha256((build / "model" / "model.tflite").read_bytes()).hexdigest() and doc["ort_version"] == "none"

    # the device-shaped result merges into the package's report (it measured the package's .tflite)
    package = Path(shutil.copytree(build, tmp_path / "pkg"))
    r = invoke("report", package, "--results", tmp_path / "gpu" / "bench.json")
    assert r.exit_code == 0, r.stderr
    report = (package / "report" / "report.md").read_text()
    assert "JVM harness · JVM" in report and all(f"| {name} |" in report for name in ("default", "gpu", "cpu")), report[-3000:]
    assert invoke("verify", package).exit_code == 0

    lines, _ = _run_harness(compiled, build, tmp_path / "shifted", [o + np.float32(0.05) for o in outputs], "CPU")
    assert lines[0].startswith("cpu FAIL accelerator [CPU]: output 'output':") and "outside atol=" in lines[0], lines
