"""What the generated READMEs tell app teams: how to get mobilegen and what `verify` needs (package),
and never a build flag to pass — a flag is what the ML engineer re-runs mobilegen with (iOS, Android).
Also: the repository docs document --keep-dynamic (docs/targets/android.md) and explain the runtime pins
(docs/runtimes.md)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from android_specs import make_specs as android_specs
from ios_specs import make_specs as ios_specs

from mobilegen.notices import dims_fixed, dims_fixed_text
from mobilegen.runtimes import default_release
from mobilegen.targets.android.project import render_android
from mobilegen.targets.ios.project import render_ios

DOCS = Path(__file__).resolve().parents[2] / "docs"
# "pass --flag", "add --flag", "use --flag", "run with --flag" addressed to the reader, without a mobilegen re-run
_ASKS_FOR_A_FLAG = re.compile(r"\b(pass|add|use|set|with)\s+`?--[a-z]", re.IGNORECASE)


def _fixed_dims_note() -> str:
    return dims_fixed(dims_fixed_text({"seq": 16}, ["NNAPI"]), shipped_by=("iOS",)).text


def _sentences_asking_for_flags(text: str) -> list[str]:
    """Sentences that name a flag without saying it is one for a mobilegen re-run."""
    sentences = re.split(r"(?<=[.;:])\s+|\n\s*\n|\n- ", text)
    return [s for s in sentences if _ASKS_FOR_A_FLAG.search(s) and "re-run" not in s and "mobilegen" not in s]


@pytest.mark.parametrize("target", ["ios", "android"])
def test_project_readme_says_what_the_ml_engineer_reruns(target: str, tmp_path: Path) -> None:
    if target == "ios":
        spec, opts = ios_specs(tmp_path / "inputs")["ios_cnn"]
        render = render_ios
    else:
        spec, opts = android_specs(tmp_path / "inputs")["android_cnn"]
        render = render_android
    spec = replace(spec, notes=(_fixed_dims_note(),))
    render(spec, opts, tmp_path / "out")
    text = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert "re-run mobilegen with --keep-dynamic" in text
    assert "not of your app build" in text  # the notes say whose flags they name
    assert "re-runs mobilegen with `--ort-version X`" in text  # moving the runtime pin is a re-run too
    assert "pass --keep-dynamic" not in text and "Move it only together with" not in text
    assert _sentences_asking_for_flags(text) == []


def test_package_readme_says_how_to_get_mobilegen_and_what_verify_needs(pristine: Path) -> None:
    text = (pristine / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Checking this package") :]
    lines = [ln.strip() for ln in section.splitlines()]
    assert "pip install mobilegen" not in lines  # no such published package
    for needle in (
        "not published on PyPI",
        "git clone <the mobilegen repository> mobilegen",
        "python3 -m pip install torch==2.13.0",
        "python3 -m pip install ./mobilegen",
        "Python 3.11 or newer",
        "`manifest.json` and every file it lists",
        "or the `.zip` unchanged",
        "mobilegen verify path/to/this-folder",
    ):
        assert needle in section, needle


def test_repository_docs_document_keep_dynamic_and_the_pins() -> None:
    android = (DOCS / "targets" / "android.md").read_text(encoding="utf-8")
    assert re.search(r"^\| `--keep-dynamic` \|", android, re.MULTILINE), "--keep-dynamic is missing from the Android options table"
    text = (DOCS / "runtimes.md").read_text(encoding="utf-8")
    section = text[text.index("\n## Runtime versions") :]
    section = section[: section.index("\n## ", 1)] if "\n## " in section[1:] else section
    maven, swiftpm = default_release("maven").version, default_release("swiftpm").version
    assert f"`com.microsoft.onnxruntime:onnxruntime-android` | {maven} |" in section  # the pins the code defaults to
    assert f"(binary target `onnxruntime-c`) | {swiftpm} |" in section
    assert "onnxruntime-swift-package-manager" in section and "onnxruntime-c" in section
    assert "kOrtModelVersion" in section and "1.32" in section
