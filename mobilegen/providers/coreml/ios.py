"""``--coreml`` on iOS: the CoreML part of the generated Swift package, read from the iOS options
(``coreml``, ``coreml_format``, ``compute_units``; :data:`mobilegen.providers.coreml.TARGET_FLAGS`).

The CoreML EP provider options are parsed in ``onnxruntime/core/providers/coreml/coreml_options.cc``
(``MLComputeUnits`` ∈ ``ALL``, ``CPUAndNeuralEngine``, ``CPUAndGPU``, ``CPUOnly`` — ``ALL`` upper case,
though the Obj-C header's doc comment says "All"; ``ModelFormat`` ∈ ``MLProgram``, ``NeuralNetwork``).
"""

from __future__ import annotations

from typing import Any

from mobilegen.artifacts import FP16_TOLERANCE

# --coreml-format → CoreML EP "ModelFormat" value, and the Swift enum case of the generated code.
FORMATS: dict[str, tuple[str, str]] = {
    "mlprogram": ("MLProgram", "mlProgram"),
    "neuralnetwork": ("NeuralNetwork", "neuralNetwork"),
}
# --compute-units → CoreML EP "MLComputeUnits" value (coreml_options.cc), and the Swift enum case.
COMPUTE_UNITS: dict[str, tuple[str, str]] = {
    "all": ("ALL", "all"),
    "cpu-and-ne": ("CPUAndNeuralEngine", "cpuAndNeuralEngine"),
    "cpu-and-gpu": ("CPUAndGPU", "cpuAndGPU"),
    "cpu-only": ("CPUOnly", "cpuOnly"),
}


def problems(opts: Any) -> tuple[list[str], list[str]]:
    details: list[str] = []
    hints: list[str] = []
    if opts.coreml_format not in FORMATS:
        details.append(f"unknown --coreml-format {opts.coreml_format!r}")
        hints.append("--coreml-format is one of " + ", ".join(FORMATS))
    if opts.compute_units not in COMPUTE_UNITS:
        details.append(f"unknown --compute-units {opts.compute_units!r}")
        hints.append("--compute-units is one of " + ", ".join(COMPUTE_UNITS))
    return details, hints


def context(opts: Any) -> dict[str, Any]:
    """The CoreML part of the iOS render context."""
    fmt_value, fmt_case = FORMATS[opts.coreml_format]
    cu_value, cu_case = COMPUTE_UNITS[opts.compute_units]
    return {
        "coreml": opts.coreml,
        "coreml_format": fmt_value,
        "coreml_format_case": fmt_case,
        "compute_units": cu_value,
        "compute_units_case": cu_case,
    }


def record(opts: Any) -> dict[str, Any]:
    return {"coreml": opts.coreml, "coreml_format": opts.coreml_format, "compute_units": opts.compute_units}


def fp16_reason(opts: Any) -> str:
    """With compute units other than ``cpu-only`` CoreML may run on the GPU or the Neural Engine, which
    compute in float16 (~3 significant digits). This depends on the compute units the CoreML configuration
    is generated with, not on whether CoreML is on by default: the sample app can switch it on either way."""
    if opts.compute_units == "cpu-only":
        return ""
    where = {"cpu-and-gpu": "the GPU", "cpu-and-ne": "the Neural Engine"}.get(opts.compute_units, "the GPU or the Neural Engine")
    return (
        f"compute units {COMPUTE_UNITS[opts.compute_units][0]} let CoreML run on {where}, which computes in "
        f"float16 (about 3 significant decimal digits), so atol and rtol are at least {FP16_TOLERANCE!r}"
    )


def float32_reason(opts: Any) -> str:
    return "compute units CPUOnly keep CoreML in float32, like the CPU provider"


# Its part of the generated Swift package besides its fragments (templates/providers/coreml/ios/), read by
# the iOS target (mobilegen.targets.ios.project documents the keys).
TEMPLATE_DATA: dict[str, Any] = {
    # the wrapper members its fragments declare: tensor identifiers must not take these names
    "swift_members": ("coreMLOptions", "defaultCoreMLCacheDirectory"),
    # the ORT CoreML EP compiles the model at session creation (ModelCacheDirectory keeps the result)
    "doc_init": "with CoreML this compiles it (cached in Caches after the first launch)",
    "doc_load": "CoreML compilation can take a while",
    # the ORT build option that puts it in the pinned package (ORT's
    # tools/ci_build/github/apple/default_full_apple_framework_build_settings.json)
    "ort_build_flag": "--use_coreml",
    # the sample app's comment on the tolerances it holds CoreML to
    # the manifest's options.device_tolerances key of the tolerances the CoreML configuration asserts
    "tolerance_key": "ios_coreml",
    # the benchmark configuration the README's MOBILEGEN_BENCH_CONFIGS example picks
    "bench_example": "coreml-mlprogram",
    "app_tolerance_comment": "CoreML may compute in float16 on the GPU / Neural Engine: it is held to its own tolerances.",
}
