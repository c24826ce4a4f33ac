"""The releases of the QNN AAR (``com.microsoft.onnxruntime:onnxruntime-android-qnn``): the rows of its
channel, ``maven-qnn``, in the runtime table (:mod:`mobilegen.runtimes` adds them through
:data:`mobilegen.providers.qnn.AAR`).

The AAR is a separate artifact (arm64-v8a) from the same build as onnxruntime-android
(java/build-android.gradle: artifactId "-android" + "-qnn" when built with qnnVersion). mvnrepository
lists 1.28.0 and 1.29.0 (2026-07/08; ../research/mobile_next.md §3.1, ort_mobile.md §7), dates by month
only; Maven Central itself was not reachable to confirm the exact days, and no source seen here lists
those versions for onnxruntime-android. Its POM depends on com.qualcomm.qti:qnn-runtime (the QNN SDK's .so
files; java/build-android.gradle).
"""

from __future__ import annotations

from mobilegen.runtimes.releases import RuntimeRelease

CHANNEL = "maven-qnn"
_MVN_QNN = "mvnrepository.com/artifact/com.microsoft.onnxruntime/onnxruntime-android-qnn (not verified on Maven Central)"
_FACTS = "opset >= 24: onnxruntime PR #25678 (ONNX 1.19); ORT format 5/6: core/flatbuffers/ort_format_version.h"

# Keep sorted oldest → newest.
RELEASES: tuple[RuntimeRelease, ...] = (
    RuntimeRelease(
        version="1.28.0",
        channels=(CHANNEL,),
        max_opset=24,
        ort_format_versions=(5, 6),
        source=f"Maven {_MVN_QNN} (2026-07); {_FACTS}",
    ),
    RuntimeRelease(
        version="1.29.0",
        channels=(CHANNEL,),
        max_opset=24,
        ort_format_versions=(5, 6),
        source=f"Maven {_MVN_QNN} (2026-08); {_FACTS}",
    ),
)
