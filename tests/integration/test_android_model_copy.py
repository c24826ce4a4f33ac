"""The Android project of a package copies the package's model at build time (issue 27, one copy): the
``mobilegenModel`` task of the module's build.gradle.kts. No Gradle here, so:

* the rendered script parses with tree-sitter-kotlin and wires the task into the variant's assets;
* its copy-and-check code (``MobilegenModelCopy``, plain Kotlin and the JDK between the
  ``mobilegen:copy-verified`` markers) is compiled with kotlinc and run: a good model is copied byte for
  byte; a missing one, one of another size and one of other bytes each give one line and no file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from android_specs import make_specs
from ci import missing_tool
from ts_parsers import parser

from mobilegen.artifacts import ModelLink
from mobilegen.targets.android.project import AndroidOptions, model_pin, render_android

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DEFAULT_KOTLINC = REPO / ".tools" / "node_modules" / "kotlin-compiler" / "bin" / "kotlinc"
BEGIN = "// mobilegen:copy-verified begin"
END = "// mobilegen:copy-verified end"
MAIN = """
fun main(args: Array<String>) {
    val problem = MobilegenModelCopy.copyVerified(File(args[0]), File(args[1]), args[2].toLong(), args[3])
    if (problem != null) {
        System.err.println(problem)
        kotlin.system.exitProcess(3)
    }
}
"""


def _kotlinc() -> Path:
    path = Path(os.environ["KOTLINC"]) if os.environ.get("KOTLINC") else DEFAULT_KOTLINC
    if not path.is_file() or shutil.which("java") is None:
        missing_tool(f"kotlinc ({path}) or java not found; run `make tools`")
    return path


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ModelLink, Path]:
    """A package-like folder: model/model.ort and android/ rendered with a link to it."""
    root = tmp_path_factory.mktemp("linked")
    spec, _opts = make_specs(root / "inputs")["android_cnn"]
    (root / "model").mkdir()
    model = root / "model" / "model.ort"
    shutil.copyfile(spec.model_file, model)
    data = model.read_bytes()
    link = ModelLink("model/model.ort", len(data), hashlib.sha256(data).hexdigest())
    linked_spec, opts = replace(spec, model_file=model, model_link=link), AndroidOptions(nnapi=True, package="com.example.onecopy")
    render_android(linked_spec, opts, root / "android")
    return root, link, root / "android" / model_pin(linked_spec, opts)


def test_linked_project_holds_no_model(linked: tuple[Path, ModelLink, Path]) -> None:
    root, link, script = linked
    assert not [p for p in (root / "android").rglob("*.ort")]
    text = script.read_text()
    assert f'sha256.set("{link.sha256}")' in text and f"size.set({link.size}L)" in text
    assert 'gradleProperty("mobilegen.model").orElse("../model/model.ort")' in text  # the package's model, seen from android/
    assert "variant.sources.assets?.addGeneratedSourceDirectory(mobilegenModel, MobilegenModelTask::outputDir)" in text


def test_script_parses(linked: tuple[Path, ModelLink, Path]) -> None:
    tree = parser("kotlin").parse(linked[2].read_bytes())
    bad = []
    pending = [tree.root_node]
    while pending:
        node = pending.pop()
        if node.type == "ERROR" or node.is_missing:
            bad.append((node.start_point, node.text[:60]))
        pending.extend(node.children)
    assert not bad, bad


@pytest.fixture(scope="module")
def copier(linked: tuple[Path, ModelLink, Path], tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The script's MobilegenModelCopy compiled with a main: the java command line that runs it."""
    kotlinc = _kotlinc()
    text = linked[2].read_text()
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    body = text[text.index(BEGIN) : text.index(END)]
    imports = "".join(line + "\n" for line in text.splitlines() if line.startswith("import java."))
    work = tmp_path_factory.mktemp("copier")
    source = work / "Copy.kt"
    source.write_text(imports + body + MAIN)
    jar = work / "copy.jar"
    proc = subprocess.run([str(kotlinc), "-nowarn", "-d", str(jar), str(source)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    stdlib = kotlinc.resolve().parent.parent / "lib" / "kotlin-stdlib.jar"
    return ["java", "-cp", f"{jar}{os.pathsep}{stdlib}", "CopyKt"]


def _run(copier: list[str], src: Path, dest: Path, link: ModelLink) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*copier, str(src), str(dest), str(link.size), link.sha256], capture_output=True, text=True, timeout=120)


def test_copies_the_model_it_pins(linked: tuple[Path, ModelLink, Path], copier: list[str], tmp_path: Path) -> None:
    root, link, _ = linked
    dest = tmp_path / "assets" / "cnn" / "model.ort"
    proc = _run(copier, root / "model" / "model.ort", dest, link)
    assert proc.returncode == 0, proc.stderr
    assert dest.read_bytes() == (root / "model" / "model.ort").read_bytes()
    assert [p.name for p in dest.parent.iterdir()] == ["model.ort"]  # no temporary file left


@pytest.mark.parametrize("case", ["missing", "other-size", "other-bytes"])
def test_refuses_a_missing_or_different_model(linked: tuple[Path, ModelLink, Path], copier: list[str], tmp_path: Path, case: str) -> None:
    root, link, _ = linked
    data = (root / "model" / "model.ort").read_bytes()
    src = tmp_path / "model.ort"
    if case == "other-size":
        src.write_bytes(data + b"\0")
    elif case == "other-bytes":
        src.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    dest = tmp_path / "assets" / "model.ort"
    proc = _run(copier, src, dest, link)
    assert proc.returncode == 3
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mobilegen: the model ") and "-Pmobilegen.model=PATH" in lines[0]
    assert {"missing": "is missing", "other-size": "bytes, manifest.json says", "other-bytes": "has sha256"}[case] in lines[0]
    assert not dest.exists() and not (dest.parent.exists() and list(dest.parent.iterdir()))
