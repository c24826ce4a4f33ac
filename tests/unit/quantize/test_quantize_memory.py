"""What the int8 build holds in memory, measured structurally on a small chain of layers: the min-max
calibration session runs each tensor's reductions next to it (it holds no more activations at once than the
model itself; onnxruntime's default node order runs every reduction after the whole model), and the accuracy
gate's per-tensor noise fetches a few tensors per session. Both give onnxruntime's own numbers (its
calibrator's ranges, its ``qdq_loss_debug`` SQNR)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader

from mobilegen.quantize import QuantizeOptions, Recipe, load_calibration, quantize, recipe_for
from mobilegen.quantize.calibration import Calibration
from mobilegen.quantize.engine import _minmax_ranges
from mobilegen.spec import IOSpec, TensorSpec

acc = importlib.import_module("mobilegen.quantize.accuracy")  # the package exports its function accuracy
WIDTH, LAYERS = 16, 6
IO = IOSpec((TensorSpec("x", "float32", (1, WIDTH)),), (TensorSpec("y", "float32", (1, WIDTH)),))


def _chain(path: Path) -> Path:
    """``LAYERS`` x (MatMul, Add, Relu), every node named: 18 activations in a row."""
    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i in range(LAYERS):
        last = i == LAYERS - 1
        inits += [numpy_helper.from_array(rng.standard_normal((WIDTH, WIDTH)).astype(np.float32) / 4, f"w{i}"),
                  numpy_helper.from_array(rng.standard_normal(WIDTH).astype(np.float32), f"b{i}")]  # fmt: skip
        nodes += [helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"], name=f"matmul{i}"),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"], name=f"add{i}"),
                  helper.make_node("Relu", [f"a{i}"], ["y" if last else f"r{i}"], name=f"relu{i}")]  # fmt: skip
        prev = f"r{i}"
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, WIDTH])], inits,
    )  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def _int8() -> Recipe:
    r = recipe_for("int8", ())
    assert isinstance(r, Recipe)
    return r


def _calib() -> Calibration:
    return load_calibration(QuantizeOptions(mode="int8", calibration="random"), IO)


class _Sessions:
    """Every onnxruntime session made while installed: the model's bytes and the session options."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.made: list[tuple[bytes, Any]] = []
        made, base = self.made, ort.InferenceSession

        class Spy(base):  # type: ignore[misc, valid-type]
            def __init__(self, model: str | bytes, sess_options: Any = None, *args: Any, **kwargs: Any) -> None:
                made.append((model if isinstance(model, bytes) else Path(model).read_bytes(), sess_options))
                super().__init__(model, sess_options, *args, **kwargs)

        monkeypatch.setattr(ort, "InferenceSession", Spy)


def _live_activations(model: bytes, options: Any, names: set[str], tmp: Path) -> int:
    """The most outputs of the nodes ``names`` alive at once when onnxruntime runs ``model`` with
    ``options``: its node order read from its profile, each tensor alive from its producer to its last reader."""
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp / "profile")
    sess = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    sess.run(None, {"x": np.ones((1, WIDTH), np.float32)})
    events = json.loads(Path(sess.end_profiling()).read_text())
    ran = [e["name"].removesuffix("_kernel_time") for e in sorted(events, key=lambda e: e["ts"])
           if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]  # fmt: skip
    nodes = {n.name: n for n in onnx.load_from_string(model).graph.node}
    assert set(ran) == set(nodes), "every node runs once"
    born = {o: i for i, name in enumerate(ran) if name in names for o in nodes[name].output}
    dies = {t: max([i for i, name in enumerate(ran) if t in nodes[name].input], default=len(ran)) for t in born}
    return max(sum(1 for t in born if born[t] <= i <= dies[t]) for i in range(len(ran)))


def _without_calibration(model: bytes) -> tuple[bytes, set[str]]:
    """The calibrator's augmented model without its ReduceMin/ReduceMax/Reshape per tensor (the model it
    calibrates), and the names of that model's nodes."""
    m = onnx.load_from_string(model)
    added = {n.name for n in m.graph.node if n.name.endswith(("_ReduceMin", "_ReduceMax", "_ReduceMin_Reshape", "_ReduceMax_Reshape"))}
    outputs = {o for n in m.graph.node if n.name in added for o in n.output}
    kept = [n for n in m.graph.node if n.name not in added]
    del m.graph.node[:]
    m.graph.node.extend(kept)
    kept_outputs = [o for o in m.graph.output if o.name not in outputs]
    del m.graph.output[:]
    m.graph.output.extend(kept_outputs)
    return m.SerializeToString(), {n.name for n in kept}


