"""Camera input in the Python reference (issue 31): ``yuv420_to_rgb``, ``orient``, ``camera_input``, against
Pillow (the independent oracle) and against the JFIF / BT.601 definitions in floating point; and the Swift
port (rendered, not compiled: no Swift toolchain here) carrying the reference's constants and only CoreVideo /
AVFoundation symbols from Apple's headers. The Kotlin port runs on the JVM in
tests/integration/test_camera_input.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from task_specs import task_specs
from ts_parsers import parser

from mobilegen.errors import UsageError
from mobilegen.targets.ios.project import IosOptions, render_ios
from mobilegen.tasks.reference import (
    YUV_COEFFS,
    YUV_VIDEO_COEFFS,
    camera_input,
    orient,
    resize_crop,
    yuv420_to_rgb,
)
from mobilegen.tasks.spec import TaskSpec

# Pillow's transpose for a clockwise turn of 90/180/270 degrees (its ROTATE_n turn counter-clockwise).
PIL_CLOCKWISE = {90: Image.Transpose.ROTATE_270, 180: Image.Transpose.ROTATE_180, 270: Image.Transpose.ROTATE_90}


def _image(h: int, w: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + y) % 256], -1)
    return np.clip(base + rng.integers(-20, 21, (h, w, 3)), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
@pytest.mark.parametrize("crop", [None, (3, 5, 40, 29), (0, 0, 1, 1)])
def test_orient_is_pillows_crop_then_transpose(rotation: int, crop: tuple[int, int, int, int] | None) -> None:
    rgb = _image(31, 47, rotation)
    img = Image.fromarray(rgb)
    if crop is not None:
        img = img.crop(crop)
    if rotation:
        img = img.transpose(PIL_CLOCKWISE[rotation])
    assert np.array_equal(orient(rgb, rotation, crop), np.asarray(img))


@pytest.mark.parametrize("rotation", [0, 90, 270])
def test_camera_input_equals_pillows_crop_transpose_and_antialiased_resize(rotation: int) -> None:
    """A photo-sized frame: Pillow crops, turns, resizes (BILINEAR, antialiased) the whole image, then the
    centre crop is cut; the reference computes only the crop, and is bit for bit the same."""
    rgb = _image(600, 800, 7)
    crop = (50, 20, 770, 590)
    spec = TaskSpec(kind="image", resize=64, crop=(56, 48))
    img = Image.fromarray(rgb).crop(crop)
    if rotation:
        img = img.transpose(PIL_CLOCKWISE[rotation])
    w, h = img.size
    nh, nw = (64, 64 * w // h) if h <= w else (64 * h // w, 64)
    top, left = (nh - 56) // 2, (nw - 48) // 2
    oracle = np.asarray(img.resize((nw, nh), Image.Resampling.BILINEAR))[top : top + 56, left : left + 48]
    assert np.array_equal(camera_input(rgb, spec, rotation, crop), oracle)


def test_yuv_full_range_is_jfif_within_one_step_of_pillow_and_of_the_float_formula() -> None:
    rng = np.random.default_rng(3)
    h, w = 40, 62
    y = rng.integers(0, 256, (h, w), dtype=np.uint8)
    u = rng.integers(0, 256, (h // 2, w // 2), dtype=np.uint8)
    v = rng.integers(0, 256, (h // 2, w // 2), dtype=np.uint8)
    ours = yuv420_to_rgb(y, u, v).astype(int)
    up = np.repeat(np.repeat(np.stack([u, v], -1), 2, 0), 2, 1)
    pil = np.asarray(Image.fromarray(np.concatenate([y[..., None], up], -1), "YCbCr").convert("RGB")).astype(int)
    assert np.abs(ours - pil).max() <= 1  # Pillow's own fixed-point tables round differently by one step
    yf, cb, cr = y.astype(float), up[..., 0].astype(float) - 128, up[..., 1].astype(float) - 128
    exact = np.stack([yf + 1.402 * cr, yf - 0.344136 * cb - 0.714136 * cr, yf + 1.772 * cb], -1)
    assert np.abs(ours - np.clip(np.floor(exact + 0.5), 0, 255)).max() <= 1
    assert (ours == np.clip(np.floor(exact + 0.5), 0, 255)).mean() > 0.99


def test_yuv_video_range_maps_16_235_to_the_full_scale() -> None:
    y = np.array([[16, 235], [126, 126]], np.uint8)
    grey = np.full((1, 1), 128, np.uint8)
    out = yuv420_to_rgb(y, grey, grey, video_range=True)
    assert out[0, 0].tolist() == [0, 0, 0] and out[0, 1].tolist() == [255, 255, 255]
    assert out[1, 0].tolist() == [128, 128, 128]  # (126 - 16) * 255 / 219 = 128.08
    rng = np.random.default_rng(4)
    yy = rng.integers(16, 236, (8, 10), dtype=np.uint8)
    cb, cr = rng.integers(16, 241, (2, 4, 5), dtype=np.uint8)
    ours = yuv420_to_rgb(yy, cb, cr, video_range=True).astype(float)
    luma = (np.asarray(yy, float) - 16) * 255 / 219
    b_ = np.repeat(np.repeat(cb.astype(float) - 128, 2, 0), 2, 1) * 255 / 224
    r_ = np.repeat(np.repeat(cr.astype(float) - 128, 2, 0), 2, 1) * 255 / 224
    exact = np.stack([luma + 1.402 * r_, luma - 0.344136 * b_ - 0.714136 * r_, luma + 1.772 * b_], -1)
    assert np.abs(ours - np.clip(np.floor(exact + 0.5), 0, 255)).max() <= 1


def test_odd_sizes_take_the_chroma_sample_of_their_2x2_block() -> None:
    y = np.full((3, 5), 100, np.uint8)
    u = np.array([[128, 128, 255], [128, 128, 128]], np.uint8)
    v = np.full((2, 3), 128, np.uint8)
    out = yuv420_to_rgb(y, u, v)
    assert (out[:2, 4] != out[0, 0]).any(axis=-1).all() and (out[2, :] == out[0, 0]).all() and (out[:2, :4] == out[0, 0]).all()
    with pytest.raises(UsageError):
        yuv420_to_rgb(y, u[:, :2], v[:, :2])


def test_bad_rotation_or_crop_is_refused() -> None:
    rgb = _image(10, 12, 1)
    with pytest.raises(UsageError, match="rotation"):
        orient(rgb, 45)
    for crop in ((0, 0, 13, 10), (5, 5, 5, 8), (-1, 0, 4, 4)):
        with pytest.raises(UsageError, match="crop"):
            orient(rgb, 0, crop)


def test_camera_input_without_rotation_or_crop_is_resize_crop() -> None:
    rgb = _image(50, 70, 9)
    spec = TaskSpec(kind="image", resize=20, crop=(16, 16), resize_filter="bilinear")
    assert np.array_equal(camera_input(rgb, spec), resize_crop(rgb, spec))


# --- the Swift port (rendered; parsed; constants and Apple symbols) ------------------------------------

# CoreVideo / CoreMedia / AVFoundation names the port may use, as Apple's headers spell them
# (CoreVideo/CVPixelBuffer.h, CVPixelFormatDescription; CoreMedia/CMSampleBuffer.h; AVFoundation/AVCaptureOutput.h).
APPLE_SYMBOLS = {
    "CVPixelBuffer", "CVPixelBufferLockBaseAddress", "CVPixelBufferUnlockBaseAddress", "CVPixelBufferGetWidth",
    "CVPixelBufferGetHeight", "CVPixelBufferGetPixelFormatType", "CVPixelBufferGetBaseAddress", "CVPixelBufferGetBytesPerRow",
    "CVPixelBufferGetBaseAddressOfPlane", "CVPixelBufferGetBytesPerRowOfPlane", "kCVPixelFormatType_32BGRA",
    "kCVPixelFormatType_420YpCbCr8BiPlanarFullRange", "kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange",
    "kCVPixelBufferPixelFormatTypeKey", "CMSampleBuffer", "CMSampleBufferGetImageBuffer", "AVCaptureOutput",
    "AVCaptureConnection", "AVCaptureVideoDataOutput", "AVCaptureVideoDataOutputSampleBufferDelegate",
}
APPLE_IDENT = re.compile(r"\b(?:CV[A-Z]\w*|kCV\w+|CM[A-Z]\w*|AVCapture\w*)")


def _walk(node):  # type: ignore[no-untyped-def]
    yield node
    for child in node.children:
        yield from _walk(child)


@pytest.fixture(scope="module")
def swift(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("camera_swift")
    specs = task_specs(root / "specs")
    out = {}
    for name in ("cls_topk", "image"):
        render_ios(specs[name], IosOptions(coreml=True, xnnpack=True), root / name)
        out[name] = (root / name / "Sources/TinyCnn/TinyCnn+Task.swift").read_text(encoding="utf-8")
        out[name + "_app"] = (root / name / "App/Sources/CameraFrames.swift").read_text(encoding="utf-8")
    render_ios(specs["audio"], IosOptions(coreml=True), root / "audio")
    out["audio"] = (root / "audio" / "Sources/TinyCnn/TinyCnn+Task.swift").read_text(encoding="utf-8")
    out["audio_has_app_helper"] = str((root / "audio" / "App/Sources/CameraFrames.swift").exists())
    return out


def test_the_swift_port_parses_and_has_the_camera_api(swift: dict[str, str]) -> None:
    swift_parser = parser("swift")
    for name in ("cls_topk", "image", "cls_topk_app", "image_app"):
        tree = swift_parser.parse(swift[name].encode())
        assert [n.start_point for n in _walk(tree.root_node) if n.type == "ERROR" or n.is_missing] == [], name
    task = swift["cls_topk"]
    for needle in (
        "public final class FrameSampler",
        "public func sample(pixelBuffer: CVPixelBuffer, rotation: FrameRotation = .up, crop: CropRect? = nil) throws -> [UInt8]",
        "public func sample(cgImage image: CGImage, rotation: FrameRotation = .up, crop: CropRect? = nil) throws -> [UInt8]",
        "public func classify(\n        pixelBuffer: CVPixelBuffer,",
        "public func run(uiImage: UIImage, crop: CropRect? = nil)",
        "case kCVPixelFormatType_420YpCbCr8BiPlanarFullRange, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange:",
        "CVPixelBufferLockBaseAddress(pixelBuffer, .readOnly)",
    ):
        assert needle in task, needle
    assert "func captureOutput(_ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection)" in swift["cls_topk_app"]
    assert "model.classify(pixelBuffer:" in swift["cls_topk_app"] and "model.run(pixelBuffer:" in swift["image_app"]
    assert "FrameSampler" not in swift["audio"] and swift["audio_has_app_helper"] == "False"


def test_the_swift_port_uses_the_references_constants_and_only_known_apple_symbols(swift: dict[str, str]) -> None:
    task = swift["cls_topk"]
    kr, kgu, kgv, kb = YUV_COEFFS
    assert f"r = l + (({kr} * v + 32768) >> 16)" in task
    assert f"g = l + ((-{-kgu} * u - {-kgv} * v + 32768) >> 16)" in task
    assert f"b = l + (({kb} * u + 32768) >> 16)" in task
    ky, vr, vgu, vgv, vb = YUV_VIDEO_COEFFS
    assert f"let yy = {ky} * (l - 16)" in task
    assert f"r = (yy + {vr} * v + 32768) >> 16" in task and f"g = (yy - {-vgu} * u - {-vgv} * v + 32768) >> 16" in task
    assert f"b = (yy + {vb} * u + 32768) >> 16" in task
    used = {m.group(0) for text in (task, swift["cls_topk_app"], swift["image_app"]) for m in APPLE_IDENT.finditer(text)}
    assert used <= APPLE_SYMBOLS, used - APPLE_SYMBOLS
    # The upright walk: the same (x0, y0, dx, dy, rx, ry) per rotation as the Kotlin sampler and orient().
    for row in ("case .up: (x0, y0, dx, dy, rx, ry) = (cx, cy, 1, 0, 0, 1)", "case .right: (x0, y0, dx, dy, rx, ry) = (cx, cy + ch - 1, 0, -1, 1, 0)",
                "case .down: (x0, y0, dx, dy, rx, ry) = (cx + cw - 1, cy + ch - 1, -1, 0, 0, -1)", "case .left: (x0, y0, dx, dy, rx, ry) = (cx + cw - 1, cy, 0, 1, -1, 0)"):
        assert row in task, row


def test_the_kotlin_sampler_walks_the_frame_as_orient_does() -> None:
    """The (x0, y0, dx, dy, rx, ry) table shared by the ports, replayed in numpy against ``orient``."""
    text = (Path(__file__).resolve().parents[2] / "templates/android/{{ module }}/src/main/kotlin/{{ package_path }}/{{ task_support_file }}.jinja").read_text()
    rows = re.findall(r"(\d+|else) -> \{ x0 = ([^;]+); y0 = ([^;]+); dx = (-?\d); dy = (-?\d); rx = (-?\d); ry = (-?\d) \}", text)
    table = {m[0]: m[1:] for m in rows}
    assert set(table) == {"0", "90", "180", "else"}
    rgb = _image(9, 14, 2)
    cx, cy, cw, ch = 2, 1, 10, 7
    for key, rotation in (("0", 0), ("90", 90), ("180", 180), ("else", 270)):
        x0e, y0e, dx, dy, rx, ry = table[key]
        x0 = eval(x0e, {}, {"cx": cx, "cy": cy, "cw": cw, "ch": ch})  # noqa: S307 - a template expression of four ints
        y0 = eval(y0e, {}, {"cx": cx, "cy": cy, "cw": cw, "ch": ch})  # noqa: S307
        want = orient(rgb, rotation, (cx, cy, cx + cw, cy + ch))
        h, w = want.shape[:2]
        got = np.empty_like(want)
        for r in range(h):
            for x in range(w):
                got[r, x] = rgb[y0 + r * int(ry) + x * int(dy), x0 + r * int(rx) + x * int(dx)]
        assert np.array_equal(got, want), rotation
