"""`mobilegen --help` must not import torch / onnxruntime / onnx (they take seconds to import), nor what
only a running command needs: rich, pydantic (Typer's value coercion, ~100 ms), the provider registry."""

import subprocess
import sys

import pytest

CODE = """
import sys
from typer.testing import CliRunner
from mobilegen.cli import app
r = CliRunner().invoke(app, sys.argv[1:])
assert r.exit_code == 0, r.output
for cmd in ("inspect", "export", "convert", "android", "ios", "package"):
    assert cmd in r.output or len(sys.argv) > 2, cmd
roots = ("torch", "onnxruntime", "onnx", "transformers", "numpy", "rich", "pydantic", "mobilegen.providers")
heavy = sorted({m for m in sys.modules for r in roots if m == r or m.startswith(r + ".")})
print(",".join(heavy))
"""


def heavy_after(*args: str) -> str:
    return subprocess.run([sys.executable, "-c", CODE, *args], check=True, capture_output=True, text=True).stdout.strip()


def test_help_imports_no_heavy_module() -> None:
    out = heavy_after("--help")
    assert out == "", f"--help imported {out}"


@pytest.mark.parametrize("command", ["android", "check"])
def test_command_help_imports_no_runtime_module(command: str) -> None:
    # `check --help` reads the provider registry for the --ep choices; nothing else a run needs
    heavy = [m for m in heavy_after(command, "--help").split(",") if m and not m.startswith("mobilegen.providers")]
    assert heavy == [], f"{command} --help imported {heavy}"
