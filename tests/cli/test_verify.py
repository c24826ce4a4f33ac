"""`mobilegen verify PACKAGE`: exit codes, one-line errors, every problem named, --json."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

from cli_helpers import assert_fails, error_lines, invoke

from mobilegen.package import canonical_json


def test_help_lists_verify() -> None:
    r = invoke("verify", "--help")
    assert r.exit_code == 0 and "PACKAGE" in r.stdout


def test_ok_folder(pristine: Path) -> None:
    r = invoke("verify", pristine)
    assert r.exit_code == 0, r.stderr
    assert r.stderr.startswith("ok ") and "files match the manifest" in r.stderr
    assert "runtime maven onnxruntime 1.24.2: loadable" in r.stderr


def test_ok_zip_json(pristine: Path) -> None:
    r = invoke("verify", pristine.with_suffix(".zip"), "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["passed"] is True and doc["container"] == "zip" and doc["problems"] == []
    assert [g["output"] for g in doc["golden"]] == ["y", "z"]


def test_tampered_package_names_each_problem(pkg: Path) -> None:
    model = pkg / "model" / "model.ort"
    data = bytearray(model.read_bytes())
    data[100] ^= 0xFF
    model.write_bytes(bytes(data))
    (pkg / "ios" / "project.yml").unlink()
    (pkg / "added.txt").write_text("x")
    r = invoke("verify", pkg)
    assert r.exit_code == 9
    lines = error_lines(r)
    assert len(lines) == 1 and "package verification failed" in lines[0]
    details = [ln.strip() for ln in r.stderr.splitlines()[1:]]
    assert any(d.startswith("model/model.ort: changed") for d in details)
    assert "ios/project.yml: missing (listed in manifest.json)" in details
    assert "added.txt: not listed in manifest.json (added after packaging)" in details


def test_tampered_json_output(pkg: Path) -> None:
    (pkg / "README.md").write_text("edited\n")
    r = invoke("verify", pkg, "--json")
    assert r.exit_code == 9
    doc = json.loads(r.stdout)
    assert doc["error"] == "package-verify" and doc["exit_code"] == 9
    assert any(d.startswith("README.md: changed") for d in doc["details"])


def test_missing_path(tmp_path: Path) -> None:
    assert_fails(invoke("verify", tmp_path / "nope"), 2, "no such file or folder", alone=True)


def test_not_a_package(tmp_path: Path) -> None:
    f = tmp_path / "model.pt"
    f.write_bytes(b"\x80\x02not a package")
    assert_fails(invoke("verify", f), 2, "is not a mobilegen package", alone=True)
    assert_fails(invoke("verify", tmp_path), 2, "is not a mobilegen package", alone=True)


def test_zip_escaping_entry(tmp_path: Path) -> None:
    z = tmp_path / "evil.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("pkg/manifest.json", "{}")
        zf.writestr("../escaped-by-mobilegen-test.txt", "gotcha")
    assert_fails(invoke("verify", z), 9, "refusing to extract", "escapes the folder", alone=True)
    assert not (tmp_path.parent / "escaped-by-mobilegen-test.txt").exists()


def test_unknown_schema_version(pkg: Path) -> None:
    doc = json.loads((pkg / "manifest.json").read_text())
    doc["schema_version"] = 99
    (pkg / "manifest.json").write_text(canonical_json(doc))
    assert_fails(invoke("verify", pkg), 9, "manifest schema version 99 is not supported", alone=True)


def test_command_module_imports_no_heavy_libraries() -> None:
    code = (
        "import sys, mobilegen.cli.package_cmds, mobilegen.package, mobilegen.report; "
        "heavy = [m for m in ('torch', 'onnxruntime', 'onnx') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_files_a_build_made_are_named_as_such(pkg: Path) -> None:
    """After ``npm ci`` or a Gradle build inside the package, or a build step copying a model in, verify still
    fails, and says what each unlisted file most likely is; a file added by hand stays "added after packaging"."""
    manifest = json.loads((pkg / "manifest.json").read_text(encoding="utf-8"))
    model = manifest["models"][0]["ort"]["file"]
    modules = pkg / "android" / "node_modules" / "x"
    modules.mkdir(parents=True)
    (modules / "a.js").write_text("1")
    (modules.parent / "b.js").write_text("2")
    (pkg / "android" / "copied.ort").write_bytes((pkg / model).read_bytes())
    (pkg / "android" / "extra.txt").write_text("hi")
    r = invoke("verify", pkg, "--json")
    assert r.exit_code == 9
    details = json.loads(r.stdout)["details"]
    assert "android/node_modules/: 2 files not listed in manifest.json, made by building or installing in the project; verify the package as delivered (a fresh copy or the zip), not a project built in" in details
    assert any(d.startswith(f"android/copied.ort: not listed in manifest.json: a copy of {model}, put there by a project's build step") for d in details)
    assert "android/extra.txt: not listed in manifest.json (added after packaging)" in details
    assert len(details) == 3


def test_a_package_that_lost_its_manifest_fails_verification(pkg: Path, tmp_path: Path) -> None:
    """Exit 9, not 2: the rest of the package is there, so this is a damaged package, not a wrong argument."""
    (pkg / "manifest.json").unlink()
    assert_fails(invoke("verify", pkg), 9, "manifest.json is missing")
    z = tmp_path / "lost.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for f in sorted(p for p in pkg.rglob("*") if p.is_file()):
            zf.write(f, f"lost/{f.relative_to(pkg).as_posix()}")
    assert_fails(invoke("verify", z), 9, "manifest.json is missing")
