"""The task-level wrapper API (issue 14) as rendered for Android and iOS, without compilers:

* files appear only with a task; the flat-array projects keep their file list;
* hostile labels reach only the labels data file, never code, and read back exactly;
* the Swift parses (tree-sitter) and uses only ORT symbols of the pinned package
  (tests/data/ort_objc_symbols.py) and the CoreGraphics symbols listed here with their Apple source;
* XNNPACK on iOS: the Swift appends it through ORTXnnpackExecutionProviderOptions only when asked;
  ``--xnnpack`` is accepted by ``ios`` and by ``package --ios``.

The Kotlin compiles and agrees with the Python reference value for value in
tests/integration/test_android_tasks.py (kotlinc, slow).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from android_specs import make_specs as android_specs
from cli_helpers import assert_fails, invoke
from ios_specs import make_specs as ios_specs
from task_specs import HOSTILE_LABELS, task_specs
from test_ios_ort_symbols import scan
from ts_parsers import parser

from mobilegen.errors import InternalError
from mobilegen.render import task_wrappers as tw
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.targets.android.project import AndroidOptions, render_android
from mobilegen.targets.base import BuildContext
from mobilegen.targets.ios import TARGET as IOS_TARGET
from mobilegen.targets.ios.project import IosOptions, render_ios
from mobilegen.tasks.spec import TaskSpec

if TYPE_CHECKING:
    from tree_sitter import Node

# Every CoreGraphics symbol the generated Swift names, with where Apple documents it
# (developer.apple.com/documentation/coregraphics/...). A new one must be added here with its source.
COREGRAPHICS = {
    "CGImage": "cgimage (width, height; init(width:height:bitsPerComponent:bitsPerPixel:bytesPerRow:space:bitmapInfo:provider:decode:shouldInterpolate:intent:))",
    "CGColorSpace": "cgcolorspace/init(name:), cgcolorspace/srgb",
    "CGContext": "cgcontext/init(data:width:height:bitspercomponent:bytesperrow:space:bitmapinfo:), draw(_:in:byTiling:), interpolationQuality",
    "CGImageAlphaInfo": "cgimagealphainfo/noneskiplast",
    "CGRect": "cgrect/init(x:y:width:height:) (Int overload)",
    "CGDataProvider": "cgdataprovider/init(data:)",
    "CGBitmapInfo": "cgbitmapinfo/init(rawvalue:)",
    "CGImagePropertyOrientation": "imageio/cgimagepropertyorientation (up, right, down, left; rawValue): camera input",
}
CG_IDENT = re.compile(r"\bCG[A-Z][A-Za-z0-9]*")
CODE_SUFFIXES = (".kt", ".kts", ".swift", ".toml", ".xml", ".pro", ".yml")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("task_wrappers")
    out = {}
    for name, spec in task_specs(root / "specs").items():
        out[f"android_{name}"] = root / f"android_{name}"
        render_android(spec, AndroidOptions(xnnpack=True, package=f"com.example.tasks.{name}"), out[f"android_{name}"])
        out[f"ios_{name}"] = root / f"ios_{name}"
        render_ios(spec, IosOptions(coreml=True, xnnpack=(name != "audio")), out[f"ios_{name}"])
    return out


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_task_files_render_only_with_a_task(rendered: dict[str, Path], tmp_path: Path) -> None:
    cls = _files(rendered["android_cls_topk"])
    for expected in (
        "tiny-cnn/src/main/kotlin/com/example/tasks/cls_topk/TaskSupport.kt",
        "tiny-cnn/src/main/kotlin/com/example/tasks/cls_topk/TinyCnnTask.kt",
        "tiny-cnn/src/main/assets/tiny_cnn/labels.txt",
        "tiny-cnn/src/androidTest/kotlin/com/example/tasks/cls_topk/TinyCnnTaskTest.kt",
        "tiny-cnn/src/androidTest/assets/tiny_cnn/task/cases.json",
        "tiny-cnn/src/androidTest/assets/tiny_cnn/task/checker_200x200.rgba",
    ):
        assert expected in cls
    audio = _files(rendered["android_audio"])
    assert not any(p.endswith("labels.txt") for p in audio)  # no labels
    support = next(rendered["android_audio"].rglob("TaskSupport.kt")).read_text()  # AudioInput alone: no image helpers
    assert "object AudioInput" in support and "object ImageInput" not in support and "object Labels" not in support
    assert any(p.endswith("TinyCnnTask.kt") for p in audio)
    ios = _files(rendered["ios_cls_all"])
    for expected in ("Sources/TinyCnn/TinyCnn+Task.swift", "Sources/TinyCnn/Resources/labels.txt", "Tests/TinyCnnTests/TinyCnnTaskTests.swift", "Tests/TinyCnnTests/Resources/task/cases.json"):
        assert expected in ios
    package = (rendered["ios_cls_all"] / "Package.swift").read_text()
    assert '.copy("Resources/labels.txt")' in package and '.copy("Resources/task")' in package
    assert '.copy("Resources/labels.txt")' not in (rendered["ios_image"] / "Package.swift").read_text()

    # Without a task: no task file, no labels, and the wrapper has no task members.
    spec, opts = android_specs(tmp_path / "a")["android_cnn"]
    render_android(spec, opts, tmp_path / "plain_android")
    plain = _files(tmp_path / "plain_android")
    assert not any(("Task" in p or "labels" in p) for p in plain), plain
    wrapper = next((tmp_path / "plain_android").rglob("TinyCnn.kt")).read_text()
    assert "labels" not in wrapper and "LABELS_ASSET" not in wrapper
    # Every wrapper (task or not): the .ort is memory-mapped and handed over as a direct buffer, never a ByteArray.
    android_layer = next((tmp_path / "plain_android").rglob("TinyCnnAndroid.kt")).read_text()
    assert "stream.channel.map(FileChannel.MapMode.READ_ONLY, fd.startOffset, fd.declaredLength)" in android_layer
    assert "model = mapAsset(context, TinyCnn.MODEL_ASSET, log)" in android_layer
    assert "env.createSession(model, sessionOptions)" in wrapper and "fun create(\n            model: ByteBuffer," in wrapper
    assert "createSession(modelBytes" not in wrapper
    assert "suspend fun TinyCnn.Companion.load(" in android_layer and "withContext(dispatcher)" in android_layer
    assert "api(libs.kotlinx.coroutines.android)" in (tmp_path / "plain_android/tiny-cnn/build.gradle.kts").read_text()
    ispec, iopts = ios_specs(tmp_path / "i")["ios_cnn"]
    render_ios(ispec, iopts, tmp_path / "plain_ios")
    assert not any(("Task" in p or "labels" in p) for p in _files(tmp_path / "plain_ios"))
    assert "labels" not in (tmp_path / "plain_ios/Package.swift").read_text()


def test_hostile_labels_are_data_never_code(rendered: dict[str, Path]) -> None:
    for name in ("android_cls_topk", "android_cls_all", "ios_cls_topk", "ios_cls_all"):
        root = rendered[name]
        labels_file = next(root.rglob(tw.LABELS_FILE))
        assert tw.parse_labels(labels_file.read_bytes().decode("utf-8")) == list(HOSTILE_LABELS)
        for path in root.rglob("*"):
            if path.suffix not in CODE_SUFFIXES:
                continue
            text = path.read_text(encoding="utf-8")
            for label in HOSTILE_LABELS:
                if len(label) > 3:
                    assert label not in text, (path, label)
            assert "pwned" not in text and "fatalError()\n" not in text, path
        assert f"= {len(HOSTILE_LABELS)}" in "".join(p.read_text() for p in root.rglob("*") if p.name in ("TaskSupport.kt", "TinyCnn+Task.swift"))


def test_labels_file_refuses_line_breaks_and_reads_back() -> None:
    labels = ("a", "", " b ", "c\\n", "\u2028")
    assert tw.parse_labels(tw.labels_text(labels)) == list(labels)
    assert tw.labels_text(()) == ""
    for bad in ("two\nlines", "cr\r"):
        with pytest.raises(InternalError, match="line break"):
            tw.labels_text(("ok", bad))


def _walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children:
        yield from _walk(child)


def _syntax_problems(language: str, source: bytes) -> list[str]:
    tree = parser(language).parse(source)
    return [f"{n.type} at {n.start_point}" for n in _walk(tree.root_node) if n.type == "ERROR" or n.is_missing]


def test_generated_sources_parse(rendered: dict[str, Path]) -> None:
    count = 0
    for name, root in rendered.items():
        language, suffix = ("kotlin", ".kt") if name.startswith("android") else ("swift", ".swift")
        for path in root.rglob(f"*{suffix}"):
            count += 1
            assert _syntax_problems(language, path.read_bytes()) == [], path
    assert count > 40


def test_swift_uses_only_pinned_ort_and_listed_coregraphics_symbols(rendered: dict[str, Path]) -> None:
    sources = {
        f"{name}/{p.relative_to(root).as_posix()}": p.read_text(encoding="utf-8")
        for name, root in rendered.items()
        if name.startswith("ios")
        for p in root.rglob("*.swift")
    }
    assert scan(sources) == []
    used = {m.group(0) for text in sources.values() for m in CG_IDENT.finditer(text)}
    assert used and used <= set(COREGRAPHICS), used - set(COREGRAPHICS)
    task = sources["ios_cls_topk/Sources/TinyCnn/TinyCnn+Task.swift"]
    for needle in (
        "CGColorSpace(name: CGColorSpace.sRGB)",
        "bitsPerComponent: 8",
        "CGImageAlphaInfo.noneSkipLast.rawValue",
        "public func classify(image: CGImage, topK: Int = Scores.defaultTopK) async throws -> [Classification]",
        "public func run(image: CGImage) async throws",
        "Bundle.module.url(forResource: \"labels\", withExtension: \"txt\")",
    ):
        assert needle in task
    assert "public func run(pcm: [Int16]) async throws" in sources["ios_audio/Sources/TinyCnn/TinyCnn+Task.swift"]


def test_the_audio_contract_is_in_the_code(rendered: dict[str, Path]) -> None:
    """Issue 26 item 8: sample rate, channels, window and both sample formats are constants and distinct
    methods on both platforms (the audio project: 8 kHz, any length)."""
    support = next(rendered["android_audio"].rglob("TaskSupport.kt")).read_text()
    for needle in ("const val SAMPLE_RATE: Int = 8000", "const val CHANNELS: Int = 1", "const val WINDOW_SAMPLES: Int = 0",
                   "fun fromPcm16(pcm: ShortArray): FloatArray", "fun fromFloat(samples: FloatArray): FloatArray"):
        assert needle in support, needle
    task = next(rendered["android_audio"].rglob("TinyCnnTask.kt")).read_text()
    assert "fun TinyCnn.runPcm16(pcm: ShortArray): TinyCnn.Outputs" in task and "fun TinyCnn.runFloat(samples: FloatArray): TinyCnn.Outputs" in task
    swift = (rendered["ios_audio"] / "Sources/TinyCnn/TinyCnn+Task.swift").read_text()
    for needle in ("public static let sampleRate = 8000", "public static let channels = 1", "public static let windowSamples = 0",
                   "public func runPCM16(_ pcm: [Int16]) async throws", "public func runFloat(_ samples: [Float]) async throws",
                   "public func runFloat(_ samples: [Float]) throws"):
        assert needle in swift, needle
    image = next(rendered["android_image"].rglob("TaskSupport.kt")).read_text()
    assert "object AudioInput" not in image and "val FILTER: ResizeFilter = ResizeFilter.BILINEAR" in image
    assert "public static let filter: ResizeFilter = .bilinear" in (rendered["ios_image"] / "Sources/TinyCnn/TinyCnn+Task.swift").read_text()
    assert "public static let filter: ResizeFilter = .antialias" in (rendered["ios_cls_topk"] / "Sources/TinyCnn/TinyCnn+Task.swift").read_text()
    # --state: the streaming helper feeds stateN back as state, reset() zeroes it (both platforms)
    stream = next(rendered["android_audio_stream"].rglob("TinyCnnTask.kt")).read_text()
    for needle in ("class TinyCnnStream internal constructor(", "private var state0 = FloatArray(256)", "fun reset()",
                   "fun pushPcm16(pcm: ShortArray): TinyCnn.Outputs", "fun pushFloat(samples: FloatArray): TinyCnn.Outputs",
                   "val outputs = runWindow(values, state0)", "constructor(model: TinyCnn) : this({ values, s0 -> model.runGraphInput(values, s0) })", "state0 = outputs.stateN.copyOf()"):
        assert needle in stream, needle
    swift_stream = (rendered["ios_audio_stream"] / "Sources/TinyCnn/TinyCnn+Task.swift").read_text()
    for needle in ("public final class Stream", "public func reset()", "public func pushPCM16(_ pcm: [Int16]) throws -> TinyCnnOutput",
                   "public func pushFloat(_ samples: [Float]) throws -> TinyCnnOutput", "state0 = output.stateN",
                   "private var state0 = [Float](repeating: 0, count: 256)"):
        assert needle in swift_stream, needle
    assert "Stream" not in next(rendered["android_audio"].rglob("TinyCnnTask.kt")).read_text()
    assert "TinyCnnStream(model)" in (rendered["android_audio_stream"] / "README.md").read_text()
    assert "TinyCnn.Stream(model: model)" in (rendered["ios_audio_stream"] / "README.md").read_text()
    # --labels for audio: an audio classifier gets Labels/Scores, classifyPcm16/classifyFloat and the labels file,
    # never the image overloads; its device tests classify the golden sounds.
    kws = rendered["android_audio_window"]
    kotlin = "".join(p.read_text() for p in kws.rglob("*.kt"))
    assert "fun TinyCnn.classifyPcm16(pcm: ShortArray, topK: Int = Scores.DEFAULT_TOP_K): List<Classification>" in kotlin
    assert "fun TinyCnn.classifyFloat(samples: FloatArray, topK: Int = Scores.DEFAULT_TOP_K)" in kotlin
    assert "const val WINDOW_SAMPLES: Int = 400" in kotlin and "object Labels" in kotlin
    assert "classify(bitmap" not in kotlin and "model.classifyPcm16(pcm, top.length())" in kotlin
    assert any(p.name == "labels.txt" for p in kws.rglob("*")) and "classifyPcm16" in (kws / "README.md").read_text()
    kws_swift = rendered["ios_audio_window"]
    swift_task = (kws_swift / "Sources/TinyCnn/TinyCnn+Task.swift").read_text()
    assert "public func classifyPCM16(_ pcm: [Int16], topK: Int = Scores.defaultTopK) async throws" in swift_task
    assert "public func classifyFloat(_ samples: [Float], topK: Int = Scores.defaultTopK) throws" in swift_task
    assert "classify(image:" not in swift_task and '.copy("Resources/labels.txt")' in (kws_swift / "Package.swift").read_text()
    assert "try await model.classifyPCM16(pcm, topK: expected.count)" in (kws_swift / "Tests/TinyCnnTests/TinyCnnTaskTests.swift").read_text()


def test_classify_defaults_to_the_graphs_k_and_clamps_on_both_platforms(rendered: dict[str, Path]) -> None:
    """--top-k 3 used to make classify(bitmap) / classify(image:) throw (default topK 5 > the 3 rows)."""
    for name, k in (("cls_topk", 3), ("cls_all", 5)):
        android, ios = rendered[f"android_{name}"], rendered[f"ios_{name}"]
        support = next(android.rglob("TaskSupport.kt")).read_text()
        assert f"const val DEFAULT_TOP_K: Int = {k}" in support
        assert "return List(minOf(topK, indices.size))" in support and "require(topK <= indices.size)" not in support
        swift = (ios / "Sources/TinyCnn/TinyCnn+Task.swift").read_text()
        assert f"public static let defaultTopK = {k}" in swift
        assert "(0..<min(topK, indices.count))" in swift and "topK <= indices.count" not in swift
        assert "public func classify(image: RGBImage, topK: Int = Scores.defaultTopK) throws" in swift
        kotlin = "".join(p.read_text() for p in android.rglob("*.kt"))
        assert "fun TinyCnn.classify(bitmap: Bitmap, topK: Int = Scores.DEFAULT_TOP_K)" in kotlin
        assert "fun TinyCnn.classify(image: RgbImage, topK: Int = Scores.DEFAULT_TOP_K)" in kotlin
        assert "    topK: Int = Scores.DEFAULT_TOP_K,\n    dispatcher: CoroutineDispatcher" in kotlin  # classifyInBackground
        for root in (android, ios):
            code = "".join(p.read_text() for p in root.rglob("*") if p.suffix in (".kt", ".swift", ".md"))
            assert "topK: Int = 5" not in code and "topK = 5" not in code and "topK: 5" not in code
        readme = (android / "README.md").read_text()
        assert "model.classify(bitmap)" in readme and f"`Scores.DEFAULT_TOP_K` ({k}" in readme
        assert "A larger `topK` is clamped, never an error" in readme
        ios_readme = (ios / "README.md").read_text()
        assert "model.classify(image: cgImage)`" in ios_readme and f"`TinyCnn.Scores.defaultTopK` ({k}" in ios_readme
        assert "is clamped, never an error" in ios_readme
    assert "the 3 classes the graph ranks" in (rendered["android_cls_topk"] / "README.md").read_text()
    assert "every class (11)" in (rendered["android_cls_all"] / "README.md").read_text()


def test_the_scans_catch_an_unknown_symbol(rendered: dict[str, Path]) -> None:
    """Guards the two symbol checks above against passing vacuously."""
    text = (rendered["ios_cls_topk"] / "Sources/TinyCnn/TinyCnn+Task.swift").read_text()
    bad = text.replace("CGColorSpace.sRGB", "CGColorSpaceMagic.sRGB")
    assert set(CG_IDENT.findall(bad)) - set(COREGRAPHICS) == {"CGColorSpaceMagic"}
    wrapper = (rendered["ios_cls_topk"] / "Sources/TinyCnn/TinyCnn.swift").read_text()
    assert scan({"w.swift": wrapper.replace("appendXnnpackExecutionProvider(with:", "appendXnnpackExecutionProvider(withOptions:")})


def test_xnnpack_on_ios_only_when_asked(rendered: dict[str, Path]) -> None:
    on = (rendered["ios_cls_topk"] / "Sources/TinyCnn/TinyCnn.swift").read_text()
    off = (rendered["ios_audio"] / "Sources/TinyCnn/TinyCnn.swift").read_text()
    assert "useXnnpack: Bool = true" in on and "useXnnpack: Bool = false" in off
    for text in (on, off):  # the code path exists either way: Configuration(useXnnpack: true) turns it on
        assert "try options.appendXnnpackExecutionProvider(with: xnnpack)" in text
        assert "ORTXnnpackExecutionProviderOptions()" in text
        assert "Configuration(useCoreML: false, useXnnpack: false)" in text  # cpuOnly really is CPU only
    ctx = BuildContext(io=IOSpec((), ()), static=True, targets=("ios",))
    assert [p.ep for p in IOS_TARGET.providers(IosOptions(coreml=True, xnnpack=True), ctx)] == ["coreml", "xnnpack"]
    assert [p.ep for p in IOS_TARGET.providers(IosOptions(), ctx)] == []
    assert IOS_TARGET.options_record(IosOptions(xnnpack=True))["xnnpack"] is True


def test_cli_xnnpack_reaches_ios(tmp_path: Path) -> None:
    missing = tmp_path / "missing.onnx"
    # Accepted by ios and by package --ios (the model is what fails then), still refused where no target takes it.
    assert_fails(invoke("ios", missing, "--xnnpack", "-o", tmp_path / "o1"), 2, "missing.onnx")
    assert_fails(invoke("package", missing, "--ios", "--xnnpack", "-o", tmp_path / "o2"), 2, "missing.onnx")
    assert_fails(invoke("package", missing, "--ios", "--nnapi", "-o", tmp_path / "o3"), 2, "--android")
    assert not any((tmp_path / f"o{i}").exists() for i in (1, 2, 3))


def test_wrong_graph_boundary_is_an_internal_error() -> None:
    task = TaskSpec(kind="image-classification", labels=("a", "b"), crop=(4, 4))
    good = IOSpec((TensorSpec("image", "uint8", (1, 4, 4, 3)),), (TensorSpec("scores", "float32", (1, 2)),))
    assert tw.mobile_task(task, good) is not None and tw.mobile_task(None, good) is None
    for io in (
        IOSpec((TensorSpec("image", "float32", (1, 4, 4, 3)),), good.outputs),  # not uint8
        IOSpec((TensorSpec("image", "uint8", (1, 5, 4, 3)),), good.outputs),  # not the crop
        IOSpec((TensorSpec("pixels", "uint8", (1, 4, 4, 3)),), good.outputs),  # not named image
        IOSpec(good.inputs, (TensorSpec("scores", "int64", (1, 2)),)),  # no float scores
        IOSpec(good.inputs, (*good.outputs, TensorSpec("indices", "int32", (1, 2)))),
    ):
        with pytest.raises(InternalError):
            tw.mobile_task(task, io)
    with pytest.raises(InternalError):
        tw.mobile_task(replace(task, kind="audio"), good)
