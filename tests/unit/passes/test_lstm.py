"""``lstm``: a one-step LSTM (silero-vad's decoder) becomes the cell's arithmetic, which NNAPI and CoreML
take (neither has an LSTM builder)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from transformer_checks import coreml, nnapi, ops, refused_ops, rewritten, run, unchanged_by

from mobilegen.passes.lstm import PASS

RNG = np.random.default_rng(27)
F = TensorProto.FLOAT
HIDDEN, INPUT, BATCH = 8, 6, 2


def lstm_model(*, seq: int = 1, bias: bool = True, state: bool = True, outputs: tuple[str, ...] = ("Y", "Y_h", "Y_c"),
               weights_computed: bool = False, **attrs: object) -> onnx.ModelProto:
    """X -> LSTM -> (Y, Y_h, Y_c), each followed by a Relu (so the outputs are read by a node)."""
    w = RNG.standard_normal((1, 4 * HIDDEN, INPUT)).astype(np.float32) * 0.5
    r = RNG.standard_normal((1, 4 * HIDDEN, HIDDEN)).astype(np.float32) * 0.5
    b = RNG.standard_normal((1, 8 * HIDDEN)).astype(np.float32) * 0.5
    inits = [numpy_helper.from_array(r, "R")]
    nodes = []
    if weights_computed:  # as silero-vad's exporter writes them: an Unsqueeze of a 2-D constant
        inits += [numpy_helper.from_array(w[0], "W2"), numpy_helper.from_array(np.array([0], np.int64), "ax0")]
        nodes.append(helper.make_node("Unsqueeze", ["W2", "ax0"], ["W"]))
    else:
        inits.append(numpy_helper.from_array(w, "W"))
    ins = ["X", "W", "R", "B" if bias else "", "", "h0" if state else "", "c0" if state else ""]
    if bias:
        inits.append(numpy_helper.from_array(b, "B"))
    nodes.append(helper.make_node("LSTM", ins, [o if o in outputs else "" for o in ("Y", "Y_h", "Y_c")], hidden_size=HIDDEN, **attrs))
    graph_outputs = []
    for o in outputs:
        nodes.append(helper.make_node("Relu", [o], [f"{o}_out"]))
        shape = [seq, 1, BATCH, HIDDEN] if o == "Y" else [1, BATCH, HIDDEN]
        graph_outputs.append(helper.make_tensor_value_info(f"{o}_out", F, shape))
    inputs = [helper.make_tensor_value_info("X", F, [seq, BATCH, INPUT])]
    if state:
        inputs += [helper.make_tensor_value_info(n, F, [1, BATCH, HIDDEN]) for n in ("h0", "c0")]
    graph = helper.make_graph(nodes, "g", inputs, graph_outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def feeds(seq: int = 1, state: bool = True) -> dict[str, np.ndarray]:
    out = {"X": RNG.standard_normal((seq, BATCH, INPUT)).astype(np.float32)}
    if state:
        out |= {n: RNG.standard_normal((1, BATCH, HIDDEN)).astype(np.float32) for n in ("h0", "c0")}
    return out


@pytest.mark.parametrize(("bias", "state", "computed"), [(True, True, False), (False, False, False), (True, True, True)])
def test_a_one_step_lstm_becomes_its_cell(bias: bool, state: bool, computed: bool) -> None:
    before = lstm_model(bias=bias, state=state, weights_computed=computed)
    after, count = rewritten(PASS, before)
    assert count == 1 and "LSTM" not in ops(after)
    x = feeds(state=state)
    for got, want in zip(run(after, x), run(before, x), strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert "LSTM" in refused_ops(nnapi(before)) and "LSTM" in refused_ops(coreml(before))
    for report in (nnapi(after), coreml(after)):
        assert report.supported_nodes == report.total_nodes and len(report.partitions) == 1, refused_ops(report)


def test_only_the_outputs_read_are_computed() -> None:
    before = lstm_model(outputs=("Y_h",))
    after, _ = rewritten(PASS, before)
    assert ops(after).count("Reshape") == 4  # X, h0 and c0 to 2-D, and only Y_h back to 3-D
    x = feeds()
    np.testing.assert_allclose(run(after, x)[0], run(before, x)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "variant",
    [
        {"seq": 3},  # more than one step: not unrolled
        {"direction": "reverse"},
        {"clip": 1.0},
        {"input_forget": 1},
        {"activations": ["Sigmoid", "Relu", "Tanh"]},
    ],
)
def test_other_lstms_are_left_alone(variant: dict[str, object]) -> None:
    assert unchanged_by(PASS, lstm_model(**variant))
