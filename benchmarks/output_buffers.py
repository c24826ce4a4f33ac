"""The generated Android wrapper's reused output buffers on a real ONNX Runtime (issue 31), before and after.

Builds two small ONNX models (onnx.helper): ``mixed`` (x 1x3x32x32 → 1x10 float32 logits, an int64 ArgMax, a
1x10 bool mask and a NonZero int64 output of dynamic shape) and ``seg`` (a 1x1 convolution to a 1x21x128x128
float32 output, 1.4 MB, like a segmentation head) and ``big`` (a 1x3x224x224 float32 input, 602 KB, averaged to a
1x3 output: the reused input buffer). ``mobilegen android`` renders each (golden vectors from
onnxruntime); ``benchmarks/output_buffers_harness.kt`` is compiled with the ORT-only core of both projects and run
on the JVM. It prints: the golden-vector checks (also with 4 threads calling one instance at once), then heap bytes
allocated and time per call in steady state (``ThreadMXBean.getThreadAllocatedBytes``, best of 3 rounds) for the
generated wrapper (outputs ONNX Runtime writes into the instance's direct buffers, copied once into the returned
arrays) and for the previous wrapper's way (ORT allocates every output, read through ``getFloatBuffer()`` etc., a
copy, then into an array, and the input wrapped from the heap array, which ORT copies into a fresh direct
buffer), both measured in this one run. Direct (off-heap) buffers are not heap bytes: the growth of the JVM's
"direct" buffer pool over a round is printed too (a lower bound: a GC during the round frees some). Asserts nothing.

ONNX Runtime's Java API is not on PyPI or npm, and CI has no Maven: give it built from the sources.
``--ort-jar``: the classes of ``java/src/main/java`` and ``java/src/main/jvm`` of microsoft/onnxruntime (javac);
``--ort-native``: a folder with ``libonnxruntime.so`` and ``libonnxruntime4j_jni.so``, the JNI library compiled from
``java/src/main/native/*.c`` (all but the training ones) against the same checkout's ``include/onnxruntime`` headers,
the ``javac -h`` headers and a one-line ``onnxruntime_config.h`` (``#define ORT_VERSION "…"``), linked to a
``libonnxruntime.so`` whose C API is at least the headers' ``ORT_API_VERSION`` (e.g. npm's onnxruntime-node
``bin/napi-v*/linux/x64/libonnxruntime.so.1``, installed with ``ONNXRUNTIME_NODE_INSTALL=skip``). Passed to the
JVM as ``-Donnxruntime.native.path``. kotlinc from ``make tools`` (or ``$KOTLINC``). A few minutes, mostly kotlinc.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[1]
HARNESS = Path(__file__).resolve().parent / "output_buffers_harness.kt"


def kotlinc() -> Path | None:
    path = Path(os.environ["KOTLINC"]) if os.environ.get("KOTLINC") else REPO / ".tools" / "node_modules" / "kotlin-compiler" / "bin" / "kotlinc"
    return path if path.is_file() and shutil.which("java") else None


def write_models(d: Path) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    g = numpy_helper.from_array(rng.standard_normal((10, 8)).astype(np.float32), "g")
    zero = numpy_helper.from_array(np.zeros((), np.float32), "zero")
    mixed = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("GlobalAveragePool", ["r"], ["p"]),
            helper.make_node("Flatten", ["p"], ["f"]),
            helper.make_node("Gemm", ["f", "g"], ["logits"], transB=1),
            helper.make_node("ArgMax", ["logits"], ["cls"], axis=1, keepdims=0),
            helper.make_node("Greater", ["logits", "zero"], ["pos"]),
            helper.make_node("NonZero", ["pos"], ["nz"]),
        ],
        "mixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
        [
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10]),
            helper.make_tensor_value_info("cls", TensorProto.INT64, [1]),
            helper.make_tensor_value_info("pos", TensorProto.BOOL, [1, 10]),
            helper.make_tensor_value_info("nz", TensorProto.INT64, [2, "n"]),
        ],
        [w, g, zero],
    )
    head = numpy_helper.from_array(rng.standard_normal((21, 3, 1, 1)).astype(np.float32), "w")
    seg = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["scores"])],
        "seg",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 128, 128])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 21, 128, 128])],
        [head],
    )
    big = helper.make_graph(
        [helper.make_node("GlobalAveragePool", ["x"], ["p"]), helper.make_node("Flatten", ["p"], ["mean"])],
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 224, 224])],
        [helper.make_tensor_value_info("mean", TensorProto.FLOAT, [1, 3])],
    )
    out = {}
    for name, graph in (("mixed", mixed), ("seg", seg), ("big", big)):
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.checker.check_model(model, full_check=True)
        out[name] = d / f"{name}.onnx"
        onnx.save(model, out[name])
    return out


def render(model: Path, name: str, work: Path) -> tuple[Path, list[Path]]:
    """``mobilegen android`` → (folder with model.ort and golden.mgv, the ORT-only Kotlin core)."""
    out = work / f"{name}-android"
    cmd = [sys.executable, "-m", "mobilegen", "android", str(model), "-o", str(out), "--package", f"mg.{name}", "--name", "Model"]
    subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=REPO, timeout=600)
    data = work / f"{name}-data"
    data.mkdir()
    shutil.copyfile(out / "model" / "model.ort", data / "model.ort")
    shutil.copyfile(out / "golden" / "golden.mgv", data / "golden.mgv")
    core = sorted(p for p in (out / "android" / "model" / "src" / "main" / "kotlin").rglob("*.kt") if not p.name.endswith("Android.kt"))
    return data, core


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ort-jar", type=Path, required=True, help="ORT's Java API classes (jar), built from source")
    ap.add_argument("--ort-native", type=Path, required=True, help="folder with libonnxruntime.so and libonnxruntime4j_jni.so")
    ap.add_argument("--calls", type=int, default=2000, help="calls per measured round (the 1.4 MB model runs a tenth)")
    args = ap.parse_args()
    compiler = kotlinc()
    if compiler is None:
        print("kotlinc or java not found: run `make tools` (or set $KOTLINC)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="mg-outbuf-") as tmp:
        work = Path(tmp)
        models = write_models(work)
        mixed_dir, mixed_core = render(models["mixed"], "mixed", work)
        seg_dir, seg_core = render(models["seg"], "seg", work)
        big_dir, big_core = render(models["big"], "big", work)
        jar = work / "bench.jar"
        proc = subprocess.run(
            [str(compiler), "-nowarn", "-cp", str(args.ort_jar), "-d", str(jar), *map(str, mixed_core + seg_core + big_core), str(HARNESS)],
            capture_output=True, text=True, timeout=900,
        )
        if proc.returncode != 0:
            print(f"kotlinc failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}", file=sys.stderr)
            return 1
        stdlib = compiler.resolve().parent.parent / "lib" / "kotlin-stdlib.jar"
        run = subprocess.run(
            [
                "java", "-Xmx1g", f"-Donnxruntime.native.path={args.ort_native}",
                "-cp", os.pathsep.join([str(jar), str(args.ort_jar), str(stdlib)]),
                "mgbench.Output_buffers_harnessKt", str(mixed_dir), str(seg_dir), str(big_dir), str(args.calls),
            ],
            capture_output=True, text=True, timeout=1800,
        )
        print(run.stdout, end="")
        if run.returncode != 0:
            print(run.stderr[-4000:], file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
