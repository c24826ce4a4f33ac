"""``--quantize`` writes nothing outside -o and $TMPDIR (issue 26 item 9): ORT's symbolic shape inference
(``quant_pre_process``) saves an incomplete inference as ``sym_shape_infer_temp.onnx`` and a ``<uuid>.data``
file into the current folder; the quantizer runs in a folder of its own temp folder, after a success and
after a failure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mobilegen.errors import ConversionError
from mobilegen.quantize import engine
from mobilegen.quantize.calibration import Calibration
from mobilegen.quantize.recipes import Recipe, recipe_for


def _unmergeable(path: Path) -> Path:
    """x[1,a,32] + z[1,b,32] -> MatMul: symbolic shape inference cannot merge a and b (no auto-merge), so it
    stops and saves what it has (a 32x32 weight: big enough to land in the external ``.data`` file)."""
    w = numpy_helper.from_array(np.random.default_rng(0).normal(size=(32, 32)).astype(np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "z"], ["s"]), helper.make_node("MatMul", ["s", "W"], ["y"])],
        "unmergeable",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "a", 32]), helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, "b", 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, None, 32])],
        [w],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _dynamic() -> Recipe:
    recipe = recipe_for("dynamic", ())
    assert isinstance(recipe, Recipe)
    return recipe


_NO_SAMPLES = Calibration({}, {}, "none", 0, True)  # dynamic quantization calibrates nothing


def test_the_model_makes_symbolic_shape_inference_save_into_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The premise: ORT itself writes both files into the current folder for this model."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    src = _unmergeable(tmp_path / "m.onnx")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    with pytest.raises(Exception, match="Incomplete symbolic shape inference"):
        quant_pre_process(str(src), str(tmp_path / "pre.onnx"))
    names = sorted(p.name for p in cwd.iterdir())
    assert "sym_shape_infer_temp.onnx" in names and any(n.endswith(".data") for n in names), names


def test_dynamic_quantization_leaves_the_current_folder_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _unmergeable(tmp_path / "m.onnx")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    q = engine.quantize(Path("..") / "m.onnx", _dynamic(), _NO_SAMPLES, tmp_path / "q.onnx")  # a relative source, too
    assert q.quantized_nodes >= 1
    assert list(cwd.iterdir()) == []
    assert Path.cwd() == cwd


def test_a_failed_quantization_leaves_the_current_folder_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _unmergeable(tmp_path / "m.onnx")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)

    def broken(pre: Path, out: Path, recipe: Recipe) -> None:
        assert (Path.cwd() / "sym_shape_infer_temp.onnx").is_file()  # the pre-processing did save it, elsewhere
        raise RuntimeError("quantize_dynamic failed")

    monkeypatch.setattr(engine, "_dynamic", broken)
    with pytest.raises(ConversionError, match="quantize_dynamic failed"):
        engine.quantize(src, _dynamic(), _NO_SAMPLES, tmp_path / "q.onnx")
    assert list(cwd.iterdir()) == []
    assert Path.cwd() == cwd
    assert not (tmp_path / "q.onnx").exists()


def test_a_build_from_a_temp_cwd_leaves_it_empty_after_success_and_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole CLI (``--quantize dynamic``): nothing outside -o and $TMPDIR, also when the gate fails."""
    from cli_helpers import invoke

    model = _unmergeable(tmp_path / "m.onnx")
    tmpdir = tmp_path / "TMPDIR"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    monkeypatch.setattr("tempfile.tempdir", str(tmpdir))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    ok = invoke("android", model, "--quantize", "dynamic", "-o", tmp_path / "out")
    assert ok.exit_code == 0, ok.stderr
    assert list(cwd.iterdir()) == [] and list(tmpdir.iterdir()) == []
    failed = invoke("android", model, "--quantize", "dynamic", "--min-cosine", "1.0", "-o", tmp_path / "out2")
    assert failed.exit_code == 5 and "cosine" in failed.stderr, failed.stderr  # the accuracy gate, after the quantizer ran
    assert list(cwd.iterdir()) == [] and list(tmpdir.iterdir()) == [] and not (tmp_path / "out2").exists()
