"""What the transformer pass tests check on a model: its numbers under onnxruntime, NNAPI's verdict from
mobilegen's own coverage analysis, and the graph that reaches the device.

The device sees the shipped ``.ort``: mobilegen converts with the Runtime style, which applies the Level1
(basic) optimizations for good, then the app loads it with the generated wrapper's session options
(the Kotlin/Swift wrappers leave the optimization level at onnxruntime's default, ORT_ENABLE_ALL). Here
the CPU EP stands in for NNAPI/CoreML: the Level2 fusions are limited to CPU/CUDA/... nodes, so a form
that survives them on CPU survives them everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

from mobilegen.coverage import CoverageReport, EPTarget, analyze
from mobilegen.passes.base import GraphPass


def run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[Any]:
    """The model's outputs as written (no onnxruntime optimization)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)


def rewritten(graph_pass: GraphPass, model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """A rewritten copy (the original is kept for comparison), checked by onnx, and the pass's count."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    count = graph_pass.apply(out)
    onnx.checker.check_model(out, full_check=True)
    return out, count


def unchanged_by(graph_pass: GraphPass, model: onnx.ModelProto) -> bool:
    """The pass returns 0 and leaves the model byte for byte as it was."""
    before = model.SerializeToString(deterministic=True)
    copy = onnx.ModelProto.FromString(before)
    return graph_pass.apply(copy) == 0 and copy.SerializeToString(deterministic=True) == before


def ops(model: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in model.graph.node]


def nnapi(model: onnx.ModelProto, **settings: Any) -> CoverageReport:
    return analyze(model, EPTarget("nnapi", **settings))


def coreml(model: onnx.ModelProto) -> CoverageReport:
    return analyze(model, EPTarget("coreml", coreml_format="mlprogram"))


def refused_ops(report: CoverageReport) -> set[str]:
    return {n.op_type for n in report.nodes if not n.supported}


def all_taken(report: CoverageReport) -> bool:
    return report.supported_nodes == report.total_nodes > 0 and len(report.partitions) == 1


def device_ops(model: onnx.ModelProto, tmp_path: Path) -> tuple[list[str], list[str]]:
    """The op types of the ``.ort`` mobilegen ships for ``model``, and of that ``.ort`` once the app's
    session has loaded it (``optimized_model_filepath``)."""
    from mobilegen.artifacts import OnnxModel
    from mobilegen.convert import ortformat
    from mobilegen.convert.to_ort import convert_to_ort
    from mobilegen.export.exporter import opset_of
    from mobilegen.spec import onnx_io_spec

    src = tmp_path / "model.onnx"
    onnx.save(model, src)
    shipped = tmp_path / "model.ort"
    om = OnnxModel(path=src, io=onnx_io_spec(model), opset=opset_of(model), exporter="passthrough")
    convert_to_ort(om, shipped, tmp_path / "model.required_operators.config")
    in_ort = [op for _, op in ortformat.summary(shipped.read_bytes())[1]]
    so = ort.SessionOptions()  # what the generated wrappers create: the default level (ORT_ENABLE_ALL)
    so.optimized_model_filepath = str(tmp_path / "app.onnx")
    so.log_severity_level = 3
    ort.InferenceSession(str(shipped), so, providers=["CPUExecutionProvider"])
    return in_ort, ops(onnx.load(tmp_path / "app.onnx"))


def optimized_ops(model: onnx.ModelProto, tmp_path: Path, level: ort.GraphOptimizationLevel) -> list[str]:
    """The op types after onnxruntime optimized the ONNX model itself at ``level`` (CPU EP)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.optimized_model_filepath = str(tmp_path / f"opt{int(level)}.onnx")
    so.log_severity_level = 3
    ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return ops(onnx.load(so.optimized_model_filepath))
