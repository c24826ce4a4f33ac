"""The generated Android library as a published AAR (issue 31): an app that depends on the Maven coordinates
the module's ``build.gradle.kts`` declares compiles against it.

No Gradle or AGP here, so the test does what ``publishReleasePublicationToLocalRepository`` would: it compiles
the library module's Kotlin (kotlinc, against the ORT and Android compile-only shims) into ``classes.jar``,
packs an AAR (classes.jar, AndroidManifest.xml, proguard.txt from consumer-rules.pro, the model under
assets/) and a POM (dependencies and scopes read from the module's build script and version catalog) into a
Maven repository folder at the path the declared groupId / artifactId / version give. A consumer app, whose
own dependency line names those coordinates, is then resolved from that folder alone and compiled against the
AAR's classes plus the POM's compile-scope dependencies, as Gradle would put them on its compile classpath
(runtime-scope ones, ONNX Runtime, not). One kotlinc run for the library, one for the app.
"""

from __future__ import annotations

import os
import re
import tomllib
import zipfile
from dataclasses import replace
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from android_specs import make_specs
from test_android_kotlin import SHIM, _kotlinc, _missing_tool, _run

from mobilegen.targets.android.project import android_context, render_android

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
ANDROID_SHIM = REPO / "tests" / "shims" / "android_sdk"
COORDS = {"maven_group": "com.acme.models", "maven_artifact": "tiny-cnn-lib", "lib_version": "1.2.3-rc.1"}
_SCOPES = {"api": "compile", "implementation": "runtime"}


def _declared(build: str) -> tuple[str, str, str]:
    """groupId / artifactId / version of the module's MavenPublication (as Gradle would read the literals)."""
    found = [re.search(rf'^\s*{key} = "([^"\\]*)"$', build, re.M) for key in ("groupId", "artifactId", "version")]
    assert all(found), build
    return found[0][1], found[1][1], found[2][1]  # type: ignore[index]


def _dependencies(build: str, catalog: dict) -> list[tuple[str, str, str, str]]:  # type: ignore[type-arg]
    """(group, artifact, version, POM scope) of the module's api/implementation dependencies."""
    out = []
    for conf, alias in re.findall(r"^\s*(api|implementation)\(libs\.([\w.]+)\)", build, re.M):
        entry = catalog["libraries"][alias.replace(".", "-")]
        group, artifact = entry["module"].split(":")
        out.append((group, artifact, catalog["versions"][entry["version"]["ref"]], _SCOPES[conf]))
    return out


def _pom(group: str, artifact: str, version: str, deps: list[tuple[str, str, str, str]]) -> bytes:
    pom = ET.Element("project")
    for k, v in (("modelVersion", "4.0.0"), ("groupId", group), ("artifactId", artifact), ("version", version), ("packaging", "aar")):
        ET.SubElement(pom, k).text = v
    ds = ET.SubElement(pom, "dependencies")
    for g, a, v, scope in deps:
        d = ET.SubElement(ds, "dependency")
        for k, val in (("groupId", g), ("artifactId", a), ("version", v), ("scope", scope)):
            ET.SubElement(d, k).text = val
    return ET.tostring(pom, xml_declaration=True, encoding="utf-8")


CONSUMER = """
package com.acme.app

import android.content.Context
import {pkg}.{cls}
import {pkg}.newInstance
import {pkg}.runInBackground

// An app's code against the published library: the API, its constants and the coroutine helpers.
fun describe(): String = "{cls} " + {cls}.LIBRARY_VERSION + " expects " + {cls}.{const}_LAYOUT +
    (if ({cls}.{const}_LAYOUT_GUESSED) " (guessed)" else "") + ", range " + {cls}.{const}_VALUE_RANGE

fun classify(context: Context, pixels: FloatArray): FloatArray =
    {cls}.newInstance(context).use {{ model -> model.run({cls}.Inputs(pixels)).{out} }}

suspend fun classifyLater(model: {cls}, pixels: FloatArray): FloatArray =
    model.runInBackground({cls}.Inputs(pixels)).{out}
"""


