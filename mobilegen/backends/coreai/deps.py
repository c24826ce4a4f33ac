"""The optional dependencies: one-line refusal naming the extra when they are missing."""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType

from mobilegen.backends.coreai.facts import INSTALL, MODULES, PACKAGES
from mobilegen.errors import UsageError, first_line


def require(*packages: str) -> dict[str, ModuleType]:
    """Import ``packages`` (PyPI names, default: all three) or refuse with the extra to install."""
    wanted = packages or tuple(PACKAGES)
    out: dict[str, ModuleType] = {}
    missing: list[str] = []
    broken: list[str] = []
    for name in wanted:
        try:
            with warnings.catch_warnings():  # coreai-torch warns that torch "2.13.0+cpu" > its validated "2.13.0"
                warnings.simplefilter("ignore")
                out[name] = importlib.import_module(MODULES[name])
        except ModuleNotFoundError as err:
            if err.name is None or err.name.split(".")[0] != MODULES[name]:
                broken.append(f"{name}: {first_line(err)}")
            else:
                missing.append(name)
        except ImportError as err:  # a wheel for another platform, a missing shared library
            broken.append(f"{name}: {first_line(err)}")
    if missing:
        raise UsageError(
            f"--runtime coreai needs {', '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} not installed",
            hint=f"{INSTALL} (Linux x86_64 or macOS arm64: coreai-core has no other wheels)",
        )
    if broken:
        raise UsageError(
            f"--runtime coreai cannot import {'; '.join(broken)}",
            hint=f"reinstall with {INSTALL}; coreai-core ships wheels for Linux x86_64 (glibc 2.34+) and macOS arm64 only",
        )
    return out


def available() -> bool:
    """Whether the three packages import (the tests skip without them)."""
    try:
        require()
    except UsageError:
        return False
    return True
