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
from ci import PERMANENT_SKIPS, running_in_ci

# Helpers that assert on a test's behalf: rewrite their asserts too (must happen before they're imported).
pytest.register_assert_rewrite("cli_helpers", "golden_trees", "package_fixtures")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite tests/golden/expected/... from the current renderers (review the diff before committing)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--update-goldens") and running_in_ci():
        raise pytest.UsageError("--update-goldens is refused under CI: rewrite goldens on a development machine and commit them on their own")
    if running_in_ci():
        # the same examples every CI run, and no timing assertion hidden in hypothesis's per-example deadline
        from hypothesis import settings

        settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
        settings.load_profile("ci")


_unexpected_skips: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and running_in_ci() and report.nodeid not in PERMANENT_SKIPS:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _unexpected_skips.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _unexpected_skips and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from golden_trees import REWRITTEN

    if REWRITTEN:
        terminalreporter.section("goldens rewritten (review with git diff before committing)")
        for line in REWRITTEN:
            terminalreporter.write_line(line)
    if _unexpected_skips:
        terminalreporter.section("skipped under CI (each must run; tools come from `make tools`)", red=True)
        for line in _unexpected_skips:
            terminalreporter.write_line(line)


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
