"""`mobilegen android` on the example CNN against the manual chain people run today, in the same run:

  1. python -c "torch.onnx.export(...)"                                  (a process)
  2. python -m onnxruntime.tools.convert_onnx_models_to_ort model.onnx    (a process)
  3. python -m onnxruntime.tools.check_onnx_model_mobile_usability ...    (a process)

The manual chain does no verification, writes no project and no report; mobilegen does all of that too.
Prints wall times and the ratio; asserts nothing.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CNN = ROOT / "examples" / "mobilenet_tiny.pt"

EXPORT = """
import sys, torch
m = torch.jit.load(sys.argv[1])
torch.onnx.export(m, (torch.randn(1, 3, 64, 64),), sys.argv[2], input_names=["image"], dynamo=False, opset_version=20)
"""


def timed(cmd: list[str], cwd: Path) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        py = sys.executable
        manual = [
            ("torch.onnx.export", [py, "-c", EXPORT, str(CNN), str(work / "model.onnx")]),
            ("convert_onnx_models_to_ort", [py, "-m", "onnxruntime.tools.convert_onnx_models_to_ort", str(work / "model.onnx")]),
            ("check_onnx_model_mobile_usability", [py, "-m", "onnxruntime.tools.check_onnx_model_mobile_usability", str(work / "model.onnx")]),
        ]
        steps = [(name, timed(cmd, work)) for name, cmd in manual]
        ours = timed([py, "-m", "mobilegen", "android", str(CNN), "--input", "image:1x3x64x64", "--nnapi", "-o", str(work / "out")], work)
    total = sum(t for _, t in steps)
    for name, t in steps:
        print(f"manual  {name:36} {t:6.2f} s")
    print(f"manual  {'total (3 processes)':36} {total:6.2f} s")
    print(f"mobilegen android --nnapi (export, verify x2, convert, check, render) {ours:6.2f} s")
    print(f"ratio mobilegen / manual: {ours / total:.2f}x")


if __name__ == "__main__":
    main()
