"""What a provider's quantization hooks return, and the pieces providers share to build it.

:meth:`ExecutionProvider.recipe <mobilegen.providers.base.ExecutionProvider.recipe>` answers, for one
``--quantize`` mode, a :class:`Recipe` (the types, the granularity, the op types, and why) or a
:class:`Refusal` (the target ships fp32, and why). Each built-in provider keeps its answers in
``providers/<name>/recipe.py``; :func:`mobilegen.quantize.recipe_for` asks the first provider of a
target's chain, and takes :func:`cpu_recipe` when the chain is empty.

Each built-in provider's answers, with the ORT sources of its reasons, are in its ``recipe.py``; the
table of every provider's int8 / dynamic / fp16 answer for users is docs/quantization.md. An int8 recipe
that quantizes only the op types whose QDQ node units its provider takes reads them from the provider's
QDQ table (:func:`unit_ops`, :func:`only_units`), plus the Relu/Clip the quantizer folds into the Q before
them (:data:`REMOVABLE`).

Nothing here imports onnx or numpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

from mobilegen.infra.json_types import JSONValue

if TYPE_CHECKING:
    from mobilegen.providers.base import ExecutionProvider

QuantizeMode = Literal["int8", "dynamic", "fp16"]
MODES: tuple[str, ...] = get_args(QuantizeMode)

FLOAT16_SOURCE = "onnxruntime/python/tools/transformers/float16.py"


@dataclass(frozen=True)
class ActivationRules:
    """Which activations an int8 recipe leaves float, judged on the calibration samples (rules as data; the
    measurement: :mod:`mobilegen.quantize.resolution`). An 8-bit per-tensor activation has 255 steps over
    its calibrated range: a tensor that reaches ``sentinel`` in magnitude holds a sentinel, not a value
    (an attention mask's -3.4e38, -1e9 or -inf added to the scores; a decomposed LayerNorm's squared
    deviations of an outlier row), and one step of its range swallows every ordinary value of it and of
    what is computed from it: the ops that would quantize it are always left float. A tensor whose typical
    |value| (the median of its non-zero magnitudes) is under a few steps of its range (a transformer's
    outlier features: residual sums, the FFN output, LayerNorm internals) loses most of its information;
    when the quantized model fails the accuracy gate, the ops that would quantize such tensors are left
    float, the coarsest first: the least steps in ``ladder`` (median / step) that passes."""

    sentinel: float
    ladder: tuple[float, ...]
    sentinel_reason: str
    coarse_reason: str
    # A Div's (or Reciprocal's) divisor whose smallest calibrated magnitude is ``divisor_spread`` times
    # under its typical one: the private chain computing it (a decomposed LayerNorm's square, mean and
    # +eps) is always left float (0: no such rule). Measured: mobilegen.quantize.resolution.divisor_ops.
    divisor_spread: float = 0.0
    divisor_reason: str = ""

    def record(self) -> dict[str, JSONValue]:
        out: dict[str, JSONValue] = {"sentinel": self.sentinel, "ladder": list(self.ladder), "sentinel_reason": self.sentinel_reason, "coarse_reason": self.coarse_reason}
        if self.divisor_spread:
            out |= {"divisor_spread": self.divisor_spread, "divisor_reason": self.divisor_reason}
        return out


# The rules every 8-bit per-tensor activation recipe shares (measured on all-MiniLM-L6-v2 with a uint8
# per-tensor provider recipe, 32 real sentences: quantizing the attention-mask Add alone takes the sentence-embedding cosine to 0.21, the
# decomposed LayerNorms alone to 0.34, the residual Adds alone to 0.77; docs/quantization.md).
EIGHT_BIT_RULES = ActivationRules(
    sentinel=1e4,
    ladder=(1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0),
    sentinel_reason=(
        "its calibrated range reaches |x| >= 1e4: a sentinel (an attention mask's -3.4e38/-1e9/-inf, a "
        "LayerNorm's squared outlier deviation), not a value; one 8-bit step of that range is wider than "
        "every ordinary value of the tensor, so quantizing it erases them (and, for a masked Add, the scores)"
    ),
    coarse_reason=(
        "its typical |value| is under {steps:g} steps of its 8-bit per-tensor range (outlier features: "
        "residual sums, FFN outputs, LayerNorm internals); left float, the coarsest first, until the accuracy gate passed"
    ),
    # Measured on a ViT (transformers ViTForImageClassification, benchmarks/architectures.py, random init):
    # the CLS row of the residual stream is ~25x smaller than the patch rows, so its LayerNorm variance
    # (0.0008; the tensor's range reaches 1.5) is under one 8-bit step of the quantized square and +eps:
    # it rounds to 0, and the Div then computes deviation / sqrt(0 + 1e-12): the CLS row ends ~4500x too
    # large (SQNR -73 dB at the first LayerNorm), the logits' cosine 0.66; with the chain float 0.83.
    divisor_spread=4.0,
    divisor_reason=(
        "it computes a divisor ({tensor}) whose smallest calibrated magnitude is {spread:.0f}x under its typical one "
        "(a LayerNorm's variance of a near-constant row): 8-bit per-tensor steps of that range round the small "
        "divisors to 0 and the division by them amplifies the error without bound (x / sqrt(0 + eps))"
    ),
)


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
    activations: ActivationRules | None = None  # int8: which activations stay float (None: none judged)

    def record(self) -> dict[str, JSONValue]:
        out: dict[str, JSONValue] = {
            "mode": self.mode,
            "provider": self.provider,
            "activation_type": self.activation_type,
            "weight_type": self.weight_type,
            "per_channel": self.per_channel,
            "op_types": list(self.op_types),
            "reason": self.reason,
        }
        if self.activations is not None:
            out["activations"] = self.activations.record()
        return out


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


# onnxruntime.quantization's QDQRemovableActivation (quantization/operators/activation.py): a Relu/Clip whose
# input is quantized is removed and its range folded into the Q before it (asymmetric activations, the
# input read by that node only), so it forms no unit; the int8 recipes quantize them for that.
REMOVABLE = ("Relu", "Clip")
_TYPE_CODES = {"uint8": 2, "int8": 3}  # onnx.TensorProto codes, as QdqOp.types holds them
_TYPE_NAMES = {2: "uint8", 3: "int8", 4: "uint16", 5: "int16"}


@dataclass(frozen=True)
class UnitOps:
    """The op types of a provider's QDQ table the recipe quantizes, and those it leaves float (op, why)."""

    taken: tuple[str, ...]
    left_float: tuple[tuple[str, str], ...]


