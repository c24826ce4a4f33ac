"""``rank6``: Swin's rank-6 window Reshape/Transpose/Reshape becomes a rank-4 one NNAPI and CoreML take."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from transformer_checks import (
    all_taken,
    coreml,
    device_ops,
    nnapi,
    ops,
    optimized_ops,
    refused_ops,
    rewritten,
    run,
    unchanged_by,
)

from mobilegen.passes.rank6 import PASS, Merged, merge

RNG = np.random.default_rng(6)
F = TensorProto.FLOAT
SWAP = [0, 1, 3, 2, 4, 5]


def ints(name: str, values: list[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def windows_model(*, computed: bool = False, opset: int = 17) -> onnx.ModelProto:
    """Swin's window partition and reverse on x [1, 8, 8, 4] with 4x4 windows (a Relu between)."""
    nodes = [
        helper.make_node("Reshape", ["x", "split"], ["r1"], name="partition/Reshape"),
        helper.make_node("Transpose", ["r1"], ["t1"], name="partition/Transpose", perm=SWAP),
        helper.make_node("Reshape", ["t1", "windows"], ["w"], name="partition/Reshape_1"),
        helper.make_node("Relu", ["w"], ["a"]),
        helper.make_node("Reshape", ["a", "grid"], ["r2"], name="reverse/Reshape"),
        helper.make_node("Transpose", ["r2"], ["t2"], name="reverse/Transpose", perm=SWAP),
        helper.make_node("Reshape", ["t2", "image"], ["y"], name="reverse/Reshape_1"),
    ]
    inits = [ints("windows", [4, 4, 4, 4]), ints("grid", [1, 2, 2, 4, 4, 4]), ints("image", [1, 8, 8, 4])]
    if computed:  # the TorchScript way: [B, H/w, w, W/w, w, C] from Shape(x) at run time
        nodes[:0] = [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Slice", ["s", "zero", "one"], ["b"]),
            helper.make_node("Slice", ["s", "three", "four"], ["c"]),
            helper.make_node("Concat", ["b", "mid", "c"], ["split"], axis=0),
        ]
        inits += [ints("zero", [0]), ints("one", [1]), ints("three", [3]), ints("four", [4]), ints("mid", [2, 4, 2, 4])]
    else:
        inits.append(ints("split", [1, 2, 4, 2, 4, 4]))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", F, [1, 8, 8, 4])], [helper.make_tensor_value_info("y", F, [1, 8, 8, 4])], inits
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def feeds() -> dict[str, np.ndarray]:
    return {"x": RNG.standard_normal((1, 8, 8, 4)).astype(np.float32)}


def test_merge_drops_unit_dims_and_joins_dims_that_move_together() -> None:
    assert merge((1, 2, 4, 2, 4, 4), (0, 1, 3, 2, 4, 5)) == Merged((2, 4, 2, 16), (0, 2, 1, 3))
    assert merge((1, 2, 2, 4, 4, 4), (0, 1, 3, 2, 4, 5)) == Merged((2, 2, 4, 16), (0, 2, 1, 3))
    assert merge((2, 3, 4, 5, 6), (0, 1, 2, 3, 4)) == Merged((720,), (0,))
    assert merge((2, 3, 4), (2, 1, 0)) == Merged((2, 3, 4), (2, 1, 0))
    assert merge((3, 1, 4, 1, 5), (4, 3, 0, 1, 2)) == Merged((12, 5), (1, 0))


def test_window_partition_and_reverse_become_rank_4() -> None:
    before = windows_model()
    after, count = rewritten(PASS, before)
    assert count == 6  # Reshape, Transpose, Reshape twice
    assert ops(after) == ["Reshape", "Transpose", "Reshape", "Relu", "Reshape", "Transpose", "Reshape"]
    for node in after.graph.node:
        if node.op_type == "Transpose":
            assert list(node.attribute[0].ints) == [0, 2, 1, 3]
    x = feeds()
    np.testing.assert_array_equal(run(after, x)[0], run(before, x)[0])
    assert refused_ops(nnapi(before)) == {"Reshape", "Transpose"}
    assert refused_ops(coreml(before)) == {"Reshape", "Transpose"}
    assert all_taken(nnapi(after)), refused_ops(nnapi(after))
    assert all_taken(coreml(after)), refused_ops(coreml(after))


def test_a_shape_computed_at_run_time_is_read_from_the_folded_view() -> None:
    before = windows_model(computed=True)
    assert refused_ops(coreml(before)) == {"Reshape", "Transpose"}
    after, count = rewritten(PASS, before)
    assert count == 6
    x = feeds()
    np.testing.assert_array_equal(run(after, x)[0], run(before, x)[0])
    assert all_taken(coreml(after)), refused_ops(coreml(after))


def test_the_rank_4_transposes_reach_the_device(tmp_path: Path) -> None:
    after, _ = rewritten(PASS, windows_model())
    in_ort, in_app = device_ops(after, tmp_path)
    basic = optimized_ops(after, tmp_path, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)
    for seen in (in_ort, in_app, basic):
        assert seen.count("Transpose") == 2, seen
    transposes = [n for n in onnx.load(tmp_path / "app.onnx").graph.node if n.op_type == "Transpose"]
    assert all(len(helper.get_attribute_value(n.attribute[0])) == 4 for n in transposes)


def test_what_cannot_shrink_is_left_alone() -> None:
    def single(shape: list[int], perm: list[int], reader: str = "Reshape") -> onnx.ModelProto:
        size = int(np.prod(shape))
        after = helper.make_node("Reshape", ["t", "flat"], ["y"]) if reader == "Reshape" else helper.make_node("Relu", ["t"], ["y"])
        graph = helper.make_graph(
            [helper.make_node("Reshape", ["x", "shape"], ["r"]), helper.make_node("Transpose", ["r"], ["t"], perm=perm), after],
            "g",
            [helper.make_tensor_value_info("x", F, [size])],
            [helper.make_tensor_value_info("y", F, None)],
            [ints("shape", shape), ints("flat", [size])],
        )
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)

    assert unchanged_by(PASS, single([2, 3, 2, 3, 2, 3], [5, 4, 3, 2, 1, 0]))  # nothing to merge
    assert unchanged_by(PASS, single([1, 2, 4, 2, 4, 4], SWAP, reader="Relu"))  # rank-6 output read as such
    assert unchanged_by(PASS, single([2, 3, 4, 5], [0, 2, 1, 3]))  # rank 4: taken already
    direct = helper.make_model(
        helper.make_graph(
            [helper.make_node("Transpose", ["x"], ["t"], perm=SWAP), helper.make_node("Reshape", ["t", "flat"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", F, [1, 2, 4, 2, 4, 4])],
            [helper.make_tensor_value_info("y", F, None)],
            [ints("flat", [256])],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    assert unchanged_by(PASS, direct)  # a rank-6 graph input: no Reshape to fold the merge into
