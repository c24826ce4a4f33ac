"""The tolerance policy of a quantized model's golden vectors, as numbers (``mobilegen.quantize.golden``
derives the tolerances with them) and as the sentence the generated device tests' READMEs give."""

from __future__ import annotations

OUTPUT_STEPS = 2  # a quantized model's golden atol covers this many steps of its outputs' last DequantizeLinear
KERNEL_RTOL = 0.01  # ... and this fraction of a float output's largest golden |value| (kernel rounding differences)
MAX_FRACTION = 0.25  # ... but never more than this fraction of the smallest case's largest golden |value| (a zero output fails)

_QUANTIZED_AS = {
    "int8": "int8-quantized (QDQ)",
    "dynamic": "dynamically quantized (int8 weights, activations quantized as it runs)",
    "fp16": "float16 (`--quantize fp16`)",
}


def tolerance_reason(mode: str) -> str:
    """Why a quantized model's device tests assert the tolerance they do (one README sentence, no period):
    not the float32 reasoning of an fp32 model's."""
    what = _QUANTIZED_AS.get(mode, f"quantized ({mode})")
    steps = f", {OUTPUT_STEPS} steps of the DequantizeLinear producing an output" if mode == "int8" else ""
    return (
        f"the model is {what} and its golden vectors are its own outputs, so atol covers only a phone's kernels rounding "
        f"differently from this machine's: the largest of the build's atol{steps} and {KERNEL_RTOL:g} of an output's "
        f"largest |golden value|, never above {MAX_FRACTION:g} of it (golden/tolerances.json says how it was derived)"
    )
