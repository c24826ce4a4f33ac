"""`mobilegen package` on a ~300M-parameter ViT against the manual chain, side by side in one run.

The model is ViT-Large/16 built from a `transformers` config with random weights (303M parameters,
~1.2 GB of float32), saved once as a torch.export archive. Then, each in its own process:

  manual    1. torch.export.load + torch.onnx.export(dynamo=True)      (a process)
            2. python -m onnxruntime.tools.convert_onnx_models_to_ort  (a process)
  mobilegen package --android --ios --nnapi --coreml                   (one process: export, verify,
            convert, coverage for NNAPI and CoreML, two models and two projects, report, manifest)
  mobilegen android --nnapi                                            (one process, one model: the
            chain's output, verified against PyTorch, with the Android project)

Prints wall time, peak resident memory and CPU time (per process, from wait4) of each, and the ratios;
asserts nothing. On a shared machine the CPU time is the steadier figure: others' load stretches wall time. Needs ~10 GB of memory and a few minutes on 2 cores. `--small` uses ViT-Base (86M) instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MAKE = """
import sys, torch, transformers
small = sys.argv[2] == "small"
cfg = transformers.ViTConfig(
    hidden_size=768 if small else 1024, num_hidden_layers=12 if small else 24,
    num_attention_heads=12 if small else 16, intermediate_size=3072 if small else 4096,
    image_size=224, patch_size=16, num_labels=1000,
)
torch.manual_seed(0)
model = transformers.ViTForImageClassification(cfg).eval()

class Wrapped(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, pixel_values):
        return self.m(pixel_values=pixel_values).logits

w = Wrapped(model).eval()
print(sum(p.numel() for p in w.parameters()))
ep = torch.export.export(w, (torch.randn(1, 3, 224, 224),))
torch.export.save(ep, sys.argv[1])
"""

EXPORT = """
import sys, torch
ep = torch.export.load(sys.argv[1])
onnx_program = torch.onnx.export(ep, (torch.randn(1, 3, 224, 224),), dynamo=True, input_names=["pixel_values"])
onnx_program.save(sys.argv[2])
"""


def run(cmd: list[str], cwd: Path) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (GiB) and CPU seconds (user + system: what a shared machine's other load
    changes least) of one process."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise SystemExit(f"{cmd[:4]} failed:\n{err[-2000:]}")
    return wall, usage.ru_maxrss / 2**20, usage.ru_utime + usage.ru_stime  # ru_maxrss is in KiB on Linux


def main() -> None:
    size = "small" if "--small" in sys.argv else "large"
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="mobilegen-bench-") as tmp:
        work = Path(tmp)
        pt2 = work / "vit.pt2"
        params = subprocess.run([py, "-c", MAKE, str(pt2), size], check=True, capture_output=True, text=True).stdout.strip()
        print(f"model: ViT ({size}), {int(params.splitlines()[-1]) / 1e6:.0f}M parameters, {pt2.stat().st_size / 2**30:.2f} GiB")
        manual = [
            ("torch.onnx.export", [py, "-c", EXPORT, str(pt2), str(work / "manual.onnx")]),
            ("convert_onnx_models_to_ort", [py, "-m", "onnxruntime.tools.convert_onnx_models_to_ort", str(work / "manual.onnx")]),
        ]
        steps = [(name, *run(cmd, work)) for name, cmd in manual]
        ours = [
            (label, *run([py, "-m", "mobilegen", *args, str(pt2), *flags, "-o", str(work / out)], work))
            for label, args, flags, out in (
                ("package --android --ios ...", ["package"], ["--android", "--ios", "--nnapi", "--coreml"], "pkg"),
                ("android --nnapi", ["android"], ["--nnapi"], "app"),
            )
        ]
    man_t = sum(t for _, t, _, _ in steps)
    man_m = max(m for _, _, m, _ in steps)
    man_c = sum(c for _, _, _, c in steps)
    for name, t, m, c in steps:
        print(f"manual     {name:32} {t:7.1f} s  {m:5.2f} GiB peak  {c:7.1f} s CPU")
    print(f"manual     {'total':32} {man_t:7.1f} s  {man_m:5.2f} GiB peak  {man_c:7.1f} s CPU")
    for label, t, m, c in ours:
        print(f"mobilegen  {label:32} {t:7.1f} s  {m:5.2f} GiB peak  {c:7.1f} s CPU")
    for label, t, m, c in ours:
        print(f"ratio mobilegen {label} / manual: time {t / man_t:.2f}x, peak memory {m / man_m:.2f}x, CPU time {c / man_c:.2f}x")


if __name__ == "__main__":
    main()
