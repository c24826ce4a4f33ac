"""--labels: trailing blank lines end the list, a blank line inside it is an error, duplicates build with a warning, --labels without --task names the tasks that take it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import assert_fails, invoke
from model_files import mean_matmul_classifier

from mobilegen.errors import UsageError
from mobilegen.tasks.spec import duplicate_labels, read_labels


def _classifier(path: Path, classes: int = 3) -> Path:
    return mean_matmul_classifier(path, classes)


@pytest.mark.parametrize("data", [b"cat\ndog\n\n", b"cat\r\ndog\r\n\r\n\r\n", b"\xef\xbb\xbfcat\ndog\n \n\t\n", b"cat\ndog"])
def test_trailing_blank_lines_end_the_labels(tmp_path: Path, data: bytes) -> None:
    f = tmp_path / "labels.txt"
    f.write_bytes(data)
    assert read_labels(f) == ("cat", "dog")


def test_a_blank_line_before_the_last_label_stays_an_error(tmp_path: Path) -> None:
    f = tmp_path / "labels.txt"
    f.write_bytes(b"cat\n\ndog\n\n")
    with pytest.raises(UsageError, match="line 2 is empty"):
        read_labels(f)


def test_duplicate_labels_are_found_with_their_lines() -> None:
    assert duplicate_labels(("crane", "dog", "crane", "dog", "cat")) == {"crane": [1, 3], "dog": [2, 4]}
    assert duplicate_labels(("a", "b")) == {}


def test_duplicate_labels_build_with_a_warning_and_trailing_blank_lines_ship_trimmed(tmp_path: Path) -> None:
    model = _classifier(tmp_path / "cls.onnx")
    labels = tmp_path / "labels.txt"
    labels.write_bytes(b"crane\ndog\ncrane\n\n\n")
    out = tmp_path / "out"
    r = invoke("android", model, "-o", out, "--task", "image-classification", "--labels", labels)
    assert r.exit_code == 0, r.stderr
    said = "--labels names 1 label more than once ('crane' on lines 1, 3)"
    assert said in r.stdout + r.stderr
    assert any(said in w for w in json.loads((out / "manifest.json").read_text(encoding="utf-8"))["warnings"])
    assert (out / "model/labels.txt").read_bytes() == b"crane\ndog\ncrane\n"


def test_labels_without_task_names_the_tasks_that_take_them(tmp_path: Path) -> None:
    """image-classification, and since issue 26 audio (an audio classifier); never --task image."""
    model = _classifier(tmp_path / "cls.onnx")
    labels = tmp_path / "labels.txt"
    labels.write_text("a\nb\nc\n", encoding="utf-8")
    r = invoke("android", model, "-o", tmp_path / "out", "--labels", labels)
    assert_fails(r, 2, "--labels needs --task")
    assert "add --task image-classification" in r.stderr and "--task image or" not in r.stderr and "--task audio" in r.stderr
    assert_fails(invoke("android", model, "-o", tmp_path / "out", "--crop", "8x8"), 2, "--crop needs --task")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cls.onnx", "labels.txt"]
