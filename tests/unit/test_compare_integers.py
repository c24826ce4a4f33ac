"""The verification gate and `mobilegen verify` compare integer outputs exactly (issue 26 item 3): ids,
indices and counts have no tolerance, and no float64 on the way."""

from __future__ import annotations

import numpy as np
import pytest

from mobilegen.verify.gate import _compare


@pytest.mark.parametrize(
    ("ref", "got"),
    [
        (np.array([1000], np.int64), np.array([1001], np.int64)),  # inside atol + rtol·|e| for rtol 1e-2
        (np.array([2**53 + 1], np.int64), np.array([2**53], np.int64)),  # equal once both are float64
        (np.array([[3, 7]], np.int32), np.array([[3, 8]], np.int32)),
        (np.array([255], np.uint8), np.array([254], np.uint8)),
    ],
)
def test_different_integers_fail_whatever_the_tolerance(ref: np.ndarray, got: np.ndarray) -> None:
    max_abs, _rel, _cos, _top1, passed, note = _compare(ref, got, atol=1.0, rtol=1e-2)
    assert not passed and max_abs == 1.0 and note == "integers compared exactly"


def test_equal_integers_pass_with_zero_tolerance() -> None:
    ref = np.array([[0, -5, 2**62]], np.int64)
    assert _compare(ref, ref.copy(), atol=0.0, rtol=0.0)[4]


def test_an_int64_and_uint64_difference_does_not_overflow() -> None:
    max_abs, *_rest, passed, _note = _compare(np.array([2**63 - 1], np.int64), np.array([2**64 - 1], np.uint64), 0.0, 0.0)
    assert not passed and max_abs == float(2**63)


def test_float_outputs_keep_their_tolerance() -> None:
    assert _compare(np.array([1000.0], np.float32), np.array([1001.0], np.float32), atol=0.0, rtol=1e-2)[4]
