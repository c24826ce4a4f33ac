"""Camera-ready image input (issue 31), the generated Kotlin on the JVM (no Android SDK):

* an image-classification project's library (FrameSampler, CameraInput, the ImageProxy / Bitmap layer), the
  sample app's CameraX ``FrameAnalyzer`` and the camera harness (benchmarks/camera_harness.kt) compile in one
  kotlinc run against the compile-only shims (tests/shims: ORT, Android, CameraX ``ImageProxy``/``ImageAnalysis``);
* ``FrameSampler`` gives ``mobilegen.tasks.reference`` (``yuv420_to_rgb`` → ``orient`` → ``resize_crop``)
  byte for byte on RGBA_8888 (padded rows), YUV_420_888 (NV21-style interleaved chroma, pixel stride 2,
  padded rows) and ARGB ints (offset, wider stride) frames of 640x480 and 1920x1080, every rotation, with
  and without a crop rectangle, with both ``--resize-filter``s;
* the Android layer's ``BitmapSource`` (rows and columns through ``Bitmap.getPixels``) gives the same bytes,
  run against a JVM fake of ``Bitmap`` (test-local, ahead of the shim on the class path);
* in steady state a sampled frame allocates no frame-sized buffer (ThreadMXBean), where the full-frame
  pipeline an app needed before allocates more than the frame.

The reference's YUV and orientation against Pillow: tests/unit/test_camera_reference.py. Timings and the
12 MP frames: benchmarks/camera_frames.py.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from task_specs import task_specs
from test_android_kotlin import SHIM, _kotlinc, _missing_tool, _run, _stdlib

from mobilegen.targets.android.project import AndroidOptions, render_android
from mobilegen.tasks.spec import TaskSpec

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
ANDROID_SHIM = REPO / "tests" / "shims" / "android_sdk"
HARNESS = REPO / "benchmarks" / "camera_harness.kt"

# A Bitmap that behaves (Android's getPixels/setPixels semantics for what BitmapSource calls), test-local.
FAKE_BITMAP = """
package android.graphics;

public final class Bitmap {
  public enum Config { ALPHA_8, RGB_565, ARGB_4444, ARGB_8888, RGBA_F16, HARDWARE, RGBA_1010102 }
  private final int width, height;
  private final int[] pixels;
  private Bitmap(int w, int h) { width = w; height = h; pixels = new int[w * h]; }
  public int getWidth() { return width; }
  public int getHeight() { return height; }
  public Config getConfig() { return Config.ARGB_8888; }
  public Bitmap copy(Config config, boolean isMutable) { throw new UnsupportedOperationException(); }
  public static Bitmap createBitmap(int width, int height, Config config) { return new Bitmap(width, height); }
  public void recycle() {}
  public void getPixels(int[] out, int offset, int stride, int x, int y, int w, int h) {
    if (x < 0 || y < 0 || x + w > width || y + h > height || Math.abs(stride) < w) throw new IllegalArgumentException("getPixels out of bounds");
    for (int r = 0; r < h; r++) for (int c = 0; c < w; c++) out[offset + r * stride + c] = pixels[(y + r) * width + x + c];
  }
  public void setPixels(int[] in, int offset, int stride, int x, int y, int w, int h) {
    for (int r = 0; r < h; r++) for (int c = 0; c < w; c++) pixels[(y + r) * width + x + c] = in[offset + r * stride + c];
  }
}
"""

# bitmap FILE W H ROT CROP SHORTER CH CW FILTER -> hex of FrameSampler.sample(BitmapSource(bitmap)) (FILE: LE int32, tight)
BITMAP_CHECK = """
package mg.cam

import android.graphics.Bitmap
import java.io.File
import java.nio.ByteBuffer
import java.nio.ByteOrder

