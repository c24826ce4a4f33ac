"""Which quantization each execution provider takes, with the source of every verdict.

The first provider of a target's chain decides (it is the one the app asks first; the fix stage uses the
same rule). ORT source paths are under https://github.com/microsoft/onnxruntime; facts also in
../shared/research/mobile_next.md §2–§3.

| provider | int8 (static QDQ) | dynamic | fp16 |
|---|---|---|---|
| nnapi | u8 activations, u8 weights, per-tensor; only the ops NNAPI takes as QDQ units | refused | refused (fp32 tensors only) |
| xnnpack | s8 activations, s8 weights, per-channel Conv weights; only the ops XNNPACK takes as QDQ units | s8 weights | fp16 weights (casts where no fp16 kernel) |
| cpu | as xnnpack, every op onnxruntime.quantization quantizes by default | s8 weights | as xnnpack |
| qnn | ``get_qnn_qdq_config``: u8 activations, u8 weights | refused | HTP v73+ only |
| coreml | refused (no Q/DQ builders) | refused | fp16 weights (MLProgram) |

An int8 recipe for NNAPI or XNNPACK quantizes only the op types whose QDQ node units that provider takes
with the recipe's types (its ``QdqTable``: mobilegen/providers/{nnapi,xnnpack}/qdq.py ``UNIT_OPS``), plus
the Relu/Clip the quantizer folds into the Q before them: a unit the provider refuses moves its DQs, op and
Q to the CPU and splits the partition, where the float op between a DQ and a Q may run on the provider.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mobilegen.artifacts import JSONValue
from mobilegen.errors import UsageError
from mobilegen.providers.qnn import FP16_MIN_ARCH, HTP_ARCHS
from mobilegen.quantize.options import QuantizeMode

if TYPE_CHECKING:
    from mobilegen.coverage.rules import EPTable

PROVIDERS = ("nnapi", "xnnpack", "qnn", "cpu", "coreml")
# The Hexagon generations --qnn-htp-arch takes, and the first computing fp16 (the QNN provider's own).
QNN_HTP_ARCHS = HTP_ARCHS
QNN_FP16_MIN_ARCH = FP16_MIN_ARCH

_NNAPI_HELPERS = "onnxruntime/core/providers/nnapi/nnapi_builtin/builders/op_support_helpers.cc"
_NNAPI_FACTORY = "onnxruntime/core/providers/nnapi/nnapi_builtin/builders/op_builder_factory.cc"
_XNN_UTILS = "onnxruntime/core/providers/xnnpack/detail/utils.cc"
_QNN_CONFIG = "onnxruntime/python/tools/quantization/execution_providers/qnn/quant_config.py"
_QNN_FACTORY = "onnxruntime/core/providers/qnn/builder/op_builder_factory.cc"
_COREML_BUILDERS = "onnxruntime/core/providers/coreml/builders/op_builder_factory.cc"
_FLOAT16 = "onnxruntime/python/tools/transformers/float16.py"


@dataclass(frozen=True)
class Recipe:
    """What one target's model gets: the types, the granularity, the ops, and why."""

    mode: QuantizeMode
    provider: str  # the provider the recipe is for
    activation_type: str  # "uint8", "int8", "uint16", "float16"
    weight_type: str
    per_channel: bool  # per-channel (output channel) Conv weights; other weights per-tensor
    op_types: tuple[str, ...]  # () = onnxruntime.quantization's default set
    reason: str  # why, with the ORT source path

    def record(self) -> dict[str, JSONValue]:
        return {
            "mode": self.mode,
            "provider": self.provider,
            "activation_type": self.activation_type,
            "weight_type": self.weight_type,
            "per_channel": self.per_channel,
            "op_types": list(self.op_types),
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Refusal:
    """The target's provider cannot take the mode: the target ships its fp32 model, and says why."""

    mode: QuantizeMode
    provider: str
    reason: str
    # a judged recipe refused (mobilegen.quantize.judged): the coverage that refused it (fp32, recipe, narrowed)
    coverage: dict[str, JSONValue] | None = None

    def record(self) -> dict[str, JSONValue]:
        return {"mode": self.mode, "provider": self.provider, "refused": True, "reason": self.reason}


def recipe_for(mode: QuantizeMode, providers: Sequence[str], *, qnn_htp_arch: str | None = None) -> Recipe | Refusal:
    """The recipe for a target whose provider chain is ``providers`` (in order; () is the CPU only)."""
    chain = [p.lower() for p in providers]
    unknown = [p for p in chain if p not in PROVIDERS]
    if unknown:
        raise UsageError(f"no quantization recipe for provider {unknown[0]!r}", hint="known: " + ", ".join(PROVIDERS))
    provider = chain[0] if chain else "cpu"
    if mode == "int8":
        return _int8(provider)
    if mode == "dynamic":
        return _dynamic(provider)
    if mode == "fp16":
        return _fp16(provider, qnn_htp_arch)
    raise UsageError(f"unknown --quantize mode {mode!r}", hint="use int8, dynamic or fp16")


def _coreml_refusal(mode: QuantizeMode) -> Refusal:
    return Refusal(
        mode,
        "coreml",
        "the CoreML execution provider has no QuantizeLinear/DequantizeLinear builders, so a "
        f"{'QDQ' if mode == 'int8' else 'dynamically quantized'} model would split into many CoreML partitions "
        f"with the rest on the CPU ({_COREML_BUILDERS}); it ships fp32, which MLProgram computes in fp16 on the "
        "GPU/Neural Engine",
    )


# onnxruntime.quantization's QDQRemovableActivation (quantization/operators/activation.py): a Relu/Clip whose
# input is quantized is removed and its range folded into the Q before it (asymmetric activations, the
# input read by that node only), so it forms no unit; the int8 recipes quantize them for that.
REMOVABLE = ("Relu", "Clip")
# Rules of a provider's QDQ table that refuse every unit a calibrated recipe makes: xnnpack.qdq.resize — the
# EP claims the unit, then the fused Resize finds no kernel (detail/utils.cc); nnapi.qdq.fixed_output — NNAPI
# wants Softmax/Sigmoid outputs at scale 1/256, zero point 0 (softmax_op_builder.cc), while calibration gives
# the output the scale of its measured range (a Softmax unit quantized anyway split the task CNN's partition).
NEVER_TAKEN_RULES = frozenset({"xnnpack.qdq.resize", "nnapi.qdq.fixed_output"})
_TYPE_CODES = {"uint8": 2, "int8": 3}  # onnx.TensorProto codes, as QdqOp.types holds them


@dataclass(frozen=True)
class UnitOps:
    """The op types of a provider's QDQ table the recipe quantizes, and those it leaves float (op, why)."""

    taken: tuple[str, ...]
    left_float: tuple[tuple[str, str], ...]


def qdq_table(provider: str) -> EPTable | None:
    """The provider's coverage table with its QDQ node-unit rules (None: it has none modelled here)."""
    if provider == "nnapi":
        from mobilegen.providers.nnapi.qdq import TABLE as NNAPI

        return NNAPI
    if provider == "xnnpack":
        from mobilegen.providers.xnnpack.qdq import TABLE as XNNPACK

        return XNNPACK
    return None


def unit_ops(provider: str, activation_type: str) -> UnitOps:
    """The QDQ unit ops ``provider`` takes with ``activation_type`` activations, read from its table."""
    table = qdq_table(provider)
    if table is None or table.qdq is None:
        return UnitOps((), ())
    code = _TYPE_CODES[activation_type]
    taken: list[str] = []
    left: list[tuple[str, str]] = []
    for op, spec in table.qdq.units.items():
        never = [r for r in spec.rules if r in NEVER_TAKEN_RULES]
        if never:
            left.append((op, f"rule {never[0]} ({table.qdq.rules[never[0]].summary}) fails for every such unit ({spec.source})"))
        elif code not in spec.input0_dtypes:
            left.append((op, f"its QDQ unit takes {'/'.join(_TYPE_NAMES[t] for t in spec.input0_dtypes)} only ({spec.source})"))
        else:
            taken.append(op)
    return UnitOps(tuple(taken), tuple(left))


_TYPE_NAMES = {2: "uint8", 3: "int8", 4: "uint16", 5: "int16"}


_REFUSES_UNITS = {  # provider -> its name, and where it refuses the units of other ops
    "nnapi": ("NNAPI", "nnapi_builtin/builders/impl/base_op_builder.cc IsNodeUnitTypeSupported"),
    "xnnpack": ("XNNPACK", "xnnpack/detail/node_support_checker.cc"),
}


def _only_units(provider: str, activation_type: str) -> tuple[tuple[str, ...], str]:
    """The recipe's op types and the sentence saying what stays float and why."""
    ops = unit_ops(provider, activation_type)
    name, where = _REFUSES_UNITS[provider]
    left = "; ".join(f"{op}: {why}" for op, why in ops.left_float)
    text = (
        f"quantizes only {', '.join(ops.taken)} (the QDQ node units {name} takes with these types: "
        f"mobilegen/providers/{provider}/qdq.py UNIT_OPS) and {'/'.join(REMOVABLE)} (folded into the Q before "
        f"them); every other op stays float, since {name} refuses its QDQ unit with the unit's DQs and Q ({where}), "
        "which splits the partition"
        + (f"; left float too: {left}" if left else "")
    )
    return (*ops.taken, *REMOVABLE), text


def _int8(provider: str) -> Recipe | Refusal:
    if provider == "coreml":
        return _coreml_refusal("int8")
    if provider == "nnapi":
        ops, only = _only_units("nnapi", "uint8")
        return Recipe(
            "int8", "nnapi", "uint8", "uint8", False, ops,
            "NNAPI's quantized node units take uint8 activations and outputs; an int8 weight only inside "
            "Conv/MatMul/Gemm units, per-channel only for Conv on Android API 29+, and s8 activations fall "
            f"back to the CPU ({_NNAPI_HELPERS}, IsQuantizedIOSupported): uint8 per-tensor runs on every "
            f"NNAPI device; {only}",
        )  # fmt: skip
    if provider == "qnn":
        return Recipe(
            "int8", "qnn", "uint8", "uint8", False, (),
            "get_qnn_qdq_config's defaults (QUInt8 activations and weights, per-tensor) for the HTP, whose ops "
            f"take uint8/uint16 QDQ ({_QNN_CONFIG}; QNN-ExecutionProvider.md)",
        )  # fmt: skip
    base = (
        "XNNPACK takes int8 QDQ with per-channel symmetric int8 weights (xnn_datatype_qcint8, zero point 0) "
        f"and per-tensor int8/uint8 activations ({_XNN_UTILS}, GetDtypeInXnnpack); the CPU EP's QDQ "
        "kernels take the same; per-channel (Conv weights only) keeps depthwise convolutions accurate"
    )
    if provider == "cpu":
        return Recipe("int8", "cpu", "int8", "int8", True, (), base + "; the CPU EP takes every QDQ op: "
                      "onnxruntime.quantization's default op set")  # fmt: skip
    ops, only = _only_units("xnnpack", "int8")
    return Recipe(
        "int8", provider, "int8", "int8", True, ops,
        f"{base}; {only}; Gemm/MatMul stay float: XNNPACK's kernels take a float A only (math/gemm.cc, "
        "math/matmul.cc) and run them float, where their QDQ units would go to the CPU",
    )  # fmt: skip


def _dynamic(provider: str) -> Recipe | Refusal:
    if provider == "coreml":
        return _coreml_refusal("dynamic")
    if provider == "nnapi":
        return Refusal(
            "dynamic", "nnapi",
            "NNAPI has no builder for DynamicQuantizeLinear, MatMulInteger or ConvInteger, the ops dynamic "
            f"quantization produces ({_NNAPI_FACTORY}): they would all run on the CPU; use --quantize int8",
        )  # fmt: skip
    if provider == "qnn":
        return Refusal(
            "dynamic", "qnn",
            "QNN has no builder for DynamicQuantizeLinear, MatMulInteger or ConvInteger "
            f"({_QNN_FACTORY}); the HTP runs static QDQ models: use --quantize int8",
        )  # fmt: skip
    return Recipe(
        "dynamic", provider, "uint8", "int8", False, ("MatMul", "Gemm", "Attention", "LSTM", "GRU"),
        "dynamic quantization (int8 weights, activations quantized at run time) suits transformer MatMuls on "
        "the CPU kernels (MatMulInteger, DynamicQuantizeMatMul); XNNPACK leaves them to the CPU EP",
    )  # fmt: skip


def _fp16(provider: str, qnn_htp_arch: str | None) -> Recipe | Refusal:
    if provider == "nnapi":
        return Refusal(
            "fp16", "nnapi",
            "the NNAPI execution provider takes float32 tensors only (its op checkers refuse float16 inputs, "
            f"{_NNAPI_HELPERS} and impl/base_op_builder.cc); it ships fp32 (NNAPI's own USE_FP16 flag relaxes "
            "fp32 compute to fp16)",
        )  # fmt: skip
    if provider == "qnn":
        arch = _arch(qnn_htp_arch)
        if arch is None or arch < QNN_FP16_MIN_ARCH:
            said = f"HTP v{arch}" if arch is not None else "an unspecified HTP"
            return Refusal(
                "fp16", "qnn",
                f"fp16 on the QNN HTP needs Hexagon v{QNN_FP16_MIN_ARCH}+ ({said}; maintainer in "
                f"microsoft/onnxruntime#21848): give --qnn-htp-arch {QNN_FP16_MIN_ARCH} or newer for such devices, or use --quantize int8",
            )  # fmt: skip
        return Recipe(
            "fp16", "qnn", "float16", "float16", False, (),
            f"HTP v{arch} computes in fp16 (v73+, microsoft/onnxruntime#21848); weights stored as float16, "
            f"model inputs and outputs stay float32 ({_FLOAT16})",
        )  # fmt: skip
    if provider == "coreml":
        return Recipe(
            "fp16", "coreml", "float16", "float16", False, (),
            "CoreML's MLProgram format takes float16 tensors and computes in fp16 on the GPU/Neural Engine; "
            f"weights stored as float16, inputs and outputs stay float32 ({_FLOAT16})",
        )  # fmt: skip
    return Recipe(
        "fp16", provider, "float16", "float16", False, (),
        "weights stored as float16 (half the download); onnxruntime inserts casts around ops with no fp16 "
        f"kernel on this provider, so those compute in fp32; inputs and outputs stay float32 ({_FLOAT16})",
    )  # fmt: skip


def _arch(text: str | None) -> int | None:
    if text is None:
        return None
    digits = text.lower().removeprefix("v")
    if digits not in QNN_HTP_ARCHS:
        raise UsageError(f"unknown QNN HTP arch {text!r}", hint="use one of " + ", ".join(QNN_HTP_ARCHS))
    return int(digits)
