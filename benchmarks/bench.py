"""`mobilegen bench` against timing the same .ort with onnxruntime directly, in the same run.

A small CNN (onnx.helper, a few ms per run on a laptop core) is converted to .ort; then, alternating
rounds so machine drift hits both alike:

  A. mobilegen.bench.run_host_bench(model.ort, ("cpu",), runs=N, warmup=W)   (what `mobilegen bench` runs)
  B. onnxruntime.InferenceSession(model.ort) + W untimed runs + N runs timed with perf_counter

Prints each round's p50 / min / mean for both and the ratio A/B (1.00 = the same); asserts nothing.
Run: python benchmarks/bench.py [--runs 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parents[1]


def cnn() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits, nodes = [], []
    prev, ch = "x", 3
    for i, out_ch in enumerate((16, 32, 32, 64)):
        w = helper.make_tensor(f"w{i}", TensorProto.FLOAT, [out_ch, ch, 3, 3], (rng.standard_normal(out_ch * ch * 9) * 0.1).astype(np.float32).tolist())
        inits.append(w)
        nodes.append(helper.make_node("Conv", [prev, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1], strides=[2, 2] if i else [1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"))
        prev, ch = f"r{i}", out_ch
    nodes.append(helper.make_node("GlobalAveragePool", [prev], ["y"], name="pool"))
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 96, 96])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 1, 1])], inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def direct(model: Path, feeds: dict[str, np.ndarray], runs: int, warmup: int) -> list[float]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    session.run(None, feeds)
    for _ in range(warmup):
        session.run(None, feeds)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - t) * 1000)
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    from mobilegen.bench import run_host_bench

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        onnx.save(cnn(), work / "cnn.onnx")
        subprocess.run(
            [sys.executable, "-m", "onnxruntime.tools.convert_onnx_models_to_ort", str(work / "cnn.onnx"), "--output_dir", str(work)],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        model = work / "cnn.ort"
        # run_host_bench makes a bare .ort's inputs the same way: values in [0, 1), seed 0
        feeds = {"x": np.random.default_rng(0).random((1, 3, 96, 96)).astype(np.float32)}
        ratios, min_ratios = [], []
        print(f"{'round':>5}  {'bench p50':>10} {'direct p50':>10} {'ratio':>6}   {'bench min':>9} {'direct min':>10}   {'bench mean':>10} {'direct mean':>11}")
        for i in range(args.rounds):
            result = run_host_bench(model, ("cpu",), runs=args.runs, warmup=args.warmup)
            warm = result.configurations[0].warm
            assert warm is not None
            times = direct(model, feeds, args.runs, args.warmup)
            p50 = sorted(times)[max(1, -(-len(times) // 2)) - 1]  # nearest rank, as the bench does
            ratios.append(warm.p50 / p50)
            min_ratios.append(warm.min / min(times))
            print(
                f"{i + 1:>5}  {warm.p50:>8.3f}ms {p50:>8.3f}ms {warm.p50 / p50:>6.3f}   {warm.min:>7.3f}ms {min(times):>8.3f}ms"
                f"   {warm.mean:>8.3f}ms {statistics.mean(times):>9.3f}ms"
            )
        print(f"median p50 ratio (mobilegen bench / onnxruntime directly): {statistics.median(ratios):.3f}")
        print(f"median min ratio (mobilegen bench / onnxruntime directly): {statistics.median(min_ratios):.3f}")


if __name__ == "__main__":
    main()