object BitmapCheck {
    @JvmStatic
    fun main(args: Array<String>) {
        for (line in File(args[0]).readLines()) {
            val p = line.split(" ")
            val w = p[2].toInt()
            val h = p[3].toInt()
            val ints = ByteBuffer.wrap(File(p[1]).readBytes()).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().let { b -> IntArray(b.remaining()).also { b.get(it) } }
            val bitmap = Bitmap.createBitmap(w, h, Bitmap.Config.ARGB_8888)
            bitmap.setPixels(ints, 0, w, 0, 0, w, h)
            val sampler = FrameSampler(p[6].toInt(), p[7].toInt(), p[8].toInt(), ResizeFilter.valueOf(p[9]))
            val out = sampler.sample(BitmapSource(bitmap), w, h, p[4].toInt(), crop(p[5]))
            println(hex(out, sampler.cropHeight * sampler.cropWidth * 3))
        }
    }
}
"""


def _frames_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("camera_frames", REPO / "benchmarks" / "camera_frames.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["camera_frames"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


cf = _frames_module()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(jar, shim classes, fake Bitmap classes): one kotlinc run of the library, the app's analyzer and the harnesses."""
    kotlinc = _kotlinc()
    coroutines = kotlinc.resolve().parent.parent / "lib" / "kotlinx-coroutines-core-jvm.jar"
    if not coroutines.is_file():
        _missing_tool(f"kotlinx-coroutines-core-jvm.jar next to {kotlinc}")
    root = tmp_path_factory.mktemp("camera")
    spec = task_specs(root)["cls_topk"]
    tree = root / "project"
    render_android(spec, AndroidOptions(xnnpack=True, package="mg.cam"), tree)
    shims = root / "shims"
    _run(["javac", "-d", str(shims), *map(str, sorted(SHIM.rglob("*.java")) + sorted(ANDROID_SHIM.rglob("*.java")))], "javac (shims)")
    fake = root / "fake"
    (root / "fake_src").mkdir()
    (root / "fake_src" / "Bitmap.java").write_text(FAKE_BITMAP, encoding="utf-8")
    _run(["javac", "-d", str(fake), str(root / "fake_src" / "Bitmap.java")], "javac (fake Bitmap)")
    sources = sorted(p for p in tree.glob("*/src/main/kotlin/**/*.kt") if p.relative_to(tree).parts[0] != "app")
    sources += sorted(tree.glob("app/src/main/kotlin/**/FrameAnalyzer.kt"))
    assert len(sources) >= 5, sources
    check = root / "BitmapCheck.kt"
    check.write_text(BITMAP_CHECK, encoding="utf-8")
    jar = root / "camera.jar"
    classpath = os.pathsep.join([str(shims), str(coroutines)])
    _run([str(kotlinc), "-nowarn", "-cp", classpath, "-d", str(jar), *map(str, sources), str(HARNESS), str(check)], "kotlinc (camera input)")
    return jar, shims, fake