def test_app_compiles_against_the_published_aar(tmp_path: Path) -> None:
    kotlinc = _kotlinc()
    coroutines = kotlinc.resolve().parent.parent / "lib" / "kotlinx-coroutines-core-jvm.jar"
    if not coroutines.is_file():
        _missing_tool(f"kotlinx-coroutines-core-jvm.jar next to {kotlinc}")
    spec, opts = make_specs(tmp_path / "inputs")["android_cnn"]
    opts = replace(opts, **COORDS)  # type: ignore[arg-type]
    project = tmp_path / "project"
    render_android(spec, opts, project)
    ctx = android_context(spec, opts)
    module = project / ctx["module"]
    build = (module / "build.gradle.kts").read_text()
    assert "`maven-publish`" in build and 'singleVariant("release")' in build and 'from(components["release"])' in build
    group, artifact, version = _declared(build)
    assert (group, artifact, version) == tuple(COORDS.values())
    catalog = tomllib.loads((project / "gradle" / "libs.versions.toml").read_text())
    deps = _dependencies(build, catalog)
    assert {(a, s) for _, a, _, s in deps} >= {("onnxruntime-android", "runtime"), ("kotlinx-coroutines-android", "compile")}

    # --- the library, as `publishReleasePublicationToLocalRepository` lays it out ---
    ort_shim, android_shim = tmp_path / "ort_shim", tmp_path / "android_shim"
    _run(["javac", "-d", str(ort_shim), *map(str, sorted(SHIM.rglob("*.java")))], "javac (ORT shim)")
    _run(["javac", "-d", str(android_shim), *map(str, sorted(ANDROID_SHIM.rglob("*.java")))], "javac (Android shim)")
    classes = tmp_path / "classes.jar"
    sources = sorted((module / "src" / "main" / "kotlin").rglob("*.kt"))
    cp = os.pathsep.join(map(str, (ort_shim, android_shim, coroutines)))
    _run([str(kotlinc), "-nowarn", "-cp", cp, "-d", str(classes), *map(str, sources)], "kotlinc (library)")
    repo = tmp_path / "repo"
    folder = repo.joinpath(*group.split("."), artifact, version)
    folder.mkdir(parents=True)
    with zipfile.ZipFile(folder / f"{artifact}-{version}.aar", "w") as aar:
        aar.write(classes, "classes.jar")
        aar.write(module / "src" / "main" / "AndroidManifest.xml", "AndroidManifest.xml")
        aar.write(module / "consumer-rules.pro", "proguard.txt")  # AGP packs consumerProguardFiles as proguard.txt
        for asset in (module / "src" / "main" / "assets").rglob("*"):
            if asset.is_file():
                aar.write(asset, "assets/" + asset.relative_to(module / "src" / "main" / "assets").as_posix())
    (folder / f"{artifact}-{version}.pom").write_bytes(_pom(group, artifact, version, deps))

    # --- the app: its dependency line, resolved from the repository folder alone ---
    app_build = f'dependencies {{\n    implementation("{group}:{artifact}:{version}")\n}}\n'
    (g, a, v), = re.findall(r'implementation\("([^:"]+):([^:"]+):([^:"]+)"\)', app_build)
    resolved = repo.joinpath(*g.split("."), a, v)
    pom = ET.parse(resolved / f"{a}-{v}.pom").getroot()
    assert pom.findtext("packaging") == "aar"
    compile_scope = [d.findtext("artifactId") for d in pom.iter("dependency") if d.findtext("scope") == "compile"]
    assert compile_scope == ["kotlinx-coroutines-android"]  # stood in for by kotlinx-coroutines-core-jvm below
    with zipfile.ZipFile(resolved / f"{a}-{v}.aar") as aar:
        names = set(aar.namelist())
        assert {"classes.jar", "AndroidManifest.xml", "proguard.txt", "assets/" + ctx["model_asset"]} <= names
        assert "-keep class ai.onnxruntime.** { *; }" in aar.read("proguard.txt").decode()
        aar.extract("classes.jar", tmp_path / "resolved")
    const = ctx["inputs"][0]["contract"]["const"]
    app = tmp_path / "app" / "App.kt"
    app.parent.mkdir()
    app.write_text(CONSUMER.format(pkg=ctx["package"], cls=ctx["class_name"], const=const, out=ctx["outputs"][0]["prop"]))
    app_cp = os.pathsep.join(map(str, (tmp_path / "resolved" / "classes.jar", coroutines, android_shim)))  # no ORT: runtime scope
    _run([str(kotlinc), "-nowarn", "-cp", app_cp, "-d", str(tmp_path / "app.jar"), str(app)], "kotlinc (app against the AAR)")
    assert zipfile.ZipFile(tmp_path / "app.jar").getinfo("com/acme/app/AppKt.class").file_size > 0
