"""``--nnapi`` on Android: the NNAPI part of the generated project, read from the Android options
(``nnapi``, ``nnapi_flags``, ``android_api``; :data:`mobilegen.providers.nnapi.TARGET_FLAGS`).

The flags are ONNX Runtime's Java ``ai.onnxruntime.providers.NNAPIFlags``; NNAPI exists from Android 8.1
(API 27, ``ORT_NNAPI_MIN_API_LEVEL``): below it ORT silently runs everything on the CPU.
"""

from __future__ import annotations

from typing import Any

from mobilegen.artifacts import FP16_TOLERANCE

# What the Android target reads besides the fragments (mobilegen.targets.android.project): the names the
# NNAPI fragments declare in the generated package (the wrapper's NnapiFlag enum, its entries and the
# nnapiFlags helper; ORT's NNAPIFlags, which the wrapper imports), which no model-derived name may take.
TEMPLATE_DATA: dict[str, Any] = {
    "kotlin_classes": ("NnapiFlag", "NNAPIFlags"),
    "kotlin_members": ("nnapiFlags",),
    "kotlin_constants": ("USE_FP16", "USE_NCHW", "CPU_DISABLED"),
}

MIN_SDK = 27  # Android 8.1: NNAPI feature level 1 (below it ORT silently runs everything on CPU)

# --nnapi-flags spelling → ai.onnxruntime.providers.NNAPIFlags constant.
FLAGS: dict[str, str] = {
    "fp16": "USE_FP16",
    "nchw": "USE_NCHW",
    "cpu-disabled": "CPU_DISABLED",
    "cpu-only": "CPU_ONLY",
}


def given_flags(opts: Any) -> tuple[str, ...]:
    """The --nnapi-flags spellings the options give (none when the flag was not given)."""
    return tuple(opts.nnapi_flags or ())


def problems(opts: Any) -> tuple[list[str], list[str]]:
    """What is wrong with the NNAPI options, and what to do about it."""
    from mobilegen import providers

    details: list[str] = []
    for f in given_flags(opts):
        if f not in FLAGS:
            details.append(f"--nnapi-flags: unknown flag {f!r} (known: {', '.join(FLAGS)})")
    if "cpu-disabled" in given_flags(opts) and "cpu-only" in given_flags(opts):
        details.append("--nnapi-flags: cpu-disabled and cpu-only exclude each other (ORT refuses the pair)")
    if given_flags(opts) and not opts.nnapi:
        details.append("--nnapi-flags given without --nnapi")
    if opts.android_api is not None and not opts.nnapi:
        details.append("--android-api given without --nnapi (it sets the API level of the NNAPI analysis)")
    if opts.android_api is not None:
        providers.validate_settings({"android_api": opts.android_api})  # the provider's declared range
    hints = []
    if any(d.startswith("--nnapi-flags") for d in details):
        hints.append("pass --nnapi with --nnapi-flags taken from: " + ", ".join(FLAGS))
    if any(d.startswith("--android-api") for d in details):
        hints.append("add --nnapi, or drop --android-api")
    return details, hints


def flag_constants(opts: Any) -> list[str]:
    return [FLAGS[f] for f in given_flags(opts)]


def context(opts: Any) -> dict[str, Any]:
    """The NNAPI part of the Android render context."""
    return {"nnapi": opts.nnapi, "nnapi_flags": flag_constants(opts), "nnapi_min_sdk": MIN_SDK}


def label(opts: Any) -> str:
    flags = flag_constants(opts)
    return "NNAPI" + (f" ({', '.join(flags)})" if flags else "")


def record(opts: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {"nnapi": opts.nnapi, "nnapi_flags": list(given_flags(opts))}
    if opts.android_api:
        rec["android_api"] = opts.android_api
    return rec


def fp16_reason(opts: Any) -> str:
    if opts.nnapi and "fp16" in given_flags(opts):
        return (
            f"NNAPI runs with `USE_FP16`, which lets it compute in float16 (about 3 significant decimal digits), "
            f"so atol and rtol are at least {FP16_TOLERANCE!r}"
        )
    return ""
