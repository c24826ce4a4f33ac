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
asserts nothing. On a shared machine the CPU time is the steadier figure: others' load stretches wall time. Needs ~10 GB of memory and a few minutes on 2 cores. `--small` uses ViT-Base (86M) instead;
`--rounds N` runs the four processes N times, interleaved, and reports each one's median. Each process's
outputs are removed after it (the chain's after its conversion), so every one starts with the same files in
the page cache: on a VM the cost of fresh pages grows as the page cache fills memory.
"""

from __future__ import annotations

import os
import shutil
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


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def main() -> None:
    size = "small" if "--small" in sys.argv else "large"
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 1
    py = sys.executable
    measured: dict[str, list[tuple[float, float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="mobilegen-bench-") as tmp:
        work = Path(tmp)
        pt2 = work / "vit.pt2"
        params = subprocess.run([py, "-c", MAKE, str(pt2), size], check=True, capture_output=True, text=True).stdout.strip()
        print(f"model: ViT ({size}), {int(params.splitlines()[-1]) / 1e6:.0f}M parameters, {pt2.stat().st_size / 2**30:.2f} GiB")
        runs: list[tuple[str, list[str], list[Path]]] = [
            ("torch.onnx.export", [py, "-c", EXPORT, str(pt2), str(work / "manual.onnx")], []),
            # its outputs go once converted: each process starts with the same files in the page cache
            ("convert_onnx_models_to_ort", [py, "-m", "onnxruntime.tools.convert_onnx_models_to_ort", str(work / "manual.onnx")], [work]),
            ("package --android --ios ...", [py, "-m", "mobilegen", "package", str(pt2), "--android", "--ios", "--nnapi", "--coreml", "-o", str(work / "pkg")], [work / "pkg"]),
            ("android --nnapi", [py, "-m", "mobilegen", "android", str(pt2), "--nnapi", "-o", str(work / "app")], [work / "app"]),
        ]
        for _ in range(rounds):  # interleaved: a slow minute of the host's slows every configuration alike
            for name, cmd, outputs in runs:
                measured.setdefault(name, []).append(run(cmd, work))
                for out in outputs:
                    _remove_outputs(out, keep=pt2)
    med = {name: tuple(median([m[i] for m in ms]) for i in range(3)) for name, ms in measured.items()}
    steps = [(name, *med[name]) for name in ("torch.onnx.export", "convert_onnx_models_to_ort")]
    ours = [(name, *med[name]) for name in ("package --android --ios ...", "android --nnapi")]
    man_t = sum(t for _, t, _, _ in steps)
    man_m = max(m for _, _, m, _ in steps)
    man_c = sum(c for _, _, _, c in steps)
    if rounds > 1:
        print(f"median of {rounds} interleaved rounds; wall time per round:")
        for name, ms in measured.items():
            print(f"  {name:32} " + " ".join(f"{t:6.1f}" for t, _, _ in ms))
    for name, t, m, c in steps:
        print(f"manual     {name:32} {t:7.1f} s  {m:5.2f} GiB peak  {c:7.1f} s CPU")
    print(f"manual     {'total':32} {man_t:7.1f} s  {man_m:5.2f} GiB peak  {man_c:7.1f} s CPU")
    for label, t, m, c in ours:
        print(f"mobilegen  {label:32} {t:7.1f} s  {m:5.2f} GiB peak  {c:7.1f} s CPU")
    for label, t, m, c in ours:
        print(f"ratio mobilegen {label} / manual: time {t / man_t:.2f}x, peak memory {m / man_m:.2f}x, CPU time {c / man_c:.2f}x")


def _remove_outputs(path: Path, keep: Path) -> None:
    """A run's outputs (a folder, or every file of the work folder but the model)."""
    if path == keep.parent:
        for p in path.iterdir():
            if p != keep:
                shutil.rmtree(p) if p.is_dir() else p.unlink()
    else:
        shutil.rmtree(path)


if __name__ == "__main__":
    main()
