"""``int64-indices``: Gather indices cast to int64 at run time are cast to int32 instead, for NNAPI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from transformer_checks import all_taken, device_ops, nnapi, ops, refused_ops, rewritten, run, unchanged_by

from mobilegen.passes.int64_indices import PASS

RNG = np.random.default_rng(4)
F, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64
TABLE = RNG.standard_normal((10, 4)).astype(np.float32)


def gather_model(src_type: int = F, *, also_output: bool = False, twice: bool = False, direct: bool = False) -> onnx.ModelProto:
    """pos (float32 or int32 [3]) -> Cast(int64) -> Gather(table) -> Relu; ``direct``: int64 input, no Cast."""
    idx = "pos" if direct else "idx"
    nodes = [] if direct else [helper.make_node("Cast", ["pos"], ["idx"], name="cast", to=I64)]
    nodes += [helper.make_node("Gather", ["table", idx], ["rows"], name="gather"), helper.make_node("Relu", ["rows"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", F, [3, 4])]
    if twice:
        nodes += [helper.make_node("Gather", ["table", idx], ["rows2"], name="gather2"), helper.make_node("Relu", ["rows2"], ["y2"])]
        outputs.append(helper.make_tensor_value_info("y2", F, [3, 4]))
    if also_output:
        outputs.append(helper.make_tensor_value_info("idx", I64, [3]))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("pos", I64 if direct else src_type, [3])],
        outputs,
        [numpy_helper.from_array(TABLE, "table")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def feeds(src_type: int = F) -> dict[str, np.ndarray]:
    pos = np.array([7.9, 0.2, 3.0]) if src_type == F else np.array([9, 0, 3])
    return {"pos": pos.astype(np.float32 if src_type == F else np.int32 if src_type == I32 else np.int64)}


def test_float_indices_are_cast_to_int32() -> None:
    before = gather_model(F)
    after, count = rewritten(PASS, before)
    assert count == 2  # the Cast to int64 and the Gather
    assert ops(after) == ["Cast", "Gather", "Relu"]
    cast = after.graph.node[0]
    assert helper.get_attribute_value(cast.attribute[0]) == I32 and after.graph.node[1].input[1] == cast.output[0]
    x = feeds(F)
    np.testing.assert_array_equal(run(after, x)[0], run(before, x)[0])
    assert refused_ops(nnapi(before)) == {"Cast", "Gather"}  # Cast to int64, run-time int64 indices
    assert all_taken(nnapi(after)), refused_ops(nnapi(after))


def test_int32_indices_are_read_directly() -> None:
    before = gather_model(I32, twice=True)
    after, count = rewritten(PASS, before)
    assert count == 3
    assert ops(after) == ["Gather", "Relu", "Gather", "Relu"]
    assert {n.input[1] for n in after.graph.node if n.op_type == "Gather"} == {"pos"}
    x = feeds(I32)
    for got, want in zip(run(after, x), run(before, x), strict=True):
        np.testing.assert_array_equal(got, want)
    assert "Gather" in refused_ops(nnapi(before))
    assert refused_ops(nnapi(after)) == set()


def test_int64_indices_read_elsewhere_keep_their_cast() -> None:
    before = gather_model(F, also_output=True)
    after, count = rewritten(PASS, before)
    assert count == 1  # only the Gather: the int64 Cast stays for the graph output
    assert ops(after) == ["Cast", "Cast", "Gather", "Relu"]
    x = feeds(F)
    for got, want in zip(run(after, x), run(before, x), strict=True):
        np.testing.assert_array_equal(got, want)
    assert [o.name for o in after.graph.output] == ["y", "idx"]


def test_the_int32_cast_reaches_the_device(tmp_path: Path) -> None:
    after, _ = rewritten(PASS, gather_model(F))
    in_ort, in_app = device_ops(after, tmp_path)
    assert in_ort == ["Cast", "Gather", "Relu"]
    assert in_app[:2] == ["Cast", "Gather"]


def test_what_nnapi_takes_already_or_never_is_left_alone() -> None:
    # int64 token ids straight from the inputs: a Cast to int32 would read int64, which NNAPI refuses
    assert unchanged_by(PASS, gather_model(direct=True))
    constant = helper.make_model(
        helper.make_graph(
            [helper.make_node("Gather", ["t", "idx"], ["rows"]), helper.make_node("Relu", ["rows"], ["y"])],
            "g",
            [helper.make_tensor_value_info("t", F, [10, 4])],
            [helper.make_tensor_value_info("y", F, [3, 4])],
            [numpy_helper.from_array(np.array([1, 2, 3], np.int64), "idx")],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
        ir_version=8,
    )
    assert all_taken(nnapi(constant))  # constant int64 indices: NNAPI's builder converts them itself
    assert unchanged_by(PASS, constant)
    assert unchanged_by(PASS, gather_model(TensorProto.DOUBLE))  # a double source: NNAPI refuses its Cast
