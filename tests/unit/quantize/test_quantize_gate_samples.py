"""The accuracy gate's samples and the quantized golden tolerance: an ``--eval`` too small to say anything is
refused (and the gate itself refuses no samples); ``fp16``/``dynamic`` take a small ``--calibration`` file whole
(they calibrate nothing, so there is no split to leave too little); an int8 model's golden atol covers two
steps of its outputs' last DequantizeLinear, and its device tests say why in words true of a quantized model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mobilegen.errors import InternalError, UsageError
from mobilegen.quantize import QuantizeOptions, accuracy, load_calibration
from mobilegen.quantize.calibration import MIN_HELD_OUT
from mobilegen.quantize.golden import output_step
from mobilegen.quantize.stage import samples_for
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.targets.tolerances import OUTPUT_STEPS, tolerance_reason

IO = IOSpec((TensorSpec("x", "float32", (1, 4)),), (TensorSpec("y", "float32", (1, 4)),))


def _npz(path: Path, n: int) -> Path:
    np.savez(path, x=np.random.default_rng(0).random((n, 1, 4), dtype=np.float32))
    return path


def _relu(path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    onnx.save(helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


@pytest.mark.parametrize("n", [0, 1])
@pytest.mark.parametrize("mode", ["int8", "fp16", "dynamic"])
def test_an_eval_file_with_too_few_samples_is_refused(tmp_path: Path, n: int, mode: str) -> None:
    opts = QuantizeOptions(mode=mode, calibration=str(_npz(tmp_path / "cal.npz", 16)), eval=_npz(tmp_path / "eval.npz", n))  # type: ignore[arg-type]
    with pytest.raises(UsageError) as err:
        samples_for(opts, IO)  # an empty --eval passed the gate: two empty outputs have cosine 1.0
    assert err.value.message == f"--eval eval.npz holds {n} sample{'' if n == 1 else 's'}: too few to check accuracy"
    assert f"at least {MIN_HELD_OUT} samples" in (err.value.hint or "")


def test_an_eval_file_with_the_minimum_is_the_gate_s_samples(tmp_path: Path) -> None:
    opts = QuantizeOptions(mode="int8", calibration=str(_npz(tmp_path / "cal.npz", 3)), eval=_npz(tmp_path / "eval.npz", MIN_HELD_OUT))
    calib = load_calibration(opts, IO)
    assert (calib.count, calib.held_out_count) == (3, MIN_HELD_OUT)


def test_the_gate_refuses_to_score_no_samples(tmp_path: Path) -> None:
    model = _relu(tmp_path / "m.onnx")
    with pytest.raises(InternalError, match="no samples"):
        accuracy(model, model, {"x": np.zeros((0, 1, 4), np.float32)}, QuantizeOptions(mode="int8", calibration="random"))


@pytest.mark.parametrize("mode", ["fp16", "dynamic"])
@pytest.mark.parametrize("n", [1, 5])
def test_modes_that_calibrate_nothing_gate_on_every_calibration_sample(tmp_path: Path, mode: str, n: int) -> None:
    opts = QuantizeOptions(mode=mode, calibration=str(_npz(tmp_path / "cal.npz", n)))  # type: ignore[arg-type]
    calib = samples_for(opts, IO)  # "too few to calibrate and to check accuracy" for 5 samples
    assert calib.held_out_count == n and calib.count == 0 and calib.source == "the samples of cal.npz"
    np.testing.assert_array_equal(calib.held_out["x"], np.load(tmp_path / "cal.npz")["x"])


@pytest.mark.parametrize("mode", ["fp16", "dynamic"])
def test_modes_that_calibrate_nothing_refuse_an_empty_calibration_file(tmp_path: Path, mode: str) -> None:
    opts = QuantizeOptions(mode=mode, calibration=str(_npz(tmp_path / "cal.npz", 0)))  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"^cal\.npz holds no samples$"):
        samples_for(opts, IO)


@pytest.mark.parametrize("mode", ["fp16", "dynamic"])
def test_modes_that_calibrate_nothing_still_gate_on_random_inputs_without_calibration(mode: str) -> None:
    calib = samples_for(QuantizeOptions(mode=mode), IO)  # type: ignore[arg-type]
    assert calib.held_out_count == 20 and calib.source == "random (seed 0) inputs" and calib.trustworthy


def test_int8_still_needs_a_calibration_set_it_can_split(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="holds 5 samples: too few to calibrate"):
        samples_for(QuantizeOptions(mode="int8", calibration=str(_npz(tmp_path / "c.npz", 5))), IO)


# --- the output step -------------------------------------------------------------------------------


def _graph(nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto], outputs: tuple[str, ...] = ("y",)) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs]
    return helper.make_model(helper.make_graph(nodes, "g", [x], outs, inits), opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _qdq(name: str, scale: float | list[float]) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """x → QuantizeLinear → DequantizeLinear → ``name`` with ``scale`` (a list: per-channel on axis 1)."""
    s = np.asarray(scale, np.float32)
    zp = np.zeros(s.shape, np.uint8)
    inits = [numpy_helper.from_array(s, f"{name}_s"), numpy_helper.from_array(zp, f"{name}_zp")]
    axis: dict[str, Any] = {"axis": 1} if s.ndim else {}
    nodes = [
        helper.make_node("QuantizeLinear", ["x", f"{name}_s", f"{name}_zp"], [f"{name}_q"], **axis),
        helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_zp"], [name], **axis),
    ]
    return nodes, inits


def test_output_step_is_the_scale_of_the_dequantize_producing_an_output() -> None:
    nodes, inits = _qdq("y", 0.0007)
    assert output_step(_graph(nodes, inits)) == pytest.approx(0.0007)


def test_output_step_follows_ops_that_only_move_values_and_takes_the_largest() -> None:
    a, ia = _qdq("a", [0.001, 0.003, 0.002, 0.001])  # per-channel: its largest scale
    b, ib = _qdq("b", 0.002)
    shape = numpy_helper.from_array(np.array([4, 1], np.int64), "shape")
    nodes = [*a, *b, helper.make_node("Concat", ["a", "b"], ["c"], axis=0), helper.make_node("Reshape", ["c", "shape"], ["y"])]
    assert output_step(_graph(nodes, [*ia, *ib, shape])) == pytest.approx(0.003)


def test_no_output_step_after_a_float_op_or_without_quantization() -> None:
    nodes, inits = _qdq("d", 0.01)
    assert output_step(_graph([*nodes, helper.make_node("Softmax", ["d"], ["y"])], inits)) == 0.0
    assert output_step(_graph([helper.make_node("Relu", ["x"], ["y"])], [])) == 0.0


def test_quantized_models_give_their_own_tolerance_reason() -> None:
    int8 = tolerance_reason("int8")
    assert "float32, like the CPU provider" not in int8 and "int8-quantized" in int8 and f"{OUTPUT_STEPS} steps" in int8
    assert "its own outputs" in int8 and "worst error" not in int8  # kernel differences, not the quantization error
    assert "float16" in tolerance_reason("fp16") and "steps" not in tolerance_reason("dynamic")


def test_android_and_ios_device_tests_of_a_quantized_model_do_not_claim_float32(tmp_path: Path) -> None:
    from dataclasses import replace

    import android_specs
    import ios_specs

    from mobilegen.targets.android.project import AndroidOptions, android_context
    from mobilegen.targets.ios import project as ios

    spec, _ = android_specs.make_specs(tmp_path / "a")["android_cnn"]
    fp32 = android_context(replace(spec, ort_version=""), AndroidOptions(nnapi=True))["accel_tolerance_reason"]
    assert "computes in float32" in fp32  # unchanged for float models
    ctx = android_context(replace(spec, ort_version="", quantization="int8"), AndroidOptions(nnapi=True))
    assert ctx["accel_tolerance_reason"] == tolerance_reason("int8")  # "computes in float32, like the CPU provider"
    spec, _ = ios_specs.make_specs(tmp_path / "i")["ios_cnn"]
    cpu_only = ios.IosOptions(coreml=True, compute_units="cpu-only")
    ctx = ios.ios_context(replace(spec, quantization="dynamic"), cpu_only, model_sha256="0" * 64)
    assert ctx["accel_tolerance_reason"] == tolerance_reason("dynamic")
