"""--task audio --state IN=OUT (issue 26 item 8): a model that carries state between windows, as silero-vad's
``state`` input/output does. The wrapped graph keeps the state input and output; the reference (the gate's)
passes the state through; the streaming helper's definition (``mobilegen.tasks.reference.stream``) feeds
each window the state the previous one returned, and onnxruntime on the wrapped graph agrees with the
reference around the original model, window after window."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mobilegen.errors import UsageError
from mobilegen.spec import onnx_io_spec
from mobilegen.tasks.dispatch import resolve, task_from_flags
from mobilegen.tasks.graph import wrap
from mobilegen.tasks.reference import float_input, initial_state, pcm16_input, stream, wrap_reference
from mobilegen.tasks.spec import TaskFlags, TaskSpec, parse_state

WINDOW = 64


def vad_model() -> onnx.ModelProto:
    """state [2, 1, 2] → stateN = 0.5·state + mean|wave|; output [1, 2] = stateN·W + mean(wave): the output
    depends on every earlier window through the state."""
    w = np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2)
    nodes = [
        helper.make_node("ReduceMean", ["wave"], ["m"], keepdims=1),
        helper.make_node("Abs", ["wave"], ["a"]),
        helper.make_node("ReduceMean", ["a"], ["am"], keepdims=1),
        helper.make_node("Reshape", ["state", "shp"], ["s2"]),
        helper.make_node("Mul", ["s2", "half"], ["s3"]),
        helper.make_node("Add", ["s3", "am"], ["s4"]),
        helper.make_node("Reshape", ["s4", "shp_state"], ["stateN"]),
        helper.make_node("MatMul", ["s4", "w"], ["y0"]),
        helper.make_node("Add", ["y0", "m"], ["output"]),
    ]
    inits = [
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(np.array([1, 4], np.int64), "shp"),
        numpy_helper.from_array(np.array([2, 1, 2], np.int64), "shp_state"),
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
    ]
    g = helper.make_graph(
        nodes,
        "vad",
        [helper.make_tensor_value_info("wave", TensorProto.FLOAT, [1, WINDOW]), helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, 1, 2])],
        [helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, 1, 2]), helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 2])],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _session(model: onnx.ModelProto):  # type: ignore[no-untyped-def]
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return lambda feeds: sess.run(None, feeds), [o.name for o in sess.get_outputs()]


SPEC = TaskSpec(kind="audio", sample_rate=16000, state=(("state", "stateN"),))


@pytest.mark.parametrize("post", [{}, {"softmax": True}, {"softmax": True, "top_k": 1, "labels": ("speech", "silence")}])
def test_streaming_through_the_wrapped_graph_matches_the_reference(post: dict[str, object]) -> None:
    model = vad_model()
    spec = resolve(replace(SPEC, **post), onnx_io_spec(model))  # type: ignore[arg-type]
    assert spec.window == WINDOW
    wrapped = wrap(model, spec)
    io = onnx_io_spec(wrapped)
    assert [t.name for t in io.inputs] == ["pcm", "state"]
    assert "stateN" in [t.name for t in io.outputs]
    run_wrapped, names = _session(wrapped)
    inner, inner_names = _session(model)
    reference = wrap_reference(inner, "wave", spec, tuple(inner_names))
    rng = np.random.default_rng(3)
    windows = [pcm16_input(rng.integers(-32768, 32768, WINDOW).astype(np.int16)) for _ in range(3)]
    windows.append(float_input(rng.uniform(-1, 1, WINDOW).astype(np.float32)))
    shapes = {"state": (2, 1, 2)}
    got = stream(run_wrapped, spec, shapes, names, windows)
    want = stream(reference, spec, shapes, names, windows)
    for g, w in zip(got, want, strict=True):
        for a, b in zip(g, w, strict=True):
            assert a.dtype == b.dtype and np.allclose(a, b, rtol=1e-5, atol=1e-6)
    # The state is carried: window 2 after windows 0 and 1 is not window 2 from a fresh state (reset).
    fresh = run_wrapped({"pcm": windows[2], **initial_state(spec, shapes)})
    state_at = names.index("stateN")
    assert not np.allclose(fresh[state_at], got[2][state_at])
    assert np.allclose(fresh[state_at], stream(run_wrapped, spec, shapes, names, windows[2:3])[0][state_at])


def test_state_flags_and_model_checks() -> None:
    assert parse_state("state=stateN, h=hN") == (("state", "stateN"), ("h", "hN"))
    for bad in ("state", "=x", "a=b,a=c"):
        with pytest.raises(UsageError):
            parse_state(bad)
    with pytest.raises(UsageError, match="--state is for --task audio"):
        task_from_flags(TaskFlags(task="image", crop="4x4", state="a=b"))
    with pytest.raises(UsageError, match="--state needs --task"):
        task_from_flags(TaskFlags(state="a=b"))
    io = onnx_io_spec(vad_model())
    with pytest.raises(UsageError, match="needs a model with one input, this one has 2"):
        resolve(TaskSpec(kind="audio", sample_rate=16000), io)  # without --state the state input is refused
    with pytest.raises(UsageError, match="the model has no output 'h'"):
        resolve(replace(SPEC, state=(("state", "h"),)), io)
    with pytest.raises(UsageError, match="the output is float32 1x2, the input float32 2x1x2"):
        resolve(replace(SPEC, state=(("state", "output"),)), io)
    rec = resolve(SPEC, io).record()
    assert rec["state"] == [{"input": "state", "output": "stateN"}]
