"""NNAPI's quantization: uint8 QDQ on the node units NNAPI takes, no dynamic, no fp16; and what the
model needs before an int8 recipe quantizes it (:func:`preprocess`).

ORT source paths are under https://github.com/microsoft/onnxruntime (../shared/research/mobile_next.md §2–§3).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen.providers.quantization import EIGHT_BIT_RULES, QuantizeMode, Recipe, Refusal, only_units

if TYPE_CHECKING:
    from mobilegen.providers.base import ExecutionProvider

_HELPERS = "onnxruntime/core/providers/nnapi/nnapi_builtin/builders/op_support_helpers.cc"
_FACTORY = "onnxruntime/core/providers/nnapi/nnapi_builtin/builders/op_builder_factory.cc"
_REFUSES_UNITS = "nnapi_builtin/builders/impl/base_op_builder.cc IsNodeUnitTypeSupported"


# Which activations NNAPI's int8 recipe leaves float: its units take uint8 per-tensor activations only (no
# 16-bit activations, no per-channel activations), so a tensor 8 bits cannot hold stays float, NNAPI running
# the float op between a DequantizeLinear and a QuantizeLinear. Measured on all-MiniLM-L6-v2 (32 real
# sentences, 12 held out; docs/quantization.md): everything quantized, sentence-embedding cosine 0.31;
# the attention-mask Adds alone quantized 0.21, the decomposed LayerNorms alone 0.34, the residual Adds
# alone 0.77, the Gemms alone 0.89 (the FFN output reaches 194 where its median is 0.14: 0.2 of a step).
ACTIVATIONS = EIGHT_BIT_RULES

def recipe(provider: ExecutionProvider, mode: QuantizeMode) -> Recipe | Refusal:
    if mode == "int8":
        ops, only = only_units(provider, "uint8", _REFUSES_UNITS)
        return Recipe(
            "int8", "nnapi", "uint8", "uint8", False, ops,
            "NNAPI's quantized node units take uint8 activations and outputs; an int8 weight only inside "
            "Conv/MatMul/Gemm units, per-channel only for Conv on Android API 29+, and s8 activations fall "
            f"back to the CPU ({_HELPERS}, IsQuantizedIOSupported): uint8 per-tensor runs on every "
            f"NNAPI device; {only}",
            ACTIVATIONS,
        )  # fmt: skip
    if mode == "dynamic":
        return Refusal(
            "dynamic", "nnapi",
            "NNAPI has no builder for DynamicQuantizeLinear, MatMulInteger or ConvInteger, the ops dynamic "
            f"quantization produces ({_FACTORY}): they would all run on the CPU; use --quantize int8",
        )  # fmt: skip
    return Refusal(
        "fp16", "nnapi",
        "the NNAPI execution provider takes float32 tensors only (its op checkers refuse float16 inputs, "
        f"{_HELPERS} and impl/base_op_builder.cc); it ships fp32 (NNAPI's own USE_FP16 flag relaxes "
        "fp32 compute to fp16)",
    )  # fmt: skip


def preprocess(model: Path, work: Path, recipe: Recipe) -> Path:
    """An int8 model for NNAPI: Flatten as Reshape, then MaxPool out of the QDQ units (opset 22)."""
    if recipe.mode != "int8":
        return model
    return _maxpool_out_of_units(_flatten_as_reshape(model, work), work)


# ORT's QDQ selectors group DQ -> MaxPool -> Q into a node unit only for MaxPool's opset-12 schema
# (opsets 12..21: qdq_transformer/selectors_actions/shared/utils.cc), and NNAPI's pool builder takes no
# quantized MaxPool unit (nnapi_builtin/builders/impl/pool_op_builder.cc: AveragePool only), so such a
# unit splits the NNAPI partition. From opset 22 on no unit forms and NNAPI takes the DQ, the float
# MaxPool and the Q one by one: the NNAPI model is converted to opset 22 (onnx's version converter).
MAXPOOL_UNIT_OPSETS = range(12, 22)
NO_MAXPOOL_UNIT_OPSET = 22


def _flatten_as_reshape(pre: Path, work: Path) -> Path:
    """``pre`` with every Flatten it can rewrite as a Reshape (NNAPI takes a quantized Reshape unit, not a
    Flatten one: :mod:`mobilegen.passes.flatten_reshape`)."""
    import onnx

    from mobilegen.passes.flatten_reshape import apply

    model = onnx.load_model(str(pre), load_external_data=True)
    if not apply(model):
        return pre
    out = work / "pre-reshape.onnx"
    onnx.save_model(model, str(out))
    return out


def _maxpool_out_of_units(pre: Path, work: Path) -> Path:
    """``pre``, at opset 22 when it has a MaxPool in the opsets whose QDQ units NNAPI refuses; as it is
    when it has none, or when the version converter cannot take the model."""
    import onnx
    from onnx import version_converter

    model = onnx.load_model(str(pre), load_external_data=True)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset not in MAXPOOL_UNIT_OPSETS or not any(n.op_type == "MaxPool" for n in model.graph.node):
        return pre
    try:
        converted = version_converter.convert_version(model, NO_MAXPOOL_UNIT_OPSET)
    except Exception:  # noqa: BLE001 — an op without an adapter: quantize as it is (the coverage says what splits)
        logging.getLogger(__name__).debug("opset conversion failed", exc_info=True)
        return pre
    out = work / "pre-opset22.onnx"
    onnx.save_model(converted, str(out))
    return out