def _java(built: tuple[Path, Path, Path], main: str, commands: list[str], tmp: Path) -> list[str]:
    jar, shims, fake = built
    script = tmp / f"{main}.txt"
    script.write_text("\n".join(commands) + "\n", encoding="utf-8")
    classpath = os.pathsep.join([str(jar), str(_stdlib(_kotlinc())), str(fake), str(shims)])
    proc = subprocess.run(["java", "-Xmx768m", "-cp", classpath, main, str(script)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout.splitlines()


def test_the_camera_layer_and_the_sample_analyzer_compile(built: tuple[Path, Path, Path]) -> None:
    with zipfile.ZipFile(built[0]) as jar:
        names = set(jar.namelist())
    for expected in (
        "mg/cam/FrameSampler.class",
        "mg/cam/FrameSampler$Source.class",
        "mg/cam/CropRect.class",
        "mg/cam/CameraInput.class",
        "mg/cam/BitmapSource.class",
        "mg/cam/sample/FrameAnalyzer.class",
    ):
        assert expected in names, expected


SMALL = (TaskSpec(kind="image", resize=40, crop=(24, 32)), TaskSpec(kind="image", resize=40, crop=(24, 32), resize_filter="bilinear"))
MODEL = TaskSpec(kind="image", resize=256, crop=(224, 224))


def test_frames_match_the_python_reference_byte_for_byte(built: tuple[Path, Path, Path], tmp_path: Path) -> None:
    commands: list[str] = []
    expected: list[str] = []
    w, h = 640, 480
    rgba = cf.scene(w, h, 31)
    frames = [cf.write_rgba(rgba, tmp_path, "vga", pad=20), cf.write_yuv(rgba, tmp_path, "vga", pad=12), cf.write_argb(rgba, tmp_path, "vga", offset=3, extra=9)]
    for frame in frames:
        for rotation in (0, 90, 180, 270):
            for crop in (None, (37, 21, 601, 450)):  # odd left/top: chroma pairs split
                for spec in SMALL:
                    commands.append(cf.command(frame, rotation, crop, spec))
                    expected.append(cf.expected(frame, rotation, crop, spec))
    big = cf.scene(1920, 1080, 32)
    for frame, rotation in ((cf.write_rgba(big, tmp_path, "hd"), 90), (cf.write_yuv(big, tmp_path, "hd"), 270), (cf.write_argb(big, tmp_path, "hd"), 180)):
        commands.append(cf.command(frame, rotation, (101, 33, 1801, 1077), MODEL))
        expected.append(cf.expected(frame, rotation, (101, 33, 1801, 1077), MODEL))
    got = _java(built, "mg.cam.Camera_harnessKt", commands, tmp_path)
    assert len(got) == len(expected)
    bad = [c for c, g, e in zip(commands, got, expected, strict=True) if g != e]
    assert not bad, f"{len(bad)} of {len(commands)} differ, first: {bad[0]}"


def test_a_bitmap_read_by_rows_and_columns_matches_the_reference(built: tuple[Path, Path, Path], tmp_path: Path) -> None:
    w, h = 320, 240
    rgba = cf.scene(w, h, 33)
    frame = cf.write_argb(rgba, tmp_path, "bmp", offset=0, extra=0)
    path = frame.args.split(" ")[1]
    commands, expected = [], []
    for rotation in (0, 90, 180, 270):
        for crop in (None, (11, 5, 300, 233)):
            for spec in SMALL:
                c = "-" if crop is None else ",".join(map(str, crop))
                commands.append(f"bitmap {path} {w} {h} {rotation} {c} 40 24 32 {spec.resize_filter.upper()}")
                expected.append(cf.expected(frame, rotation, crop, spec))
    assert _java(built, "mg.cam.BitmapCheck", commands, tmp_path) == expected


def test_a_steady_state_frame_allocates_no_frame_sized_buffer(built: tuple[Path, Path, Path], tmp_path: Path) -> None:
    w, h = 640, 480
    rgba = cf.scene(w, h, 34)
    lines = []
    for frame, rotation in ((cf.write_rgba(rgba, tmp_path, "a"), 90), (cf.write_yuv(rgba, tmp_path, "a"), 270), (cf.write_argb(rgba, tmp_path, "a"), 0)):
        lines.append(f"bench 10 {cf.command(frame, rotation, (20, 10, 620, 470), MODEL)}")
    for line in _java(built, "mg.cam.Camera_harnessKt", lines, tmp_path):
        stats = dict(kv.split("=") for kv in line.split())
        assert stats["same"] == "true", line
        # The fused sampler reuses its buffers: nothing near a frame (1.2 MB) per call, against the frame-sized
        # arrays (ARGB ints, a rotated copy, RGB bytes) of the path it replaces.
        assert float(stats["after_bytes"]) < 1024, line
        assert float(stats["before_bytes"]) > w * h * 4, line


def test_the_reference_frames_are_what_the_harness_reads(tmp_path: Path) -> None:
    """The frame writers' layouts (the test's own inputs) against numpy: padding and strides land where the
    commands say, so a parity pass is not a pass on unread bytes."""
    rgba = cf.scene(13, 7, 5)
    f = cf.write_rgba(rgba, tmp_path, "t", pad=8)
    raw = np.frombuffer(Path(f.args.split(" ")[1]).read_bytes(), np.uint8)
    stride = int(f.args.split(" ")[4])
    assert stride == 13 * 4 + 8 and raw.size == 6 * stride + 13 * 4
    assert np.array_equal(raw[stride * 3 + 4 * 5 : stride * 3 + 4 * 5 + 3], rgba[3, 5, :3])
    y = cf.write_yuv(rgba, tmp_path, "t", pad=4)
    parts = y.args.split(" ")
    vu = np.frombuffer(Path(parts[2]).read_bytes(), np.uint8)
    assert (parts[3], parts[4], parts[10]) == ("1", "0", "2") and vu.size == 3 * int(parts[9]) + 2 * 7