def test_minmax_calibration_holds_no_more_activations_than_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _chain(tmp_path / "chain.onnx")
    sessions = _Sessions(monkeypatch)
    quantize(src, _int8(), _calib(), tmp_path / "q.onnx")
    calibrating = [(m, o) for m, o in sessions.made if any(n.op_type == "ReduceMin" for n in onnx.load_from_string(m).graph.node)]
    assert calibrating, "the min-max calibrator's session"
    plain = ort.SessionOptions()
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    for model, options in calibrating:
        itself, names = _without_calibration(model)
        assert len(names) >= 2 * LAYERS
        alone = _live_activations(itself, plain, names, tmp_path)
        assert _live_activations(model, options, names, tmp_path) <= alone
        # what the test tells apart: onnxruntime's default order (the calibrator's own session) holds more
        assert _live_activations(model, plain, names, tmp_path) > alone


def test_minmax_ranges_are_the_calibrators_own(tmp_path: Path) -> None:
    from onnxruntime.quantization.calibrate import CalibrationMethod, create_calibrator, load_tensors_data

    src = _chain(tmp_path / "chain.onnx")
    calib = _calib()
    ours = load_tensors_data(_minmax_ranges(src, _int8(), calib, tmp_path / "ranges.json")).data
    theirs_cal = create_calibrator(src, None, str(tmp_path / "augmented.onnx"), CalibrationMethod.MinMax, providers=["CPUExecutionProvider"])
    theirs_cal.collect_data(_Feeds(calib))
    theirs = theirs_cal.compute_data().data
    assert sorted(ours) == sorted(theirs) and len(ours) >= 3 * LAYERS
    for name, t in theirs.items():
        assert all(np.array_equal(a, b) for a, b in zip(ours[name].range_value, t.range_value, strict=True)), name


class _Feeds(CalibrationDataReader):  # type: ignore[misc]  # ORT's class is untyped
    """A calibration data reader over the samples."""

    def __init__(self, calib: Calibration) -> None:
        x = calib.samples["x"]
        self._it = iter([{"x": x[i]} for i in range(len(x))])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._it, None)


def test_activation_noise_fetches_a_chunk_per_session_and_gives_onnxruntimes_sqnr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from onnxruntime.quantization import qdq_loss_debug as dbg

    src = _chain(tmp_path / "chain.onnx")
    calib = _calib()
    q = quantize(src, _int8(), calib, tmp_path / "q.onnx")
    aug_f, aug_q = tmp_path / "float.onnx", tmp_path / "qdq.onnx"
    dbg.modify_model_output_intermediate_tensors(str(src), str(aug_f), save_as_external_data=True)  # as _worst_layers does
    dbg.modify_model_output_intermediate_tensors(str(q.path), str(aug_q), save_as_external_data=True)
    feeds = [{"x": calib.held_out["x"][i]} for i in range(len(calib.held_out["x"]))]
    monkeypatch.setattr(acc, "_CHUNK", 2)
    sessions = _Sessions(monkeypatch)
    noise = acc._activation_noise(dbg, aug_f, aug_q, feeds)
    monkeypatch.undo()
    suffix = dbg._TENSOR_SAVE_POSTFIX
    saved = [sum(1 for o in onnx.load_from_string(m).graph.output if o.name.endswith(suffix)) for m, _ in sessions.made]
    assert saved and max(saved) <= 2 and len(noise) > 2 * 2, (saved, len(noise))
    # onnxruntime's own: every tensor of every sample of both augmented models, matched and compared
    plain = ort.SessionOptions()
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    floats = dbg.collect_activations(str(aug_f), _Feeds(_held(calib)), plain)
    qdqs = dbg.collect_activations(str(aug_q), _Feeds(_held(calib)), plain)
    errors = dbg.compute_activation_error(dbg.create_activation_matching(qdqs, floats))
    expected = {t: e["xmodel_err"] for t, e in errors.items() if "xmodel_err" in e}
    assert noise.keys() == expected.keys()
    for t, v in expected.items():
        assert noise[t] == pytest.approx(v, rel=1e-4, abs=1e-4) or (noise[t] == np.inf and v > 100), t


def _held(calib: Calibration) -> Calibration:
    return Calibration(calib.held_out, calib.held_out, calib.source, calib.held_out_count, calib.trustworthy)
