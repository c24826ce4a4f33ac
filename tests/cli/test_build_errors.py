"""Bad input of android / ios / package: exit code + one line + nothing half-written."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from cli_helpers import assert_fails, invoke
from onnx import TensorProto, helper


def identity_model(path: Path, elem: int) -> Path:
    x = helper.make_tensor_value_info("x", elem, [1, 4])
    y = helper.make_tensor_value_info("y", elem, [1, 4])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


@pytest.fixture
def fmodel(tmp_path: Path) -> Path:
    return identity_model(tmp_path / "id.onnx", TensorProto.FLOAT)


def no_leftovers(parent: Path) -> None:
    assert not [p.name for p in parent.iterdir() if p.name.startswith(".") and ".tmp-" in p.name]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["android", "--package", "com.Example-app"], "--package"),
        (["android", "--package", "com.example.fun"], "--package"),  # `fun` is a Kotlin keyword
        (["android", "--name", "1Model"], "--name"),
        (["android", "--nnapi", "--nnapi-flags", "turbo"], "turbo"),
        (["android", "--nnapi", "--nnapi-flags", "cpu-disabled,cpu-only"], "cpu-only"),
        (["android", "--ort-version", "0.1.0"], "0.1.0"),
        (["android", "--android-api", "20"], "--android-api"),
        (["ios", "--name", "my model"], "--name"),
        (["ios", "--coreml-format", "mlpackage"], "--coreml-format"),
        (["ios", "--compute-units", "gpu"], "--compute-units"),
        (["package"], "--android"),
        (["package", "--ios", "--nnapi"], "--android"),
        (["android", "--maven-group", 'com.acme"x'], "--maven-group"),
        (["android", "--maven-artifact", "my lib"], "--maven-artifact"),
        (["android", "--lib-version", "1.0@aar"], "not a Maven version"),  # Gradle's notation: @ starts the type
        (["ios", "--lib-version", "v1.0.0"], "--lib-version"),
        (["ios", "--lib-version", "1.0"], "SwiftPM"),
        # 1.0 is a Maven version but no SwiftPM tag: the iOS side refuses it, naming SwiftPM
        (["package", "--android", "--ios", "--lib-version", "1.0"], "SwiftPM"),
        (["package", "--ios", "--maven-group", "com.acme.models"], "--android"),
    ],
)
def test_bad_flags(fmodel: Path, tmp_path: Path, args: list[str], needle: str) -> None:
    out = tmp_path / "out"
    assert_fails(invoke(args[0], fmodel, "-o", out, *args[1:]), 2, needle)
    assert not out.exists()
    no_leftovers(tmp_path)


def test_output_exists_needs_force(fmodel: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    assert_fails(invoke("android", fmodel, "-o", out), 2, "already exists", "--force")
    assert (out / "mine.txt").read_text() == "keep me"


def test_java_cannot_express_dtype(tmp_path: Path) -> None:
    model = identity_model(tmp_path / "u32.onnx", TensorProto.UINT32)
    assert_fails(invoke("android", model, "-o", tmp_path / "out"), 2, "'x'")
    assert not (tmp_path / "out").exists()
    no_leftovers(tmp_path)


@pytest.mark.parametrize("elem", [TensorProto.BOOL, TensorProto.FLOAT16, TensorProto.DOUBLE])
def test_objc_cannot_express_dtype(tmp_path: Path, elem: int) -> None:
    model = identity_model(tmp_path / "m.onnx", elem)
    assert_fails(invoke("ios", model, "-o", tmp_path / "out"), 2, "'x'")
    assert not (tmp_path / "out").exists()
    no_leftovers(tmp_path)


def test_model_errors_propagate(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_text("not a model")
    assert_fails(invoke("package", bad, "--android", "--ios", "-o", tmp_path / "out"), 3, "not a model")
    assert not (tmp_path / "out").exists()


def test_failing_render_names_template_and_variable(tmp_path: Path) -> None:
    # a template mobilegen ships that needs a value its context lacks is a bug: internal error (exit 1)
    from mobilegen.errors import InternalError
    from mobilegen.render.tree import render_tree

    tpl = tmp_path / "tpl"
    (tpl / "src").mkdir(parents=True)
    (tpl / "src" / "Main.kt.jinja").write_text("val x = {{ missing_thing }}\n")
    with pytest.raises(InternalError) as info:
        render_tree(tpl, {}, tmp_path / "dest")
    assert "src/Main.kt.jinja" in info.value.message and "missing_thing" in info.value.message


def test_render_copies_non_templates_byte_exact_with_mode(tmp_path: Path) -> None:
    from mobilegen.render.tree import render_tree

    tpl = tmp_path / "tpl"
    (tpl / "{{ pkg }}").mkdir(parents=True)
    blob = bytes(range(256)) + b"{{ not_rendered }}"
    (tpl / "gradlew").write_bytes(blob)
    (tpl / "gradlew").chmod(0o755)
    (tpl / "{{ pkg }}" / "{{ name }}.kt.jinja").write_text("class {{ name }}\n")
    (tpl / "{{ skip }}").mkdir()
    (tpl / "{{ skip }}" / "optional.txt").write_text("never")
    written = render_tree(tpl, {"pkg": "com/example", "name": "Foo", "skip": ""}, tmp_path / "out")
    assert [str(p) for p in written] == ["com/example/Foo.kt", "gradlew"]
    assert (tmp_path / "out" / "gradlew").read_bytes() == blob
    assert (tmp_path / "out" / "gradlew").stat().st_mode & 0o111
    assert (tmp_path / "out" / "com/example/Foo.kt").read_text() == "class Foo\n"


def test_scripts_become_executable_even_without_mode(tmp_path: Path) -> None:
    from mobilegen.render.tree import render_tree

    tpl = tmp_path / "tpl"
    tpl.mkdir()
    (tpl / "gradlew").write_bytes(b"#!/bin/sh\necho hi\n")
    (tpl / "gradlew").chmod(0o644)
    (tpl / "notes.txt").write_text("plain\n")
    render_tree(tpl, {}, tmp_path / "out")
    assert (tmp_path / "out" / "gradlew").stat().st_mode & 0o111
    assert not (tmp_path / "out" / "notes.txt").stat().st_mode & 0o111


def test_force_never_replaces_a_folder_that_is_not_ours(fmodel: Path, tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    model = models / "id.onnx"
    model.write_bytes(fmodel.read_bytes())
    (models / "notes.txt").write_text("mine")
    assert_fails(invoke("android", model, "-o", models, "--force"), 2, "contains the input")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert_fails(invoke("android", fmodel, "-o", other, "--force"), 2, "not a mobilegen output folder")
    assert (models / "notes.txt").read_text() == "mine" and (other / "notes.txt").read_text() == "mine"
    assert model.is_file()
    no_leftovers(tmp_path)


def test_force_replaces_an_earlier_output(fmodel: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert invoke("android", fmodel, "-o", out).exit_code == 0
    first = (out / "manifest.json").read_bytes()
    r = invoke("android", fmodel, "-o", out, "--force")
    assert r.exit_code == 0, r.stderr
    assert (out / "manifest.json").read_bytes() == first
    no_leftovers(tmp_path)


def test_zip_path_that_is_a_folder(fmodel: Path, tmp_path: Path) -> None:
    (tmp_path / "out.zip").mkdir()
    assert_fails(invoke("android", fmodel, "-o", tmp_path / "out", "--zip", "--force"), 2, "is a folder")
    assert not (tmp_path / "out").exists()
    no_leftovers(tmp_path)


def test_convert_never_overwrites_silently(fmodel: Path, tmp_path: Path) -> None:
    (tmp_path / "m.required_operators.config").write_text("mine")
    assert_fails(invoke("convert", fmodel, "-o", tmp_path / "m.ort"), 2, "m.required_operators.config")
    assert (tmp_path / "m.required_operators.config").read_text() == "mine"
    assert_fails(invoke("export", fmodel, "-o", fmodel, "--force"), 2, "is the input model")


def test_zero_nnapi_coverage_still_builds_with_a_loud_warning(tmp_path: Path) -> None:
    import json

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Erf", ["x"], ["y"])], "g", [x], [y])
    path = tmp_path / "erf.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    r = invoke("android", path, "--nnapi", "-o", tmp_path / "out", "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["coverage"][0]["supported_nodes"] == 0
    assert any(w.startswith("NNAPI takes 0 nodes") for w in data["warnings"])
    human = invoke("android", path, "--nnapi", "-o", tmp_path / "out2")
    assert "NNAPI takes 0 nodes" in human.stderr
