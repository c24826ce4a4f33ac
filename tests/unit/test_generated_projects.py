"""Fixes from a review of the generated Android/iOS projects, checked on the rendered files (no compilers;
the Kotlin logic runs on the JVM in tests/integration/test_android_tasks.py):

* a TopK's ``indices`` output is compared as classes with the near-tie rule, never numerically with atol
  (Android golden and task tests, iOS GoldenVectors.mismatches and the task test's classify loop);
* the accelerated device tests fail when an accelerator the runtime has was not added, instead of passing
  on the CPU (Android: expectedAccelerators / checkAccelerated; iOS: no XCTSkip hiding a CoreML failure);
* the QNN context cache key is hashed without CRC32.update(ByteBuffer) (API 26; minSdk 24);
* kotlinx-coroutines is an ``api`` dependency (CoroutineDispatcher is in the public API);
* the sample apps' max abs error leaves integer outputs out;
* iOS: simulators are picked from ``xcrun simctl list devices available``; XNNPACK's threading is set
  before the provider is appended.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from android_specs import make_specs as android_specs
from task_specs import task_specs

from mobilegen.targets.android import runtime
from mobilegen.targets.android.project import AndroidOptions, render_android
from mobilegen.targets.ios.project import IosOptions, render_ios


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("review")
    specs = task_specs(root / "specs")
    out = {}
    for name in ("cls_topk", "cls_all"):
        out[f"android_{name}"] = root / f"android_{name}"
        render_android(specs[name], AndroidOptions(nnapi=True, xnnpack=True, package=f"com.example.r.{name}"), out[f"android_{name}"])
        out[f"ios_{name}"] = root / f"ios_{name}"
        render_ios(specs[name], IosOptions(coreml=True, xnnpack=True), out[f"ios_{name}"])
    out["android_qnn"] = root / "android_qnn"
    qnn = AndroidOptions(qnn=True, nnapi=True, xnnpack=True, package="com.example.r.qnn")
    render_android(replace(specs["cls_topk"], ort_version=""), qnn, out["android_qnn"])
    plain, opts = android_specs(root / "plain")["android_cnn"]
    out["android_plain"] = root / "android_plain"
    render_android(plain, opts, out["android_plain"])
    return out


def _read(root: Path, name: str) -> str:
    return next(root.rglob(name)).read_text(encoding="utf-8")


def test_indices_are_compared_as_classes_with_the_near_tie_rule(trees: dict[str, Path]) -> None:
    android = trees["android_cls_topk"]
    golden_test = _read(android, "TinyCnnGoldenTest.kt")
    assert "compare(failures, TinyCnn.INDICES_NAME" not in golden_test  # the old numeric compare with atol
    assert "compare(failures, TinyCnn.SCORES_NAME" in golden_test
    assert re.search(r"ModelSupport\.rankingMismatches\(\s*g\.output\(TinyCnn\.INDICES_NAME\)\.toDoubles\(\),\s*g\.output\(TinyCnn\.SCORES_NAME\)", golden_test)
    task_test = _read(android, "TinyCnnTaskTest.kt")
    assert 'compare(failures, "$name: indices"' not in task_test
    assert re.search(r'ranking\(\s*failures,\s*"\$name: indices",', task_test)
    assert re.search(r'ranking\(\s*failures,\s*"\$name: classify",', task_test)  # classify uses the same rule
    assert "val near = " not in task_test  # the old ad-hoc swap check
    support = _read(android, "ModelSupport.kt")
    assert "fun rankingMismatches(" in support
    # Without in-graph TopK there is no indices output: plain numeric compares, no ranking.
    assert "rankingMismatches" not in _read(trees["android_cls_all"], "TinyCnnGoldenTest.kt")

    ios = trees["ios_cls_topk"]
    vectors = (ios / "Tests/TinyCnnTests/GoldenVectors.swift").read_text()
    assert 'Self.compare(\n            "indices"' not in vectors
    assert 'Self.compareRanking(\n            "indices",' in vectors and "static func rankingMismatches(" in vectors
    assert 'Self.compare(\n            "scores"' in vectors
    assert "GoldenVectors.rankingMismatches(" in (ios / "Tests/TinyCnnTests/TinyCnnTaskTests.swift").read_text()
    assert "Self.compareRanking(" not in (trees["ios_cls_all"] / "Tests/TinyCnnTests/GoldenVectors.swift").read_text()


def test_accelerated_android_tests_fail_when_an_available_accelerator_was_not_added(trees: dict[str, Path]) -> None:
    for name in ("android_cls_topk", "android_qnn"):
        golden_test = _read(trees[name], "TinyCnnGoldenTest.kt")
        task_test = _read(trees[name], "TinyCnnTaskTest.kt")
        for text in (golden_test, task_test):
            assert "if (accelerated) checkAccelerated(model.activeProviders" in text
            assert "ACCELERATED_RTOL, accelerated = true)" in text
        assert "nnapiOsSupport = sdkInt >= ModelSupport.NNAPI_MIN_SDK," in golden_test
        assert 'assumeTrue("no requested accelerator on API' in golden_test
        assert "assertTrue(\"requested accelerators $missing do not hold the session" in golden_test
        assert "checkAccelerated(model.activeProviders, model.skippedProviders)" in golden_test
    plain = _read(trees["android_cls_topk"], "TinyCnnGoldenTest.kt")
    assert "nnapiInBuild = true," in plain and "xnnpackInBuild = true," in plain and "qnnInBuild = false," in plain
    # The QNN AAR has neither NNAPI nor XNNPACK: only QNN is expected there.
    qnn = _read(trees["android_qnn"], "TinyCnnGoldenTest.kt")
    assert "nnapiInBuild = false," in qnn and "xnnpackInBuild = false," in qnn and "qnnInBuild = true," in qnn
    # The golden test exists without a task too.
    assert "checkAccelerated(model.activeProviders, model.skippedProviders)" in _read(trees["android_plain"], "TinyCnnGoldenTest.kt")


def test_aar_providers_and_bench_configs_follow_the_pinned_runtime() -> None:
    assert runtime.aar_providers(AndroidOptions()) == ("nnapi", "xnnpack")
    assert runtime.aar_providers(AndroidOptions(qnn=True, nnapi=True, xnnpack=True)) == ("qnn",)
    assert runtime.bench_configs(AndroidOptions()) == ["default", "cpu", "xnnpack", "nnapi", "nnapi-fp16", "nnapi-no-cpu"]
    assert runtime.bench_configs(AndroidOptions(qnn=True, nnapi=True)) == ["default", "cpu", "qnn", "qnn-no-cpu"]


def test_accelerated_ios_tests_fail_instead_of_skipping_a_failed_coreml_session(trees: dict[str, Path]) -> None:
    tests = (trees["ios_cls_topk"] / "Tests/TinyCnnTests/TinyCnnTests.swift").read_text()
    # The old skip hid a CoreML session failure whenever the runtime had CoreML.
    assert "XCTSkipUnless(\n            model.activeExecutionProviders.contains(.coreML)" not in tests
    assert "XCTSkipUnless(\n            model.activeExecutionProviders.contains(.xnnpack)" not in tests
    assert 'try XCTSkipUnless(ORTIsCoreMLExecutionProviderAvailable(), "this ONNX Runtime build has no CoreML' in tests
    assert "func acceleratorProblems(_ model: TinyCnn) -> [String]" in tests and "import OnnxRuntimeBindings" in tests
    assert "model.configuration.useCoreML && ORTIsCoreMLExecutionProviderAvailable()" in tests
    assert tests.count("guard problems.isEmpty else { return XCTFail(") == 2  # CoreML and XNNPACK tests
    task = (trees["ios_cls_topk"] / "Tests/TinyCnnTests/TinyCnnTaskTests.swift").read_text()
    assert "var failures: [String] = accelerated ? acceleratorProblems(model) : []" in task
    assert "rtol: GoldenVectors.acceleratedRtol,\n            accelerated: true)" in task


def test_qnn_context_hash_avoids_the_api_26_crc32_overload(trees: dict[str, Path]) -> None:
    for name in ("android_qnn", "android_plain"):
        wrapper = _read(trees[name], "TinyCnn.kt")
        support = _read(trees[name], "ModelSupport.kt")
        assert "crc.update(model" not in wrapper and "CRC32()" not in wrapper
        assert "java.lang.Long.toHexString(ModelSupport.crc32(model))" in wrapper
        assert "crc.update(chunk, 0, n)" in support and "val data = buffer.duplicate()" in support
        assert not re.search(r"crc\.update\((buffer|data)\)", support)


def test_coroutines_are_an_api_dependency(trees: dict[str, Path]) -> None:
    gradle = (trees["android_plain"] / "tiny-cnn/build.gradle.kts").read_text()
    assert "    api(libs.kotlinx.coroutines.android)\n" in gradle
    assert "implementation(libs.kotlinx.coroutines.android)" not in gradle
    assert "dispatcher: CoroutineDispatcher = Dispatchers.Default" in _read(trees["android_plain"], "TinyCnnAndroid.kt")


def test_sample_apps_leave_integer_outputs_out_of_the_max_error(trees: dict[str, Path]) -> None:
    activity = _read(trees["android_cls_topk"], "MainActivity.kt")
    error_block = activity.split("var maxError = 0.0", 1)[1].split("return buildString", 1)[0]
    assert "TinyCnn.SCORES_NAME" in error_block and "INDICES_NAME" not in error_block
    assert "TinyCnn.SCORES_NAME" in _read(trees["android_cls_all"], "MainActivity.kt")
    vectors = (trees["ios_cls_topk"] / "Tests/TinyCnnTests/GoldenVectors.swift").read_text()
    max_abs = vectors.split("func maxAbsError", 1)[1].split("return worst", 1)[0]
    assert '"scores"' in max_abs and '"indices"' not in max_abs


def test_ios_simulator_destination_is_picked_from_simctl(trees: dict[str, Path]) -> None:
    root = trees["ios_cls_topk"]
    readme = (root / "README.md").read_text()
    assert "xcrun simctl list devices available" in readme and "is only an example" in readme
    assert "-destination 'platform=iOS Simulator,name=iPhone 16'" in readme  # still a concrete example
    for name in ("TinyCnnTests.swift", "TinyCnnBenchmarkTests.swift"):
        header = (root / "Tests/TinyCnnTests" / name).read_text().split("\nimport ", 1)[0]
        assert "xcrun simctl list devices available" in header, name


def test_ios_xnnpack_threading_is_set_before_the_provider_is_appended(trees: dict[str, Path]) -> None:
    wrapper = (trees["ios_cls_topk"] / "Sources/TinyCnn/TinyCnn.swift").read_text()
    body = wrapper.split("private static func appendProvider(", 1)[1].split("\n    }\n", 1)[0]
    body = body.split("case .xnnpack:", 1)[1].split("case .cpu:", 1)[0]
    spinning = body.index('try options.addConfigEntry(withKey: "session.intra_op.allow_spinning", value: "0")')
    threads = body.index("try options.setIntraOpNumThreads(1)")
    append = body.index("try options.appendXnnpackExecutionProvider(with: xnnpack)")
    assert spinning < append and threads < append
    # A refused provider is dropped and the chain's next attempt starts from fresh options (the threading of a
    # refused XNNPACK never stays behind).
    chain = wrapper.split("private static func openSession(", 1)[1].split("\n    }\n", 1)[0]
    loop = chain.split("while true {", 1)[1]
    assert loop.index("options = try sessionOptions(configuration)") < loop.index("try appendProvider(provider, to: options")
    assert "chain.removeAll { $0 == provider }\n                continue" in loop
