"""The browser oracle for the WebGPU provider's rules: onnxruntime-web's WebGPU build in headless Chromium
(WebGPU on SwiftShader, Chromium's software Vulkan), one session per model with verbose logging, and the
"Node placements" its session log prints, parsed into node name -> execution provider.

Sessions are only created, never run: placement is decided when a session is created, and creating one is
fast even on SwiftShader (~0.02 s per small model). ``probe_models`` writes the op models the table is
checked on: an op per dtype, per ONNX since-version, and the Shape chain of GetCpuPreferredNodes.
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

# onnxruntime-web's default build (what `import 'onnxruntime-web'` gives a bundler; the JSEP wasm)
DIST_FILES = ("ort.min.mjs", "ort-wasm-simd-threaded.jsep.mjs", "ort-wasm-simd-threaded.jsep.wasm")
GPU_FLAGS = (
    "--enable-unsafe-webgpu", "--use-angle=swiftshader", "--enable-features=Vulkan", "--use-vulkan=swiftshader",
    "--use-webgpu-adapter=swiftshader",
)
WEBGPU, CPU = "JsExecutionProvider", "CPUExecutionProvider"

_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>RUNNING</title></head><body><script type="module">
import * as ort from './ort/ort.min.mjs';
const names = await (await fetch('models.json')).json();
ort.env.wasm.wasmPaths = new URL('ort/', location.href).href;
ort.env.wasm.numThreads = 1;
ort.env.logLevel = 'verbose';
for (const name of names) {
  console.log(`ORACLE_BEGIN ${name}`);
  try {
    // 'basic': the graph mobilegen's analysis reads (onnxruntime's ORT_ENABLE_BASIC optimizations)
    const s = await ort.InferenceSession.create(name, { executionProviders: ['webgpu'], graphOptimizationLevel: 'basic', logSeverityLevel: 0, logVerbosityLevel: 0 });
    await s.release();
    console.log(`ORACLE_END ${name} ok`);
  } catch (e) { console.log(`ORACLE_END ${name} error ${String(e).replace(/\\s+/g, ' ')}`); }
}
console.log('ORACLE_DONE');
</script></body></html>
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".mjs": "text/javascript", ".wasm": "application/wasm"}

    def log_message(self, format: str, *args: object) -> None:
        pass


def placements(chromium: str, dist: Path, models: dict[str, Path], *, timeout: int = 600) -> dict[str, dict[str, object]]:
    """Per model name: ``{"nodes": {node name: provider}, "all": provider or None, "error": text or None}``
    ("all": the log said every node went to one provider, without listing them)."""
    with tempfile.TemporaryDirectory(prefix="webgpu-oracle-") as tmp:
        root = Path(tmp)
        (root / "ort").mkdir()
        for f in DIST_FILES:
            shutil.copy(dist / f, root / "ort" / f)
        names = []
        for i, (name, path) in enumerate(models.items()):
            rel = f"m/{i}.onnx"
            (root / "m").mkdir(exist_ok=True)
            shutil.copy(path, root / rel)
            names.append((name, rel))
        (root / "models.json").write_text(json.dumps([rel for _, rel in names]))
        (root / "index.html").write_text(_PAGE)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        log = root / "chromium.log"
        url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
        args = [chromium, "--headless", "--no-sandbox", "--no-first-run", f"--user-data-dir={root / '.profile'}",
                "--enable-logging=stderr", "--v=0", *GPU_FLAGS, url]
        try:
            with log.open("w") as err:
                proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL)
                try:
                    _wait_for(log, "ORACLE_DONE", proc, timeout)
                finally:
                    proc.terminate()
                    try:
                        proc.wait(10)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
            text = log.read_text(errors="replace")
        finally:
            server.shutdown()
        by_rel = parse(text)
        missing = [n for n, rel in names if rel not in by_rel]
        if missing:
            raise AssertionError(f"chromium logged no session for {missing[:5]}:\n{text[-3000:]}")
        return {name: by_rel[rel] for name, rel in names}


def _wait_for(log: Path, marker: str, proc: subprocess.Popen[bytes], timeout: int) -> None:
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if marker in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise AssertionError(f"chromium exited ({proc.returncode}) before {marker}:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.5)
    raise AssertionError(f"no {marker} from chromium in {timeout} s:\n{log.read_text(errors='replace')[-3000:]}")


def parse(text: str) -> dict[str, dict[str, object]]:
    """The page's markers and onnxruntime's "Node placements" lines (session_state.cc), per model."""
    out: dict[str, dict[str, object]] = {}
    cur: dict[str, object] | None = None
    ep = ""
    for line in text.splitlines():
        if m := re.search(r'"ORACLE_BEGIN (\S+)"', line):
            cur = out[m.group(1)] = {"nodes": {}, "all": None, "error": None}
        elif cur is None:
            continue
        elif m := re.search(r'"ORACLE_END \S+ (ok|error)(.*)", source', line):
            if m.group(1) == "error":
                cur["error"] = m.group(2).strip()
            cur = None
        elif m := re.search(r"All nodes placed on \[(\w+)\]", line):
            cur["all"] = m.group(1)
        elif m := re.search(r"Node\(s\) placed on \[(\w+)\]", line):
            ep = m.group(1)
        elif m := re.search(r'VerifyEachNodeIsAssignedToAnEp\]   (\S+) \((.*)\)"', line):
            nodes = cur["nodes"]
            assert isinstance(nodes, dict)
            nodes[m.group(2)] = ep
    return out


# --- probe models -----------------------------------------------------------------------------------

F, F16, I32, U32, I64, B, U8, I8 = T.FLOAT, T.FLOAT16, T.INT32, T.UINT32, T.INT64, T.BOOL, T.UINT8, T.INT8
Inputs = list[tuple[str, int, list[int | str]]]


def _c(value: object, name: str, dtype: type = np.float32) -> onnx.TensorProto:
    return nh.from_array(np.array(value, dtype=dtype), name)


def _model(nodes: list[onnx.NodeProto], inputs: Inputs, inits: Iterable[onnx.TensorProto] = (), opset: int = 17) -> onnx.ModelProto | None:
    """A checked model, its outputs typed by shape inference; None when ONNX refuses it (an op that has
    no such dtype or version)."""
    g = h.make_graph(nodes, "probe", [h.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                     [h.make_tensor_value_info(o, T.UNDEFINED, None) for o in nodes[-1].output if o], list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 10 if opset > 20 else 8
    try:
        m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
        typed = {v.name: v for v in m.graph.value_info}
        outs = [typed.get(o.name, o) for o in m.graph.output]
        del m.graph.output[:]
        m.graph.output.extend(outs)
        onnx.checker.check_model(m, full_check=True)
    except Exception:  # noqa: BLE001 — ONNX's own refusal: not a probe
        return None
    return m


def _one(op: str, ins: list[str], inputs: Inputs, inits: Iterable[onnx.TensorProto] = (), opset: int = 17, n_out: int = 1, **attrs: object) -> onnx.ModelProto | None:
    return _model([h.make_node(op, ins, ["y", "y2"][:n_out], name="n", **attrs)], inputs, inits, opset)


def _if(t: int, opset: int) -> onnx.ModelProto | None:
    """If(c) then Relu(x) else Neg(x): the If node has a JSEP kernel (operators/if.cc)."""
    vi = h.make_tensor_value_info
    then_g = h.make_graph([h.make_node("Relu", [_X], ["t"], name="then_relu")], "then", [], [vi("t", t, [2, 3])])
    else_g = h.make_graph([h.make_node("Neg", [_X], ["e"], name="else_neg")], "else", [], [vi("e", t, [2, 3])])
    node = h.make_node("If", ["c"], ["y"], name="n", then_branch=then_g, else_branch=else_g)
    return _model([node], [("c", B, []), (_X, t, [2, 3])], opset=opset)


# op -> builder(dtype, opset) of a one-node model, its data input of that dtype
_X = "x"
BUILDERS: dict[str, Callable[[int, int], onnx.ModelProto | None]] = {
    "Add": lambda t, o: _one("Add", [_X, _X], [(_X, t, [2, 3])], opset=o),
    "Mul": lambda t, o: _one("Mul", [_X, _X], [(_X, t, [2, 3])], opset=o),
    "Pow": lambda t, o: _one("Pow", [_X, _X], [(_X, t, [2, 3])], opset=o),
    "Equal": lambda t, o: _one("Equal", [_X, _X], [(_X, t, [2, 3])], opset=o),
    "Greater": lambda t, o: _one("Greater", [_X, _X], [(_X, t, [2, 3])], opset=o),
    "Abs": lambda t, o: _one("Abs", [_X], [(_X, t, [2, 3])], opset=o),
    "Neg": lambda t, o: _one("Neg", [_X], [(_X, t, [2, 3])], opset=o),
    "Relu": lambda t, o: _one("Relu", [_X], [(_X, t, [2, 3])], opset=o),
    "Sqrt": lambda t, o: _one("Sqrt", [_X], [(_X, t, [2, 3])], opset=o),
    "Sin": lambda t, o: _one("Sin", [_X], [(_X, t, [2, 3])], opset=o),
    "HardSigmoid": lambda t, o: _one("HardSigmoid", [_X], [(_X, t, [2, 3])], opset=o),
    "Gelu": lambda t, o: _one("Gelu", [_X], [(_X, t, [2, 3])], opset=o),
    "Clip": lambda t, o: _one("Clip", [_X], [(_X, t, [2, 3])], opset=o),
    "Erf": lambda t, o: _one("Erf", [_X], [(_X, t, [2, 3])], opset=o),
    "Not": lambda t, o: _one("Not", [_X], [(_X, t, [2, 3])], opset=o),
    "Where": lambda t, o: _one("Where", ["c", _X, _X], [("c", B, [2, 3]), (_X, t, [2, 3])], opset=o),
    "Cast": lambda t, o: _one("Cast", [_X], [(_X, t, [2, 3])], opset=o, to=F),
    "Shape": lambda t, o: _one("Shape", [_X], [(_X, t, [2, 3])], opset=o),
    "Reshape": lambda t, o: _one("Reshape", [_X, "s"], [(_X, t, [2, 3])], [_c([3, 2], "s", np.int64)], opset=o),
    "Unsqueeze": lambda t, o: _one("Unsqueeze", [_X, "a"], [(_X, t, [2, 3])], [_c([0], "a", np.int64)], opset=o),
    "Flatten": lambda t, o: _one("Flatten", [_X], [(_X, t, [2, 3])], opset=o),
    "Transpose": lambda t, o: _one("Transpose", [_X], [(_X, t, [2, 3])], opset=o),
    "Concat": lambda t, o: _one("Concat", [_X, _X], [(_X, t, [2, 3])], opset=o, axis=0),
    "Split": lambda t, o: _one("Split", [_X, "s"], [(_X, t, [2, 3])], [_c([1, 2], "s", np.int64)], opset=o, n_out=2, axis=1),
    "Expand": lambda t, o: _one("Expand", [_X, "s"], [(_X, t, [1, 3])], [_c([2, 3], "s", np.int64)], opset=o),
    "Tile": lambda t, o: _one("Tile", [_X, "r"], [(_X, t, [2, 3])], [_c([2, 1], "r", np.int64)], opset=o),
    "Slice": lambda t, o: _one("Slice", [_X, "s", "e"], [(_X, t, [4, 3])], [_c([0], "s", np.int64), _c([2], "e", np.int64)], opset=o),
    "Gather": lambda t, o: _one("Gather", [_X, "i"], [(_X, t, [2, 3]), ("i", I64, [2])], opset=o),
    "GatherElements": lambda t, o: _one("GatherElements", [_X, "i"], [(_X, t, [2, 3]), ("i", I64, [2, 3])], opset=o),
    "GatherND": lambda t, o: _one("GatherND", [_X, "i"], [(_X, t, [2, 2]), ("i", I64, [2, 2])], opset=o),
    "ScatterND": lambda t, o: _one("ScatterND", [_X, "i", "u"], [(_X, t, [4]), ("i", I64, [1, 1]), ("u", t, [1])], opset=o),
    "DepthToSpace": lambda t, o: _one("DepthToSpace", [_X], [(_X, t, [1, 4, 2, 2])], opset=o, blocksize=2),
    "Pad": lambda t, o: _one("Pad", [_X, "p"], [(_X, t, [2, 3])], [_c([0, 1, 0, 1], "p", np.int64)], opset=o),
    "CumSum": lambda t, o: _one("CumSum", [_X, "a"], [(_X, t, [2, 3])], [_c(1, "a", np.int32)], opset=o),
    "MatMul": lambda t, o: _one("MatMul", [_X, "b"], [(_X, t, [2, 3]), ("b", t, [3, 2])], opset=o),
    "Gemm": lambda t, o: _one("Gemm", [_X, "b"], [(_X, t, [2, 3]), ("b", t, [3, 2])], opset=o),
    "ArgMax": lambda t, o: _one("ArgMax", [_X], [(_X, t, [2, 3])], opset=o),
    "Softmax": lambda t, o: _one("Softmax", [_X], [(_X, t, [2, 3])], opset=o),
    "ReduceMax": lambda t, o: _one("ReduceMax", [_X], [(_X, t, [2, 3])], opset=o),
    "ReduceSum": lambda t, o: _one("ReduceSum", [_X], [(_X, t, [2, 3])], opset=o),
    "ReduceMean": lambda t, o: _one("ReduceMean", [_X], [(_X, t, [2, 3])], opset=o),
    "Conv": lambda t, o: _one("Conv", [_X, "w"], [(_X, t, [1, 2, 3, 3]), ("w", t, [1, 2, 2, 2])], opset=o),
    "MaxPool": lambda t, o: _one("MaxPool", [_X], [(_X, t, [1, 2, 4, 4])], opset=o, kernel_shape=[2, 2]),
    "AveragePool": lambda t, o: _one("AveragePool", [_X], [(_X, t, [1, 2, 4, 4])], opset=o, kernel_shape=[2, 2]),
    "GlobalAveragePool": lambda t, o: _one("GlobalAveragePool", [_X], [(_X, t, [1, 2, 3, 3])], opset=o),
    "Resize": lambda t, o: _one("Resize", [_X, "", "s"], [(_X, t, [1, 1, 2, 2])], [_c([1, 1, 2, 2], "s")], opset=o, mode="linear"),
    "LayerNormalization": lambda t, o: _one("LayerNormalization", [_X, "g"], [(_X, t, [2, 3]), ("g", t, [3])], opset=o),
    "InstanceNormalization": lambda t, o: _one("InstanceNormalization", [_X, "s", "b"], [(_X, t, [1, 2, 3, 3]), ("s", t, [2]), ("b", t, [2])], opset=o),
    "DequantizeLinear": lambda t, o: _one("DequantizeLinear", [_X, "s"], [(_X, t, [2, 3])], [_c(0.1, "s")], opset=o),
    "If": _if,
    # ops JSEP has no kernel for
    "QuantizeLinear": lambda t, o: _one("QuantizeLinear", [_X, "s"], [(_X, t, [2, 3])], [_c(0.1, "s")], opset=o),
    "TopK": lambda t, o: _one("TopK", [_X, "k"], [(_X, t, [2, 3])], [_c([1], "k", np.int64)], opset=o, n_out=2),
    "Trilu": lambda t, o: _one("Trilu", [_X], [(_X, t, [3, 3])], opset=o),
    "Min": lambda t, o: _one("Min", [_X, _X], [(_X, t, [2, 3])], opset=o),
    "LogSoftmax": lambda t, o: _one("LogSoftmax", [_X], [(_X, t, [2, 3])], opset=o),
    "ScatterElements": lambda t, o: _one("ScatterElements", [_X, "i", "u"], [(_X, t, [3, 3]), ("i", I64, [1, 3]), ("u", t, [1, 3])], opset=o),
    "PRelu": lambda t, o: _one("PRelu", [_X, "s"], [(_X, t, [2, 3]), ("s", t, [3])], opset=o),
    "Softplus": lambda t, o: _one("Softplus", [_X], [(_X, t, [2, 3])], opset=o),
}

PROBE_DTYPES = (F, F16, I32, U32, I64, B, U8, I8)
# ONNX since-versions probed per op (each at that opset): covers the exact-start rule (Conv-22, Reshape-23)
PROBE_OPSETS = (7, 11, 13, 17, 19, 21, 22, 23)


def _shape_chain() -> onnx.ModelProto | None:
    """Shape(x) -> Gather(table, shape) -> Add -> Relu, joined with Neg(x). GetCpuPreferredNodes picks
    Gather, Add and Relu (they compute only on Shape's CPU output and a small initializer), but the
    second GetCapability pass after the layout transformation gives them to WebGPU again: all six run
    there (onnxruntime-web 1.30.0)."""
    nodes = [
        h.make_node("Shape", [_X], ["s"], name="shape"),
        h.make_node("Gather", ["table", "s"], ["g"], name="gather", axis=0),
        h.make_node("Add", ["g", "g"], ["a"], name="add"),
        h.make_node("Relu", ["a"], ["r"], name="relu"),
        h.make_node("Neg", [_X], ["n"], name="neg"),
        h.make_node("Add", ["r", "n"], ["y"], name="join"),
    ]
    # a symbolic batch dim: onnxruntime's constant folding would otherwise fold the Shape chain away
    return _model(nodes, [(_X, F, ["n", 3])], [_c(np.ones((4, 3)), "table")])


def probe_models(folder: Path) -> dict[str, Path]:
    """Write the probe models into ``folder``; returns name -> file ("Relu/int32@17", "Conv/float@22")."""
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}

    def save(name: str, m: onnx.ModelProto | None) -> None:
        if m is not None:
            path = folder / f"{len(out)}.onnx"
            onnx.save(m, path)
            out[name] = path

    for op, build in BUILDERS.items():
        for t in PROBE_DTYPES:
            save(f"{op}/{onnx.helper.tensor_dtype_to_np_dtype(t).name}@17", build(t, 17))
        for opset in PROBE_OPSETS:
            if opset != 17:
                save(f"{op}/float32@{opset}", build(F, opset))
    save("ShapeChain", _shape_chain())
    save("Abs/float32@6", BUILDERS["Abs"](F, 6))
    return out
