"""The generated Android task API (issue 14), compiled with kotlinc and run on the JVM (no Android SDK):

* every file of four task projects (classifier with and without in-graph top-k, ``--task image``,
  ``--task audio``) compiles — the pure-Kotlin helpers, the wrapper's task layer, the Android layer
  (Bitmap, mapped asset, coroutines) and the instrumented task test — against compile-only shims
  (tests/shims/ort_java, tests/shims/android_sdk) and the kotlinx-coroutines jar shipped with kotlinc;
* the Kotlin ``ImageInput`` gives ``mobilegen.tasks.reference.resize_crop``'s bytes exactly, with both
  ``--resize-filter``s, on the task golden images (mobilegen.tasks.golden) and on random images of many
  sizes, aspect ratios, resize and crop sizes, upscaling and downscaling, and on a 2 MP textured photo
  reduced to 224 (where the antialiased resize also equals Pillow's, the independent oracle); each
  project's ``ImageInput.FILTER`` is the one it was built with;
* the Kotlin labels reader reads the hostile labels the renderer wrote back exactly, and ``Scores.topK``
  ranks like the reference (ties to the lower index);
* ``classify`` defaults to the graph's K and clamps a larger topK; ``ModelSupport.rankingMismatches`` (the
  device tests' check of a TopK's ``indices``) accepts only near-tie swaps; the golden tests'
  ``expectedAccelerators`` follows the API level and the pinned AAR (QNN AAR: no NNAPI/XNNPACK);
  ``ModelSupport.crc32`` (the QNN context cache key) hashes like zlib without moving the buffer.

All projects and the harness compile in one kotlinc run (one to three minutes on a shared 2-core machine).
"""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from task_specs import HOSTILE_LABELS, PROJECTS, task_specs
from test_android_kotlin import SHIM, _kotlinc, _missing_tool, _run, _stdlib

from mobilegen.errors import UsageError
from mobilegen.targets.android.project import AndroidOptions, render_android
from mobilegen.tasks.reference import float_input, pcm16_input, resize_crop, stream, top_k
from mobilegen.tasks.spec import TaskSpec

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
ANDROID_SHIM = REPO / "tests" / "shims" / "android_sdk"

# Accelerators each project asks for: cls_all adds NNAPI (gated by the API level in the golden test's
# expectedAccelerators); cls_qnn is cls_topk on the QNN AAR, which has no NNAPI and no XNNPACK.
_OPTIONS = {"cls_all": {"nnapi": True, "xnnpack": True}}
QNN_OPTIONS = {"qnn": True, "nnapi": True, "xnnpack": True}


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("android_tasks")
    out = {}
    specs = task_specs(root)
    for name, spec in specs.items():
        out[name] = root / name
        opts = _OPTIONS.get(name, {"xnnpack": True})
        render_android(spec, AndroidOptions(**opts, package=f"com.example.tasks.{name}"), out[name])  # type: ignore[arg-type]
    out["cls_qnn"] = root / "cls_qnn"
    qnn = AndroidOptions(**QNN_OPTIONS, package="com.example.tasks.cls_qnn")  # type: ignore[arg-type]
    render_android(replace(specs["cls_topk"], ort_version=""), qnn, out["cls_qnn"])
    return out


@pytest.fixture(scope="module")
def shim_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _kotlinc()
    out = tmp_path_factory.mktemp("task_shims")
    sources = sorted(SHIM.rglob("*.java")) + sorted(ANDROID_SHIM.rglob("*.java"))
    _run(["javac", "-d", str(out), *map(str, sources)], "javac (ORT + Android shims)")
    return out


