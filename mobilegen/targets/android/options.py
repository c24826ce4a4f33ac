"""The Android target's options (``mobilegen android``'s flags): plain data, which the target's modules
(:mod:`~mobilegen.targets.android.project`, :mod:`~mobilegen.targets.android.runtime`) share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AndroidOptions:
    nnapi: bool = False
    nnapi_flags: tuple[str, ...] = ()
    xnnpack: bool = False
    package: str | None = None
    class_name: str | None = None
    ort_version: str | None = None
    android_api: int | None = None  # API level the NNAPI analysis targets (None: the provider's default)
    qnn: bool = False  # Qualcomm QNN (Hexagon NPU) first in the provider chain, on onnxruntime-android-qnn
    qnn_htp_arch: int | None = None  # Hexagon generation the QNN estimate assumes (None: mobilegen.providers.qnn's default)
    maven_group: str | None = None  # --maven-group: the AAR publication's groupId (None: the Kotlin package)
    maven_artifact: str | None = None  # --maven-artifact: its artifactId (None: the library module's name)
    lib_version: str | None = None  # --lib-version: the publication's version (None: mobilegen.render.library.DEFAULT_VERSION)
    # The target flags of plug-in providers (their TargetFlag name -> value), which no field above declares.
    provider_options: Mapping[str, Any] = field(default_factory=dict)
