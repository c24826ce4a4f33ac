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


# Extras with a lock of their own (their dependencies conflict with requirements.lock's) and the test
# environment that installs them (make test-litert).
OWN_LOCKS = {"litert": "requirements-litert.lock", "coreai": "requirements-coreai.lock"}


def _in_litert_env() -> bool:
    try:
        metadata.version("litert-torch")
    except metadata.PackageNotFoundError:
        return False
    return True


def _lock(name: str = "requirements.lock") -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for raw in (ROOT / name).read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==" and "*" not in spec.version, f"{name}: {line!r} is not an exact pin"
        pins[canonicalize_name(req.name)] = Version(spec.version)
    return pins


def _project_requirements(own: str | None = None) -> list[Requirement]:
    """The requirements requirements.lock pins (``own=None``: the base and every extra without a lock of
    its own), or those of the base and the extras that an own lock pins (``own="litert"``)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for name, extra in project.get("optional-dependencies", {}).items():
        if (name in OWN_LOCKS) == (own is not None) and (own is None or name == own):
            reqs += [Requirement(r) for r in extra]
    return reqs


def test_every_extra_with_its_own_lock_is_locked_there() -> None:
    for extra, lock in OWN_LOCKS.items():
        pins = _lock(lock)
        problems = [str(r) for r in _project_requirements(extra) if (p := pins.get(canonicalize_name(r.name))) is None or not r.specifier.contains(p, prereleases=True)]
        assert not problems, f"{lock}: " + "; ".join(problems) + f" — run `make lock-{extra}`"


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
    for name, pin in _lock(OWN_LOCKS["litert"] if _in_litert_env() else "requirements.lock").items():
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
    installs = [line for line in makefile.splitlines() if "pip" in line.lower() and " install " in line and "--upgrade pip" not in line and not line.lstrip().startswith("#")]
    assert installs and all(any(f"-c $({lock})" in line for lock in ("LOCK", "LITERT_LOCK", "COREAI_LOCK")) for line in installs), installs