HARNESS = """
package mgtask

import com.example.tasks.cls_topk.ImageInput
import com.example.tasks.cls_topk.ResizeFilter
import com.example.tasks.cls_topk.Labels
import com.example.tasks.cls_topk.Scores
import java.io.File

fun hex(bytes: ByteArray): String = bytes.joinToString("") { "%02x".format(it.toInt() and 0xFF) }

// Commands, one per line of args[0]:
//   crop FILE W H SHORTER CH CW F -> hex of ImageInput.resizeCrop(fromRgba(FILE), filter F) (and the ARGB path agrees)
//   filter                        -> ImageInput.FILTER of cls_topk and of image
//   audio16 P v1,v2,...           -> AudioInput.fromPcm16 of project P (audio, audio_window): float bits in hex, or the error
//   audiof P b1,b2,...            -> AudioInput.fromFloat of the floats with those bits (hex), the same
//   audioconst P                  -> SAMPLE_RATE CHANNELS WINDOW_SAMPLES of project P
//   stream OP;OP;...              -> audio_stream's TinyCnnStream over a fake window function (fakeWindow), one line
//                                    per push: bits of output and of stateN; OPs: pcm16:v1,v2,.. | float:b1,b2,.. | reset
//   prepare FILE W H              -> hex of ImageInput.prepare(fromRgba(FILE)) (the project's own constants)
//   labels FILE                   -> one line per label: hex of its UTF-8
//   topk K v1,v2,...              -> indices of Scores.topK
//   classify TOPK                 -> DEFAULT_TOP_K, then the indices Scores.classify gives for the graph's top 3
//                                    (or the error); then the same on cls_all's every-class scores (no indices)
//   rank ATOL RTOL ei es ai as    -> ModelSupport.rankingMismatches (comma-separated arrays)
//   accel PROJECT SDK ACTIVE      -> expectedAccelerators(SDK) | missingAccelerators(expected, ACTIVE)
//   bench P                       -> BenchConfigs.DEFAULT / ALL and ModelBenchmark.preprocessing(1, 0) of project P
//   crc FILE OFFSET               -> CRC32 of FILE's bytes from OFFSET (a direct buffer), and whether its position moved
fun doubles(csv: String): DoubleArray = if (csv == "-") DoubleArray(0) else csv.split(",").map { it.toDouble() }.toDoubleArray()

// A stand-in for the graph (no ORT here): stateN = 0.5 * state + pcm[k % n] / 32768, output = stateN[0] + stateN[last].
fun fakeWindow(values: FloatArray, state: FloatArray): com.example.tasks.audio_stream.TinyCnn.Outputs {
    val next = FloatArray(state.size) { k -> 0.5f * state[k] + values[k % values.size] / 32768f }
    return com.example.tasks.audio_stream.TinyCnn.Outputs(
        output = floatArrayOf(next[0] + next[next.size - 1]),
        outputShape = longArrayOf(1L, 1L),
        stateN = next,
        stateNShape = longArrayOf(2L, 1L, 128L),
    )
}

fun attempt(block: () -> String): String = try { block() } catch (e: IllegalArgumentException) { "error: ${e.message}" }

fun main(args: Array<String>) {
    for (line in File(args[0]).readLines()) {
        val p = line.split(" ")
        when (p[0]) {
            "classify" -> {
                val k = p[1].toInt()
                val labels = List(11) { "L$it" }
                val graph = attempt {
                    Scores.classify(floatArrayOf(0.5f, 0.3f, 0.2f), longArrayOf(4L, 1L, 7L), labels, k).joinToString(",") { "${it.index}:${it.label}" }
                }
                val all = attempt {
                    val scores = FloatArray(11) { (it * 7 % 11).toFloat() }
                    com.example.tasks.cls_all.Scores.classify(scores, null, labels, k).joinToString(",") { it.index.toString() }
                }
                println("${Scores.DEFAULT_TOP_K} ${com.example.tasks.cls_all.Scores.DEFAULT_TOP_K} $graph | $all")
            }
            "rank" -> {
                val bad = com.example.tasks.cls_topk.ModelSupport.rankingMismatches(
                    doubles(p[3]), doubles(p[4]), doubles(p[5]), doubles(p[6]), p[1].toDouble(), p[2].toDouble(),
                )
                println(bad.joinToString(","))
            }
            "accel" -> {
                val sdk = p[2].toInt()
                val active = p[3].split(",")
                val expected = when (p[1]) {
                    "cls_topk" -> com.example.tasks.cls_topk.expectedAccelerators(sdk)
                    "cls_all" -> com.example.tasks.cls_all.expectedAccelerators(sdk)
                    "cls_qnn" -> com.example.tasks.cls_qnn.expectedAccelerators(sdk)
                    else -> error(p[1])
                }
                println(expected.joinToString(",") + " | " + com.example.tasks.cls_topk.missingAccelerators(expected, active).joinToString(","))
            }
            "crc" -> {
                val bytes = File(p[1]).readBytes()
                val buffer = java.nio.ByteBuffer.allocateDirect(bytes.size).put(bytes)
                buffer.position(p[2].toInt())
                val crc = com.example.tasks.cls_qnn.ModelSupport.crc32(buffer)
                println(java.lang.Long.toHexString(crc) + " " + buffer.position())
            }
            "crop", "prepare" -> {
                val w = p[2].toInt()
                val h = p[3].toInt()
                val rgba = File(p[1]).readBytes()
                val image = ImageInput.fromRgba(rgba, w, h)
                val argb = IntArray(w * h) { i ->
                    ((rgba[4 * i + 3].toInt() and 0xFF) shl 24) or ((rgba[4 * i].toInt() and 0xFF) shl 16) or
                        ((rgba[4 * i + 1].toInt() and 0xFF) shl 8) or (rgba[4 * i + 2].toInt() and 0xFF)
                }
                check(ImageInput.fromArgb(argb, w, h).pixels.contentEquals(image.pixels)) { "ARGB and RGBA paths differ" }
                val out = if (p[0] == "crop") {
                    ImageInput.resizeCrop(image, p[4].toInt(), p[5].toInt(), p[6].toInt(), ResizeFilter.valueOf(p[7]))
                } else {
                    ImageInput.prepare(image)
                }
                println("${out.width}x${out.height} " + hex(out.pixels))
            }
            "audio16", "audiof", "audioconst" -> {
                val window = p[1] == "audio_window"
                fun bits(values: FloatArray): String = values.joinToString(",") { "%08x".format(java.lang.Float.floatToRawIntBits(it)) }
                val out = attempt {
                    when (p[0]) {
                        "audioconst" -> if (window) {
                            "${com.example.tasks.audio_window.AudioInput.SAMPLE_RATE} ${com.example.tasks.audio_window.AudioInput.CHANNELS} ${com.example.tasks.audio_window.AudioInput.WINDOW_SAMPLES}"
                        } else {
                            "${com.example.tasks.audio.AudioInput.SAMPLE_RATE} ${com.example.tasks.audio.AudioInput.CHANNELS} ${com.example.tasks.audio.AudioInput.WINDOW_SAMPLES}"
                        }
                        "audio16" -> {
                            val pcm = p[2].split(",").map { it.toInt().toShort() }.toShortArray()
                            bits(if (window) com.example.tasks.audio_window.AudioInput.fromPcm16(pcm) else com.example.tasks.audio.AudioInput.fromPcm16(pcm))
                        }
                        else -> {
                            val xs = p[2].split(",").map { java.lang.Float.intBitsToFloat(java.lang.Long.parseLong(it, 16).toInt()) }.toFloatArray()
                            bits(if (window) com.example.tasks.audio_window.AudioInput.fromFloat(xs) else com.example.tasks.audio.AudioInput.fromFloat(xs))
                        }
                    }
                }
                println(out)
            }
            "stream" -> {
                val stream = com.example.tasks.audio_stream.TinyCnnStream(::fakeWindow)
                fun bits(values: FloatArray): String = values.joinToString(",") { "%08x".format(java.lang.Float.floatToRawIntBits(it)) }
                for (op in p[1].split(";")) {
                    val (kind, arg) = if (op == "reset") listOf("reset", "") else op.split(":")
                    when (kind) {
                        "reset" -> stream.reset()
                        "pcm16" -> stream.pushPcm16(arg.split(",").map { it.toInt().toShort() }.toShortArray())
                        else -> stream.pushFloat(arg.split(",").map { java.lang.Float.intBitsToFloat(java.lang.Long.parseLong(it, 16).toInt()) }.toFloatArray())
                    }.let { out -> if (out is com.example.tasks.audio_stream.TinyCnn.Outputs) println(bits(out.output) + " " + bits(out.stateN)) }
                }
            }
            "filter" -> println("${ImageInput.FILTER} ${com.example.tasks.image.ImageInput.FILTER}")
            // bench P -> the benchmark core's configurations of project P (names, the shipped default) and its
            // preprocessing rows (one timed call per source size), as one line of JSON
            "bench" -> println(
                when (p[1]) {
                    "cls_topk" -> com.example.tasks.cls_topk.bench.BenchConfigs.let { b ->
                        val o = com.example.tasks.cls_topk.bench.Json.Obj()
                        o["all"] = b.ALL.map { it.name }
                        o["providers"] = b.DEFAULT.providers
                        o["options"] = b.DEFAULT.options.keys.sorted()
                        o["shipped"] = b.DEFAULT.shippedDefault
                        o["min_api"] = b.DEFAULT.minApi
                        o["preprocessing"] = com.example.tasks.cls_topk.bench.ModelBenchmark.preprocessing(1, 0)
                        o.toString()
                    }
                    "cls_all" -> com.example.tasks.cls_all.bench.BenchConfigs.let { b ->
                        val o = com.example.tasks.cls_all.bench.Json.Obj()
                        o["all"] = b.ALL.map { it.name }
                        o["providers"] = b.DEFAULT.providers
                        o["options"] = b.DEFAULT.options.keys.sorted()
                        o["shipped"] = b.DEFAULT.shippedDefault
                        o["min_api"] = b.DEFAULT.minApi
                        o["preprocessing"] = com.example.tasks.cls_all.bench.ModelBenchmark.preprocessing(1, 0)
                        o.toString()
                    }
                    "image" -> com.example.tasks.image.bench.BenchConfigs.let { b ->
                        val o = com.example.tasks.image.bench.Json.Obj()
                        o["all"] = b.ALL.map { it.name }
                        o["providers"] = b.DEFAULT.providers
                        o["options"] = b.DEFAULT.options.keys.sorted()
                        o["shipped"] = b.DEFAULT.shippedDefault
                        o["min_api"] = b.DEFAULT.minApi
                        o["preprocessing"] = com.example.tasks.image.bench.ModelBenchmark.preprocessing(1, 0)
                        o.toString()
                    }
                    "audio" -> com.example.tasks.audio.bench.BenchConfigs.let { b ->
                        val o = com.example.tasks.audio.bench.Json.Obj()
                        o["all"] = b.ALL.map { it.name }
                        o["providers"] = b.DEFAULT.providers
                        o["options"] = b.DEFAULT.options.keys.sorted()
                        o["shipped"] = b.DEFAULT.shippedDefault
                        o["min_api"] = b.DEFAULT.minApi
                        o["preprocessing"] = com.example.tasks.audio.bench.ModelBenchmark.preprocessing(1, 0)
                        o.toString()
                    }
                    "cls_qnn" -> com.example.tasks.cls_qnn.bench.BenchConfigs.let { b ->
                        val o = com.example.tasks.cls_qnn.bench.Json.Obj()
                        o["all"] = b.ALL.map { it.name }
                        o["providers"] = b.DEFAULT.providers
                        o["options"] = b.DEFAULT.options.keys.sorted()
                        o["shipped"] = b.DEFAULT.shippedDefault
                        o["min_api"] = b.DEFAULT.minApi
                        o["preprocessing"] = com.example.tasks.cls_qnn.bench.ModelBenchmark.preprocessing(1, 0)
                        o.toString()
                    }
                    else -> error(p[1])
                }.replace("\\n", " "),
            )
            "labels" -> {
                val labels = Labels.parse(File(p[1]).readBytes())
                println(labels.joinToString(" ") { "[" + hex(it.toByteArray(Charsets.UTF_8)) + "]" })
            }
            "topk" -> {
                val scores = p[2].split(",").map { it.toFloat() }.toFloatArray()
                println(Scores.topK(scores, p[1].toInt()).joinToString(","))
            }
        }
    }
}
"""


