"""CoreML rules that differ between ONNX Runtime releases (issue 18).

Dating: a commit on ORT's main lands in the release whose version main carried then (VERSION_NUMBER:
1.24 dev from 2025-10-08, 1.25 dev from 2026-01-21, 1.26 dev from 2026-04-02 (reverted 04-10, re-cut
later), 1.27 dev from 2026-05-04, 1.29 dev from 2026-07-07). Changes up to 2026-03-07 were read in the
ORT history mirror (commit ``MIRROR_COMMIT``); later ones from the PR threads, whose merge dates were
not read here: such a change is given the first release that surely has it, and ``ort_source`` says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from mobilegen.coverage.common import opset_reason
from mobilegen.coverage.rules import NodeContext, Rule, const_ints, in_ort_range
from mobilegen.providers.base import GROUP, Reason
from mobilegen.providers.coreml.rules import BASE, EP, EP_SRC, IMPL, MAX_RANK, is_mlp
from mobilegen.providers.coreml.shape_ops import split_with_attribute

# The ORT history read (microsoft/onnxruntime main, 2026-03-07, VERSION_NUMBER 1.25.0): the op builder
# factory there registers no HardSigmoid/Sin/Cos/Ceil/Identity/Tile/Where/And/GatherND builder, Pad has
# no ML Program path and Gather refuses scalar indices; so none of these are in 1.24.x or 1.25.x.
MIRROR_COMMIT = "d626b568e01e394e5f17c92e95f0e21e36a73a7e"
# The 1.24 branch point read for 1.24.x (last main commit before the 1.25 bump).
REL_1_24_COMMIT = "46e8d454aa27a0356d4f060b66991c63fd06a070"

_APRIL = "PR opened in April 2026 while main was 1.26-dev; merge date not read, so 1.26.0 is likely but the " \
    "first release surely holding it is taken: 1.27.0"
_MAY = "PR opened 2026-05-18..20 while main was 1.27-dev; merge date not read, so 1.27.0 is likely but the " \
    "first release surely holding it is taken: 1.28.0"

OPSET_CAP_SOURCE = (
    "GetMaxSupportedOpSet 24 -> 25: commit de398c412 'Integration with ONNX==1.20.1' (#26579, 2026-01-12, "
    "main 1.24-dev). Main later moved to 26 (ONNX 1.21, #27601) and 27 (ONNX 1.22, #28754); neither is "
    "dated to a release here, so newer releases keep the proven 25 (nodes above it are refused: pessimistic)"
)


def _cap(hi: int) -> Rule:
    def check(ctx: NodeContext) -> str | None:
        return opset_reason(ctx, hi, EP)

    return Rule(
        "coreml.opset", f"node since_version within the builder's range (cap {hi})", IMPL + "base_op_builder.h", check,
        since_ort="1.24.0" if hi == 25 else "", until_ort="1.24.0" if hi == 24 else "", ort_source=OPSET_CAP_SOURCE,
    )


OPSET_RULES = (_cap(24), _cap(25))

# Op builders added after 1.25 (ops -> (first release, source)).
ADDED: dict[str, tuple[str, str]] = {
    "HardSigmoid": ("1.27.0", "PR #28182 '[CoreML EP] Add HardSigmoid support' (2026-04-22); " + _APRIL),
    "Identity": ("1.27.0", "PR #28293 'Add Identity, Ceil, Tile builders' (2026-04-30); " + _APRIL),
    "Ceil": ("1.27.0", "PR #28293 'Add Identity, Ceil, Tile builders' (2026-04-30); " + _APRIL),
    "Tile": ("1.27.0", "PR #28293 'Add Identity, Ceil, Tile builders' (2026-04-30); " + _APRIL),
    "Sin": ("1.28.0", "PR #28596 '[CoreML EP] Add Sin and Cos unary ops' (2026-05-20); " + _MAY),
    "Cos": ("1.28.0", "PR #28596 '[CoreML EP] Add Sin and Cos unary ops' (2026-05-20); " + _MAY),
    "Where": ("1.28.0", "PR #28597 '[CoreML EP] Add Where and And builders' (2026-05-20); " + _MAY),
    "And": ("1.28.0", "PR #28597 '[CoreML EP] Add Where and And builders' (2026-05-20); " + _MAY),
    "GatherND": ("1.28.0", "PR #28598 '[CoreML EP] Add GatherND builder' (2026-05-20); " + _MAY),
}

PAD_MLP_SOURCE = "PR #28073 'CoreML: Add support for Pad with reflect for ML Program' (2026-04-15); " + _APRIL
GATHER_SOURCE = "PR #28278 '[CoreML EP] Support Gather with scalar indices' (2026-04-29); " + _APRIL


def _pad_no_mlprogram(ctx: NodeContext) -> str | None:
    if is_mlp(ctx):
        return "Pad has no ML Program builder in this ONNX Runtime release (NeuralNetwork only; added by #28073)"
    return None


PAD_MLPROGRAM = Rule(
    "coreml.pad.mlprogram", "Pad only in the NeuralNetwork format", IMPL + "pad_op_builder.cc", _pad_no_mlprogram,
    until_ort="1.27.0", ort_source=PAD_MLP_SOURCE,
)


def _gather_scalar(ctx: NodeContext) -> list[str]:
    """Scalar indices: reshaped to [1] and squeezed back, for static data of rank <= 4."""
    out = []
    ri, rd = ctx.rank(1), ctx.rank(0)
    if ri == 0:
        if not ctx.is_static(0):
            out.append("Gather with scalar indices needs static data for CoreML")
        if rd is not None and rd > 4:
            out.append(f"Gather with scalar indices on rank-{rd} data: CoreML takes rank <= 4")
    if ri is not None and rd is not None and rd + ri - 1 > MAX_RANK:
        out.append(f"Gather output rank {rd + ri - 1}: CoreML takes rank <= {MAX_RANK}")
    return out


GATHER_SCALAR = Rule(
    "coreml.gather", "Gather output rank <= 5; scalar indices with static data of rank <= 4",
    IMPL + "gather_op_builder.cc", _gather_scalar, since_ort="1.27.0", ort_source=GATHER_SOURCE,
)

def _pad(ctx: NodeContext) -> list[str]:
    """Pad from #28073: ML Program takes constant padding on any dims and reflect on the last two."""
    out = []
    mlp, r, mode = is_mlp(ctx), ctx.rank(0), ctx.attr("mode", "constant")
    if not mlp and r is not None and r < 2:
        out.append(f"Pad input rank {r}: CoreML NeuralNetwork takes rank >= 2")
    if mode not in (("constant", "reflect") if mlp else ("constant",)):
        out.append(f"Pad mode '{mode}': CoreML {'ML Program takes constant and reflect' if mlp else 'NeuralNetwork takes only constant'} padding")
    if mode == "constant":
        if not ctx.has_input(2) and not mlp:
            out.append("Pad without constant_value: CoreML NeuralNetwork needs it")
        elif ctx.has_input(2) and not ctx.is_const(2):
            out.append(f"constant_value input '{ctx.input_name(2)}' is not a constant initializer")
    if ctx.has_input(3) and not ctx.is_const(3):
        out.append(f"axes input '{ctx.input_name(3)}' is not a constant initializer")
    pads = const_ints(ctx, 1)
    if pads is None:
        return [*out, f"pads input '{ctx.input_name(1)}' is not a constant initializer"]
    if any(p < 0 for p in pads):
        out.append("negative pads are not supported by CoreML")
    shape = ctx.shape(0)
    if shape is None or len(pads) != 2 * len(shape) or ctx.has_input(3):
        return out
    n = len(shape)
    if (not mlp or mode != "constant") and any(pads[i] or pads[i + n] for i in range(n - 2)):
        out.append("Pad pads dims other than the last two: CoreML takes that only for ML Program constant padding")
    if mode == "reflect":
        for i in range(n):
            d = shape[i]
            if isinstance(d, int) and max(pads[i], pads[i + n]) >= d:
                out.append(f"reflect pad {max(pads[i], pads[i + n])} on a dim of {d}: CoreML needs pad < dim")
                break
    return out


