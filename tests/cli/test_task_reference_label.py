"""The task reference's name reads as one noun phrase."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("inner", "want"),
    [
        ("PyTorch", "the PyTorch model wrapped in mobilegen.tasks' reference pre/post-processing"),
        (
            "the source ONNX model (no PyTorch model given)",
            "the source ONNX model wrapped in mobilegen.tasks' reference pre/post-processing (no PyTorch model given)",
        ),
    ],
)
def test_task_reference_reads_as_one_noun_phrase(inner: str, want: str) -> None:
    from mobilegen.tasks.stage import task_reference_label
    from mobilegen.verify.gate import reference_subject

    label = task_reference_label(inner)
    assert label == want
    assert reference_subject(label) == want  # "output 'scores' of <this> is degenerate"
