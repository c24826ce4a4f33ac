"""Each target's README lists only its own build notes (the package README keeps them all)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import invoke

from mobilegen.coverage.model import CoverageReport
from mobilegen.notices import Notice, notices_for

ROOT = Path(__file__).resolve().parents[2]
CNN = ROOT / "examples" / "mobilenet_tiny.pt"


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
