"""requirements.lock (``make lock``) is what this repository tests: it must agree with pyproject.toml's ranges,
and the environment the tests run in must be the locked one."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


def _lock() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for raw in (ROOT / "requirements.lock").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==" and "*" not in spec.version, f"requirements.lock: {line!r} is not an exact pin"
        pins[canonicalize_name(req.name)] = Version(spec.version)
    return pins


def _project_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in project.get("optional-dependencies", {}).values():
        reqs += [Requirement(r) for r in extra]
    return reqs


def test_every_dependency_is_locked_within_its_range() -> None:
    pins = _lock()
    problems = []
    for req in _project_requirements():
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        pin = pins.get(canonicalize_name(req.name))
        if pin is None:
            problems.append(f"{req} is not in requirements.lock")
        elif not req.specifier.contains(pin, prereleases=True):
            problems.append(f"{req.name}=={pin} in requirements.lock is outside pyproject.toml's {req}")
    assert not problems, "; ".join(problems) + " — run `make lock`"


def test_the_environment_is_the_locked_one() -> None:
    drift = []
    for name, pin in _lock().items():
        try:
            installed = Version(metadata.version(name))
        except metadata.PackageNotFoundError:
            drift.append(f"{name} is locked at {pin} but not installed")
            continue
        if Version(installed.public) != pin:
            drift.append(f"{name} {installed} is installed, {pin} is locked")
    assert not drift, "; ".join(drift) + " — run `make install` (or `make lock` if the lock is what is stale)"


def test_the_makefile_installs_from_the_lock() -> None:
    makefile = (ROOT / "Makefile").read_text()
    installs = [line for line in makefile.splitlines() if "pip" in line.lower() and " install " in line and "--upgrade pip" not in line]
    assert installs and all("-c $(LOCK)" in line for line in installs), installs