PAD = Rule(
    "coreml.pad", "Pad: NeuralNetwork constant mode on the last two dims; ML Program constant (any dims) or reflect",
    IMPL + "pad_op_builder.cc", _pad, since_ort="1.27.0", ort_source=PAD_MLP_SOURCE,
)

SPLIT_SOURCE = "PR #28270 '[CoreML EP] Support pre-opset-13 Split via split attribute' (2026-04-29); " + _APRIL
SPLIT = Rule(
    "coreml.split", "Split of any opset: sizes (input or pre-13 attribute) positive and summing to a static dim",
    IMPL + "split_op_builder.cc", split_with_attribute, since_ort="1.27.0", ort_source=SPLIT_SOURCE,
)

# --- PR #28289: com.microsoft:FusedConv (ConvActivationFusion's output, in pre-optimized models) ---------
FUSEDCONV_SOURCE = (
    "PR #28289 '[CoreML EP] Add FusedConv support', merged 2026-05-09 (squash commit aa92574bf) while main was "
    "1.27-dev: 1.27.0. Activations from the 1.31.1 wheel's coreml_supported_mlprogram_ops.md"
)
# The activations the builder decomposes FusedConv into (conv + one of these), per the shipped op table.
FUSEDCONV_ACTIVATIONS = ("Relu", "Sigmoid", "Tanh", "LeakyRelu", "Clip", "HardSigmoid")


