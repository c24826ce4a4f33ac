"""`mobilegen --help` must not import torch / onnxruntime / onnx (they take seconds to import)."""

import subprocess
import sys

CODE = """
import sys
from typer.testing import CliRunner
from mobilegen.cli import app
r = CliRunner().invoke(app, ["--help"])
assert r.exit_code == 0, r.output
for cmd in ("inspect", "export", "convert", "android", "ios", "package"):
    assert cmd in r.output, cmd
heavy = sorted(m for m in ("torch", "onnxruntime", "onnx", "transformers") if m in sys.modules)
print(",".join(heavy))
"""


def test_help_imports_no_heavy_module() -> None:
    out = subprocess.run([sys.executable, "-c", CODE], check=True, capture_output=True, text=True).stdout.strip()
    assert out == "", f"--help imported {out}"
