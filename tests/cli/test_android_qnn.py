"""--qnn on Android: options, the provider chain the quantize stage reads, the pinned QNN AAR in the
Gradle files, and the estimate label of `mobilegen check --ep qnn`."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import onnx
import pytest
from android_specs import make_specs
from cli_helpers import assert_fails, invoke
from onnx import TensorProto, helper

from mobilegen.errors import UsageError
from mobilegen.providers.qnn import AAR
from mobilegen.runtimes import default_release
from mobilegen.spec import IOSpec
from mobilegen.targets.android import TARGET
from mobilegen.targets.android.project import (
    AndroidOptions,
    android_context,
    render_android,
    validate_android_options,
)
from mobilegen.targets.base import BuildContext

QNN_CHANNEL = AAR.channel  # "maven-qnn": onnxruntime-android-qnn's rows of the release table


def test_the_provider_chain_puts_qnn_first_with_its_htp_arch() -> None:
    opts = AndroidOptions(qnn=True, qnn_htp_arch=69, nnapi=True, xnnpack=True)
    chain = TARGET.providers(opts, BuildContext(io=IOSpec((), ()), static=True, targets=("android",)))
    assert [t.ep for t in chain] == ["qnn", "nnapi", "xnnpack"]
    assert chain[0].str_value("qnn_htp_arch") == "69"
    assert all(t.str_value("ort_version") == default_release(QNN_CHANNEL).version for t in chain)
    assert TARGET.options_record(opts)["qnn_htp_arch"] == 69
    assert "qnn" not in TARGET.options_record(AndroidOptions(nnapi=True))


def test_qnn_pins_the_qnn_aar_and_other_builds_do_not() -> None:
    assert TARGET.runtime(AndroidOptions(qnn=True)).version == "1.29.0"
    assert TARGET.runtime(AndroidOptions()).version == default_release("maven").version
    with pytest.raises(UsageError, match="not a release mobilegen knows to be published on maven-qnn"):
        TARGET.runtime(AndroidOptions(qnn=True, ort_version="1.27.0"))


@pytest.mark.parametrize(
    ("opts", "needle", "hint"),
    [
        (AndroidOptions(qnn_htp_arch=73), "--qnn-htp-arch given without --qnn", "add --qnn, or drop --qnn-htp-arch"),
        (AndroidOptions(qnn=True, qnn_htp_arch=70), "--qnn-htp-arch 70 is not a Hexagon generation QNN knows (known: 68, 69, 73, 75, 79, 81)", "give --qnn-htp-arch one of the known generations (default 73)"),
    ],
)
def test_bad_qnn_options(opts: AndroidOptions, needle: str, hint: str) -> None:
    with pytest.raises(UsageError, match=re.escape(needle)) as err:
        validate_android_options(opts)
    assert err.value.hint == hint  # --qnn given: no "add --qnn"


def test_the_manifest_channel_is_the_one_the_pin_comes_from() -> None:
    from mobilegen.targets.chosen import Chosen
    from mobilegen.targets.ios import TARGET as IOS

    def chosen(target: Any, opts: Any) -> Chosen:
        return Chosen(target, opts, target.runtime(opts))

    assert chosen(TARGET, AndroidOptions(qnn=True)).channel == QNN_CHANNEL  # 1.29.0 is on onnxruntime-android-qnn only
    assert chosen(TARGET, AndroidOptions()).channel == "maven"
    assert IOS.runtime_channel(None) == "swiftpm"  # the default hook: Target.channel


@pytest.mark.parametrize(("arch", "shipped"), [(75, "float16"), (None, "float16"), (69, None)])
def test_fp16_recipe_takes_the_android_htp_arch(arch: int | None, shipped: str | None) -> None:
    from mobilegen.quantize.stage import _plan
    from mobilegen.targets.chosen import Chosen

    opts = AndroidOptions(qnn=True, qnn_htp_arch=arch)
    model = SimpleNamespace(targets=("android",), folder="model", onnx=SimpleNamespace(io=SimpleNamespace(is_static=True)))
    groups, notices = _plan([model], [Chosen(TARGET, opts, TARGET.runtime(opts))], "fp16")  # type: ignore[list-item]
    assert [g.recipe.weight_type if g.recipe else None for g in groups] == [shipped]
    # v69 (below v73) is refused with its generation named, never as "an unspecified HTP"
    assert [n.text for n in notices if "unspecified" in n.text] == []
    assert bool(notices) == (shipped is None) and all("HTP v69" in n.text for n in notices)


def _render(tmp_path: Path, opts: AndroidOptions) -> Path:
    spec, _ = make_specs(tmp_path / "in")["android_cnn"]
    out = tmp_path / "out"
    render_android(replace(spec, ort_version=""), opts, out)
    return out


def test_gradle_files_pin_the_qnn_aar_instead_of_onnxruntime_android(tmp_path: Path) -> None:
    out = _render(tmp_path, AndroidOptions(qnn=True))
    libs = tomllib.loads((out / "gradle/libs.versions.toml").read_text())
    assert libs["versions"]["onnxruntime"] == "1.29.0"
    modules = [lib["module"] for lib in libs["libraries"].values()]
    assert "com.microsoft.onnxruntime:onnxruntime-android-qnn" in modules
    assert "com.microsoft.onnxruntime:onnxruntime-android" not in modules  # the two AARs cannot both be there
    app = (out / "app/build.gradle.kts").read_text()
    assert 'abiFilters += "arm64-v8a"' in app and "useLegacyPackaging = true" in app
    # libcdsprpc.so is declared in the library's manifest, so it merges into apps and the library's test APK.
    native = _native_libraries(out / "tiny-cnn/src/main/AndroidManifest.xml")
    assert native == [{f"{ANDROID_NS}name": "libcdsprpc.so", f"{ANDROID_NS}required": "false"}]
    assert "libcdsprpc" not in (out / "app/src/main/AndroidManifest.xml").read_text()  # one declaration, merged
    readme = (out / "README.md").read_text()
    assert "-e configs default,cpu,qnn,qnn-no-cpu " in readme and "nnapi" not in readme.split("## Benchmark")[1].split("##")[0]
    wrapper = next(out.rglob("TinyCnn.kt")).read_text()
    assert "val useQnn: Boolean = true" in wrapper and "sessionOptions.addQnn(" in wrapper
    assert '"ep.context_enable", "1"' in wrapper and '"ep.context_file_path"' in wrapper
    bench = next(out.rglob("ModelBenchmark.kt")).read_text()
    assert 'qnn("qnn-no-cpu", noCpu = true)' in bench
    # The QNN AAR has no NNAPI and no XNNPACK (default_qnn_aar_build_settings.json): no such configurations.
    assert "addNnapi" not in bench and "addXnnpack" not in bench and "NNAPIFlags" not in bench
    # The benchmark's QNN sessions find the QNN libraries the way the wrapper's do.
    bench_test = next(out.rglob("TinyCnnBenchmarkTest.kt")).read_text()
    assert 'if (configs.any { it.ep == "qnn" }) setQnnLibraryPath(context)' in bench_test
    assert "-e configs default,cpu,qnn,qnn-no-cpu " in bench_test
    layer = next(out.rglob("TinyCnnAndroid.kt")).read_text()
    assert 'internal fun setQnnLibraryPath(context: Context) {\n    Os.setenv("ADSP_LIBRARY_PATH", context.applicationInfo.nativeLibraryDir, true)' in layer
    assert layer.count("ADSP_LIBRARY_PATH\"") == 1 and "    setQnnLibraryPath(context)\n" in layer  # qnnReady reuses it


ANDROID_NS = "{http://schemas.android.com/apk/res/android}"


def _native_libraries(manifest: Path) -> list[dict[str, str]]:
    import xml.etree.ElementTree as ET

    root = ET.parse(manifest).getroot()
    return [dict(e.attrib) for e in root.iter("uses-native-library")]


def test_without_qnn_the_project_stays_on_onnxruntime_android(tmp_path: Path) -> None:
    out = _render(tmp_path, AndroidOptions(nnapi=True))
    libs = tomllib.loads((out / "gradle/libs.versions.toml").read_text())
    assert [lib["module"] for lib in libs["libraries"].values()][0] == "com.microsoft.onnxruntime:onnxruntime-android"
    assert "libcdsprpc" not in (out / "app/src/main/AndroidManifest.xml").read_text()
    assert _native_libraries(out / "tiny-cnn/src/main/AndroidManifest.xml") == []
    assert "val useQnn: Boolean = false" in next(out.rglob("TinyCnn.kt")).read_text()
    assert "qnn-no-cpu" not in next(out.rglob("ModelBenchmark.kt")).read_text()
    assert "setQnnLibraryPath(context)" not in next(out.rglob("TinyCnnBenchmarkTest.kt")).read_text()
    assert "-e configs default,cpu,xnnpack,nnapi,nnapi-fp16,nnapi-no-cpu " in (out / "README.md").read_text()


def test_qnn_accelerated_tolerance(tmp_path: Path) -> None:
    spec, _ = make_specs(tmp_path / "in")["android_cnn"]
    ctx = android_context(replace(spec, ort_version=""), AndroidOptions(qnn=True))
    assert float(ctx["accel_atol"]) >= 1e-2 and "float16" in ctx["accel_tolerance_reason"]
    assert ctx["accelerated_label"].startswith("QNN (HTP)")


@pytest.fixture
def model(tmp_path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x], [y])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_check_labels_every_qnn_verdict_an_estimate(model: Path) -> None:
    r = invoke("check", model, "--ep", "qnn", "--ep", "nnapi", "--json")
    assert r.exit_code == 0, r.stderr
    qnn, nnapi = json.loads(r.stdout)["reports"]
    assert qnn["estimate"] is True and "backendValidateOpConfig" in qnn["estimate_note"]
    assert all(n["estimate"] is True for n in qnn["nodes"])
    assert "estimate" not in nnapi
    human = invoke("check", model, "--ep", "qnn")
    assert "(estimate)" in human.stdout + human.stderr and "backendValidateOpConfig" in human.stdout + human.stderr


def test_check_refuses_an_unknown_htp_arch(model: Path) -> None:
    assert_fails(invoke("check", model, "--ep", "qnn", "--qnn-htp-arch", "70"), 2, "unknown --qnn-htp-arch '70'")


def test_check_refuses_htp_arch_without_the_qnn_provider(model: Path) -> None:
    line = assert_fails(invoke("check", model, "--ep", "nnapi", "--qnn-htp-arch", "69"), 2, "--qnn-htp-arch needs --ep qnn")
    assert "add --ep qnn, or drop --qnn-htp-arch" in line
    assert_fails(invoke("check", model, "--ep", "coreml", "--android-api", "29"), 2, "--android-api needs --ep nnapi")


def test_htp_arch_takes_a_leading_v(model: Path) -> None:
    r = invoke("check", model, "--ep", "qnn", "--qnn-htp-arch", "v75", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["reports"][0]["settings"]["qnn_htp_arch"] == "75"


@pytest.mark.parametrize("arch", ["vx", "v", "seventy-five"])
def test_a_malformed_htp_arch_names_the_valid_ones(model: Path, tmp_path: Path, arch: str) -> None:
    out = tmp_path / "proj"
    line = assert_fails(invoke("android", model, "-o", out, "--qnn", "--qnn-htp-arch", arch), 2, f"'{arch}' is not a Hexagon generation", "68, 69, 73, 75, 79, 81")
    assert "Input should be" not in line
    assert not out.exists()


def test_an_unknown_htp_arch_with_qnn_does_not_say_add_qnn(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "proj"
    line = assert_fails(invoke("android", model, "-o", out, "--qnn", "--qnn-htp-arch", "70"), 2, "--qnn-htp-arch 70 is not a Hexagon generation", "68, 69, 73, 75, 79, 81")
    assert "add --qnn" not in line
    assert not out.exists()


@pytest.mark.slow
def test_a_qnn_fp16_package_verifies(model: Path, tmp_path: Path) -> None:
    """The manifest keys the QNN pin by maven-qnn (1.29.0 is not on onnxruntime-android), and fp16 takes the
    --qnn-htp-arch given (v75 computes fp16) instead of refusing "an unspecified HTP"."""
    out = tmp_path / "pkg"
    r = invoke("android", model, "-o", out, "--qnn", "--qnn-htp-arch", "v75", "--quantize", "fp16")
    assert r.exit_code == 0, r.stderr
    assert "unspecified" not in r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["versions"]["mobile_runtimes"] == {QNN_CHANNEL: default_release(QNN_CHANNEL).version}
    assert manifest["models"][0]["channels"] == [QNN_CHANNEL]
    assert manifest["models"][0]["quantization"]["shipped"] == "fp16"
    assert "onnxruntime-android-qnn 1.29.0" in (out / "README.md").read_text()
    v = invoke("verify", out)
    assert v.exit_code == 0, v.stderr
    assert "runtime maven-qnn onnxruntime 1.29.0: loadable" in v.stdout + v.stderr


def test_android_refuses_htp_arch_without_qnn(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "proj"
    assert_fails(invoke("android", model, "-o", out, "--qnn-htp-arch", "73"), 2, "--qnn-htp-arch given without --qnn")
    assert not out.exists()


def test_package_refuses_qnn_without_android(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    assert_fails(invoke("package", model, "--ios", "-o", out, "--qnn"), 2, "--qnn/--qnn-htp-arch need --android")
    assert not out.exists()
