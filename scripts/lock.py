"""Refresh requirements.lock: the exact versions this repository tests with (``make lock``).

Resolves pyproject.toml's ranges from scratch in a throw-away virtual environment (torch first, pinned, so
no range pulls a CUDA build), then writes every installed distribution but mobilegen itself as ``name==version``.

``--litert`` (``make lock-litert``) writes requirements-litert.lock instead: the LiteRT environment of
``make test-litert`` — torch, then ``.[dev,tasks]`` under requirements.lock, then the ``[litert]`` extra with
torch held (its xdsl pin moves typing-extensions below requirements.lock's, so it cannot share that lock).
``--coreai`` (``make lock-coreai``) does the same for the ``[coreai]`` extra into requirements-coreai.lock (the
environment of ``make test-coreai``; its converter and beta runtime stay out of the main environment).
The library keeps its ranges; ``make install`` installs with ``-c requirements.lock``, and
``tests/unit/test_lock.py`` fails when the lock and pyproject.toml disagree or the environment drifted.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"
# extras with a lock (and a test environment) of their own
OWN_LOCKS = {"litert": ROOT / "requirements-litert.lock", "coreai": ROOT / "requirements-coreai.lock"}
TORCH = "torch==2.13.0"
EXTRAS = "dev,tasks"
HEADER = """\
# The exact versions mobilegen's own tests and CI install (pip constraints: `pip install -c requirements.lock ...`).
# Made by `make lock` (scripts/lock.py) from pyproject.toml's ranges; do not edit by hand.
# tests/unit/test_lock.py fails when this file and pyproject.toml disagree.
"""


def _pin(line: str) -> str | None:
    line = line.strip()
    if not line or line.startswith(("#", "-e ")) or "==" not in line:
        return None
    name, version = line.split("==", 1)
    if name.lower() == "mobilegen":
        return None
    return f"{name}=={version.split('+', 1)[0]}"  # torch==2.13.0+cpu: the local label is the wheel's, not a pin


def main() -> int:
    extra = next((name for name in OWN_LOCKS if f"--{name}" in sys.argv[1:]), None)
    lock = OWN_LOCKS[extra] if extra else LOCK
    with tempfile.TemporaryDirectory(prefix="mobilegen-lock-") as tmp:
        env = Path(tmp) / "venv"
        venv.create(env, with_pip=True)
        py = str(env / "bin" / "python")
        pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, TORCH], check=True)
        if extra:
            held = Path(tmp) / "torch.txt"
            held.write_text(TORCH + "\n")
            subprocess.run([*pip, "-c", str(LOCK), f"{ROOT}[{EXTRAS}]"], check=True)
            subprocess.run([*pip, "-c", str(held), f"{ROOT}[{extra}]"], check=True)
        else:
            subprocess.run([*pip, f"{ROOT}[{EXTRAS}]"], check=True)
        frozen = subprocess.run([py, "-m", "pip", "freeze", "--all"], check=True, capture_output=True, text=True).stdout
    pins = sorted({p for p in map(_pin, frozen.splitlines()) if p and not p.lower().startswith(("pip==", "setuptools==", "wheel=="))}, key=str.lower)
    old = set(lock.read_text().splitlines()) if lock.exists() else set()
    lock.write_text(HEADER + "\n".join(pins) + "\n")
    new = set(pins)
    for line in sorted(new - old, key=str.lower):
        print(f"+ {line}")
    for line in sorted(old - new - set(HEADER.splitlines()), key=str.lower):
        print(f"- {line}")
    print(f"{lock.name}: {len(pins)} pins")
    return 0


if __name__ == "__main__":
    sys.exit(main())
