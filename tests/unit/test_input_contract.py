"""The input contract (issue 31): what a --task build knows, what a plain build can only guess, and that
hostile tensor names never change the claims nor reach generated Kotlin/Swift/Markdown unescaped."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from android_specs import make_specs as android_specs
from ios_specs import make_specs as ios_specs

from mobilegen.errors import UsageError
from mobilegen.render import input_contract as ic
from mobilegen.render import library as lib
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.targets.android.project import android_context, render_android
from mobilegen.targets.ios.project import IosOptions, ios_context, render_ios, validate_ios_options
from mobilegen.tasks.spec import TaskSpec

HOSTILE = ['image"; System.exit(1); "', "pcm\\u0022)\n#", "`](http://x)<b>|", "input_ids\u202e"]


def test_task_image_contract_is_fully_known() -> None:
    task = TaskSpec(kind="image-classification", crop=(224, 224), resize=256, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225), scale=1 / 255, channels="bgr")
    io = IOSpec((TensorSpec("image", "uint8", (1, 224, 224, 3)),), (TensorSpec("scores", "float32", (1, 10)),))
    (c,) = ic.infer_contracts(task, io)
    assert (c.layout, c.source, c.channel_order, c.value_range) == ("NHWC", "task", "RGB", "0..255 (uint8 RGB bytes)")
    assert "mean (0.485, 0.456, 0.406)" in c.normalization and "std (0.229, 0.224, 0.225)" in c.normalization
    assert "model channels BGR" in c.normalization and "model layout NCHW" in c.normalization
    assert c.resize.startswith("shorter side resized to 256 (antialias), then the centre 224x224")
    assert c.known and not c.layout_guessed


def test_task_audio_contract_and_state_inputs() -> None:
    task = TaskSpec(kind="audio", sample_rate=16000, state=(("h", "h_out"),))
    io = IOSpec((TensorSpec("pcm", "float32", (1, 16000)), TensorSpec("h", "float32", (1, 64))), ())
    pcm, state = ic.infer_contracts(task, io)
    assert (pcm.layout, pcm.source, pcm.channel_order) == ("audio", "task", "mono") and "16000 Hz" in pcm.normalization
    assert (state.source, state.value_range) == ("unknown", "unknown")  # the state tensor is not the task's input


def test_task_text_contract_names_the_tokenizer_and_the_length() -> None:
    spec = TaskSpec("text-embedding", text_inputs=(("input_ids", "input_ids"), ("attention_mask", "attention_mask")))
    io = IOSpec((TensorSpec("input_ids", "int64", (1, 40)), TensorSpec("attention_mask", "int64", (1, 40))), (TensorSpec("embedding", "float32", (1, 32)),))
    ids, mask = ic.infer_contracts(spec, io)
    assert ids.known and mask.known and ids.layout == mask.layout == "sequence"
    assert "tokenizer" in ids.value_range and mask.value_range.startswith("1 for a token, 0 for padding")
    assert ids.resize == "truncated and padded to 40 tokens by the tokenizer"
    assert "rebuild with --task" not in ic.describe_source(ids)
    assert "text-embedding" in ic.REBUILD_HINT and "mobilegen build" not in ic.REBUILD_HINT and "`" not in ic.REBUILD_HINT


@pytest.mark.parametrize(
    ("dtype", "shape", "layout"),
    [
        ("float32", (1, 3, 224, 224), "NCHW"),
        ("float32", ("batch", 3, "h", "w"), "NCHW"),
        ("float32", (1, 224, 224, 3), "NHWC"),
        ("int64", (1, 128), "sequence"),
        ("float32", (1, 3, 3, 3), "unknown"),  # ambiguous: no guess
        ("float32", (1, 16000), "unknown"),
        ("float32", (1, 64, 4, 4), "unknown"),  # too small to be an image
    ],
)
def test_plain_contract_guesses_only_the_layout(dtype: str, shape: tuple, layout: str) -> None:  # type: ignore[type-arg]
    (c,) = ic.infer_contracts(None, IOSpec((TensorSpec("x", dtype, shape),)))
    assert c.layout == layout
    assert c.layout_guessed == (layout != "unknown") and not c.known
    assert (c.value_range, c.normalization, c.channel_order, c.resize) == ("unknown",) * 4
    assert "--task" in ic.describe_source(c)


@pytest.mark.parametrize("name", HOSTILE)
def test_names_never_steer_the_guess(name: str) -> None:
    shape = (1, 3, 64, 64)
    (a,) = ic.infer_contracts(None, IOSpec((TensorSpec("x", "float32", shape),)))
    (b,) = ic.infer_contracts(None, IOSpec((TensorSpec(name, "float32", shape),)))
    assert replace(b, name="x") == a
    # an image task whose graph has a hostile-named extra input: that input stays unknown
    task = TaskSpec(kind="image", crop=(8, 8))
    _, c = ic.infer_contracts(task, IOSpec((TensorSpec("image", "uint8", (1, 8, 8, 3)), TensorSpec(name, "float32", (1, 4)))))
    assert c.source == "unknown"
    row = ic.contract_rows((b,))[0]
    assert "\n" not in str(row["name"]) and str(row["name"]).startswith("`")


def test_coordinates_are_validated() -> None:
    assert lib.coordinate_problems("com.example.models", "my-model", "1.2.0-rc.1") == []
    assert lib.coordinate_problems("com.example.models", "my-model", "1.2.0+build.5") == []
    assert len(lib.coordinate_problems("com", "a b", "1.2:3")) == 3
    with pytest.raises(UsageError) as err:
        validate_ios_options(IosOptions(lib_version="v1"))
    assert "--lib-version" in str(err.value) and "SwiftPM" in str(err.value) and "Maven" not in str(err.value)
    validate_ios_options(IosOptions(lib_version="1.2.0+build.5"))


# semver.org 2.0.0's own regular expression ("Is there a suggested regular expression (RegEx) to check a SemVer
# string?"): the oracle for the iOS check, independent of mobilegen's.
SEMVER_ORG = re.compile(
    r"^(?P<major>0|[1-9]\d*)\.(?P<minor>0|[1-9]\d*)\.(?P<patch>0|[1-9]\d*)"
    r"(?:-(?P<prerelease>(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+(?P<buildmetadata>[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
VERSIONS = [
    "1.0.0", "1.2.0+build.5", "1.2.0-rc.1+build.5", "1.2.0+001", "1.0.0-SNAPSHOT", "1.0.0-0A.is.legal",
    "01.2.3", "1.2", "1", "1.2.0+", "1.2.0-01", "1.2.0-rc..1", "v1.2.0", "1.2.0@aar", "1.2:3", "1.+",
    "1.2.0 ", "1.2.0+b\u00e9ta", "1.2.0\n", "-1.2.0", "1.2.3-alpha_1", "2024.05",
]


@pytest.mark.parametrize("version", VERSIONS)
def test_lib_version_is_checked_per_platform(version: str) -> None:
    # iOS: exactly semver.org's grammar (SwiftPM parses git tags as semantic versions, build metadata included).
    assert (lib.swiftpm_version_problem(version) is None) == bool(SEMVER_ORG.fullmatch(version))  # fullmatch: $ alone accepts a trailing newline
    # Android: Maven bans \\ / : " < > | ? * (and, Maven 4, [ ] ( ) { } ,); Gradle's notation adds @ and a trailing +.
    maven_ok = lib.maven_version_problem(version) is None
    if SEMVER_ORG.fullmatch(version):
        assert maven_ok  # every semantic version is a Maven version
    if any(c in version for c in '\\/:"<>|?*[](){},@ \n') or version.endswith("+") or not version[:1].isalnum():
        assert not maven_ok
    problem = lib.maven_version_problem(version) or ""
    assert "SwiftPM" not in problem


def test_android_accepts_build_metadata_and_names_maven(tmp_path: Path) -> None:
    spec, opts = android_specs(tmp_path)["android_cnn"]
    ctx = android_context(spec, replace(opts, lib_version="1.2.0+build.5"))
    assert ctx["library_version"] == "1.2.0+build.5"
    with pytest.raises(UsageError) as err:
        android_context(spec, replace(opts, lib_version="1.2.0@aar"))
    text = str(err.value) + str(err.value.hint)  # type: ignore[attr-defined]
    assert "Maven version" in text and "SwiftPM" not in text


def test_android_refuses_bad_coordinates(tmp_path: Path) -> None:
    spec, opts = android_specs(tmp_path)["android_cnn"]
    with pytest.raises(UsageError) as err:
        android_context(spec, replace(opts, maven_group='com.x"; evil', maven_artifact="-a", lib_version="1.+"))
    assert len(err.value.details) == 3 and "--maven-group like" in err.value.hint  # type: ignore[attr-defined]


def test_rendered_trees_carry_the_contract(tmp_path: Path) -> None:
    name = HOSTILE[0]
    spec, opts = android_specs(tmp_path / "a")["android_cnn"]
    hostile_io = IOSpec((replace(spec.io.inputs[0], name=name),), spec.io.outputs)
    a_spec = replace(spec, io=hostile_io)
    render_android(a_spec, replace(opts, lib_version="2.3.4"), tmp_path / "android")
    inputs_md = (tmp_path / "android" / "INPUTS.md").read_text()
    assert "| layout | NCHW (guess) |" in inputs_md and "--task" in inputs_md
    assert "[INPUTS.md](INPUTS.md)" in (tmp_path / "android" / "README.md").read_text()
    ctx = android_context(a_spec, opts)
    const = ctx["inputs"][0]["contract"]["const"]
    (wrapper,) = [p for p in (tmp_path / "android").rglob(f"{ctx['class_name']}.kt")]
    kt = wrapper.read_text()
    assert f'const val {const}_LAYOUT: String = "NCHW"' in kt and f"const val {const}_LAYOUT_GUESSED: Boolean = true" in kt
    assert 'const val LIBRARY_VERSION: String = "2.3.4"' in kt
    assert "System.exit(1); \"\n" not in kt  # the name reached Kotlin only as an escaped literal

    ispec, iopts = ios_specs(tmp_path / "i")["ios_cnn"]
    render_ios(replace(ispec, io=IOSpec((replace(ispec.io.inputs[0], name=name),), ispec.io.outputs)), replace(iopts, lib_version="2.3.4"), tmp_path / "ios")
    assert "| layout | NCHW (guess) |" in (tmp_path / "ios" / "INPUTS.md").read_text()
    ictx = ios_context(ispec, iopts, model_sha256="0" * 64)
    swift = (tmp_path / "ios" / "Sources" / ictx["target"] / f"{ictx['class_name']}.swift").read_text()
    assert 'public static let libraryVersion = "2.3.4"' in swift and 'layout: "NCHW", layoutGuessed: true' in swift
    assert (tmp_path / "ios" / "Sources" / ictx["target"] / "InputContract.swift").is_file()


def _steps(readme: str, heading: str) -> list[str]:
    block = readme.split(heading, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^(\d+)\. ", block, re.M)


def test_adding_it_to_an_app_takes_at_most_five_steps(tmp_path: Path) -> None:
    spec, opts = android_specs(tmp_path / "a")["android_cnn"]
    render_android(spec, replace(opts, maven_group="com.acme.models", lib_version="3.1.4"), tmp_path / "android")
    readme = (tmp_path / "android" / "README.md").read_text()
    assert _steps(readme, "## Adding it to your app") == ["1", "2", "3", "4", "5"]
    assert 'implementation("com.acme.models:' in readme and ":3.1.4\")" in readme and "org.jetbrains.kotlin.android" in readme
    ispec, iopts = ios_specs(tmp_path / "i")["ios_cnn"]
    render_ios(ispec, replace(iopts, lib_version="3.1.4"), tmp_path / "ios")
    ireadme = (tmp_path / "ios" / "README.md").read_text()
    assert _steps(ireadme, "## Add it to an app") == ["1", "2", "3", "4", "5"] and "git tag 3.1.4" in ireadme
    assert "git tag 3.1.4" in (tmp_path / "ios" / "Package.swift").read_text()
