"""Camera frames through the Kotlin ``FrameSampler`` on the JVM (issue 31, camera-ready image input).

Renders ``TaskSupport.kt`` of an image task (``--resize 256 --crop 224x224``, antialiased), compiles it
with ``benchmarks/camera_harness.kt`` (kotlinc from ``make tools``, or ``$KOTLINC``), and runs synthetic
but realistic frames (gradients + noise + fine stripes) in the three formats a camera or a photo gives:
RGBA_8888 with row padding, YUV_420_888 (semi-planar, chroma pixel stride 2, padded rows, as CameraX
hands NV21-backed frames) and ARGB ints with an offset and a wider stride, at 640x480, 1920x1080 and
4000x3000 (12 MP), each with a rotation and a crop rectangle. Per frame it prints:

* ``same``: whether the fused sampler's tensor equals, byte for byte, ``mobilegen.tasks.reference``
  (``yuv420_to_rgb``/``orient``/``resize_crop``, in numpy) and the full-frame pipeline an app had to run
  before (frame → ARGB IntArray → rotated copy → ``ImageInput.prepare``);
* time (ms) and bytes allocated per frame in steady state (``com.sun.management.ThreadMXBean
  .getThreadAllocatedBytes`` around N calls after 3 warm-up calls), after (fused) and before, in three
  interleaved rounds, the fastest round of each kept (the machine is shared).

Asserts nothing. A few minutes on a shared 2-core machine (kotlinc is most of it). ``--quick`` skips 12 MP.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mobilegen.render.tree import render_tree, templates_root
from mobilegen.tasks.reference import orient, resize_crop, yuv420_to_rgb
from mobilegen.tasks.spec import TaskSpec

REPO = Path(__file__).resolve().parents[1]
HARNESS = Path(__file__).resolve().parent / "camera_harness.kt"
TASK_SUPPORT = Path("{{ module }}/src/main/kotlin/{{ package_path }}/{{ task_support_file }}.jinja")


def kotlinc() -> Path | None:
    path = Path(os.environ["KOTLINC"]) if os.environ.get("KOTLINC") else REPO / ".tools" / "node_modules" / "kotlin-compiler" / "bin" / "kotlinc"
    return path if path.is_file() and shutil.which("java") else None


def render_task_support(dest: Path) -> Path:
    """``TaskSupport.kt`` of an image task in package ``mg.cam`` (the sampler's size and filter are per call)."""
    tpl = dest / "tpl"
    (tpl / "TaskSupport.kt.jinja").parent.mkdir(parents=True)
    shutil.copyfile(templates_root() / "android" / TASK_SUPPORT, tpl / "TaskSupport.kt.jinja")
    task = {"kind": "image", "is_image": True, "is_classification": False, "is_audio": False, "resize": 256, "crop_h": 224, "crop_w": 224, "antialias": True}
    render_tree(tpl, {"mobilegen_version": "camera-frames", "package": "mg.cam", "asset_dir": "mgcam", "task": task}, dest / "src")
    return dest / "src" / "TaskSupport.kt"


def compile_harness(compiler: Path, work: Path) -> Path:
    """kotlinc of the rendered TaskSupport.kt + the harness: the jar to run with :func:`run_harness`."""
    jar = work / "camera.jar"
    source = render_task_support(work)
    proc = subprocess.run([str(compiler), "-nowarn", "-d", str(jar), str(source), str(HARNESS)], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"kotlinc failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return jar


def run_harness(compiler: Path, jar: Path, commands: list[str], work: Path) -> list[str]:
    script = work / "commands.txt"
    script.write_text("\n".join(commands) + "\n", encoding="utf-8")
    stdlib = compiler.resolve().parent.parent / "lib" / "kotlin-stdlib.jar"
    proc = subprocess.run(
        ["java", "-Xmx1g", "-cp", os.pathsep.join([str(jar), str(stdlib)]), "mg.cam.Camera_harnessKt", str(script)],
        capture_output=True, text=True, timeout=1800,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"harness failed:\n{proc.stderr[-4000:]}")
    return proc.stdout.splitlines()


def scene(w: int, h: int, seed: int) -> np.ndarray:
    """An h × w × 4 uint8 RGBA frame: smooth gradients, noise and 3-pixel stripes (alpha noise: it is dropped)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    r = 255 * x / max(w - 1, 1)
    g = 255 * y / max(h - 1, 1)
    b = 128 + 60 * np.sin((x + 2 * y) * (2 * np.pi / 3))
    rgb = np.stack([r, g, b], -1) + rng.normal(0, 12, (h, w, 3)).astype(np.float32)
    alpha = rng.integers(0, 256, (h, w, 1)).astype(np.float32)
    return np.clip(np.concatenate([rgb, alpha], -1), 0, 255).astype(np.uint8)


@dataclass(frozen=True)
class Frame:
    """One frame written for the harness: ``args`` (the command's frame part) and its RGB as the reference sees it."""

    fmt: str
    width: int
    height: int
    args: str
    rgb: np.ndarray


def write_rgba(rgba: np.ndarray, folder: Path, name: str, pad: int = 24) -> Frame:
    """RGBA_8888 with ``pad`` bytes after each row (row stride = 4w + pad), as a CameraX RGBA plane may have."""
    h, w = rgba.shape[:2]
    rows = np.zeros((h, 4 * w + pad), np.uint8)
    rows[:, : 4 * w] = rgba.reshape(h, 4 * w)
    path = folder / f"{name}.rgba"
    path.write_bytes(rows.tobytes()[: (h - 1) * (4 * w + pad) + 4 * w])  # the last row unpadded, as planes end
    return Frame("rgba", w, h, f"rgba {path} {w} {h} {4 * w + pad} 4", rgba[:, :, :3])


def write_argb(rgba: np.ndarray, folder: Path, name: str, offset: int = 7, extra: int = 5) -> Frame:
    """ARGB ints (``Bitmap.getPixels`` with an offset and a stride wider than the image)."""
    h, w = rgba.shape[:2]
    a = rgba.astype(np.uint32)
    argb = (a[..., 3] << 24) | (a[..., 0] << 16) | (a[..., 1] << 8) | a[..., 2]
    ints = np.full(offset + h * (w + extra), 0x7F00FF00, np.uint32)
    ints[offset:].reshape(h, w + extra)[:, :w] = argb
    path = folder / f"{name}.argb"
    path.write_bytes(ints.astype("<u4").tobytes())
    return Frame("argb", w, h, f"argb {path} {w} {h} {offset} {w + extra}", rgba[:, :, :3])


def write_yuv(rgba: np.ndarray, folder: Path, name: str, pad: int = 16) -> Frame:
    """YUV_420_888 from an RGB scene (any YUV will do: the reference converts it back the same way): a
    Y plane with ``pad`` bytes of row padding, and interleaved V/U (NV21: V first; U = V + 1, pixel stride 2,
    the layout CameraX frames usually have) with the same row stride."""
    h, w = rgba.shape[:2]
    rgb = rgba[:, :, :3].astype(np.float64)
    yy = np.clip(np.round(0.299 * rgb[..., 0] + 0.587 * rgb[..., 1] + 0.114 * rgb[..., 2]), 0, 255).astype(np.uint8)
    sub = rgb[::2, ::2]
    u = np.clip(np.round(128 - 0.168736 * sub[..., 0] - 0.331264 * sub[..., 1] + 0.5 * sub[..., 2]), 0, 255).astype(np.uint8)
    v = np.clip(np.round(128 + 0.5 * sub[..., 0] - 0.418688 * sub[..., 1] - 0.081312 * sub[..., 2]), 0, 255).astype(np.uint8)
    stride = w + pad
    ch, cw = u.shape
    yplane = np.zeros((h, stride), np.uint8)
    yplane[:, :w] = yy
    vu = np.zeros((ch, stride), np.uint8)
    vu[:, 0 : 2 * cw : 2] = v
    vu[:, 1 : 2 * cw : 2] = u
    ypath, uvpath = folder / f"{name}.y", folder / f"{name}.vu"
    ypath.write_bytes(yplane.tobytes()[: (h - 1) * stride + w])
    uvpath.write_bytes(vu.tobytes()[: (ch - 1) * stride + 2 * cw])
    # U starts one byte into the interleaved buffer, V at its start
    return Frame("yuv", w, h, f"yuv {ypath} {uvpath} 1 0 {w} {h} {stride} 1 {stride} 2", yuv420_to_rgb(yy, u, v))


def command(frame: Frame, rotation: int, crop: tuple[int, int, int, int] | None, spec: TaskSpec) -> str:
    """The harness line for ``frame`` through a sampler of ``spec``'s size and filter."""
    assert spec.crop is not None
    c = "-" if crop is None else ",".join(map(str, crop))
    shorter = spec.resize if spec.resize is not None else max(spec.crop)
    return f"{frame.args} {rotation} {c} {shorter} {spec.crop[0]} {spec.crop[1]} {spec.resize_filter.upper()}"


def expected(frame: Frame, rotation: int, crop: tuple[int, int, int, int] | None, spec: TaskSpec) -> str:
    """The reference's tensor (hex) for the same frame."""
    return bytes(resize_crop(orient(frame.rgb, rotation, crop), spec).tobytes()).hex()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="skip the 12 MP frames")
    parser.add_argument("--frames", type=int, default=20, help="measured calls per frame (after 3 warm-up calls)")
    args = parser.parse_args()
    compiler = kotlinc()
    if compiler is None:
        print("kotlinc or java not found: run `make tools` (or set $KOTLINC)", file=sys.stderr)
        return 2
    spec = TaskSpec(kind="image", resize=256, crop=(224, 224))
    sizes = [(640, 480), (1920, 1080)] + ([] if args.quick else [(4000, 3000)])
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        jar = compile_harness(compiler, work)
        rows = []
        for w, h in sizes:
            rgba = scene(w, h, w)
            crop = (w // 10, h // 12, w - w // 9, h - h // 15)
            for frame, rotation in ((write_rgba(rgba, work, f"f{w}"), 90), (write_yuv(rgba, work, f"f{w}"), 270), (write_argb(rgba, work, f"f{w}"), 0)):
                n = max(3, args.frames // (8 if w * h > 5_000_000 else 1))
                line = run_harness(compiler, jar, [command(frame, rotation, crop, spec), f"bench {n} " + command(frame, rotation, crop, spec)], work)
                parity = line[0] == expected(frame, rotation, crop, spec)
                stats = dict(kv.split("=") for kv in line[1].split())
                rows.append((frame.fmt, f"{w}x{h}", rotation, parity, stats))
            for f in work.glob(f"f{w}.*"):
                f.unlink()
    print("frames → 224x224 (resize 256, antialias), with a crop rectangle; time and allocation per frame, steady state")
    print(f"{'format':6} {'size':>10} {'rot':>4} {'= ref':>6} {'= before':>8} {'after ms':>9} {'after B':>10} {'before ms':>10} {'before B':>12}")
    for fmt, size, rot, parity, s in rows:
        print(f"{fmt:6} {size:>10} {rot:>4} {parity!s:>6} {s['same']:>8} {float(s['after_ms']):9.2f} {float(s['after_bytes']):10.0f} {float(s['before_ms']):10.2f} {float(s['before_bytes']):12.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
