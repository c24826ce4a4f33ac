"""Shared by the benchmark tests: a small ONNX model and ORT profiling files recorded with the same API
calls the device benchmark makes (profiling on in the session options, one run, end profiling)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

NODE_NAMES = ("conv0", "relu0", "erf0", "sig0", "add0")


def small_model() -> onnx.ModelProto:
    """Conv -> Relu -> Erf -> Sigmoid -> Add: XNNPACK takes Conv/Relu/Sigmoid/Add, never Erf."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3], (np.arange(108, dtype=np.float32) / 108).tolist())
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv0", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu0"),
        helper.make_node("Erf", ["r"], ["e"], name="erf0"),
        helper.make_node("Sigmoid", ["e"], ["s"], name="sig0"),
        helper.make_node("Add", ["s", "r"], ["y"], name="add0"),
    ]
    graph = helper.make_graph(nodes, "small", [x], [y], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def record_profile(folder: Path, providers: Sequence[str], *, optimize: bool = False) -> Path:
    """Run ``small_model`` once with profiling on and return the file ``end_profiling()`` names."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    if not optimize:  # keep the model's node names (ORT would fuse Conv+Relu into one NCHWc node)
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.enable_profiling = True
    so.profile_file_prefix = str(folder / "profile")
    sess = ort.InferenceSession(small_model().SerializeToString(), so, providers=list(providers))
    sess.run(None, {"x": np.ones((1, 3, 8, 8), np.float32)})
    return Path(sess.end_profiling())


def with_providers(profile: Path, dest: Path, providers: dict[str, str]) -> Path:
    """The recorded file with the provider of the named nodes replaced (a mixed placement from a real file)."""
    events = json.loads(profile.read_text(encoding="utf-8"))
    for ev in events:
        node = str(ev.get("name", "")).removesuffix("_kernel_time")
        if ev.get("cat") == "Node" and node in providers and "provider" in ev.get("args", {}):
            ev["args"]["provider"] = providers[node]
    dest.write_text(json.dumps(events), encoding="utf-8")
    return dest


def assert_runtime_row_timed(result: Any, package: Path, runtime: str, dist: str, model_file: str, open_session: Callable[[Path], Any], runs: int) -> Any:
    """A package's bench result with another runtime's row after the ORT ones: the row timed ``runs`` warm runs
    on the host runtime ``dist`` of ``model_file``, in the result schema; and that model, opened the way the
    row opened it, reproduces PyTorch's golden outputs from the golden inputs (so the row timed the right model
    on the right inputs). Returns the row."""
    from importlib.metadata import version

    import jsonschema

    from mobilegen.bench import schema_document

    rows = {c.name: c for c in result.configurations}
    assert rows["cpu"].status == "ok" and list(rows)[-1] == runtime
    row = rows[runtime]
    assert row.status == "ok" and row.warm is not None and row.warm.n == runs and row.session_create_ms is not None
    assert row.options["runtime"] == f"{dist} {version(dist)}" and row.options["model_file"] == model_file
    assert not row.placement.available and row.ep == "cpu"
    jsonschema.Draft202012Validator(schema_document()).validate(result.to_json())

    golden = np.load(package / "golden" / "golden.npz")
    session = open_session(package / model_file)
    try:
        (got,) = session.run({"image": golden["input:image"]})
    finally:
        session.close()
    assert np.abs(got - golden["output:output"]).max() < 1e-4
    return row
