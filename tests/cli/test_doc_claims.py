"""Claims the docs make about mobilegen's behaviour (moved from README.md to docs/), checked against it."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS_DOC = ROOT / "docs" / "benchmarks.md"
PACKAGE_DOC = ROOT / "docs" / "package.md"


def test_benchmarks_doc_says_the_first_out_of_range_value_is_reported() -> None:
    text = " ".join(BENCHMARKS_DOC.read_text(encoding="utf-8").split())
    assert "each out-of-range value is its own one-line error" not in text
    assert "with several, the first is reported" in text


def test_package_doc_tree_lists_the_golden_cases() -> None:
    text = PACKAGE_DOC.read_text(encoding="utf-8")
    tree = text[text.index("├── golden/") : text.index("├── report/")]
    assert "golden_case1.npz" in tree and "golden_caseN.npz" in tree
