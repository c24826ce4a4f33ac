"""A provider both targets chose (``--xnnpack`` on ``package --android --ios``) is analysed once per target,
on that target's model and runtime: every document says which target each report belongs to, and each
target's README lists its own reports only."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import invoke

ROOT = Path(__file__).resolve().parents[2]
CNN = ROOT / "examples" / "mobilenet_tiny.pt"


def test_xnnpack_on_both_targets_is_reported_per_target(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    result = invoke("package", CNN, "--input", "image:1x3x64x64", "--android", "--ios", "--xnnpack", "--coreml", "-o", out, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    xnn = [c for c in data["coverage"] if c["ep"] == "xnnpack"]
    assert [(c["target"], c["settings"]["ort_version"]) for c in xnn] == [("android", "1.27.0"), ("ios", "1.24.2")]
    # the iOS model got CoreML's flatten-reshape pass, and its XNNPACK record says so (not Android's)
    assert [[f["pass"] for f in c["fixes"]] for c in xnn] == [[], ["flatten-reshape"]]
    assert len(set(data["warnings"])) == len(data["warnings"])  # no two identical lines
    android = (out / "android" / "README.md").read_text()
    ios = (out / "ios" / "README.md").read_text()
    assert "| xnnpack (android) |" in android and "| xnnpack (ios) |" not in android
    assert "| xnnpack (ios) |" in ios and "| xnnpack (android) |" not in ios
    manifest = json.loads((out / "manifest.json").read_text())
    assert [c["target"] for c in manifest["coverage"] if c["ep"] == "xnnpack"] == ["android", "ios"]


def test_human_summary_names_the_target_of_a_shared_provider(tmp_path: Path) -> None:
    result = invoke("package", CNN, "--input", "image:1x3x64x64", "--android", "--ios", "--xnnpack", "-o", tmp_path / "pkg")
    assert result.exit_code == 0, result.output
    assert "xnnpack (android)" in result.output and "xnnpack (ios)" in result.output
    single = invoke("android", CNN, "--input", "image:1x3x64x64", "--xnnpack", "-o", tmp_path / "a")
    assert single.exit_code == 0, single.output
    assert "xnnpack (android)" not in single.output  # one target: the plain label
