"""A new user's second QA pass (session 5): bench's unzip hint names the zip's folder, each target's README
lists only its own build notes, hints for a results folder and a --target the package lacks, and the
`-o X.zip` hint keeps the user's folder and says what --zip writes."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest
from cli_helpers import assert_fails, invoke

from mobilegen.coverage.model import CoverageReport
from mobilegen.notices import Notice, notices_for

ROOT = Path(__file__).resolve().parents[2]
CNN = ROOT / "examples" / "mobilenet_tiny.pt"
BENCHMARKS_DOC = ROOT / "docs" / "benchmarks.md"


def listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


# --- 1. bench PKG.zip: the hint names the zip's top-level folder ------------------------------------


def test_bench_zip_hint_names_the_folder_inside_the_zip(tmp_path: Path) -> None:
    zipped = tmp_path / "out.zip"
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr("mypkg/manifest.json", "{}")
        zf.writestr("mypkg/model/model.ort", b"x")
    before = listing(tmp_path)
    line = assert_fails(invoke("bench", zipped), 2, "a zipped package", " — ", f"unzip {zipped} -d DIR, then mobilegen bench DIR/mypkg")
    assert not line.endswith("bench DIR")
    assert listing(tmp_path) == before


def test_bench_zip_hint_without_one_top_folder_says_it_generally(tmp_path: Path) -> None:
    zipped = tmp_path / "flat.zip"
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr("manifest.json", "{}")
    assert_fails(invoke("bench", zipped), 2, "a zipped package", "then mobilegen bench the folder in DIR that holds manifest.json")


# --- 2. a target's README lists only the notes about it ---------------------------------------------


def _notes(readme: Path) -> list[str]:
    text = readme.read_text(encoding="utf-8")
    section = text.split("## Notes from the build", 1)[1].split("\n## ", 1)[0] if "## Notes from the build" in text else ""
    return [ln[2:] for ln in section.splitlines() if ln.startswith("- ")]


def test_each_target_readme_lists_only_its_own_notes(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    result = invoke("package", CNN, "--input", "image:1x3x64x64", "--android", "--ios", "--xnnpack", "--coreml", "-o", out)
    assert result.exit_code == 0, result.stderr
    android, ios, package = _notes(out / "android" / "README.md"), _notes(out / "ios" / "README.md"), (out / "README.md").read_text(encoding="utf-8")
    assert any(n.startswith("xnnpack (android):") for n in android), android
    assert any(n.startswith("xnnpack (ios):") for n in ios), ios
    assert not [n for n in android if "(ios)" in n or "iOS" in n], android
    assert not [n for n in ios if "(android)" in n or "Android" in n], ios
    assert "xnnpack (android):" in package and "xnnpack (ios):" in package  # the package README keeps all


def test_nnapi_deprecation_is_in_the_android_readme_only(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    result = invoke("package", CNN, "--input", "image:1x3x64x64", "--android", "--ios", "--nnapi", "--coreml", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert any("NNAPI is deprecated" in n for n in _notes(out / "android" / "README.md"))
    assert not any("NNAPI" in n for n in _notes(out / "ios" / "README.md"))
    assert "NNAPI is deprecated" in (out / "README.md").read_text(encoding="utf-8")


def _report(ep: str, target: str, title: str = "") -> CoverageReport:
    return CoverageReport(ep, None, 1, 1, (), "yes", (), target=target, title=title)


def test_notices_for_keeps_the_targets_own_and_the_general_ones() -> None:
    coverage = [_report("xnnpack", "android", "xnnpack (android)"), _report("xnnpack", "ios", "xnnpack (ios)"), _report("nnapi", "android")]
    notices = [
        Notice("export-note", "warning", "general"),
        Notice("quantize-refused", "warning", "ios refused", subject="ios"),
        Notice("fix-approximate", "warning", "both", subject="android and ios"),
        Notice("cpu-fallback", "warning", "xa", subject="xnnpack (android)"),
        Notice("cpu-fallback", "warning", "xi", subject="xnnpack (ios)"),
        Notice("nnapi-no-nodes", "severe", "nn", subject="nnapi"),
        Notice("fix-failed", "warning", "a pass", subject="flatten-reshape"),
    ]
    targets = {"android", "ios"}
    assert [n.text for n in notices_for("android", notices, coverage, targets)] == ["general", "both", "xa", "nn", "a pass"]
    assert [n.text for n in notices_for("ios", notices, coverage, targets)] == ["general", "ios refused", "both", "xi", "a pass"]


# --- 3. hints for a results folder and a --target the package lacks ----------------------------------


def test_report_results_folder_has_a_hint(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "manifest.json").write_text("{}", encoding="utf-8")
    results = tmp_path / "results"
    results.mkdir()
    before = listing(tmp_path)
    assert_fails(invoke("report", pkg, "--results", results), 2, "cannot be read", " — ", "mobilegen bench MODEL -o FILE.json", "not their folder")
    assert listing(tmp_path) == before


def test_bench_target_the_package_lacks_has_a_hint(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    manifest = {"models": [{"ort": {"file": "model/android/model.ort"}, "golden": {"mgv": "golden/golden.mgv"}, "targets": ["android"]}]}
    (pkg / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    before = listing(tmp_path)
    assert_fails(
        invoke("bench", pkg, "--target", "ios"),
        2,
        "no model for --target ios",
        "model/android/model.ort (--target android)",
        " — ",
        "pass one of the --target values listed, or omit --target",
    )
    assert listing(tmp_path) == before


# --- 4. -o X.zip: the hint keeps the folder and says what --zip writes --------------------------------


@pytest.mark.parametrize(("name", "zip_flag"), [("out.zip", False), ("a.ZIP", False), ("out.zip", True), ("a.ZIP", True)])
def test_o_zip_hint_keeps_the_users_folder(tmp_path: Path, name: str, zip_flag: bool) -> None:
    target = tmp_path / "qa6" / name
    folder = tmp_path / "qa6" / re.sub(r"\.zip$", "", name, flags=re.IGNORECASE)
    result = invoke("android", CNN, "--input", "image:1x3x64x64", "-o", target, *(["--zip"] if zip_flag else []))
    line = assert_fails(result, 2, f"-o {target}", f"-o {folder} ", f"it writes {folder}/ and {folder}.zip")
    assert ".ZIP" not in line.split(" — ", 1)[1]
    assert listing(tmp_path) == []


# --- 5. docs/benchmarks.md: several out-of-range bench values report the first -----------------------


def test_docs_say_the_first_out_of_range_value_is_reported() -> None:
    text = " ".join(BENCHMARKS_DOC.read_text(encoding="utf-8").split())
    assert "each out-of-range value is its own one-line error" not in text
    assert "with several, the first is reported" in text


def test_qnn_with_nnapi_or_xnnpack_says_the_qnn_aar_has_neither(tmp_path: Path) -> None:
    # ORT's default_qnn_aar_build_settings.json builds the QNN AAR with --use_qnn only: an app pinned to it
    # never gets NNAPI or XNNPACK, whatever the wrapper's chain asks for
    example = Path(__file__).resolve().parents[2] / "examples" / "mobilenet_tiny.pt"
    both = invoke("android", example, "--input", "image:1x3x64x64", "--qnn", "--nnapi", "--xnnpack", "-o", tmp_path / "a", "--json")
    assert both.exit_code == 0, both.output
    (line,) = [w for w in json.loads(both.stdout)["warnings"] if "QNN AAR" in w]
    assert line.startswith("--qnn with --nnapi and --xnnpack: the QNN AAR") and "NNAPI and XNNPACK are skipped" in line
    assert "QNN AAR" in (tmp_path / "a/android/README.md").read_text()
    alone = invoke("android", example, "--input", "image:1x3x64x64", "--qnn", "-o", tmp_path / "b", "--json")
    assert alone.exit_code == 0, alone.output
    assert not [w for w in json.loads(alone.stdout)["warnings"] if "QNN AAR" in w]
