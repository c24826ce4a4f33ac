"""recipe_for: one verdict per provider and mode; QuantizeOptions.check; a light package import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mobilegen.errors import UsageError
from mobilegen.quantize import QuantizeOptions, Recipe, Refusal, recipe_for


def test_coreml_refuses_int8_and_dynamic_and_takes_fp16() -> None:
    for mode in ("int8", "dynamic"):
        r = recipe_for(mode, ("coreml",))
        assert isinstance(r, Refusal) and r.provider == "coreml" and r.mode == mode
        assert "no QuantizeLinear/DequantizeLinear builders" in r.reason and "ships fp32" in r.reason
        assert "onnxruntime/core/providers/coreml/" in r.reason
    fp16 = recipe_for("fp16", ("coreml",))
    assert isinstance(fp16, Recipe) and (fp16.activation_type, fp16.weight_type) == ("float16", "float16")


def test_nnapi_int8_is_uint8_per_tensor() -> None:
    r = recipe_for("int8", ("nnapi", "xnnpack"))
    assert isinstance(r, Recipe)
    assert (r.provider, r.activation_type, r.weight_type, r.per_channel) == ("nnapi", "uint8", "uint8", False)
    assert "op_support_helpers.cc" in r.reason and "API 29" in r.reason


def test_nnapi_refuses_dynamic_and_fp16() -> None:
    dyn = recipe_for("dynamic", ("nnapi", "xnnpack"))
    assert isinstance(dyn, Refusal) and "MatMulInteger" in dyn.reason and "op_builder_factory.cc" in dyn.reason
    fp16 = recipe_for("fp16", ("nnapi",))
    assert isinstance(fp16, Refusal) and "float32 tensors only" in fp16.reason


def test_the_first_provider_decides() -> None:
    xnn_first = recipe_for("dynamic", ("xnnpack", "nnapi"))
    assert isinstance(xnn_first, Recipe) and xnn_first.provider == "xnnpack"


@pytest.mark.parametrize("chain", [("xnnpack",), ()])
def test_xnnpack_and_cpu_int8_and_dynamic(chain: tuple[str, ...]) -> None:
    r = recipe_for("int8", chain)
    assert isinstance(r, Recipe)
    assert (r.provider, r.activation_type, r.weight_type, r.per_channel) == (chain[0] if chain else "cpu", "int8", "int8", True)
    assert "the CPU EP's QDQ kernels take" in r.reason
    assert ("xnnpack/detail/utils.cc" in r.reason) == bool(chain)  # the provider's own source, in its own recipe
    dyn = recipe_for("dynamic", chain)
    assert isinstance(dyn, Recipe) and dyn.weight_type == "int8" and "MatMul" in dyn.op_types
    assert ("leaves them to the CPU EP" in dyn.reason) == bool(chain)
    assert isinstance(recipe_for("fp16", chain), Recipe)


def test_qnn_int8_and_dynamic() -> None:
    r = recipe_for("int8", ("qnn", "nnapi"))
    assert isinstance(r, Recipe) and (r.activation_type, r.weight_type) == ("uint8", "uint8") and "get_qnn_qdq_config" in r.reason
    assert isinstance(recipe_for("dynamic", ("qnn",)), Refusal)


def test_qnn_fp16_by_htp_arch() -> None:
    for arch in ("73", "75", "v75"):
        assert isinstance(recipe_for("fp16", ("qnn",), qnn_htp_arch=arch), Recipe)
    for arch in ("68", "69", None):
        r = recipe_for("fp16", ("qnn",), qnn_htp_arch=arch)
        assert isinstance(r, Refusal) and "--qnn-htp-arch" in r.reason and "v73" in r.reason
    with pytest.raises(UsageError, match="unknown QNN HTP arch '70'"):
        recipe_for("fp16", ("qnn",), qnn_htp_arch="70")


def test_unknown_provider() -> None:
    with pytest.raises(UsageError, match="no quantization recipe for provider 'webgpu'"):
        recipe_for("int8", ("webgpu",))


def test_records_are_json() -> None:
    import json

    r = recipe_for("int8", ("nnapi",))
    assert json.loads(json.dumps(r.record()))["activation_type"] == "uint8"
    assert json.loads(json.dumps(recipe_for("int8", ("coreml",)).record()))["refused"] is True


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        (QuantizeOptions(mode="int8"), "--quantize int8 needs calibration data"),
        (QuantizeOptions(calibration="random"), "--calibration has no effect without --quantize"),
        (QuantizeOptions(method="entropy"), "--calibration-method has no effect without --quantize"),
        (QuantizeOptions(eval=Path("e.npz")), "--eval has no effect without --quantize"),
        (QuantizeOptions(mode="dynamic", method="entropy"), "--calibration-method has no effect with --quantize dynamic"),
        (QuantizeOptions(mode="dynamic", min_cosine=1.5), "--min-cosine must be between 0 and 1, not 1.5"),
        (QuantizeOptions(mode="fp16", min_top1=float("nan")), "--min-top1 must be between 0 and 1, not nan"),
        (QuantizeOptions(mode="int8", calibration="missing.npz"), "--calibration missing.npz: no such file or folder"),
        (QuantizeOptions(mode="int4"), "unknown --quantize mode 'int4'"),  # type: ignore[arg-type]
    ],
)
def test_check_refuses_bad_flags(opts: QuantizeOptions, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as info:
        opts.check()
    assert info.value.message == message and info.value.exit_code == 2 and info.value.hint


def test_check_files(tmp_path: Path) -> None:
    txt = tmp_path / "calib.txt"
    txt.write_text("x")
    with pytest.raises(UsageError, match="is not an .npz file"):
        QuantizeOptions(mode="int8", calibration=str(txt)).check()
    with pytest.raises(UsageError, match="--eval .*: no such file"):
        QuantizeOptions(mode="int8", calibration="random", eval=tmp_path / "e.npz").check()
    QuantizeOptions(mode="int8", calibration="random").check()
    QuantizeOptions(mode="fp16").check()
    QuantizeOptions().check()


def test_import_is_light() -> None:
    code = "import sys, mobilegen.quantize; print([m for m in ('numpy', 'onnx', 'onnxruntime', 'torch') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
