"""Coverage analysis time on a synthetic 10,000-node graph, next to ORT's usability checker (print only)."""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

T = TypeVar("T")


def synthetic(n_nodes: int = 10_000) -> onnx.ModelProto:
    """A chain of Conv/Relu/Add/Erf blocks (Erf splits NNAPI partitions) on a 1x8x16x16 input."""
    nodes, inits = [], [numpy_helper.from_array(np.ones((8, 8, 1, 1), np.float32), "w")]
    prev = "x"
    ops = ("Conv", "Relu", "Add", "Erf")
    for i in range(n_nodes):
        op = ops[i % len(ops)]
        out = f"t{i}"
        inputs = {"Conv": [prev, "w"], "Add": [prev, prev]}.get(op, [prev])
        nodes.append(helper.make_node(op, inputs, [out], name=f"n{i}"))
        prev = out
    graph = helper.make_graph(
        nodes, "synthetic", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 8, 16, 16))],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, None)], initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


TARGET_S = 0.5  # issue 12: a 10,000-node graph's analysis for four providers (it was 1.1 s)


RUNS = 5


def timed(fn: Callable[[], T]) -> tuple[T, float, float]:
    """fn's result, and the median wall and CPU seconds (this process, every thread) of RUNS calls."""
    walls, cpus = [], []
    for _ in range(RUNS):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return out, statistics.median(walls), statistics.median(cpus)


def main() -> None:
    from onnxruntime.tools.mobile_helpers import usability_checker as uc

    from mobilegen.coverage import EPTarget, analyze_all
    from mobilegen.coverage.analyze import prepare

    logging.disable(logging.WARNING)
    model = synthetic()
    targets = [EPTarget("nnapi"), EPTarget("coreml", coreml_format="neuralnetwork"), EPTarget("coreml"), EPTarget("xnnpack")]

    prepared, prep_wall, prep_cpu = timed(lambda: prepare(model, optimize=False))
    _, all_wall, all_cpu = timed(lambda: analyze_all(model, targets, optimize=False))
    # as the fix stage runs it after each pass: onnxruntime's basic optimizations first
    _, opt_wall, opt_cpu = timed(lambda: analyze_all(model, targets))

    shaped = onnx.shape_inference.infer_shapes(model)

    def ort_checker() -> None:
        uc.check_nnapi_partitions(shaped, True)
        uc.check_coreml_partitions(shaped, True, "coreml_supported_neuralnetwork_ops.md")
        uc.check_coreml_partitions(shaped, True, "coreml_supported_mlprogram_ops.md")

    _, ort_wall, _ = timed(ort_checker)

    print(f"graph: {len(prepared.graph.nodes)} nodes (times: median of {RUNS} runs)")
    # analyze_all prepares again: the rules and partitions are its time less one preparation
    print(
        f"mobilegen: shape inference + graph view {prep_wall:.3f} s; "
        f"rules + partitions for 4 targets {all_wall - prep_wall:.3f} s"
    )
    print(f"mobilegen total (analyze_all, 4 targets, no ORT optimization): {all_wall:.3f} s wall, {all_cpu:.3f} s CPU")
    print(f"mobilegen with ORT basic optimization first (as the fix stage runs it): {opt_wall:.3f} s wall, {opt_cpu:.3f} s CPU")
    print(f"ORT usability checker (3 EPs, partitioning only, shapes given): {ort_wall:.3f} s")
    print(f"ratio mobilegen/ORT: {all_wall / ort_wall:.2f}")
    print(f"4-provider analysis: {all_wall:.3f} s wall against the {TARGET_S} s target ({all_wall / TARGET_S:.2f}x of it)")


if __name__ == "__main__":
    main()
