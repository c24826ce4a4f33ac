"""One copy of each model file in a package (issue 27): the projects copy the package's model at build
time (Android: the ``mobilegenModel`` Gradle task; iOS: ``scripts/fetch-model.sh``), the zip stores each
model file once, ``mobilegen verify`` checks every link and refuses a tampered, missing or escaping model.
A standalone ``mobilegen android`` project still holds its own model.

Built from a small ONNX model (no export): the whole module builds two packages in a few seconds."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from cli_helpers import invoke
from onnx import TensorProto, helper, numpy_helper

from mobilegen.package.manifest import self_hash

MODEL_FILES = (".onnx", ".ort")


def _tiny_onnx(path: Path) -> Path:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["a"]), helper.make_node("Relu", ["a"], ["y"])],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        [w, b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    onnx.save(model, path)
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("one_copy")
    model = _tiny_onnx(root / "tiny.onnx")
    r = invoke("package", model, "--android", "--ios", "--nnapi", "--coreml", "--zip", "-o", root / "pkg")
    assert r.exit_code == 0, r.stderr
    r = invoke("android", model, "--nnapi", "-o", root / "standalone")
    assert r.exit_code == 0, r.stderr
    return {"pkg": root / "pkg", "zip": root / "pkg.zip", "standalone": root / "standalone"}


@pytest.fixture
def pkg(built: dict[str, Path], tmp_path: Path) -> Path:
    return Path(shutil.copytree(built["pkg"], tmp_path / "pkg", symlinks=True))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _verify(path: Path) -> tuple[int, list[str]]:
    r = invoke("verify", path)
    return r.exit_code, [ln.strip() for ln in r.stderr.splitlines()]


def test_package_holds_each_model_file_once(built: dict[str, Path]) -> None:
    pkg = built["pkg"]
    files = [p for p in pkg.rglob("*") if p.is_file()]
    models = sorted(p.relative_to(pkg).as_posix() for p in files if p.suffix in MODEL_FILES)
    assert models == ["model/model.onnx", "model/model.ort"]
    ort = pkg / "model" / "model.ort"
    # by content too: no other file of the package holds the model's bytes (under any name)
    assert [p for p in files if p.stat().st_size == ort.stat().st_size and _sha(p) == _sha(ort)] == [ort]
    # the folder is the model files plus small text: not a second copy of anything big
    other = sum(p.stat().st_size for p in files if p.suffix not in MODEL_FILES)
    assert other < 2 * (1 << 20)
    manifest = json.loads((pkg / "manifest.json").read_text())
    assert manifest["schema_version"] == 4
    links = {link["target"]: link for link in manifest["model_links"]}
    assert set(links) == {"android", "ios"}
    for link in links.values():
        assert (link["model"], link["size"], link["sha256"]) == ("model/model.ort", ort.stat().st_size, _sha(ort))
        assert link["sha256"] in (pkg / link["file"]).read_text()
    assert links["ios"]["file"] == "ios/scripts/fetch-model.sh" and os.access(pkg / links["ios"]["file"], os.X_OK)
    assert links["android"]["file"].startswith("android/") and links["android"]["file"].endswith("/build.gradle.kts")


def test_zip_stores_each_model_file_once(built: dict[str, Path]) -> None:
    with zipfile.ZipFile(built["zip"]) as zf:
        names = [i.filename.split("/", 1)[1] for i in zf.infolist() if i.filename.endswith(MODEL_FILES)]
    assert sorted(names) == ["model/model.onnx", "model/model.ort"]


def test_verify_passes_folder_and_zip(built: dict[str, Path]) -> None:
    for path in (built["pkg"], built["zip"]):
        code, lines = _verify(path)
        assert code == 0, lines


def test_standalone_android_project_holds_its_model(built: dict[str, Path]) -> None:
    out = built["standalone"]
    assets = list((out / "android").rglob("src/main/assets/*/model.ort"))
    assert len(assets) == 1 and _sha(assets[0]) == _sha(out / "model" / "model.ort")
    gradle = next((out / "android").glob("*/build.gradle.kts")).read_text()
    assert "mobilegenModel" not in gradle
    assert json.loads((out / "manifest.json").read_text())["model_links"] == []
    assert _verify(out)[0] == 0


def test_tampered_model_fails_verify(pkg: Path) -> None:
    model = pkg / "model" / "model.ort"
    data = bytearray(model.read_bytes())
    data[-5] ^= 0xFF
    model.write_bytes(bytes(data))
    code, lines = _verify(pkg)
    assert code == 9
    assert any(ln.startswith("model/model.ort: changed (sha256") for ln in lines), lines


def test_missing_model_fails_verify_loudly(pkg: Path) -> None:
    (pkg / "model" / "model.ort").unlink()
    code, lines = _verify(pkg)
    assert code == 9
    assert "model/model.ort: missing (listed in manifest.json)" in lines
    assert any("copies model/model.ort at build time, and it is missing: that project cannot build" in ln for ln in lines), lines


def test_symlinked_model_is_refused(pkg: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.ort"
    shutil.move(pkg / "model" / "model.ort", outside)
    (pkg / "model" / "model.ort").symlink_to(outside)
    code, lines = _verify(pkg)
    assert code == 9
    assert any("model/model.ort: is a symbolic link, not a regular file" in ln for ln in lines), lines


def _rewrite_manifest(pkg: Path, edit) -> None:  # type: ignore[no-untyped-def]
    path = pkg / "manifest.json"
    doc = json.loads(path.read_text())
    edit(doc)
    doc.pop("manifest_sha256")
    body = json.dumps(doc, indent=2, ensure_ascii=True) + "\n"
    doc["manifest_sha256"] = self_hash(json.loads(body))
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=True) + "\n")


@pytest.mark.parametrize("field", ["model", "file"])
def test_link_escaping_the_package_is_refused(pkg: Path, field: str) -> None:
    def edit(doc: dict) -> None:  # type: ignore[type-arg]
        doc["model_links"][0][field] = "../outside/model.ort"

    _rewrite_manifest(pkg, edit)
    code, lines = _verify(pkg)
    assert code == 9
    assert any(f"model_links[0].{field} '../outside/model.ort' is refused: it escapes the folder" in ln for ln in lines), lines


def test_link_to_another_file_is_refused(pkg: Path) -> None:
    def edit(doc: dict) -> None:  # type: ignore[type-arg]
        doc["model_links"][1]["model"] = "golden/golden.mgv"

    _rewrite_manifest(pkg, edit)
    code, lines = _verify(pkg)
    assert code == 9
    assert any("copies golden/golden.mgv at build time, which is not a model manifest.json lists" in ln for ln in lines), lines


def _fetch(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", str(script), *args], capture_output=True, text=True, timeout=60)


def test_fetch_model_script_copies_and_checks(pkg: Path) -> None:
    script = pkg / "ios" / "scripts" / "fetch-model.sh"
    [target] = [p for p in (pkg / "ios" / "Sources").iterdir() if p.is_dir()]
    dest = target / "Resources"
    assert not list(dest.glob("*.ort"))  # the package's Swift package holds no model until the script ran
    ort = pkg / "model" / "model.ort"
    ok = _fetch(script)
    assert ok.returncode == 0, ok.stderr
    [copied] = dest.glob("*.ort")
    assert copied.read_bytes() == ort.read_bytes()
    copied.unlink()

    ort.write_bytes(ort.read_bytes()[:-1] + bytes([ort.read_bytes()[-1] ^ 1]))  # same size, other bytes
    bad = _fetch(script)
    assert bad.returncode == 1 and len(bad.stderr.splitlines()) == 1 and "manifest.json says" in bad.stderr and "sha256" in bad.stderr
    assert not list(dest.glob("*.ort*"))  # nothing half-copied is left

    ort.unlink()
    missing = _fetch(script)
    assert missing.returncode == 1 and len(missing.stderr.splitlines()) == 1 and "is missing" in missing.stderr
    assert not list(dest.glob("*.ort*"))


def test_fetch_model_script_takes_a_path(pkg: Path, tmp_path: Path) -> None:
    moved = Path(shutil.move(pkg / "model" / "model.ort", tmp_path / "model.ort"))
    script = pkg / "ios" / "scripts" / "fetch-model.sh"
    assert _fetch(script).returncode == 1
    ok = _fetch(script, str(moved))
    assert ok.returncode == 0, ok.stderr
