"""The generated Android task API (issue 14), compiled with kotlinc and run on the JVM (no Android SDK):

* every file of four task projects (classifier with and without in-graph top-k, ``--task image``,
  ``--task audio``) compiles — the pure-Kotlin helpers, the wrapper's task layer, the Android layer
  (Bitmap, mapped asset, coroutines) and the instrumented task test — against compile-only shims
  (tests/shims/ort_java, tests/shims/android_sdk) and the kotlinx-coroutines jar shipped with kotlinc;
* the Kotlin ``ImageInput`` gives ``mobilegen.tasks.reference.resize_crop``'s bytes exactly, on the
  task golden images (mobilegen.tasks.golden) and on random images of many sizes, aspect ratios,
  resize and crop sizes, upscaling and downscaling;
* the Kotlin labels reader reads the hostile labels the renderer wrote back exactly, and ``Scores.topK``
  ranks like the reference (ties to the lower index).

All projects and the harness compile in one kotlinc run (one to three minutes on a shared 2-core machine).
"""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
from task_specs import HOSTILE_LABELS, PROJECTS, task_specs
from test_android_kotlin import SHIM, _kotlinc, _missing_tool, _run, _stdlib

from mobilegen.android import AndroidOptions, render_android
from mobilegen.tasks.reference import resize_crop, top_k
from mobilegen.tasks.spec import TaskSpec

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
ANDROID_SHIM = REPO / "tests" / "shims" / "android_sdk"

@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("android_tasks")
    out = {}
    for name, spec in task_specs(root).items():
        out[name] = root / name
        render_android(spec, AndroidOptions(xnnpack=True, package=f"com.example.tasks.{name}"), out[name])
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
import com.example.tasks.cls_topk.Labels
import com.example.tasks.cls_topk.Scores
import java.io.File

fun hex(bytes: ByteArray): String = bytes.joinToString("") { "%02x".format(it.toInt() and 0xFF) }

// Commands, one per line of args[0]:
//   crop FILE W H SHORTER CH CW   -> hex of ImageInput.resizeCrop(fromRgba(FILE)) (and the ARGB path agrees)
//   prepare FILE W H              -> hex of ImageInput.prepare(fromRgba(FILE)) (the project's own constants)
//   labels FILE                   -> one line per label: hex of its UTF-8
//   topk K v1,v2,...              -> indices of Scores.topK
fun main(args: Array<String>) {
    for (line in File(args[0]).readLines()) {
        val p = line.split(" ")
        when (p[0]) {
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
                    ImageInput.resizeCrop(image, p[4].toInt(), p[5].toInt(), p[6].toInt())
                } else {
                    ImageInput.prepare(image)
                }
                println("${out.width}x${out.height} " + hex(out.pixels))
            }
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


def _sources(projects: dict[str, Path]) -> list[Path]:
    out = []
    for tree in projects.values():
        out += sorted(p for p in tree.glob("*/src/main/kotlin/**/*.kt") if p.relative_to(tree).parts[0] != "app")
        out += sorted(tree.glob("*/src/androidTest/kotlin/**/*TaskTest.kt"))
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
    for n, img in enumerate(images):
        path = tmp_path / f"img{n}.rgba"
        path.write_bytes(img.tobytes())
        h, w = img.shape[:2]
        for shorter, ch, cw in CONFIGS:
            ref = resize_crop(img, TaskSpec(kind="image", resize=shorter, crop=(ch, cw)))
            commands.append(f"crop {path} {w} {h} {shorter} {ch} {cw}")
            expected.append(f"{cw}x{ch} " + ref.tobytes().hex())
        commands.append(f"prepare {path} {w} {h}")
        expected.append(f"{task.crop[1]}x{task.crop[0]} " + resize_crop(img, task).tobytes().hex())  # type: ignore[index]
    got = _harness(task_jar, shim_classes, commands, tmp_path)
    assert len(got) == len(expected)
    mismatches = [c for c, g, e in zip(commands, got, expected, strict=True) if g != e]
    assert not mismatches, mismatches[:5]
    assert len(images) >= 12 and len(commands) >= 12 * (len(CONFIGS) + 1)


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
