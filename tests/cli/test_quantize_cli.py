"""``--quantize`` flags: refused before any work (exit 2, one line, nothing written), on every command that
takes them and from ``mobilegen.toml``; the manifest and verify sides of quantized packages (per-model golden
vectors) read and written without a build."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
from cli_helpers import assert_fails, invoke
from onnx import TensorProto, helper

from mobilegen.artifacts import ShippedModel
from mobilegen.package.manifest import GoldenInfo, ModelInfo, OrtInfo
from mobilegen.quantize.stage import AccuracyRow, QuantizationRecord, options_record, tolerances_of


@pytest.fixture
def model(tmp_path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


COMMANDS = [("android", "--nnapi"), ("ios", "--coreml"), ("package", "--android"), ("convert",)]


def _run(model: Path, command: tuple[str, ...], *flags: object) -> tuple[object, Path]:
    out = model.parent / ("out.ort" if command[0] == "convert" else "out")
    return invoke(command[0], model, *command[1:], "-o", out, *flags), out


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_int8_without_calibration_is_refused(model: Path, command: tuple[str, ...]) -> None:
    result, out = _run(model, command, "--quantize", "int8")
    assert_fails(result, 2, "--quantize int8 needs calibration data", "--calibration FILE.npz")  # type: ignore[arg-type]
    assert not out.exists() and sorted(p.name for p in model.parent.iterdir()) == ["m.onnx"]


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (("--quantize", "int4"), "unknown --quantize mode 'int4'"),
        (("--calibration", "random"), "--calibration has no effect without --quantize"),
        (("--min-cosine", "0.5"), "--min-cosine has no effect without --quantize"),
        (("--min-top1", "0.5"), "--min-top1 has no effect without --quantize"),
        (("--quantize", "int8", "--calibration", "random", "--calibration-method", "kl"), "unknown --calibration-method 'kl'"),
        (("--quantize", "fp16", "--min-cosine", "1.5"), "--min-cosine must be between 0 and 1"),
        (("--quantize", "int8", "--calibration", "nowhere.npz"), "--calibration nowhere.npz: no such file or folder"),
        (("--quantize", "dynamic", "--eval", "m.onnx"), "is not an .npz file"),
    ],
)
def test_bad_quantize_flags_are_refused_before_any_work(model: Path, flags: tuple[str, ...], needle: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(model.parent)
    result, out = _run(model, ("android",), *flags)
    assert_fails(result, 2, needle)  # type: ignore[arg-type]
    assert not out.exists()


def test_config_calibration_is_relative_to_the_file_and_random_stays_a_word(model: Path, tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "mobilegen.toml").write_text('[android]\nquantize = "int8"\ncalibration = "data/calib.npz"\n')
    result = invoke("android", model, "-o", tmp_path / "out", "--config", conf / "mobilegen.toml")
    assert_fails(result, 2, f"--calibration {conf / 'data' / 'calib.npz'}: no such file or folder")
    (conf / "mobilegen.toml").write_text('[android]\nquantize = "int8"\ncalibration = "random"\nmin-cosine = 7.0\n')
    result = invoke("android", model, "-o", tmp_path / "out", "--config", conf / "mobilegen.toml")
    assert_fails(result, 2, "--min-cosine must be between 0 and 1")  # "random" was not made a path: its check passed


def _record(**kw: object) -> QuantizationRecord:
    base: dict[str, object] = {
        "mode": "int8", "shipped": "int8", "recipe": {"provider": "nnapi", "activation_type": "uint8", "weight_type": "uint8", "per_channel": False},
        "calibration": {"source": "calib.npz", "count": 40, "trustworthy": True}, "ort_size_before": 1000, "ort_size_after": 300,
        "accuracy": (AccuracyRow("ort", "y", 0.999, 0.05, 1.0),), "golden_atol": 0.05,
    }  # fmt: skip
    return QuantizationRecord(**{**base, **kw})  # type: ignore[arg-type]


def test_a_quantized_model_is_checked_with_the_error_its_gate_measured(model: Path) -> None:
    from mobilegen.artifacts import OnnxModel
    from mobilegen.spec import IOSpec

    onnx_model = OnnxModel(model, IOSpec(inputs=()), 17, "passthrough")
    assert tolerances_of(ShippedModel(("android",), "model", onnx_model), 1e-4, 1e-3) == (1e-4, 1e-3)
    quantized = ShippedModel(("android",), "model", onnx_model, quantization=_record())
    assert tolerances_of(quantized, 1e-4, 1e-3) == (0.05, 1e-3)
    refused = ShippedModel(("ios",), "model", onnx_model, quantization=QuantizationRecord("int8", "fp32", "no Q/DQ builders"))
    assert tolerances_of(refused, 1e-4, 1e-3) == (1e-4, 1e-3)
    assert refused.quantization is not None and refused.quantization.to_dict() == {"mode": "int8", "shipped": "fp32", "reason": "no Q/DQ builders"}
    record = _record().to_dict()
    assert record["size"] == {"ort_before": 1000, "ort_after": 300, "onnx_before": 0, "onnx_after": 0, "ratio": 0.3}
    assert options_record(None) == {"mode": None}


def test_manifest_model_entries_round_trip_their_golden_files() -> None:
    ort = OrtInfo("model/android/model.ort", 6, 17, "Runtime", "all")
    info = ModelInfo(("android",), ("maven",), "model/android/model.onnx", ort, "model/android/required_operators.config",
                     golden=GoldenInfo("golden/android/golden.npz", "golden/android/golden.mgv", 0.05, 1e-3), quantization={"mode": "int8"})  # fmt: skip
    back = ModelInfo.from_json(json.loads(json.dumps(info.to_json())))
    assert back == info
    # a version-2 entry has no golden key: the package's shared golden vectors and tolerances apply
    old = {k: v for k, v in info.to_json().items() if k not in ("golden", "quantization")}
    parsed = ModelInfo.from_json(old)
    assert parsed is not None and parsed.golden is None and parsed.quantization is None
    # a malformed golden entry (escaping the package) makes the entry malformed, not a path verify opens
    assert ModelInfo.from_json({**info.to_json(), "golden": {"npz": "../x.npz", "mgv": "g.mgv", "atol": 1, "rtol": 1}}) is None


def _samples(path: Path, n: int, bad: float | None = None) -> Path:
    import numpy as np

    x = np.random.default_rng(0).random((n, 1, 4), dtype=np.float32)
    if bad is not None:
        x[1, 0, 2] = bad
    np.savez(path, x=x)
    return path


@pytest.mark.parametrize("command", [("convert",), ("android",)], ids=lambda c: c[0])
def test_nan_calibration_is_a_usage_error_naming_file_and_input(model: Path, command: tuple[str, ...]) -> None:
    calib = _samples(model.parent / "calib.npz", 10, bad=float("nan"))
    result, out = _run(model, command, "--quantize", "int8", "--calibration", calib)
    assert_fails(result, 2, f"--calibration {calib}: input 'x' holds 1 NaN/Inf value")  # type: ignore[arg-type]
    assert "scale issue" not in result.stderr  # type: ignore[attr-defined]
    assert not out.exists() and sorted(p.name for p in model.parent.iterdir()) == ["calib.npz", "m.onnx"]


def test_a_calibration_set_too_small_for_the_gate_is_refused_with_the_count_needed(model: Path) -> None:
    calib = _samples(model.parent / "calib.npz", 5)
    result, out = _run(model, ("android",), "--quantize", "int8", "--calibration", calib)
    line = assert_fails(result, 2, "calib.npz holds 5 samples", "would be 1 sample")  # type: ignore[arg-type]
    assert "give at least 8 samples" in result.stderr and "--eval" in result.stderr  # type: ignore[attr-defined]
    assert line.count("\n") == 0 and not out.exists()


def test_int8_build_of_a_graph_with_a_scalar_constant(tmp_path: Path) -> None:
    import numpy as np
    from onnx import numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32), "w")
    half = numpy_helper.from_array(np.array(0.5, np.float32), "half")  # x * 0.5: a 0-d weight
    nodes = [helper.make_node("Mul", ["x", "half"], ["h"]), helper.make_node("MatMul", ["h", "w"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    path = tmp_path / "scaled.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w, half]), opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    result = invoke("convert", path, "-o", tmp_path / "out.ort", "--quantize", "int8", "--calibration", "random", "--json")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    layers = {w["tensor"] for w in json.loads(result.stdout)["quantization"]["accuracy"]["worst_layers"]}
    assert "half" in layers, layers  # the scalar weight has its SQNR too (5 tensors: all shown)


def test_no_onnxruntime_log_lines_from_a_quantized_build(tmp_path: Path) -> None:
    """onnxruntime writes its warnings to file descriptor 2 itself (a review saw five coloured
    "Removing initializer ... It is not used" lines from the quantize stage's load check of a model with an
    unused initializer): a build's stderr carries mobilegen's lines only. Run as a process, since a test
    runner's capture does not see native writes."""
    import subprocess
    import sys

    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    unused = numpy_helper.from_array(np.ones(3, np.float32), "unused")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])], "g", [x], [y], [w, unused])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    done = subprocess.run(
        [sys.executable, "-m", "mobilegen", "android", str(path), "--nnapi", "--quantize", "int8", "--calibration", "random", "-o", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "onnxruntime:" not in done.stderr, done.stderr
