"""Core AI (iOS / macOS 27+): Apple's ``.aimodel`` beside the ONNX Runtime build.

``convert`` turns the same PyTorch module into an ``.aimodel`` with ``coreai-torch``; ``host`` runs it on this
machine with ``coreai-core``'s Linux CPU runtime; ``stage`` gates it against the reference with mobilegen's
verification gate and golden vectors, and an int8 variant (``coreai-opt``) with the int8 accuracy gate;
``swift`` renders the Swift that runs it on iOS 27+ while the ORT build keeps serving older systems.
The packages are optional (``pip install mobilegen[coreai]``): nothing here imports them at import time.
"""

from __future__ import annotations

from mobilegen.backends.coreai.convert import CoreAIArtifact, to_coreai, to_coreai_int8
from mobilegen.backends.coreai.deps import available, require
from mobilegen.backends.coreai.stage import CoreAIBuild, build_coreai, int8_accuracy, verify_coreai

__all__ = [
    "CoreAIArtifact",
    "CoreAIBuild",
    "available",
    "build_coreai",
    "int8_accuracy",
    "require",
    "to_coreai",
    "to_coreai_int8",
    "verify_coreai",
]
