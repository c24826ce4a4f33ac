"""QNN's quantization: ``get_qnn_qdq_config``'s uint8 QDQ (after ``qnn_preprocess_model``), no dynamic,
fp16 on HTP v73+ only.

ORT source paths are under https://github.com/microsoft/onnxruntime (../shared/research/mobile_next.md §2–§3).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen.errors import UsageError
from mobilegen.providers.quantization import EIGHT_BIT_RULES, FLOAT16_SOURCE, QuantizeMode, Recipe, Refusal

if TYPE_CHECKING:
    from mobilegen.providers.base import SettingValue, StaticQuantization

_CONFIG = "onnxruntime/python/tools/quantization/execution_providers/qnn/quant_config.py"
_FACTORY = "onnxruntime/core/providers/qnn/builder/op_builder_factory.cc"


def recipe(mode: QuantizeMode, settings: Mapping[str, SettingValue | None]) -> Recipe | Refusal:
    from mobilegen.providers.qnn.facts import FP16_MIN_ARCH

    if mode == "int8":
        return Recipe(
            "int8", "qnn", "uint8", "uint8", False, (),
            "get_qnn_qdq_config's defaults (QUInt8 activations and weights, per-tensor) for the HTP, whose ops "
            f"take uint8/uint16 QDQ ({_CONFIG}; QNN-ExecutionProvider.md)",
            EIGHT_BIT_RULES,
        )  # fmt: skip
    if mode == "dynamic":
        return Refusal(
            "dynamic", "qnn",
            "QNN has no builder for DynamicQuantizeLinear, MatMulInteger or ConvInteger "
            f"({_FACTORY}); the HTP runs static QDQ models: use --quantize int8",
        )  # fmt: skip
    given = settings.get("qnn_htp_arch")
    arch = _arch(None if given is None else str(given))
    if arch is None or arch < FP16_MIN_ARCH:
        said = f"HTP v{arch}" if arch is not None else "an unspecified HTP"
        return Refusal(
            "fp16", "qnn",
            f"fp16 on the QNN HTP needs Hexagon v{FP16_MIN_ARCH}+ ({said}; maintainer in "
            f"microsoft/onnxruntime#21848): give --qnn-htp-arch {FP16_MIN_ARCH} or newer for such devices, or use --quantize int8",
        )  # fmt: skip
    return Recipe(
        "fp16", "qnn", "float16", "float16", False, (),
        f"HTP v{arch} computes in fp16 (v73+, microsoft/onnxruntime#21848); weights stored as float16, "
        f"model inputs and outputs stay float32 ({FLOAT16_SOURCE})",
    )  # fmt: skip


def _arch(text: str | None) -> int | None:
    from mobilegen.providers.qnn.facts import HTP_ARCHS

    if text is None:
        return None
    digits = text.lower().removeprefix("v")
    if digits not in HTP_ARCHS:
        raise UsageError(f"unknown QNN HTP arch {text!r}", hint="use one of " + ", ".join(HTP_ARCHS))
    return int(digits)


def preprocess(model: Path, work: Path, recipe: Recipe) -> Path:
    """``qnn_preprocess_model`` (layer-norm fusion and the like) before an int8 recipe; ``model`` itself
    when the pass changes nothing."""
    if recipe.mode != "int8":
        return model
    import onnx
    from onnxruntime.quantization.execution_providers.qnn import qnn_preprocess_model

    # qnn_preprocess_model (1.31) fails on a model with metadata_props (save_and_reload_optimize_model
    # updates a dict from the proto's repeated field): it gets a copy without them.
    bare = onnx.load_model(str(model), load_external_data=True)
    del bare.metadata_props[:]
    onnx.save_model(bare, str(work / "pre-bare.onnx"))
    qnn_pre = work / "pre-qnn.onnx"
    if qnn_preprocess_model(str(work / "pre-bare.onnx"), str(qnn_pre), fuse_layernorm=True):
        return qnn_pre
    return model


def quantize_static(model: Path, out: Path, recipe: Recipe, static: StaticQuantization) -> None:
    """``get_qnn_qdq_config`` + ``quantize``, spelled out with the quantizer's calibration cache."""
    from onnxruntime.quantization import quantize_static as ort_quantize_static
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    config = get_qnn_qdq_config(
        str(model),
        static.reader,
        calibrate_method=static.calibrate_method,
        activation_type=static.activation_type,
        weight_type=static.weight_type,
        per_channel=recipe.per_channel,
        op_types_to_quantize=list(recipe.op_types) or None,
        calibration_providers=["CPUExecutionProvider"],
    )
    # onnxruntime.quantization.quantize(pre, out, config) spelled out: it has no calibration cache.
    ort_quantize_static(
        str(model),
        str(out),
        config.calibration_data_reader,
        calibration_cache_path=static.cache,
        calibrate_method=config.calibrate_method,
        quant_format=config.quant_format,
        activation_type=config.activation_type,
        weight_type=config.weight_type,
        op_types_to_quantize=config.op_types_to_quantize,
        nodes_to_quantize=config.nodes_to_quantize,
        nodes_to_exclude=list(dict.fromkeys([*(config.nodes_to_exclude or ()), *static.exclude])) or None,
        per_channel=config.per_channel,
        reduce_range=config.reduce_range,
        use_external_data_format=config.use_external_data_format,
        calibration_providers=config.calibration_providers,
        extra_options=config.extra_options,
    )
