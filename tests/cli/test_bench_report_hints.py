"""Hints of bench and report: bench's unzip hint names the zip's folder, a results folder and a --target the package lacks get a hint."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from cli_helpers import assert_fails, invoke


def listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


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