def _fusedconv(ctx: NodeContext) -> list[str]:
    out = []
    act = ctx.attr("activation", "")
    if act not in FUSEDCONV_ACTIVATIONS:
        out.append(f"FusedConv activation '{act}': CoreML decomposes only {', '.join(FUSEDCONV_ACTIVATIONS)}")
    if ctx.has_input(3):
        # Not described by the PR or the op table (conv + activation only): not modelled, so refused.
        out.append(f"FusedConv sum input Z '{ctx.input_name(3)}': not modelled for CoreML (counted as refused)")
    return out


FUSEDCONV = Rule(
    "coreml.fusedconv", "FusedConv: activation Relu/Sigmoid/Tanh/LeakyRelu/Clip/HardSigmoid, no Z input",
    IMPL + "conv_op_builder.cc", _fusedconv, since_ort="1.27.0", ort_source=FUSEDCONV_SOURCE,
)

# --- PR #28293: GetCapability drops a partition made only of trivial ops -------------------------------
TRIVIAL_SOURCE = (
    "PR #28293 '[CoreML EP] Add Identity, Ceil, Tile builders + drop trivial-only partitions' (2026-04-30), "
    f"{EP_SRC} GetCapability, via CreateSupportedPartitions' on_group_closed: the op set is the "
    "PR's commit message; IsTrivial() -> true read in ORT main's identity/tile/transpose builders (2090ec9b3, "
    "1650d6fa1); same PR as the Identity/Ceil/Tile builders, so the same release: " + _APRIL
)
TRIVIAL_SINCE = "1.27.0"
# A partition is kept iff at least one of its nodes is outside this set.
TRIVIAL_OPS = frozenset({"Identity", "Cast", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Transpose", "Tile", "Ceil"})


def trivial_partition(op_types: Sequence[str], version: str) -> Reason | None:
    """Why CoreML drops a partition of these ops in ONNX Runtime ``version`` (its nodes stay on the CPU), or None."""
    if not op_types or not in_ort_range(version, TRIVIAL_SINCE, "") or not TRIVIAL_OPS.issuperset(op_types):
        return None
    ops = ", ".join(sorted(set(op_types)))
    text = (
        f"partition made only of trivial ops ({ops}) is dropped by CoreML from ONNX Runtime {TRIVIAL_SINCE} on: "
        "not worth the round trip (#28293)"
    )
    return Reason(text, GROUP, "coreml.trivial_partition")


VERSIONED = (GATHER_SCALAR, PAD, SPLIT)
__all__ = ["ADDED", "BASE", "FUSEDCONV", "OPSET_RULES", "PAD_MLPROGRAM", "VERSIONED", "trivial_partition"]
