"""Run the mobilegen CLI in process and check how it fails: the exit code, one ``error:`` line.

Every test file that drives the CLI imports these (``from cli_helpers import assert_fails, invoke``);
``tests/`` is on ``sys.path`` through pytest's ``pythonpath`` option and conftest.py has their asserts
rewritten, so a failure shows the values compared.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from pytest import MonkeyPatch
from typer.testing import CliRunner, Result

from mobilegen.cli import app

_RUNNER = CliRunner()


def invoke(*args: object, env: Mapping[str, str] | None = None) -> Result:
    """``mobilegen ARGS...`` in process (each argument passed as ``str``); stdout and stderr kept apart."""
    return _RUNNER.invoke(app, [str(a) for a in args], env=env)


def error_lines(result: Result) -> list[str]:
    return [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]


def assert_fails(result: Result, code: int, *needles: str, alone: bool = False) -> str:
    """Exit ``code`` with exactly one ``error:`` line naming every needle — not an internal error, no
    traceback — and return that line. ``alone``: the line is all of stderr (no hint, no details)."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = error_lines(result)
    assert len(lines) == 1, result.stderr
    assert "internal error" not in lines[0] and "Traceback" not in result.stderr, result.stderr
    if alone:
        assert result.stderr.splitlines() == lines, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def error_details(result: Result) -> list[str]:
    """The indented lines under a leading ``error:`` line (one per problem found), stripped."""
    lines = result.stderr.splitlines()
    assert lines and lines[0].startswith("error: "), result.stderr
    assert all(ln.startswith("  ") for ln in lines[1:]), result.stderr
    return [ln.strip() for ln in lines[1:]]


def private_tmpdir(tmp_path: Path, monkeypatch: MonkeyPatch, *, ignore: frozenset[str] = frozenset()) -> Iterator[Path]:
    """For an autouse fixture: TMPDIR (and tempfile's cached copy) point at a fresh folder, which must be
    empty again after the test (names in ``ignore`` excepted)."""
    tmp = tmp_path / "TMPDIR"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("TMPDIR", str(tmp))
    yield tmp
    assert sorted({p.name for p in tmp.iterdir()} - ignore) == []


def build_threads_left() -> list[str]:
    """The build's own threads still running (mobilegen.infra.background names them ``mobilegen-...``):
    after a build has returned or failed there must be none."""
    return [t.name for t in threading.enumerate() if t.name.startswith("mobilegen-")]
