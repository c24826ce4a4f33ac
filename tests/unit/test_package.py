"""mobilegen.package: finalize_package (manifest, README, reports), write_zip, verify_package (no torch)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tempfile
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from package_fixtures import (
    GOLDEN_EPOCH,
    SOURCE,
    assert_golden,
    build_package,
    golden_result,
    make_build,
    pin_versions,
)

from mobilegen.artifacts import GOLDEN_MGV, GOLDEN_NPZ, MANIFEST, MODEL_OPS_CONFIG, MODEL_ORT
from mobilegen.errors import InternalError, PackageError, PackageVerifyError, UsageError
from mobilegen.package import (
    MANIFEST_SCHEMA_VERSION,
    canonical_json,
    finalize_package,
    parse_manifest,
    render_readme,
    verify_package,
    write_zip,
    zip_date_time,
    zip_prefix,
)
from mobilegen.verify.golden import GoldenCase, read_npz, write_npz

SOURCE_FILE = "android/app/src/main/java/com/example/tinynet/MainActivity.kt"


@pytest.fixture(autouse=True)
def _no_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)


def problems_of(path: Path) -> list[str]:
    with pytest.raises(PackageVerifyError) as info:
        verify_package(path)
    err = info.value
    assert err.exit_code == 9
    return err.details


def tree(root: Path) -> dict[str, tuple[bytes, bool]]:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), bool(p.stat().st_mode & 0o111))
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# --- finalize_package -------------------------------------------------------------------------------


def test_manifest_golden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, update_goldens: bool) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", GOLDEN_EPOCH)
    pin_versions(monkeypatch)
    root = tmp_path / "TinyOut"
    result = golden_result(make_build(root))
    finalize_package(root, result)
    assert_golden("manifest.json", (root / MANIFEST).read_text(encoding="utf-8"), update_goldens)


def test_manifest_contents(pristine: Path) -> None:
    raw = (pristine / MANIFEST).read_text()
    doc = json.loads(raw)
    assert raw == canonical_json(doc)
    assert doc["schema_version"] == MANIFEST_SCHEMA_VERSION and doc["kind"] == "mobilegen-package"
    assert doc["source"] == {"file": "tiny_net.pt", "kind": "torchscript", "sha256": doc["source"]["sha256"]}
    assert doc["options"]["output"] == "out"  # absolute path reduced to its name
    assert doc["source_date_epoch"] is None
    assert set(doc["versions"]) == {"mobilegen", "torch", "onnx", "onnxruntime_converter", "mobile_runtimes"}
    assert doc["versions"]["mobile_runtimes"] == {"maven": "1.24.2", "swiftpm": "1.24.2"}
    assert doc["tolerances"] == {"atol": 1e-4, "rtol": 1e-3}
    assert doc["verification"]["passed"] is True and len(doc["verification"]["rows"]) == 4
    assert [c["label"] for c in doc["coverage"]] == ["nnapi", "coreml/mlprogram", "xnnpack"]
    assert doc["coverage"][0]["cpu_nodes"] == 2 and doc["coverage"][0]["partitions"] == 1
    paths = [f["path"] for f in doc["files"]]
    on_disk = sorted(p.relative_to(pristine).as_posix() for p in pristine.rglob("*") if p.is_file())
    assert paths == sorted(paths) == [p for p in on_disk if p != MANIFEST]
    for required in ("README.md", "report/coverage.json", "report/report.md", "report/report.html", MODEL_ORT, GOLDEN_NPZ):
        assert required in paths
    by_path = {f["path"]: f for f in doc["files"]}
    assert by_path["android/gradlew"]["executable"] is True
    assert by_path[MODEL_ORT]["executable"] is False
    assert by_path[MODEL_ORT]["size"] == (pristine / MODEL_ORT).stat().st_size


def test_no_absolute_paths_or_dates_anywhere(pristine: Path) -> None:
    needles = [str(pristine).encode(), str(pristine.parent).encode(), str(SOURCE.parent).encode(), b"/tmp/"]
    for p in pristine.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            for n in needles:
                assert n not in data, (p, n)


def test_readme_for_the_app_team(pristine: Path) -> None:
    text = (pristine / "README.md").read_text()
    for needle in ("`android/`", "`ios/`", "`model/model.ort`", "mobilegen verify", "schema version 4", "onnxruntime-android 1.24.2"):
        assert needle in text
    assert "`tiny_net.pt`" in text


def test_readme_golden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, update_goldens: bool) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", GOLDEN_EPOCH)
    pin_versions(monkeypatch)
    root = tmp_path / "TinyOut"
    finalize_package(root, golden_result(make_build(root)))
    assert_golden("README.md", (root / "README.md").read_text(encoding="utf-8"), update_goldens)


def test_readme_escapes_model_text(tmp_path: Path) -> None:
    root = tmp_path / "p"
    result = make_build(root)
    io = result.onnx.io
    hostile = replace(io.inputs[0], name="x|y<img src=a>`\n# h", shape=())
    result = replace(
        result,
        model_name="Net | <b>bold</b> *",
        warnings=(),
        onnx=replace(result.onnx, io=replace(io, inputs=(hostile, *io.inputs[1:]))),
        loaded=replace(result.loaded, source=Path("/models/we`ird.pt")),
    )
    text = render_readme(result, root)
    assert text.startswith("# Net \\| \\<b\\>bold\\</b\\> \\*: on-device model package\n")
    assert "| input | x\\|y\\<img src=a\\>\\` \\# h | float32 | scalar |" in text  # one line, escaped
    assert "from ``we`ird.pt`` (" in text
    assert "## Warnings\n\nNone.\n" in text
    assert not re.search(r"(?<!\\)<(b|img)", text)  # no tag survives unescaped


def test_manifest_written_is_the_manifest_read(pristine: Path) -> None:
    raw = (pristine / MANIFEST).read_bytes()
    read = parse_manifest(raw, reader_version="test")
    doc = json.loads(raw)
    assert read.problems == ()
    assert [f.to_json() for f in read.files] == doc["files"]
    assert read.tolerances is not None and read.tolerances.to_json() == doc["tolerances"]
    assert [m.to_json() for m in read.models] == doc["models"]
    assert dict(read.mobile_runtimes) == doc["versions"]["mobile_runtimes"]
    assert read.schema_version == MANIFEST_SCHEMA_VERSION and read.model_name == doc["model_name"]


def test_epoch_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    _, manifest = build_package(tmp_path / "p")
    assert manifest.source_date_epoch == 1700000000
    assert json.loads((tmp_path / "p" / MANIFEST).read_text())["source_date_epoch"] == 1700000000


def test_bad_source_date_epoch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(UsageError, match="SOURCE_DATE_EPOCH"):
        build_package(tmp_path / "p")


def test_finalize_refuses_incomplete_staging(tmp_path: Path) -> None:
    root = tmp_path / "p"
    result = make_build(root)
    (root / MODEL_ORT).unlink()
    shutil.rmtree(root / "ios")
    with pytest.raises(InternalError, match=r"lacks model/model.ort, ios/"):
        finalize_package(root, result)


def test_finalize_refuses_absolute_build_path(tmp_path: Path) -> None:
    root = tmp_path / "p"
    result = make_build(root)
    (root / MODEL_OPS_CONFIG).write_text(f"# Generated from model/s:\n# - {root}/model/model.ort\nai.onnx;14;Add\n")
    with pytest.raises(InternalError, match=r"absolute path.*model/required_operators.config"):
        finalize_package(root, result)
    assert not (root / MANIFEST).exists()


def test_finalize_refuses_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "p"
    result = make_build(root)
    (root / "android" / "link").symlink_to(root / MODEL_ORT)
    with pytest.raises(PackageError, match="not regular files: android/link"):
        finalize_package(root, result)


# --- reproducibility and zip ------------------------------------------------------------------------


def test_reproducible_folder_and_zip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each build converts the model again (fresh): the .ort goes through mobilegen.convert.ortformat.canonicalize.
    a = tmp_path / "first" / "TinyOut"
    build_package(a, fresh=True)
    write_zip(a, a.with_suffix(".zip"))

    # A second build elsewhere, a year later by the wall clock, with every file's mtime changed too.
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() + 366 * 86400)
    b = tmp_path / "second-dir" / "nested" / "TinyOut"
    result = make_build(b, fresh=True)
    later = real_time() + 2 * 366 * 86400
    for p in b.rglob("*"):
        os.utime(p, (later, later))
    finalize_package(b, result)
    write_zip(b, b.with_suffix(".zip"))

    assert tree(a) == tree(b)
    assert a.with_suffix(".zip").read_bytes() == b.with_suffix(".zip").read_bytes()


def test_zip_layout(pristine: Path) -> None:
    zpath = pristine.with_suffix(".zip")
    with zipfile.ZipFile(zpath) as zf:
        infos = zf.infolist()
    names = [i.filename for i in infos]
    assert names == sorted(names)
    assert all(n.startswith("TinyOut/") for n in names)
    files = sorted(p.relative_to(pristine).as_posix() for p in pristine.rglob("*") if p.is_file())
    assert [n[len("TinyOut/") :] for n in names] == files
    for i in infos:
        assert i.date_time == (1980, 1, 1, 0, 0, 0)
        assert i.create_system == 3
        mode = i.external_attr >> 16
        assert stat.S_ISREG(mode)
        assert stat.S_IMODE(mode) == (0o755 if i.filename.endswith("/gradlew") else 0o644), i.filename
    assert not [p for p in zpath.parent.iterdir() if p.name.endswith(".tmp")]


def test_zip_folder_name(pristine: Path, tmp_path: Path) -> None:
    assert zip_prefix(Path("out/TinyOut.zip")) == "TinyOut"
    assert zip_prefix(Path(".TinyOut.zip.tmp-1234")) == "TinyOut"  # the pipeline's staging name
    assert zip_prefix(Path("a.zipper.zip")) == "a.zipper"
    z = write_zip(pristine, tmp_path / ".Other.zip.tmp-99", prefix="Named")
    with zipfile.ZipFile(z) as zf:
        assert {n.split("/", 1)[0] for n in zf.namelist()} == {"Named"}
    with pytest.raises(InternalError):  # the pipeline chooses the prefix: a bad one is a bug
        write_zip(pristine, tmp_path / "x.zip", prefix="../up")


def test_zip_timestamp_from_source_date_epoch(pristine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000001")
    z = write_zip(pristine, tmp_path / "x.zip")
    with zipfile.ZipFile(z) as zf:
        assert {i.date_time for i in zf.infolist()} == {(2023, 11, 14, 22, 13, 20)}
    assert zip_date_time(0) == (1980, 1, 1, 0, 0, 0)
    assert zip_date_time(10**12)[0] == 2107


# --- verify_package ---------------------------------------------------------------------------------


def test_verify_ok_folder_and_zip(pristine: Path) -> None:
    v = verify_package(pristine)
    assert v.passed and v.container == "folder" and v.model_name == "Tiny <Net> & friends"
    assert v.files_checked == len(json.loads((pristine / MANIFEST).read_text())["files"]) + 1
    assert [(g.output, g.passed) for g in v.golden] == [("y", True), ("z", True)]
    assert [(r.channel, r.loadable) for r in v.runtimes] == [("maven", True), ("swiftpm", True)]
    vz = verify_package(pristine.with_suffix(".zip"))
    assert vz.passed and vz.container == "zip"
    assert vz.to_dict()["golden"] == v.to_dict()["golden"]


def _flip(path: Path, offset: int | None = None) -> None:
    data = bytearray(path.read_bytes())
    i = len(data) // 2 if offset is None else offset
    data[i] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("rel", "needle"),
    [
        (MODEL_ORT, "model/model.ort: changed (sha256"),
        ("model/model.onnx", "model/model.onnx: changed (sha256"),
        (GOLDEN_NPZ, "golden/golden.npz: changed (sha256"),
        (GOLDEN_MGV, "golden/golden.mgv: changed (sha256"),
        (SOURCE_FILE, f"{SOURCE_FILE}: changed (sha256"),
        ("report/report.html", "report/report.html: changed (sha256"),
        ("README.md", "README.md: changed (sha256"),
    ],
)
def test_one_changed_byte_is_caught(pkg: Path, rel: str, needle: str) -> None:
    _flip(pkg / rel)
    problems = problems_of(pkg)
    assert any(p.startswith(needle) for p in problems), problems


@pytest.mark.parametrize("where", ["value", "key", "whitespace", "self-hash", "first", "last"])
def test_one_changed_byte_in_the_manifest_is_caught(pkg: Path, where: str) -> None:
    m = pkg / MANIFEST
    raw = m.read_bytes()
    if where == "value":
        i = raw.index(b'"Tiny <Net>') + 2  # model_name
        data = raw[:i] + b"J" + raw[i + 1 :]
    elif where == "key":
        i = raw.index(b'"optimization_level"') + 1
        data = raw[:i] + b"O" + raw[i + 1 :]
    elif where == "whitespace":
        i = raw.index(b'\n  "kind"') + 1
        data = raw[:i] + b"\t" + raw[i + 1 :]
    elif where == "self-hash":
        i = raw.index(b'"manifest_sha256": "') + len(b'"manifest_sha256": "')
        data = raw[:i] + (b"0" if raw[i : i + 1] != b"0" else b"1") + raw[i + 1 :]
    elif where == "first":
        data = b" " + raw[1:]
    else:
        data = raw[:-1] + b" "
    assert data != raw and len(data) == len(raw)
    m.write_bytes(data)
    with pytest.raises(PackageVerifyError) as info:
        verify_package(pkg)
    text = info.value.message + "\n".join(info.value.details)
    assert "manifest.json" in text


def test_deleted_and_added_files(pkg: Path) -> None:
    (pkg / "ios" / "project.yml").unlink()
    (pkg / "notes.txt").write_text("hello")
    (pkg / "android" / "app" / "extra.kt").write_text("class X")
    problems = problems_of(pkg)
    assert "ios/project.yml: missing (listed in manifest.json)" in problems
    assert "notes.txt: not listed in manifest.json (added after packaging)" in problems
    assert "android/app/extra.kt: not listed in manifest.json (added after packaging)" in problems


def test_deleted_model_and_golden(pkg: Path) -> None:
    (pkg / MODEL_ORT).unlink()
    problems = problems_of(pkg)
    assert "model/model.ort: missing (listed in manifest.json)" in problems
    assert any("golden vectors not re-run" in p for p in problems)


def test_lost_exec_bit(pkg: Path) -> None:
    os.chmod(pkg / "android" / "gradlew", 0o644)
    assert problems_of(pkg) == ["android/gradlew: executable bit lost (manifest says executable=True)"]


def test_every_problem_is_listed_once(pkg: Path) -> None:
    _flip(pkg / SOURCE_FILE)
    (pkg / "ios" / "project.yml").unlink()
    (pkg / "new.bin").write_bytes(b"\0")
    with pytest.raises(PackageVerifyError) as info:
        verify_package(pkg)
    assert len(info.value.details) == 3
    assert "3 problems" in info.value.message


def test_tampered_zip_entry(pristine: Path, tmp_path: Path) -> None:
    src = pristine.with_suffix(".zip")
    dst = tmp_path / "TinyOut.zip"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith("MainActivity.kt"):
                data = data.replace(b"class", b"klass")
            zout.writestr(info, data)
    problems = problems_of(dst)
    assert any(p.startswith(f"{SOURCE_FILE}: changed") for p in problems), problems


def test_corrupted_zip_bytes(pristine: Path, tmp_path: Path) -> None:
    dst = tmp_path / "TinyOut.zip"
    shutil.copy(pristine.with_suffix(".zip"), dst)
    raw = dst.read_bytes()
    i = raw.index(b"TinyOut/model/model.ort") + 200  # inside that entry's data
    _flip(dst, i)
    with pytest.raises(PackageVerifyError) as info:
        verify_package(dst)
    text = info.value.message + " ".join(info.value.details)
    assert "damaged" in text or "model/model.ort: changed" in text


def _refinalize(pkg: Path, **ort_changes: object) -> None:
    """Rebuild the manifest over a changed package (as a broken pipeline would have written it)."""
    result = make_build(pkg.parent / "scratch")
    result = replace(result, ort=replace(result.ort, **ort_changes))  # type: ignore[arg-type]
    for name in ("README.md", MANIFEST):
        (pkg / name).unlink()
    finalize_package(pkg, result)


def test_golden_vectors_are_rerun(pkg: Path) -> None:
    case = read_npz(pkg / GOLDEN_NPZ)
    outputs = dict(case.outputs)
    outputs["y"] = outputs["y"] + np.float32(0.5)
    write_npz(pkg / GOLDEN_NPZ, GoldenCase(case.inputs, outputs))
    _refinalize(pkg)
    problems = problems_of(pkg)
    assert any(p.startswith("golden output y: max abs diff 0.5") for p in problems), problems
    assert any(p.startswith("golden/golden.mgv: disagrees with golden/golden.npz") for p in problems), problems
    assert not any(p.startswith("golden output z") for p in problems)


def test_pinned_runtime_must_load_the_model(pkg: Path) -> None:
    _refinalize(pkg, max_opset=30, ort_format_version=5)
    problems = problems_of(pkg)
    assert "model/model.ort: is ORT format version 6, manifest says 5" in problems
    for channel in ("maven", "swiftpm"):
        assert any(p.startswith(f"runtime {channel} 1.24.2: ") and "opset 30" in p for p in problems), problems


# --- bad input: one clear line, nothing extracted outside a temp dir ---------------------------------


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file or folder"):
        verify_package(tmp_path / "nope")


@pytest.mark.parametrize("kind", ["text", "empty-dir", "zip-without-manifest", "folder-with-junk"])
def test_not_a_package(tmp_path: Path, kind: str) -> None:
    if kind == "text":
        target = tmp_path / "model.pt"
        target.write_text("not a package")
    elif kind == "empty-dir":
        target = tmp_path / "empty"
        target.mkdir()
    elif kind == "zip-without-manifest":
        target = tmp_path / "x.zip"
        with zipfile.ZipFile(target, "w") as zf:
            zf.writestr("a/readme.txt", "hi")
    else:
        target = tmp_path / "junk"
        (target / "sub").mkdir(parents=True)
        (target / "sub" / MANIFEST).write_text("{}")
        (target / "other.txt").write_text("x")
    with pytest.raises(UsageError) as info:  # no package at all: a usage mistake (exit 2), not a failed package (9)
        verify_package(target)
    assert "is not a mobilegen package" in info.value.message and not info.value.details


def test_manifest_not_json_or_not_ours(pkg: Path) -> None:
    (pkg / MANIFEST).write_text("{ nope")
    with pytest.raises(PackageVerifyError, match="manifest.json is not valid JSON"):
        verify_package(pkg)
    (pkg / MANIFEST).write_text('{"files": []}\n')
    with pytest.raises(PackageVerifyError, match="has no schema_version"):
        verify_package(pkg)


def test_unknown_schema_version(pkg: Path) -> None:
    doc = json.loads((pkg / MANIFEST).read_text())
    doc["schema_version"] = 5
    (pkg / MANIFEST).write_text(canonical_json(doc))
    with pytest.raises(PackageVerifyError) as info:
        verify_package(pkg)
    assert "manifest schema version 5 is not supported" in info.value.message
    assert not info.value.details


def _evil_zip(path: Path, name: str, *, symlink: bool = False) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("pkg/manifest.json", "{}")
        info = zipfile.ZipInfo(name)
        if symlink:
            info.create_system = 3
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, "/etc/passwd" if symlink else "gotcha")
    return path


@pytest.mark.parametrize(
    ("name", "symlink", "why"),
    [
        ("../evil-mobilegen-test.txt", False, "escapes the folder"),
        ("pkg/../../evil-mobilegen-test.txt", False, "escapes the folder"),
        ("/tmp/evil-mobilegen-test.txt", False, "absolute path"),
        ("pkg\\..\\..\\evil-mobilegen-test.txt", False, "backslash"),
        ("pkg/link", True, "symbolic link"),
    ],
)
def test_zip_entries_that_escape_are_refused(tmp_path: Path, name: str, symlink: bool, why: str) -> None:
    z = _evil_zip(tmp_path / "evil.zip", name, symlink=symlink)
    before = set(os.listdir(tempfile.gettempdir()))
    with pytest.raises(PackageVerifyError) as info:
        verify_package(z)
    assert why in info.value.message and "refusing to extract" in info.value.message
    assert not info.value.details
    assert not (tmp_path / "evil-mobilegen-test.txt").exists()
    assert not Path(tempfile.gettempdir(), "evil-mobilegen-test.txt").exists()
    leftovers = {n for n in set(os.listdir(tempfile.gettempdir())) - before if n.startswith("mobilegen-verify-")}
    assert not leftovers


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([{"output": "y", "status": "pass", "note": ""}, {"output": "z", "status": "unverified", "note": "x"}], ("z",)),
        # written before rows had a status: the note says it
        ([{"output": "y", "note": ""}, {"output": "z", "note": "degenerate reference (all |values| ≤ atol), accepted with --allow-degenerate"}], ("z",)),
        ([{"output": "z", "status": "pass", "note": "accepted with --allow-degenerate"}], ()),  # the status decides
        ("rows", ()),
        ([7, {"output": 3, "status": "unverified"}], ()),  # malformed: none, and no crash
    ],
)
def test_manifest_names_the_outputs_accepted_unverified(rows: object, expected: tuple[str, ...]) -> None:
    doc = {"schema_version": 2, "verification": {"passed": True, "rows": rows}}
    assert parse_manifest(json.dumps(doc).encode(), reader_version="test").unverified == expected
