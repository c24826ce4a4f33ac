"""``nan-guard``: the IsNaN/Where guard torch.export puts after attention's Softmax is removed where the
Softmax input is finite whenever the model's inputs are, and kept where a -inf can reach it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
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

from mobilegen.passes.nan_guard import PASS

F = TensorProto.FLOAT
S, D = 8, 16
RNG = np.random.default_rng(31)
FINFO_MIN = float(np.finfo(np.float32).min)


def _init(name: str, value: np.ndarray | float) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, np.float32), name)


def attention(mask: str = "zeros", *, guard_value: np.ndarray | float = 0.0, extra: tuple[str, ...] = ()) -> onnx.ModelProto:
    """x[1,S,D] -> q, k, v (batch MatMuls with constant [1,D,D] weights) -> Softmax(q k^T / 4 + mask)
    -> Where(IsNaN(p), c, p) -> @ v, the pattern torch.export writes for SDPA. ``mask``:

    - ``zeros``: a constant 0 mask (no attention_mask given at export);
    - ``neg-inf``: a constant mask with -inf in a fully masked row (what the guard is for);
    - ``hf-int``: an int64 ``attention_mask`` input turned into (1 - m) * finfo.min (Hugging Face's form);
    - ``float-input``: a float additive mask input (callers write -inf in it);
    - ``log``: the scores go through Log (which makes -inf of 0);
    ``extra``: "isnan-also-output" (the IsNaN is read elsewhere too), "guard-is-output"."""
    inits = [_init(f"w{c}", RNG.standard_normal((1, D, D)) / 4) for c in "qkv"] + [_init("scale", 0.25), _init("guard", guard_value)]
    inputs = [helper.make_tensor_value_info("x", F, [1, S, D])]
    nodes = [helper.make_node("MatMul", ["x", f"w{c}"], [c]) for c in "qkv"]
    nodes += [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Mul", ["s", "scale"], ["scaled"]),
    ]
    if mask == "zeros":
        inits.append(_init("mask", np.zeros((1, S, S))))
    elif mask == "neg-inf":
        value = np.zeros((1, S, S), np.float32)
        value[0, 2, :] = -np.inf  # row 2 attends to nothing
        inits.append(_init("mask", value))
    elif mask == "hf-int":
        inputs.append(helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, S]))
        inits += [_init("one", 1.0), _init("fmin", FINFO_MIN)]
        nodes += [
            helper.make_node("Unsqueeze", ["attention_mask", "axes1"], ["m3"]),
            helper.make_node("Cast", ["m3"], ["mf"], to=F),
            helper.make_node("Sub", ["one", "mf"], ["inv"]),
            helper.make_node("Mul", ["inv", "fmin"], ["mask"]),
        ]
        inits.append(numpy_helper.from_array(np.array([1], np.int64), "axes1"))
    elif mask == "float-input":
        inputs.append(helper.make_tensor_value_info("mask", F, [1, S, S]))
    elif mask == "log":
        inits.append(_init("mask", np.zeros((1, S, S))))
        nodes.append(helper.make_node("Log", ["scaled"], ["logged"]))
    masked_in = "logged" if mask == "log" else "scaled"
    nodes += [
        helper.make_node("Add", [masked_in, "mask"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
        helper.make_node("IsNaN", ["p"], ["nan"]),
        helper.make_node("Where", ["nan", "guard", "p"], ["g"]),
        helper.make_node("MatMul", ["g", "v"], ["y"]),
    ]
    outputs = [helper.make_tensor_value_info("y", F, [1, S, D])]
    if "isnan-also-output" in extra:
        outputs.append(helper.make_tensor_value_info("nan", TensorProto.BOOL, [1, S, S]))
    if "guard-is-output" in extra:
        outputs.append(helper.make_tensor_value_info("g", F, [1, S, S]))
    graph = helper.make_graph(nodes, "attention", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    out = {"x": (RNG.standard_normal((1, S, D)) * 3).astype(np.float32)}
    if any(i.name == "attention_mask" for i in model.graph.input):
        mask = np.ones((1, S), np.int64)
        mask[0, 5:] = 0
        out["attention_mask"] = mask
    return out


def test_the_guard_after_softmax_goes_and_the_numbers_stay() -> None:
    before = attention()
    after, count = rewritten(PASS, before)
    assert count == 2
    assert ops(after) == ["MatMul", "MatMul", "MatMul", "Transpose", "MatMul", "Mul", "Add", "Softmax", "MatMul"]
    assert after.graph.node[-1].input[0] == "p"  # the guard's reader reads the Softmax
    assert {i.name for i in after.graph.initializer} == {i.name for i in before.graph.initializer}  # none removed
    x = feeds(before)
    np.testing.assert_array_equal(run(after, x)[0], run(before, x)[0])


def test_the_verdict_flips_for_nnapi_and_coreml() -> None:
    before = attention()
    after, _ = rewritten(PASS, before)
    # iOS pins ORT 1.24.2, whose CoreML has no Where builder yet (PR #28597): both guard ops are refused
    assert {"IsNaN", "Where"} <= refused_ops(nnapi(before)) and refused_ops(coreml(before)) == {"IsNaN", "Where"}
    assert len(nnapi(before).partitions) == len(coreml(before).partitions) == 2
    assert all_taken(nnapi(after)), refused_ops(nnapi(after))
    assert all_taken(coreml(after)), refused_ops(coreml(after))


def test_hugging_faces_finite_mask_is_no_reason_to_keep_it() -> None:
    """(1 - m) * finfo.min from an int mask is finite: even a fully masked row's Softmax is a number
    (uniform), so the guard never fires: same numbers with masked positions."""
    before = attention("hf-int")
    after, count = rewritten(PASS, before)
    assert count == 2 and "IsNaN" not in ops(after)
    x = feeds(before)
    np.testing.assert_array_equal(run(after, x)[0], run(before, x)[0])
    x["attention_mask"][:] = 0  # every position masked
    got, expected = run(after, x)[0], run(before, x)[0]
    assert np.isfinite(expected).all()
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("mask", ["neg-inf", "float-input", "log"])
def test_a_guard_a_nan_can_reach_stays(mask: str) -> None:
    """A -inf mask constant (the guard is what keeps row 2 at 0), a float mask input (callers fill it
    with -inf), Log (which makes -inf of 0): the guard may fire, so it stays."""
    model = attention(mask)
    assert unchanged_by(PASS, model)
    if mask == "neg-inf":  # why: the guard does fire here
        out = run(model, feeds(model))[0]
        assert np.isfinite(out).all() and not out[0, 2].any()


def test_guards_that_are_not_the_plain_pattern_stay() -> None:
    assert unchanged_by(PASS, attention(guard_value=np.zeros((1, S, S))))  # c would broadcast: not one number
    assert unchanged_by(PASS, attention(extra=("guard-is-output",)))  # its output is the graph's


def test_an_isnan_read_elsewhere_stays() -> None:
    before = attention(extra=("isnan-also-output",))
    after, count = rewritten(PASS, before)
    assert count == 1 and ops(after).count("IsNaN") == 1 and "Where" not in ops(after)
    x = feeds(before)
    for got, expected in zip(run(after, x), run(before, x), strict=True):
        np.testing.assert_array_equal(got, expected)


def test_graphs_without_a_guard_are_left_alone() -> None:
    model = attention()
    keep = [n for n in model.graph.node if n.op_type not in ("IsNaN", "Where")]
    keep[-1].input[0] = "p"
    del model.graph.node[:]
    model.graph.node.extend(keep)
    assert unchanged_by(PASS, model)
    nan_to_num = helper.make_model(  # torch.nan_to_num on an input: nothing to prove it finite
        helper.make_graph(
            [helper.make_node("IsNaN", ["x"], ["n"]), helper.make_node("Where", ["n", "zero", "x"], ["g"]), helper.make_node("Relu", ["g"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", F, [4])],
            [helper.make_tensor_value_info("y", F, [4])],
            [_init("zero", 0.0)],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    assert unchanged_by(PASS, nan_to_num)


def test_the_unguarded_softmax_reaches_the_device(tmp_path: Path) -> None:
    after, _ = rewritten(PASS, attention())
    in_ort, in_app = device_ops(after, tmp_path)
    assert "Softmax" in in_ort and not {"IsNaN", "Where"} & (set(in_ort) | set(in_app))
    basic = optimized_ops(after, tmp_path, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)
    assert "Softmax" in basic and not {"IsNaN", "Where"} & set(basic)


def wav2vec2_front(*, zero_column: bool = False, epsilon: float = 1e-5) -> onnx.ModelProto:
    """attention() fed by what wav2vec2 puts before it: x -> Transpose -> InstanceNormalization (torch's
    GroupNorm) -> Conv1d whose weight is normalized in the graph (g * v / ReduceL2(v) over dims 0, 1:
    the positional conv's weight_norm) -> Transpose -> q, k, v. ``zero_column``: a v whose norm has a 0
    (0/0 in the weight); ``epsilon``: the norm's."""
    model = attention()
    v = RNG.standard_normal((D, D, 3)).astype(np.float32)
    if zero_column:
        v[:, :, 1] = 0
    model.graph.initializer.extend([
        numpy_helper.from_array(v, "wn_v"),
        numpy_helper.from_array(RNG.uniform(0.5, 1.5, (1, 1, 3)).astype(np.float32), "wn_g"),
        numpy_helper.from_array(np.array([0, 1], np.int64), "wn_axes"),
        _init("in_scale", np.ones(D)),
        _init("in_bias", np.zeros(D)),
    ])
    front = [
        helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
        helper.make_node("InstanceNormalization", ["xt", "in_scale", "in_bias"], ["xn"], epsilon=epsilon),
        helper.make_node("ReduceL2", ["wn_v", "wn_axes"], ["wn_norm"], keepdims=1),
        helper.make_node("Div", ["wn_v", "wn_norm"], ["wn_unit"]),
        helper.make_node("Mul", ["wn_g", "wn_unit"], ["wn_w"]),
        helper.make_node("Conv", ["xn", "wn_w"], ["xc"], pads=[1, 1]),
        helper.make_node("Transpose", ["xc"], ["feat"], perm=[0, 2, 1]),
    ]
    for node in model.graph.node:
        node.input[:] = ["feat" if i == "x" else i for i in node.input]
    nodes = [*front, *model.graph.node]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("", 18))  # ReduceL2's axes as an input
    onnx.checker.check_model(model, full_check=True)
    return model


def test_wav2vec2s_instancenorm_and_weight_norm_are_finite() -> None:
    """InstanceNormalization with epsilon > 0 is finite; the Div by the weight's norm is evaluated (it
    is computed from constants alone, as onnxruntime's constant folding will): no zero, no guard."""
    before = wav2vec2_front()
    after, count = rewritten(PASS, before)
    assert count == 2 and not {"IsNaN", "Where"} & set(ops(after))
    x = feeds(before)
    np.testing.assert_array_equal(run(after, x)[0], run(before, x)[0])
    assert {"IsNaN", "Where"} <= refused_ops(nnapi(before))
    assert not {"IsNaN", "Where"} & refused_ops(nnapi(after))


@pytest.mark.parametrize("case", ["zero-norm", "epsilon-0"])
def test_a_zero_norm_or_a_zero_epsilon_keeps_it(case: str) -> None:
    model = wav2vec2_front(zero_column=True) if case == "zero-norm" else wav2vec2_front(epsilon=0.0)
    assert unchanged_by(PASS, model)
