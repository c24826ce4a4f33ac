"""The generated Android wrapper's session creation, run on the JVM against runtime fakes (issue 26 items 4-6).

The wrapper (core, ModelSupport and the Android layer) of two rendered projects is compiled with kotlinc
and run against tests/fakes: ORT's ``OrtEnvironment``/``OrtSession`` with the shim's (ORT's) signatures whose
``addNnapi``/``addXnnpack``/``addQnn`` or ``createSession`` throw ``OrtException`` as a bad driver does, whose QNN
can take no node (its HTP backend did not start: no EP context file is written), whose native library can
be missing (``UnsatisfiedLinkError``), and an ``android.os.Build`` whose ``SUPPORTED_ABIS`` lack arm64-v8a.
The fakes record which providers each created session really holds, so ``activeProviders`` is checked
against what the runtime did, not against what the wrapper asked for.

* item 4: the provider chain NNAPI+XNNPACK → XNNPACK → CPU (and QNN → CPU) is tried at session creation; a
  provider that fails to initialise or to create the session is skipped with its reason
  (``skippedProviders``), ``activeProviders`` names the providers that hold the session;
* item 5: a QNN session in which QNN took no node is reported as CPU, never as QNN (ORT's EP context file
  is the signal), also when the cached context does not load, so the accelerated golden test's own check
  (``expectedAccelerators``/``missingAccelerators``, compiled from the androidTest) fails on it; with
  ``disableCpuFallback`` no CPU-only session is made;
* item 6: on a device without arm64-v8a, ``newInstance`` skips QNN with the reason; when the APK has no ORT
  library for the ABI at all, it throws the wrapper's exception naming ``abiFilters``, not
  ``UnsatisfiedLinkError``.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
from android_specs import make_specs
from test_android_kotlin import SHIM, _kotlinc, _missing_tool, _run, _stdlib

from mobilegen.targets.android.project import AndroidOptions, render_android

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
ANDROID_SHIM = REPO / "tests" / "shims" / "android_sdk"
FAKES = REPO / "tests" / "fakes"

# The harness reads skippedProviders by reflection, so that it also compiles against a wrapper without it
# (and then fails on behaviour, not on compilation).
HARNESS = """
package mgchain

import android.content.Context
import android.content.pm.ApplicationInfo
import android.content.res.AssetManager
import java.io.File
import java.nio.ByteBuffer
import com.example.chainqnn.newInstance

fun quote(s: String): String = "\\"" + s.replace("\\\\", "\\\\\\\\").replace("\\"", "\\\\\\"") + "\\""

fun skipped(model: Any): List<String> = try {
    @Suppress("UNCHECKED_CAST")
    model.javaClass.getMethod("getSkippedProviders").invoke(model) as List<String>
} catch (e: NoSuchMethodException) {
    listOf("<no skippedProviders>")
}

fun report(active: List<String>?, skipped: List<String>?, error: Throwable?, missing: List<String>? = null) {
    val fields = ArrayList<String>()
    if (missing != null) fields.add("\\"missing\\": " + missing.joinToString(",", "[", "]") { quote(it) })
    fields.add("\\"active\\": " + (active?.joinToString(",", "[", "]") { quote(it) } ?: "null"))
    fields.add("\\"skipped\\": " + (skipped?.joinToString(",", "[", "]") { quote(it) } ?: "null"))
    fields.add("\\"error\\": " + (error?.let { quote(it.javaClass.name + ": " + it.message) } ?: "null"))
    fields.add("\\"sessions\\": " + quote(System.getProperty("fakeort.sessions", "")))
    println("{" + fields.joinToString(", ") + "}")
}

class FakeContext(private val files: File) : Context() {
    override fun getAssets(): AssetManager = AssetManager()
    override fun getApplicationInfo(): ApplicationInfo = ApplicationInfo().also { it.nativeLibraryDir = files.path }
    override fun getFilesDir(): File = files
}

