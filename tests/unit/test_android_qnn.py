"""--qnn on Android: options, the provider chain the quantize stage reads, the pinned QNN AAR in the
Gradle files, and the estimate label of `mobilegen check --ep qnn`."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from pathlib import Path

import onnx
import pytest
from android_specs import make_specs
from cli_helpers import assert_fails, invoke
from onnx import TensorProto, helper

from mobilegen.android import AndroidOptions, android_context, render_android, validate_android_options
from mobilegen.errors import UsageError
from mobilegen.runtimes import QNN_CHANNEL, default_release
from mobilegen.targets.android import TARGET


def test_the_provider_chain_puts_qnn_first_with_its_htp_arch() -> None:
    opts = AndroidOptions(qnn=True, qnn_htp_arch=69, nnapi=True, xnnpack=True)
    chain = TARGET.providers(opts, None)  # type: ignore[arg-type]  # the Android target reads no context
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
    ("opts", "needle"),
    [
        (AndroidOptions(qnn_htp_arch=73), "--qnn-htp-arch given without --qnn"),
        (AndroidOptions(qnn=True, qnn_htp_arch=70), "--qnn-htp-arch 70 is not a Hexagon generation"),
    ],
)
def test_bad_qnn_options(opts: AndroidOptions, needle: str) -> None:
    with pytest.raises(UsageError, match=needle) as err:
        validate_android_options(opts)
    assert "--qnn-htp-arch one of 68, 69, 73, 75, 79, 81" in (err.value.hint or "")


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
    assert 'android:name="libcdsprpc.so"' in (out / "app/src/main/AndroidManifest.xml").read_text()
    wrapper = next(out.rglob("TinyCnn.kt")).read_text()
    assert "val useQnn: Boolean = true" in wrapper and "sessionOptions.addQnn(" in wrapper
    assert '"ep.context_enable", "1"' in wrapper and '"ep.context_file_path"' in wrapper
    bench = next(out.rglob("ModelBenchmark.kt")).read_text()
    assert 'qnn("qnn-no-cpu", noCpu = true)' in bench


def test_without_qnn_the_project_stays_on_onnxruntime_android(tmp_path: Path) -> None:
    out = _render(tmp_path, AndroidOptions(nnapi=True))
    libs = tomllib.loads((out / "gradle/libs.versions.toml").read_text())
    assert [lib["module"] for lib in libs["libraries"].values()][0] == "com.microsoft.onnxruntime:onnxruntime-android"
    assert "libcdsprpc" not in (out / "app/src/main/AndroidManifest.xml").read_text()
    assert "val useQnn: Boolean = false" in next(out.rglob("TinyCnn.kt")).read_text()
    assert "qnn-no-cpu" not in next(out.rglob("ModelBenchmark.kt")).read_text()


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


def test_android_refuses_htp_arch_without_qnn(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "proj"
    assert_fails(invoke("android", model, "-o", out, "--qnn-htp-arch", "73"), 2, "--qnn-htp-arch given without --qnn")
    assert not out.exists()


def test_package_refuses_qnn_without_android(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    assert_fails(invoke("package", model, "--ios", "-o", out, "--qnn"), 2, "--qnn/--qnn-htp-arch need --android")
    assert not out.exists()
