"""QNN's facts that its rule modules and its registry entry both read (kept apart from the entry so
that the rule modules do not import the package that imports them)."""

from __future__ import annotations

import mobilegen.providers.qnn.runtime as aar_releases
from mobilegen.providers.base import RuntimeArtifact

DISPLAY_NAME = "QNN"
QB = "onnxruntime/core/providers/qnn/builder/"
EP_SOURCE = "onnxruntime/core/providers/qnn/qnn_execution_provider.cc"

# Hexagon (HTP) generations the QNN EP's ``htp_arch`` option names (ParseHtpArchitecture in
# qnn_execution_provider.cc: 68/69/73/75/81 at d626b568e, 79 added later). SoCs (QNN SoC table as
# printed by Qualcomm's tools): v69 Snapdragon 8 Gen 1 (SM8450), v73 8 Gen 2 (SM8550), v75 8 Gen 3
# (SM8650), v79 8 Elite (SM8750), v81 SM8850.
HTP_ARCHS = ("68", "69", "73", "75", "79", "81")

# The default estimate: the oldest generation that computes float models in fp16 on the HTP.
DEFAULT_HTP_ARCH = "73"

# fp16 compute on the HTP needs v73+ (maintainer in microsoft/onnxruntime#21848; not in ORT's sources:
# the QNN SDK refuses float ops on older HTPs at backendValidateOpConfig), so v68/v69 take QDQ models only.
FP16_MIN_ARCH = 73
# Microsoft's QNN AAR (QNN built in, Java ``SessionOptions.addQnn(Map)``) *replaces* onnxruntime-android:
# both carry the same ``ai.onnxruntime`` classes (java/build-android.gradle builds them from one project,
# artifactId "-android" + "-qnn" when built with qnnVersion). It is built with QNN only and for arm64-v8a
# only (tools/ci_build/github/android/default_qnn_aar_build_settings.json: --use_qnn); its releases are
# :mod:`mobilegen.providers.qnn.runtime`'s rows. More in :mod:`mobilegen.providers.qnn.android`.
AAR = RuntimeArtifact(
    "android", aar_releases.CHANNEL, "com.microsoft.onnxruntime:onnxruntime-android-qnn", abis=("arm64-v8a",),
    providers=("qnn",), releases=aar_releases.RELEASES,
)