// args: project (plain|qnn), entry (core|android), then key=value options: nnapiOs, cache, noCpu, forceCpu.
fun main(args: Array<String>) {
    val opts = args.drop(2).associate { it.substringBefore("=") to it.substringAfter("=") }
    val model = ByteBuffer.allocateDirect(4).put(byteArrayOf(1, 2, 3, 4))
    model.flip()
    try {
        if (args[0] == "plain") {
            val options = com.example.chain.TinyCnn.Options(
                disableCpuFallback = opts["noCpu"] == "1", forceCpu = opts["forceCpu"] == "1",
            )
            // nnapiOs=none: create(bytes, options) as an app calls it, without nnapiOsSupport
            val created = if (opts["nnapiOs"] == "none") {
                com.example.chain.TinyCnn.create(byteArrayOf(1, 2, 3, 4), options)
            } else {
                com.example.chain.TinyCnn.create(model, options, nnapiOsSupport = opts["nnapiOs"] == "1")
            }
            created.use { report(it.activeProviders, skipped(it), null) }
        } else if (args[1] == "golden") {
            // The accelerated golden test's own check (androidTest), on what the wrapper reports: API 34, QNN AAR.
            com.example.chainqnn.TinyCnn.create(model, com.example.chainqnn.TinyCnn.Options()).use {
                val expected = com.example.chainqnn.expectedAccelerators(34)
                report(it.activeProviders, skipped(it), null, com.example.chainqnn.missingAccelerators(expected, it.activeProviders))
            }
        } else if (args[1] == "core") {
            val options = com.example.chainqnn.TinyCnn.Options(
                qnnContextCacheDir = opts["cache"], disableCpuFallback = opts["noCpu"] == "1",
            )
            com.example.chainqnn.TinyCnn.create(model, options).use { report(it.activeProviders, skipped(it), null) }
        } else {
            val context = FakeContext(File(opts.getValue("files")))
            com.example.chainqnn.TinyCnn.newInstance(context).use { report(it.activeProviders, skipped(it), null) }
        }
    } catch (e: Throwable) {
        report(null, null, e)
    }
}
"""


@pytest.fixture(scope="module")
def chain_jar(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    kotlinc = _kotlinc()
    coroutines = kotlinc.resolve().parent.parent / "lib" / "kotlinx-coroutines-core-jvm.jar"
    if not coroutines.is_file():
        _missing_tool(f"kotlinx-coroutines-core-jvm.jar next to {kotlinc}")
    root = tmp_path_factory.mktemp("provider_chain")
    spec, _ = make_specs(root / "inputs")["android_cnn"]
    plain, qnn = root / "plain", root / "qnn"
    render_android(
        spec,
        AndroidOptions(nnapi=True, xnnpack=True, package="com.example.chain", class_name="TinyCnn"),
        plain,
    )
    render_android(
        replace(spec, ort_version=""),
        AndroidOptions(qnn=True, package="com.example.chainqnn", class_name="TinyCnn"),
        qnn,
    )
    shims, fakes = root / "shims", root / "fakes"
    _run(
        [
            "javac",
            "-d",
            str(shims),
            *map(str, sorted(SHIM.rglob("*.java")) + sorted(ANDROID_SHIM.rglob("*.java"))),
        ],
        "javac (shims)",
    )
    _run(
        ["javac", "-cp", str(shims), "-d", str(fakes), *map(str, sorted(FAKES.rglob("*.java")))],
        "javac (fakes)",
    )
    sources = []
    for tree in (plain, qnn):
        main = [p for p in tree.glob("*/src/main/kotlin/**/*.kt") if p.relative_to(tree).parts[0] != "app"]
        # The wrapper, ModelSupport and the Android layer (the task-free project has no other sources).
        sources += sorted(main)
    # The accelerated golden test's expectedAccelerators / missingAccelerators (androidTest), run on the JVM.
    sources += sorted(qnn.glob("*/src/androidTest/kotlin/**/TinyCnnGoldenTest.kt"))
    harness = root / "Harness.kt"
    harness.write_text(HARNESS, encoding="utf-8")
    jar = root / "chain.jar"
    # Compiled against the fakes first (AssetManager's hidden constructor), then the shims for the rest.
    cp = os.pathsep.join([str(fakes), str(shims), str(coroutines)])
    _run([str(kotlinc), "-nowarn", "-cp", cp, "-d", str(jar), *map(str, sources), str(harness)], "kotlinc")
    assets = root / "assets"
    for tree in (plain, qnn):
        for ort in tree.glob("*/src/main/assets/**/*.ort"):
            dest = assets / ort.relative_to(ort.parents[len(ort.parts) - ort.parts.index("assets") - 2])
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(ort.read_bytes())
    return {
        "jar": jar,
        "fakes": fakes,
        "shims": shims,
        "coroutines": coroutines,
        "stdlib": _stdlib(kotlinc),
        "assets": assets,
    }


def _run_case(
    env: dict[str, Path], project: str, entry: str, props: dict[str, str], **opts: str
) -> dict[str, object]:
    cp = os.pathsep.join(str(env[k]) for k in ("jar", "fakes", "shims", "coroutines", "stdlib"))
    flags = [f"-D{k}={v}" for k, v in {"fakeandroid.assets": str(env["assets"]), **props}.items()]
    args = [project, entry, *(f"{k}={v}" for k, v in opts.items())]
    proc = _run(["java", *flags, "-cp", cp, "mgchain.HarnessKt", *args], "the provider-chain harness")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# --- item 4: the chain at session creation -------------------------------------------------------------


def test_nnapi_failing_session_creation_falls_back_to_xnnpack(chain_jar: dict[str, Path]) -> None:
    out = _run_case(chain_jar, "plain", "core", {"fakeort.failCreate": "NNAPI"}, nnapiOs="1")
    assert out["error"] is None, out
    assert out["active"] == ["XNNPACK", "CPU"]
    assert out["sessions"] == "XNNPACK,CPU"  # what the runtime really created
    assert len(out["skipped"]) == 1 and out["skipped"][0].startswith(
        "NNAPI (session creation with NNAPI, XNNPACK failed: "
    )
    assert "fake: NNAPI failed to compile the graph" in out["skipped"][0]


def test_every_accelerator_failing_ends_on_the_cpu(chain_jar: dict[str, Path]) -> None:
    out = _run_case(chain_jar, "plain", "core", {"fakeort.failCreate": "NNAPI,XNNPACK"}, nnapiOs="1")
    assert out["error"] is None, out
    assert out["active"] == ["CPU"] and out["sessions"] == "CPU"
    assert [s.split(" ")[0] for s in out["skipped"]] == ["NNAPI", "XNNPACK"]
    assert "session creation with XNNPACK failed: fake: XNNPACK failed to compile" in out["skipped"][1]


def test_a_provider_that_fails_to_initialise_is_skipped_with_the_reason(chain_jar: dict[str, Path]) -> None:
    out = _run_case(chain_jar, "plain", "core", {"fakeort.failAdd": "XNNPACK"}, nnapiOs="1")
    assert out["error"] is None, out
    assert out["active"] == ["NNAPI", "CPU"] and out["sessions"] == "NNAPI,CPU"
    assert out["skipped"] == ["XNNPACK (failed to initialise: fake: XNNPACK failed to initialise)"]


def test_plan_skips_are_listed_and_a_healthy_chain_keeps_every_provider(chain_jar: dict[str, Path]) -> None:
    out = _run_case(chain_jar, "plain", "core", {}, nnapiOs="1")
    assert out["active"] == ["NNAPI", "XNNPACK", "CPU"] and out["skipped"] == [], out
    old_os = _run_case(chain_jar, "plain", "core", {})
    assert old_os["active"] == ["XNNPACK", "CPU"]
    assert old_os["skipped"] == ["NNAPI (needs Android API 27 or newer)"]


def test_create_without_nnapi_os_support_says_it_was_not_passed(chain_jar: dict[str, Path]) -> None:
    """create(bytes) on a device of any API level: the wrapper cannot know the OS has NNAPI; the reason
    says the parameter was not passed (not "needs Android API 27", which would be false on API 34)."""
    out = _run_case(chain_jar, "plain", "core", {}, nnapiOs="none")
    assert out["error"] is None, out
    assert out["active"] == ["XNNPACK", "CPU"] and out["sessions"] == "XNNPACK,CPU"
    assert out["skipped"] == ["NNAPI (nnapiOsSupport not passed to create(); newInstance(context) passes it)"]


def test_qnn_given_up_by_create_alone_says_its_setup_was_not_done(chain_jar: dict[str, Path], tmp_path: Path) -> None:
    """QNN's ADSP_LIBRARY_PATH is set by newInstance(context), not by create(): a QNN that create() gives up
    says so; through newInstance the same failure does not."""
    core = _run_case(chain_jar, "qnn", "core", {"fakeort.failCreate": "QNN"})
    assert core["active"] == ["CPU"], core
    [reason] = core["skipped"]
    assert reason.startswith("QNN (session creation with QNN failed: fake: QNN failed to compile")
    assert reason.endswith("; ADSP_LIBRARY_PATH was not set up: create() does not do it, newInstance(context) does)")
    props = {"fakeort.failCreate": "QNN", "fakeandroid.abis": "arm64-v8a"}
    android = _run_case(chain_jar, "qnn", "android", props, files=str(tmp_path))
    assert android["active"] == ["CPU"], android
    [reason] = android["skipped"]
    assert reason.startswith("QNN (session creation with QNN failed:") and "ADSP_LIBRARY_PATH" not in reason


def test_disable_cpu_fallback_never_ends_on_the_cpu(chain_jar: dict[str, Path]) -> None:
    out = _run_case(
        chain_jar, "plain", "core", {"fakeort.failCreate": "NNAPI,XNNPACK"}, nnapiOs="1", noCpu="1"
    )
    assert out["active"] is None and out["sessions"] == ""
    assert out["error"].startswith(
        "com.example.chain.TinyCnnException: no accelerator is left and disableCpuFallback"
    )
    assert "NNAPI (session creation" in out["error"] and "XNNPACK (session creation" in out["error"]


# --- item 5: QNN that took no node is CPU --------------------------------------------------------------


def test_qnn_that_takes_no_node_is_reported_as_cpu(chain_jar: dict[str, Path], tmp_path: Path) -> None:
    for cache in ({}, {"cache": str(tmp_path / "cache")}):  # a temporary context file, and the app's cache
        out = _run_case(chain_jar, "qnn", "core", {"fakeort.qnnNoNode": "1"}, **cache)
        assert out["error"] is None, out
        assert out["active"] == ["CPU"], out
        assert out["sessions"] == "CPU"  # one session: QNN was added but took no node
        assert len(out["skipped"]) == 1 and out["skipped"][0].startswith("QNN (took no node of the graph")
    assert not any((tmp_path / "cache").glob("*")), "no context cache from a QNN that compiled nothing"


def test_the_accelerated_golden_test_fails_when_qnn_took_no_node(chain_jar: dict[str, Path]) -> None:
    # What the generated androidTest checks before it compares outputs with ACCELERATED_ATOL: QNN must hold the
    # session. A QNN that took no node leaves CPU results, which must not pass as QNN ones.
    broken = _run_case(chain_jar, "qnn", "golden", {"fakeort.qnnNoNode": "1"})
    assert broken["sessions"] == "CPU" and broken["missing"] == ["QNN"], broken
    working = _run_case(chain_jar, "qnn", "golden", {})
    assert working["sessions"] == "QNN,CPU" and working["missing"] == [], working


def test_qnn_that_takes_the_graph_is_reported_and_cached(chain_jar: dict[str, Path], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _run_case(chain_jar, "qnn", "core", {}, cache=str(cache))
    assert (
        first["active"] == ["QNN(htp)", "CPU"] and first["skipped"] == [] and first["sessions"] == "QNN,CPU"
    ), first
    assert len(list(cache.glob("*.onnx"))) == 1
    again = _run_case(chain_jar, "qnn", "core", {}, cache=str(cache))  # from the cached context
    assert again["active"] == ["QNN(htp)", "CPU"], again
    # The cache exists but QNN's backend no longer starts (e.g. restored on another phone): the context model
    # does not load, the compile again takes no node, the session is CPU.
    broken = _run_case(chain_jar, "qnn", "core", {"fakeort.qnnNoNode": "1"}, cache=str(cache))
    assert broken["active"] == ["CPU"] and broken["skipped"][0].startswith("QNN (took no node"), broken
    assert not list(cache.glob("*.onnx"))


def test_qnn_without_cpu_fallback_fails_instead_of_running_on_the_cpu(chain_jar: dict[str, Path]) -> None:
    out = _run_case(chain_jar, "qnn", "core", {"fakeort.qnnNoNode": "1"}, noCpu="1")
    assert out["active"] is None and out["sessions"] == "", out
    assert (
        "QNN (session creation with QNN failed: fake: This session contains graph nodes that are assigned to the default CPU EP"
        in out["error"]
    )


def test_qnn_failing_session_creation_falls_back_to_the_cpu(chain_jar: dict[str, Path]) -> None:
    out = _run_case(chain_jar, "qnn", "core", {"fakeort.failCreate": "QNN"})
    assert out["active"] == ["CPU"] and out["sessions"] == "CPU", out
    assert out["skipped"][0].startswith("QNN (session creation with QNN failed: fake: QNN failed to compile")


# --- item 6: the ABI guard in the library ----------------------------------------------------------------


def test_qnn_is_skipped_on_a_device_without_arm64(chain_jar: dict[str, Path], tmp_path: Path) -> None:
    out = _run_case(chain_jar, "qnn", "android", {"fakeandroid.abis": "x86_64,x86"}, files=str(tmp_path))
    assert out["error"] is None, out
    assert out["active"] == ["CPU"] and out["sessions"] == "CPU"
    assert out["skipped"] == [
        "QNN (the QNN runtime is built for arm64-v8a only; this device supports x86_64, x86)"
    ]
    arm = _run_case(
        chain_jar, "qnn", "android", {"fakeandroid.abis": "arm64-v8a,armeabi-v7a"}, files=str(tmp_path)
    )
    assert arm["active"] == ["QNN(htp)", "CPU"], arm
    assert list((tmp_path / "qnn-cache").glob("*.onnx")), (
        "newInstance caches the compiled context in filesDir"
    )


def test_a_missing_native_library_is_the_wrappers_exception_naming_abi_filters(
    chain_jar: dict[str, Path], tmp_path: Path
) -> None:
    props = {"fakeandroid.abis": "x86_64", "fakeort.nativeMissing": "1"}
    out = _run_case(chain_jar, "qnn", "android", props, files=str(tmp_path))
    assert out["active"] is None
    error = out["error"]
    assert error.startswith(
        "com.example.chainqnn.TinyCnnException: ONNX Runtime's native library could not be loaded (device ABIs: x86_64)"
    )
    assert (
        'abiFilters += "arm64-v8a"' in error and "QNN (the QNN runtime is built for arm64-v8a only" in error
    )
