"""Start-up cost of the CLI: `mobilegen --help` against `python -c pass`, measured in one run.

torch and onnxruntime must be imported lazily (target: --help ≤ 0.3 s over the bare interpreter).
Prints the timings and the ratio; asserts nothing (benchmarks never gate on time).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

RUNS = 7


def wall(cmd: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    bare = wall([sys.executable, "-c", "pass"])
    helpt = wall([sys.executable, "-m", "mobilegen", "--help"])
    heavy = subprocess.run(
        [sys.executable, "-c", "import sys, mobilegen.cli; print(sorted(m for m in ('torch', 'onnxruntime', 'onnx') if m in sys.modules))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    print(f"python -c pass     : {bare * 1000:7.1f} ms (median of {RUNS})")
    print(f"mobilegen --help   : {helpt * 1000:7.1f} ms (median of {RUNS})")
    print(f"overhead           : {(helpt - bare) * 1000:7.1f} ms  (target ≤ 300 ms)")
    print(f"ratio              : {helpt / bare:7.2f}x")
    print(f"heavy modules imported by the CLI at start-up: {heavy}")


if __name__ == "__main__":
    main()
