"""Shared pytest options. Keep it small: fixtures live next to the tests that use them.

``tests/`` is on ``sys.path`` (``pythonpath`` in pyproject.toml), so test files import the shared
helpers by name: ``cli_helpers`` (run the CLI, check its one-line failures), ``model_files``,
``package_fixtures``, ``golden_trees``, ``android_specs``, ``ios_specs``, ``project_specs``.
"""

from __future__ import annotations

import pytest

# Helpers that assert on a test's behalf: rewrite their asserts too (must happen before they're imported).
pytest.register_assert_rewrite("cli_helpers", "golden_trees", "package_fixtures")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite tests/golden/expected/... from the current renderers (review the diff before committing)",
    )


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))