BENCH_PROJECTS = ("cls_topk", "cls_all", "image", "audio", "cls_qnn")


def _sources(projects: dict[str, Path]) -> list[Path]:
    out = []
    for name, tree in projects.items():
        out += sorted(p for p in tree.glob("*/src/main/kotlin/**/*.kt") if p.relative_to(tree).parts[0] != "app")
        out += sorted(tree.glob("*/src/androidTest/kotlin/**/*TaskTest.kt"))
        out += sorted(tree.glob("*/src/androidTest/kotlin/**/*GoldenTest.kt"))
        if name in BENCH_PROJECTS:  # the benchmark's measuring core (ORT and the JDK only)
            out += sorted(tree.glob("*/src/androidTest/kotlin/**/bench/*.kt"))
    return out


@pytest.fixture(scope="module")
def task_jar(projects: dict[str, Path], shim_classes: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    kotlinc = _kotlinc()
    coroutines = kotlinc.resolve().parent.parent / "lib" / "kotlinx-coroutines-core-jvm.jar"
    if not coroutines.is_file():
        _missing_tool(f"kotlinx-coroutines-core-jvm.jar next to {kotlinc}")
    work = tmp_path_factory.mktemp("task_kotlin")
    harness = work / "Harness.kt"
    harness.write_text(HARNESS, encoding="utf-8")
    jar = work / "tasks.jar"
    classpath = os.pathsep.join([str(shim_classes), str(coroutines)])
    _run([str(kotlinc), "-nowarn", "-cp", classpath, "-d", str(jar), *map(str, _sources(projects)), str(harness)], "kotlinc (task projects)")
    return jar


def _harness(jar: Path, shim_classes: Path, commands: list[str], tmp: Path) -> list[str]:
    script = tmp / "commands.txt"
    script.write_text("\n".join(commands) + "\n", encoding="utf-8")
    classpath = os.pathsep.join([str(jar), str(_stdlib(_kotlinc())), str(shim_classes)])
    proc = subprocess.run(["java", "-cp", classpath, "mgtask.HarnessKt", str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout.splitlines()


def test_every_task_file_compiles(task_jar: Path, projects: dict[str, Path]) -> None:
    with zipfile.ZipFile(task_jar) as jar:
        names = set(jar.namelist())
    for expected in (
        "com/example/tasks/cls_topk/ImageInput.class",
        "com/example/tasks/cls_topk/TinyCnnTaskKt.class",
        "com/example/tasks/cls_topk/TinyCnnAndroid.class",
        "com/example/tasks/cls_topk/TinyCnnTaskTest.class",
        "com/example/tasks/cls_all/Scores.class",
        "com/example/tasks/image/RgbImage.class",
        "com/example/tasks/audio/TinyCnnTaskTest.class",
        "com/example/tasks/audio/AudioInput.class",
        "com/example/tasks/audio_window/TinyCnnTaskKt.class",
        "com/example/tasks/audio_stream/TinyCnnStream.class",
        "com/example/tasks/cls_topk/TinyCnnGoldenTestKt.class",  # expectedAccelerators, checkAccelerated
        "com/example/tasks/cls_topk/TinyCnnGoldenTest.class",
        "com/example/tasks/cls_qnn/TinyCnnTaskTest.class",
    ):
        assert expected in names
    # Audio has no image helpers; an image task no labels.
    assert "com/example/tasks/audio/ImageInput.class" not in names
    assert "com/example/tasks/image/Labels.class" not in names


def _random_images(rng: np.random.Generator) -> list[np.ndarray]:
    sizes = [(1, 1), (1, 5), (5, 1), (2, 2), (7, 13), (13, 7), (3, 100), (33, 50), (64, 48)]
    return [rng.integers(0, 256, (h, w, 4), dtype=np.uint8) for h, w in sizes]


# (shorter, crop h, crop w): up- and downscaling, square and not, crop = whole resized side and smaller.
CONFIGS = [(1, 1, 1), (4, 3, 4), (8, 8, 8), (9, 2, 9), (17, 16, 16), (30, 24, 13)]


def test_image_input_matches_the_python_reference_value_for_value(
    task_jar: Path, shim_classes: Path, projects: dict[str, Path], tmp_path: Path
) -> None:
    golden = projects["cls_topk"] / "tiny-cnn/src/androidTest/assets/tiny_cnn/task"
    cases = json.loads((golden / "cases.json").read_text(encoding="utf-8"))["cases"]
    images = [np.frombuffer((golden / c["pixels"]).read_bytes(), np.uint8).reshape(c["height"], c["width"], 4) for c in cases]
    images += _random_images(np.random.default_rng(14))
    commands: list[str] = []
    expected: list[str] = []
    task = PROJECTS["cls_topk"][0]
    assert task.resize_filter == "antialias" and PROJECTS["image"][0].resize_filter == "bilinear"
    for n, img in enumerate(images):
        path = tmp_path / f"img{n}.rgba"
        path.write_bytes(img.tobytes())
        h, w = img.shape[:2]
        for shorter, ch, cw in CONFIGS:
            for resize_filter in ("antialias", "bilinear"):
                ref = resize_crop(img, TaskSpec(kind="image", resize=shorter, crop=(ch, cw), resize_filter=resize_filter))
                commands.append(f"crop {path} {w} {h} {shorter} {ch} {cw} {resize_filter.upper()}")
                expected.append(f"{cw}x{ch} " + ref.tobytes().hex())
        commands.append(f"prepare {path} {w} {h}")
        expected.append(f"{task.crop[1]}x{task.crop[0]} " + resize_crop(img, task).tobytes().hex())  # type: ignore[index]
    got = _harness(task_jar, shim_classes, [*commands, "filter"], tmp_path)
    assert got[-1] == "ANTIALIAS BILINEAR"
    got = got[:-1]
    assert len(got) == len(expected)
    mismatches = [c for c, g, e in zip(commands, got, expected, strict=True) if g != e]
    assert not mismatches, mismatches[:5]
    assert len(images) >= 12 and len(commands) >= 12 * (2 * len(CONFIGS) + 1)


def _photo(h: int, w: int) -> np.ndarray:
    """RGBA: gradients, 2-4 pixel stripes and noise — what a reduction without a filter aliases."""
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    rgba = np.full((h, w, 4), 255, np.uint8)
    for c in range(3):
        stripes = np.sin((x * np.cos(0.6 * c + 0.2) + y * np.sin(0.6 * c + 0.2)) * (2 * np.pi / (2.0 + c)))
        rgba[..., c] = np.clip(90 + 60 * x / w + 40 * y / h + 70 * stripes + rng.uniform(-40, 40, (h, w)), 0, 255).astype(np.uint8)
    return rgba


def test_image_input_reduces_a_photo_as_pillow_does(task_jar: Path, shim_classes: Path, tmp_path: Path) -> None:
    """A 1600x1200 photo to 256 then 224x224 (and straight to 224): the Kotlin antialiased resize gives
    the reference's bytes, which are Pillow's BILINEAR resize (bit for bit here), while the bilinear
    2x2 taps miss Pillow by tens of steps on average."""
    from PIL import Image

    img = _photo(1200, 1600)
    path = tmp_path / "photo.rgba"
    path.write_bytes(img.tobytes())
    commands, expected, pillow = [], [], []
    for shorter in (256, 224):
        for resize_filter in ("antialias", "bilinear"):
            spec = TaskSpec(kind="image", resize=shorter, crop=(224, 224), resize_filter=resize_filter)  # type: ignore[arg-type]
            ref = resize_crop(img, spec)
            commands.append(f"crop {path} 1600 1200 {shorter} 224 224 {resize_filter.upper()}")
            expected.append("224x224 " + ref.tobytes().hex())
            nw = shorter * 1600 // 1200
            top, left = (shorter - 224) // 2, (nw - 224) // 2
            want = np.asarray(Image.fromarray(np.ascontiguousarray(img[..., :3])).resize((nw, shorter), Image.BILINEAR))
            pillow.append(np.abs(ref.astype(np.int16) - want[top : top + 224, left : left + 224].astype(np.int16)))
    got = _harness(task_jar, shim_classes, commands, tmp_path)
    assert got == expected
    for i in (0, 2):  # antialias: Pillow's bytes; bilinear: far off
        assert pillow[i].max() <= 1 and pillow[i].mean() <= 0.05
        assert pillow[i + 1].mean() > 5.0


def _float_bits(x: np.ndarray) -> str:
    return ",".join(f"{int(v):08x}" for v in np.asarray(x, dtype=np.float32).reshape(-1).view(np.uint32))


def test_audio_input_matches_the_python_reference(task_jar: Path, shim_classes: Path, tmp_path: Path) -> None:
    """Issue 26 item 8: AudioInput's constants, and fromPcm16 / fromFloat give pcm16_input / float_input's
    float32 values bit for bit (floats in [-1, 1] times 32768, exact); floats outside [-1, 1], NaN and a
    wrong window length are refused on both sides."""
    rng = np.random.default_rng(8)
    pcm = np.concatenate([np.array([-32768, -1, 0, 1, 32767], np.int16), rng.integers(-32768, 32768, 395).astype(np.int16)])
    floats = np.concatenate([np.array([-1.0, -0.0, 0.0, 1.0, 1.0 / 32768, 1e-40, 0.999999], np.float32), rng.uniform(-1, 1, 393).astype(np.float32)])
    cases = [
        ("audio16", "audio", pcm[:5]),
        ("audio16", "audio_window", pcm),
        ("audio16", "audio_window", pcm[:399]),  # wrong window
        ("audiof", "audio", floats[:7]),
        ("audiof", "audio_window", floats),
        ("audiof", "audio", np.array([0.5, 1.0001], np.float32)),  # int16 values passed as floats are refused
        ("audiof", "audio", np.array([0.5, 1200.0], np.float32)),
        ("audiof", "audio", np.array([np.nan], np.float32)),
    ]
    commands = ["audioconst audio", "audioconst audio_window"]
    expected = ["8000 1 0", "16000 1 400"]
    for cmd, project, values in cases:
        window = PROJECTS[project][0].window
        arg = ",".join(str(int(v)) for v in values) if cmd == "audio16" else _float_bits(values)
        commands.append(f"{cmd} {project} {arg}")
        try:
            ref = pcm16_input(values) if cmd == "audio16" else float_input(values)
            expected.append("error" if window is not None and values.size != window else _float_bits(ref))
        except UsageError:
            expected.append("error")
    got = _harness(task_jar, shim_classes, commands, tmp_path)
    assert [("error" if g.startswith("error: ") else g) for g in got] == expected
    assert sum(e == "error" for e in expected) == 4
    assert "the model takes 400 samples per run, got 399" in got[4] and "sample 1 is 1200.0" in got[8]


def test_stream_feeds_the_state_back_as_the_reference_does(task_jar: Path, shim_classes: Path, tmp_path: Path) -> None:
    """Issue 26 item 8: TinyCnnStream (audio_stream: --state state=stateN) runs on the JVM over a stand-in
    window function (the same float32 arithmetic in Kotlin and here; no ORT on the JVM): every push gets the
    state the previous one returned, from zeros, and reset() starts over — window for window what
    mobilegen.tasks.reference.stream gives, through pcm16_input / float_input."""
    spec = PROJECTS["audio_stream"][0]
    assert spec.state == (("state", "stateN"),) and spec.window == 400

    def fake(feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        values, state = feeds["pcm"].reshape(-1), feeds["state"].reshape(-1)
        nxt = (np.float32(0.5) * state + values[np.arange(state.size) % values.size] / np.float32(32768)).astype(np.float32)
        return [np.array([nxt[0] + nxt[-1]], np.float32), nxt.reshape(2, 1, 128)]

    rng = np.random.default_rng(26)
    windows = [rng.integers(-32768, 32768, 400).astype(np.int16) for _ in range(3)] + [rng.uniform(-1, 1, 400).astype(np.float32) for _ in range(2)]
    # pushes: w0, w1, f3, reset, w2, f4 — two streams for the reference
    ops = ["pcm16:" + ",".join(map(str, windows[0])), "pcm16:" + ",".join(map(str, windows[1])), "float:" + _float_bits(windows[3]), "reset",
           "pcm16:" + ",".join(map(str, windows[2])), "float:" + _float_bits(windows[4])]
    inputs = [pcm16_input(windows[0]), pcm16_input(windows[1]), float_input(windows[3]), pcm16_input(windows[2]), float_input(windows[4])]
    shapes = {"state": (2, 1, 128)}
    ref = stream(fake, spec, shapes, ["output", "stateN"], inputs[:3]) + stream(fake, spec, shapes, ["output", "stateN"], inputs[3:])
    got = _harness(task_jar, shim_classes, ["stream " + ";".join(ops)], tmp_path)
    assert got == [f"{_float_bits(o)} {_float_bits(s)}" for o, s in ref]
    # the state is really carried: the third push differs from the same window on a fresh stream
    assert _float_bits(stream(fake, spec, shapes, ["output", "stateN"], inputs[2:3])[0][1]) != got[2].split(" ")[1]


def test_labels_and_ranking_agree_with_python(task_jar: Path, shim_classes: Path, projects: dict[str, Path], tmp_path: Path) -> None:
    labels_file = projects["cls_topk"] / "tiny-cnn/src/main/assets/tiny_cnn/labels.txt"
    scores = [
        [0.1, 0.5, 0.5, 0.2],
        [3.0, -1.0, 3.0, 3.0, 0.0],
        [0.0] * 6,
        list(np.random.default_rng(3).standard_normal(10).astype(np.float32)),
    ]
    commands = [f"labels {labels_file}"] + [f"topk 3 {','.join(repr(float(v)) for v in s)}" for s in scores]
    got = _harness(task_jar, shim_classes, commands, tmp_path)
    read_back = [bytes.fromhex(part.strip("[]")).decode("utf-8") for part in got[0].split(" ")]
    assert read_back == list(HOSTILE_LABELS)
    for line, s in zip(got[1:], scores, strict=True):
        _, order = top_k(np.asarray(s, dtype=np.float32)[None], 3)
        assert line == ",".join(str(int(i)) for i in order[0])


def test_classify_defaults_to_the_graphs_k_and_clamps_a_larger_top_k(task_jar: Path, shim_classes: Path, tmp_path: Path) -> None:
    """--top-k 3: classify() without topK gives 3 classes, a larger topK is clamped (never the old
    "topK 5 is more than ..." error), topK < 1 is refused; without in-graph TopK the default is 5."""
    got = _harness(task_jar, shim_classes, ["classify 1", "classify 3", "classify 5", "classify 50", "classify 0"], tmp_path)
    assert got[0] == "3 5 4:L4 | 3"
    assert got[1] == "3 5 4:L4,1:L1,7:L7 | 3,6,9"
    assert got[2] == "3 5 4:L4,1:L1,7:L7 | 3,6,9,1,4"
    assert got[3].startswith("3 5 4:L4,1:L1,7:L7 | ") and len(got[3].split(" | ")[1].split(",")) == 11
    assert got[4] == "3 5 error: topK must be >= 1, got 0 | error: topK must be >= 1, got 0"


# (atol, rtol, golden indices, golden scores, actual indices, actual scores) -> positions reported
RANKING_CASES = [
    ((0.01, 0.0, "4,1,7", "0.5,0.3,0.2", "4,1,7", "0.5,0.3,0.2"), ""),
    # a near-tie swap of classes 1 and 7 (golden scores 0.300 / 0.295): accepted, though |1 - 7| = 6 >> atol
    ((0.01, 0.0, "4,1,7", "0.5,0.3,0.295", "4,7,1", "0.5,0.298,0.297"), ""),
    # the same swap without a tie (0.3 vs 0.2): both positions reported
    ((0.01, 0.0, "4,1,7", "0.5,0.3,0.2", "4,7,1", "0.5,0.3,0.2"), "1,2"),
    # indices 4 and 5 are within atol of each other as numbers (the old check passed them) but different
    # classes whose scores do not tie: reported
    ((1.0, 0.0, "4,1", "90.0,10.0", "5,1", "20.0,10.0"), "0"),
    # a class outside the golden top k enters at the end with a tied score: accepted; a far one is not
    ((0.01, 0.0, "4,1,7", "0.5,0.3,0.2", "4,1,9", "0.5,0.3,0.195"), ""),
    ((0.01, 0.0, "4,1,7", "0.5,0.3,0.2", "4,1,9", "0.5,0.3,0.1"), "2"),
    # rtol counts, relative to the golden score at the position
    ((0.0, 0.1, "0,2", "10.0,9.5", "2,0", "10.0,9.5"), ""),
]


def test_ranking_mismatches_tolerate_only_near_tie_swaps(task_jar: Path, shim_classes: Path, tmp_path: Path) -> None:
    commands = [f"rank {a} {r} {ei} {es} {ai} {as_}" for (a, r, ei, es, ai, as_), _ in RANKING_CASES]
    got = _harness(task_jar, shim_classes, commands, tmp_path)
    assert got == [want for _, want in RANKING_CASES]


def test_accelerated_tests_expect_the_accelerators_the_runtime_has(task_jar: Path, shim_classes: Path, tmp_path: Path) -> None:
    """expectedAccelerators (the golden and task tests' checkAccelerated): NNAPI from API 27 only, XNNPACK
    always on onnxruntime-android; on the QNN AAR only QNN (it has no NNAPI/XNNPACK); a missing one is named."""
    commands = [
        "accel cls_topk 24 CPU",
        "accel cls_topk 34 XNNPACK,CPU",
        "accel cls_all 26 XNNPACK,CPU",
        "accel cls_all 27 XNNPACK,CPU",
        "accel cls_all 34 NNAPI[USE_FP16],XNNPACK,CPU",
        "accel cls_qnn 34 QNN(htp),CPU",
        "accel cls_qnn 34 CPU",
    ]
    got = _harness(task_jar, shim_classes, commands, tmp_path)
    assert got == [
        "XNNPACK | XNNPACK",
        "XNNPACK | ",
        "XNNPACK | ",
        "NNAPI,XNNPACK | NNAPI",
        "NNAPI,XNNPACK | ",
        "QNN | ",
        "QNN | QNN",
    ]


def test_qnn_context_crc_hashes_like_zlib_without_moving_the_buffer(task_jar: Path, shim_classes: Path, tmp_path: Path) -> None:
    """ModelSupport.crc32 (the QNN context cache key; CRC32.update(ByteBuffer) is API 26, minSdk 24):
    chunked through update(ByteArray, off, len), from the buffer's position, which it leaves alone."""
    data = np.random.default_rng(6).integers(0, 256, 200_003, dtype=np.uint8).tobytes()  # > 3 chunks of 64 KiB
    path = tmp_path / "model.bin"
    path.write_bytes(data)
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    got = _harness(task_jar, shim_classes, [f"crc {path} 0", f"crc {path} 7", f"crc {empty} 0"], tmp_path)
    assert got == [f"{zlib.crc32(data):x} 0", f"{zlib.crc32(data[7:]):x} 7", "0 0"]


def test_benchmark_times_the_shipped_default_first_and_the_preprocessing_per_size(
    task_jar: Path, shim_classes: Path, tmp_path: Path
) -> None:
    """BenchConfigs.DEFAULT is the chain create() with default Options builds (mobilegen.targets.defaults:
    the options' providers the pinned AAR has, by rank), listed first; ModelBenchmark.preprocessing times
    ImageInput.prepare per source size, rows the result schema accepts, whose output sizes are the Python
    reference's. Timings are not checked."""
    import jsonschema

    from mobilegen.bench import schema_document
    from mobilegen.targets.android import runtime
    from mobilegen.targets.defaults import BENCH_IMAGE_SIZES

    lines = _harness(task_jar, shim_classes, [f"bench {n}" for n in BENCH_PROJECTS], tmp_path)
    got = {n: json.loads(line) for n, line in zip(BENCH_PROJECTS, lines, strict=True)}
    ort = {"qnn": "QNNExecutionProvider", "nnapi": "NnapiExecutionProvider", "xnnpack": "XnnpackExecutionProvider"}
    expected = {
        "cls_topk": ["XnnpackExecutionProvider"],
        "cls_all": ["NnapiExecutionProvider", "XnnpackExecutionProvider"],
        "image": ["XnnpackExecutionProvider"],
        "audio": ["XnnpackExecutionProvider"],
        "cls_qnn": ["QNNExecutionProvider"],  # onnxruntime-android-qnn has no NNAPI, no XNNPACK
    }
    schema = schema_document()
    row_schema = {"$defs": schema["$defs"], "$ref": "#/$defs/preprocessing"}
    for name, doc in got.items():
        opts = AndroidOptions(**(QNN_OPTIONS if name == "cls_qnn" else _OPTIONS.get(name, {"xnnpack": True})))  # type: ignore[arg-type]
        assert doc["all"][:2] == ["default", "cpu"], name
        assert doc["all"] == runtime.bench_configs(opts), name
        assert doc["providers"] == expected[name] + ["CPUExecutionProvider"], name
        assert doc["providers"] == [ort[p] for p in runtime.shipped_default(opts)] + ["CPUExecutionProvider"], name
        assert doc["shipped"] == "android" and doc["min_api"] == (27 if name == "cls_all" else 0), name
        if "XnnpackExecutionProvider" in doc["providers"]:
            assert "intra_op_num_threads" in doc["options"] and "session.intra_op.allow_spinning" in doc["options"]
        rows = doc["preprocessing"]
        spec = PROJECTS[name if name != "cls_qnn" else "cls_topk"][0]
        if not spec.is_image:
            assert rows == [], name
            continue
        assert [(r["name"], r["source_width"], r["source_height"], r["status"]) for r in rows] == [
            (f"image-{w}x{h}", w, h, "ok") for w, h in BENCH_IMAGE_SIZES
        ]
        for r, (w, h) in zip(rows, BENCH_IMAGE_SIZES, strict=True):
            jsonschema.validate(r, row_schema)
            ref = resize_crop(np.zeros((h, w, 3), np.uint8), spec)
            assert (r["output_width"], r["output_height"]) == (ref.shape[1], ref.shape[0]) and r["warm"]["n"] == 1
