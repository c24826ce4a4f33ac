"""``--qnn`` on Android: Qualcomm's Hexagon NPU through ONNX Runtime's QNN execution provider.

The distribution is Microsoft's ``com.microsoft.onnxruntime:onnxruntime-android-qnn`` AAR (QNN built in,
Java ``SessionOptions.addQnn(Map)``; :data:`mobilegen.providers.qnn.AAR`), which *replaces* ``onnxruntime-android`` (both AARs carry the same
``ai.onnxruntime`` classes and ``libonnxruntime.so``: java/build-android.gradle builds them from one
project and only the artifactId differs, so Gradle would report duplicate classes). Its POM depends on
``com.qualcomm.qti:qnn-runtime`` (the QNN SDK's ``libQnnHtp*.so``), and ORT's own Android test app shows
what an app needs around it (java/src/test/android: ``useLegacyPackaging = true`` so the .so files land
in ``nativeLibraryDir``, ``ADSP_LIBRARY_PATH`` set to that directory, and
``<uses-native-library android:name="libcdsprpc.so" android:required="false"/>``).

Provider options and session config keys, copied from onnxruntime/core/providers/qnn/
qnn_execution_provider.cc and include/onnxruntime/core/session/onnxruntime_session_options_config_keys.h.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mobilegen.artifacts import FP16_TOLERANCE
from mobilegen.providers.qnn.facts import AAR, DEFAULT_HTP_ARCH, HTP_ARCHS

if TYPE_CHECKING:
    from mobilegen.notices import Notice

QNN_ARTIFACT = AAR.artifact
QNN_ABI = AAR.abis[0]  # default_qnn_aar_build_settings.json: the QNN AAR is built for arm64-v8a only

# What the Android target reads besides the fragments (mobilegen.targets.android.project): the names the
# QNN fragments declare in the generated wrapper (the file-private QnnContext helper of the compiled-context
# cache, the companion's QNN functions and QNN_ABI), which no model-derived name may take.
TEMPLATE_DATA: dict[str, Any] = {
    "kotlin_classes": ("QnnContext",),
    "kotlin_members": (
        "qnnProviderOptions", "qnnContextFile", "openSession", "qnnAbiProblem", "qnnLibraryPathSet",
        "tookNodes", "discard", "release", "loadedFromCache",
    ),
    "kotlin_constants": ("QNN_ABI",),
}

# qnn_execution_provider.cc ParseBackendTypeName ("backend_type"; "backend_path" is the alternative,
# and giving both is an error) and ParseHtpPerformanceMode ("htp_performance_mode").
QNN_BACKENDS = ("htp", "gpu", "cpu")
QNN_PERFORMANCE_MODES = (
    "burst",
    "balanced",
    "default",
    "high_performance",
    "high_power_saver",
    "low_balanced",
    "low_power_saver",
    "power_saver",
    "extreme_power_saver",
    "sustained_high_performance",
)


def notices(opts: Any) -> tuple[Notice, ...]:
    """``--qnn`` with other Android providers: the QNN AAR the project then pins has none of them, so the
    app's session gets QNN and the CPU only (their coverage is shown for what it would be on onnxruntime-android)."""
    from mobilegen import providers
    from mobilegen.notices import Notice  # noqa: F811 (at run time; the annotation's import is TYPE_CHECKING only)

    others = [p for p in providers.on_platform("android") if p.name not in AAR.providers and p.chosen_on("android", opts)]
    if not opts.qnn or not others:
        return ()
    names = [p.display_name for p in others]
    text = (
        f"--qnn with --{' and --'.join(p.name for p in others)}: the QNN AAR ({AAR.artifact}) "
        f"is built with QNN only (ORT's default_qnn_aar_build_settings.json), so on a device the app's session gets QNN "
        f"and the CPU: {' and '.join(names)} are skipped; their coverage here is what onnxruntime-android would give — "
        "for phones without a Snapdragon NPU, build a second package without --qnn"
    )
    return (Notice("qnn-aar-only", "warning", text, subject="android"),)


def problems(opts: Any) -> tuple[list[str], list[str]]:
    """What is wrong with the QNN options (the Android validation lists them with the others), and hints."""
    details = []
    if opts.qnn_htp_arch is not None and not opts.qnn:
        details.append("--qnn-htp-arch given without --qnn (it sets the Hexagon generation of the QNN estimate)")
    if opts.qnn_htp_arch is not None and str(opts.qnn_htp_arch) not in HTP_ARCHS:
        details.append(f"--qnn-htp-arch {opts.qnn_htp_arch} is not a Hexagon generation QNN knows (known: {', '.join(HTP_ARCHS)})")
    hints = []
    if any(d.startswith("--qnn-htp-arch given without --qnn") for d in details):
        hints.append("add --qnn, or drop --qnn-htp-arch")
    if any(d.startswith("--qnn-htp-arch") and "is not a Hexagon generation" in d for d in details):
        hints.append(f"give --qnn-htp-arch one of the known generations (default {DEFAULT_HTP_ARCH})")
    return details, ["; ".join(hints)] if hints else []


def htp_arch(opts: Any) -> str:
    """The Hexagon generation the estimate (and the quantization recipe) assume."""
    return str(opts.qnn_htp_arch) if opts.qnn_htp_arch is not None else DEFAULT_HTP_ARCH


def context(opts: Any) -> dict[str, Any]:
    """The QNN part of the Android render context."""
    return {
        "qnn": opts.qnn,
        "qnn_htp_arch": htp_arch(opts) if opts.qnn else "",
        "qnn_abi": QNN_ABI,
        "qnn_performance_modes": list(QNN_PERFORMANCE_MODES),
        "qnn_backends": list(QNN_BACKENDS),
    }


def options_record(opts: Any) -> dict[str, Any]:
    """What the manifest records about QNN (nothing without --qnn)."""
    if not opts.qnn:
        return {}
    return {"qnn": True, "qnn_htp_arch": int(htp_arch(opts)), "runtime_artifact": QNN_ARTIFACT}


def fp16_reason(opts: Any) -> str:
    """QNN's HTP runs float models in fp16 (enable_htp_fp16_precision, on by default): the device test's
    accelerated tolerance widens as for any provider computing in float16."""
    if not opts.qnn:
        return ""
    return (
        f"QNN's HTP computes float models in float16 (enable_htp_fp16_precision), about 3 significant decimal "
        f"digits, so atol and rtol are at least {FP16_TOLERANCE!r}"
    )
