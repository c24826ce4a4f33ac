"""Coverage analysis time on a synthetic 10,000-node graph, next to ORT's usability checker (print only)."""

from __future__ import annotations

import logging
import time

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def synthetic(n_nodes: int = 10_000) -> object:
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


def main() -> None:
    import onnx
    from onnxruntime.tools.mobile_helpers import usability_checker as uc

    from mobilegen.coverage import EPTarget, analyze_all
    from mobilegen.coverage.analyze import prepare

    logging.disable(logging.WARNING)
    model = synthetic()
    targets = [EPTarget("nnapi"), EPTarget("coreml", coreml_format="neuralnetwork"), EPTarget("coreml"), EPTarget("xnnpack")]

    t0 = time.perf_counter()
    prepared = prepare(model, optimize=False)
    t1 = time.perf_counter()
    analyze_all(model, targets, optimize=False)
    t2 = time.perf_counter()
    ours_rules = (t2 - t1) - (t1 - t0)  # analyze_all prepares again; subtract one preparation

    shaped = onnx.shape_inference.infer_shapes(model)
    t3 = time.perf_counter()
    uc.check_nnapi_partitions(shaped, True)
    uc.check_coreml_partitions(shaped, True, "coreml_supported_neuralnetwork_ops.md")
    uc.check_coreml_partitions(shaped, True, "coreml_supported_mlprogram_ops.md")
    t4 = time.perf_counter()

    print(f"graph: {len(prepared.graph.nodes)} nodes")
    print(f"mobilegen: shape inference + graph view {t1 - t0:.3f} s; rules + partitions for 4 targets {ours_rules:.3f} s")
    print(f"mobilegen total (analyze_all, 4 targets, no ORT optimization): {t2 - t1:.3f} s")
    print(f"ORT usability checker (3 EPs, partitioning only, shapes given): {t4 - t3:.3f} s")
    print(f"ratio mobilegen/ORT: {(t2 - t1) / (t4 - t3):.2f}")


if __name__ == "__main__":
    main()
