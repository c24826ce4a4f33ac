"""``bool-mask``: Hugging Face's boolean attention mask (Cast(int -> bool), data movement, And, Where into
attention) becomes float 0/1 arithmetic CoreML takes; same numbers for any integer mask values."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from transformer_checks import all_taken, coreml, ops, refused_ops, rewritten, run, unchanged_by

from mobilegen.passes.bool_mask import PASS
from mobilegen.passes.gathernd_gather import PASS as GATHERND

F, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
S, D = 8, 16
RNG = np.random.default_rng(11)
FINFO_MIN = float(np.finfo(np.float32).min)


def _c(name: str, value: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(value, name)


def hf_mask(form: str = "traced", *, neg: float = FINFO_MIN, mask_output: bool = False, logic: str = "and") -> onnx.ModelProto:
    """scores[1,1,S,S] (an input) + the mask transformers 5 builds from ``attention_mask`` [1,S] (int64),
    then Softmax. ``form``: "traced" (Reshape -> Gather -> Reshape, as TorchScript writes the vmap'd
    padding-mask lookup), "export" (GatherND, as torch.export writes it), "direct" (none: the mask
    broadcasts). ``logic``: "and" with a constant all-true causal part, "or-not" (Or of a constant all-false
    part with Not(Not(mask)))."""
    inits = [
        _c("idx", np.arange(S, dtype=np.int64).reshape(1, 1, 1, S)),
        _c("shape4", np.array([1, 1, 1, S], np.int64)),
        _c("col", np.array([S, 1], np.int64)),
        _c("causal", np.ones((1, 1, S, 1), bool)),
        _c("nothing", np.zeros((1, 1, S, 1), bool)),
        _c("zero", np.zeros((), np.float32)),
        _c("neg", np.asarray(neg, np.float32)),
        _c("ndidx", np.stack([np.zeros(S, np.int64), np.arange(S, dtype=np.int64)], -1).reshape(1, 1, 1, S, 2)),
    ]
    nodes = [helper.make_node("Cast", ["attention_mask"], ["b"], to=BOOL)]
    if form == "traced":
        nodes += [
            helper.make_node("Reshape", ["b", "col"], ["flat"]),
            helper.make_node("Gather", ["flat", "idx"], ["g"], axis=0),  # [1,1,1,S,1]
            helper.make_node("Reshape", ["g", "shape4"], ["pad"]),
        ]
    elif form == "export":
        nodes.append(helper.make_node("GatherND", ["b", "ndidx"], ["pad"]))
    else:
        nodes.append(helper.make_node("Identity", ["b"], ["pad"]))
    if logic == "and":
        nodes.append(helper.make_node("And", ["causal", "pad"], ["keep"]))
    else:
        nodes += [
            helper.make_node("Not", ["pad"], ["inv"]),
            helper.make_node("Not", ["inv"], ["pad2"]),
            helper.make_node("Or", ["nothing", "pad2"], ["keep"]),
        ]
    nodes += [
        helper.make_node("Where", ["keep", "zero", "neg"], ["m"]),
        helper.make_node("Add", ["scores", "m"], ["a"]),
        helper.make_node("Softmax", ["a"], ["y"], axis=-1),
    ]
    outputs = [helper.make_tensor_value_info("y", F, [1, 1, S, S])]
    if mask_output:
        outputs.append(helper.make_tensor_value_info("keep", BOOL, [1, 1, S, S]))
    inputs = [helper.make_tensor_value_info("scores", F, [1, 1, S, S]), helper.make_tensor_value_info("attention_mask", I64, [1, S])]
    graph = helper.make_graph(nodes, "mask", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def mask_values() -> dict[str, np.ndarray]:
    return {
        "ones": np.ones((1, S), np.int64),
        "padded": np.array([[1] * 5 + [0] * (S - 5)], np.int64),
        "zeros": np.zeros((1, S), np.int64),
        "any ints": np.array([[2, -1, 0, 7, 0, -3, 1, 0]], np.int64),
        "huge": np.array([[2**62, -(2**62), 0, 1, 0, 2**31, 0, 1]], np.int64),
    }


def _same_numbers(before: onnx.ModelProto, after: onnx.ModelProto) -> None:
    scores = RNG.standard_normal((1, 1, S, S)).astype(np.float32)
    for name, mask in mask_values().items():
        feeds = {"scores": scores, "attention_mask": mask}
        for got, expected in zip(run(after, feeds), run(before, feeds), strict=True):
            np.testing.assert_array_equal(got, expected, err_msg=name)


def test_the_traced_mask_becomes_arithmetic_coreml_takes_whole() -> None:
    before = hf_mask("traced")
    after, count = rewritten(PASS, before)
    assert count == 6  # Cast, Reshape, Gather, Reshape, And, Where
    assert not {"And", "Where"} & set(ops(after))
    assert [t.type.tensor_type.elem_type for t in after.graph.input] == [F, I64]  # the inputs as they were
    _same_numbers(before, after)
    assert refused_ops(coreml(before)) == {"Cast", "Gather", "Reshape", "And", "Where"}
    assert len(coreml(before).partitions) == 1 and coreml(before).supported_nodes == 2  # Add, Softmax
    assert all_taken(coreml(after)), refused_ops(coreml(after))


def test_the_exported_mask_needs_gathernd_gather_after_it() -> None:
    before = hf_mask("export")
    after, count = rewritten(PASS, before)
    assert count == 4
    _same_numbers(before, after)
    assert refused_ops(coreml(after)) == {"GatherND"}  # on the int64 mask now: no builder before ORT 1.28
    final, n = rewritten(GATHERND, after)
    assert n == 1 and "GatherND" not in ops(final)
    _same_numbers(before, final)
    assert all_taken(coreml(final)), refused_ops(coreml(final))


def test_or_and_not_and_a_cast_on_the_input_itself() -> None:
    """Or -> Max, Not -> 1 - x; with no data movement before the logic, the Cast reads the graph input
    (CoreML refuses that Cast: it has no preceding node) but the numbers are the same."""
    before = hf_mask("direct", logic="or-not")
    after, _ = rewritten(PASS, before)
    assert {"Max", "Sub"} <= set(ops(after)) and not {"Or", "Not", "Where"} & set(ops(after))
    _same_numbers(before, after)
    assert refused_ops(coreml(after)) == {"Cast"}


def test_masks_it_cannot_convert_stay() -> None:
    assert unchanged_by(PASS, hf_mask(neg=-np.inf))  # -inf * 0 would be NaN: softmax-mask's case
    assert unchanged_by(PASS, hf_mask(mask_output=True))  # the bool mask is a graph output
    float_source = hf_mask()
    float_source.graph.input[1].type.tensor_type.elem_type = F  # Cast(float -> bool): NaN and tiny values
    assert unchanged_by(PASS, float_source)