def unit_ops(provider: ExecutionProvider, activation_type: str) -> UnitOps:
    """The QDQ unit ops ``provider`` takes with ``activation_type`` activations, read from its
    :meth:`~mobilegen.providers.base.ExecutionProvider.qdq_table`; a unit one of its
    ``never_taken_qdq_rules`` refuses is left float."""
    table = provider.qdq_table()
    if table is None or table.qdq is None:
        return UnitOps((), ())
    code = _TYPE_CODES[activation_type]
    taken: list[str] = []
    left: list[tuple[str, str]] = []
    for op, spec in table.qdq.units.items():
        never = [r for r in spec.rules if r in provider.never_taken_qdq_rules]
        if never:
            left.append((op, f"rule {never[0]} ({table.qdq.rules[never[0]].summary}) fails for every such unit ({spec.source})"))
        elif code not in spec.input0_dtypes:
            left.append((op, f"its QDQ unit takes {'/'.join(_TYPE_NAMES[t] for t in spec.input0_dtypes)} only ({spec.source})"))
        else:
            taken.append(op)
    return UnitOps(tuple(taken), tuple(left))


def only_units(provider: ExecutionProvider, activation_type: str, refuses_where: str) -> tuple[tuple[str, ...], str]:
    """An int8 recipe's op types (the provider's unit ops and :data:`REMOVABLE`) and the sentence saying
    what stays float and why (``refuses_where``: the ORT source where the provider refuses other units)."""
    ops = unit_ops(provider, activation_type)
    name = provider.display_name
    left = "; ".join(f"{op}: {why}" for op, why in ops.left_float)
    text = (
        f"quantizes only {', '.join(ops.taken)} (the QDQ node units {name} takes with these types: "
        f"mobilegen/providers/{provider.name}/qdq.py UNIT_OPS) and {'/'.join(REMOVABLE)} (folded into the Q before "
        f"them); every other op stays float, since {name} refuses its QDQ unit with the unit's DQs and Q ({refuses_where}), "
        "which splits the partition"
        + (f"; left float too: {left}" if left else "")
    )
    return (*ops.taken, *REMOVABLE), text


# --- the CPU kernels' recipes: no provider (the CPU alone), and providers running the CPU's kernels ------

# What the CPU EP's QDQ kernels take; a provider whose kernels take the same builds its int8 reason on it.
CPU_INT8 = (
    "the CPU EP's QDQ kernels take int8 QDQ with per-channel symmetric int8 weights (zero point 0) and "
    "per-tensor int8/uint8 activations; per-channel (Conv weights only) keeps depthwise convolutions accurate"
)
# Why dynamic quantization suits the CPU kernels (a provider that leaves these ops to them adds why).
CPU_DYNAMIC = (
    "dynamic quantization (int8 weights, activations quantized at run time) suits transformer MatMuls on "
    "the CPU kernels (MatMulInteger, DynamicQuantizeMatMul)"
)


def cpu_recipe(mode: QuantizeMode, provider: str = "cpu", *, dynamic_note: str = "") -> Recipe:
    """The recipe of the CPU EP's kernels (``provider``: the name recorded; a provider that runs these
    kernels' recipe for ``dynamic`` and ``fp16`` gives its own, and ``dynamic_note`` says why the dynamic
    ops run on the CPU kernels with it)."""
    if mode == "int8":
        return Recipe("int8", provider, "int8", "int8", True, (), CPU_INT8 + "; the CPU EP takes every QDQ op: "
                      "onnxruntime.quantization's default op set", EIGHT_BIT_RULES)  # fmt: skip
    if mode == "dynamic":
        return Recipe(
            "dynamic", provider, "uint8", "int8", False, ("MatMul", "Gemm", "Attention", "LSTM", "GRU"),
            CPU_DYNAMIC + (f"; {dynamic_note}" if dynamic_note else ""),
        )  # fmt: skip
    return Recipe(
        "fp16", provider, "float16", "float16", False, (),
        "weights stored as float16 (half the download); onnxruntime inserts casts around ops with no fp16 "
        f"kernel on this provider, so those compute in fp32; inputs and outputs stay float32 ({FLOAT16_SOURCE})",
    )  # fmt: skip
