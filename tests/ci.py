"""What a CI run (``CI`` set to true/1/yes, as ``.ci/run`` does) demands of the suite.

Under CI a test that needs a tool the machine should have (kotlinc, a JDK, Chromium, a C compiler, a parser
grammar) fails instead of skipping, and any skip outside :data:`PERMANENT_SKIPS` fails the run
(``conftest.pytest_sessionfinish``): a green CI never means "tested less".
"""

from __future__ import annotations

import os

import pytest

# nodeid -> why it can never run on this project's machines (Linux x64 CPU)
PERMANENT_SKIPS = {
    "tests/cli/test_bench.py::test_placement_with_xnnpack_from_desktop_onnxruntime": (
        "onnxruntime's Linux x64 wheels ship without the XNNPACK execution provider"
    ),
}


def running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def missing_tool(message: str) -> None:
    """Skip a test whose tool is missing, or fail it under CI (where ``make tools`` must have installed it)."""
    if running_in_ci():
        pytest.fail(f"{message} (CI must have it: `make tools`)")
    pytest.skip(message)
