"""Shared pytest options. Keep it small: fixtures live next to the tests that use them, save the finished
package that several modules read or damage (``pristine``, ``pkg``).

``tests/`` is on ``sys.path`` (``pythonpath`` in pyproject.toml), so test files import the shared
helpers by name: ``cli_helpers`` (run the CLI, check its one-line failures), ``model_files``,
``package_fixtures``, ``golden_trees``, ``android_specs``, ``ios_specs``, ``project_specs``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

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


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished package folder ``TinyOut`` plus ``TinyOut.zip`` (``package_fixtures.build_pristine``),
    built once per test module and shared by its tests: a test that changes it takes ``pkg``."""
    from package_fixtures import build_pristine  # imported here: it loads onnx, numpy and mobilegen

    return build_pristine(tmp_path_factory.mktemp("pristine") / "TinyOut")


@pytest.fixture
def pkg(pristine: Path, tmp_path: Path) -> Path:
    """A copy of ``pristine`` (the folder) the test may change."""
    return Path(shutil.copytree(pristine, tmp_path / "TinyOut"))
