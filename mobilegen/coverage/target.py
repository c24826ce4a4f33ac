"""What the analysis is for: an execution provider and its settings."""

from __future__ import annotations

from dataclasses import dataclass

from mobilegen.coverage.model import COREML_FORMATS, EPS
from mobilegen.errors import UsageError

# ORT's NNAPI EP assumes ORT_NNAPI_MAX_SUPPORTED_API_LEVEL (31) when GetCapability runs off-device;
# we default to the same so results compare with ORT's own view. Pass your app's minSdk to be strict.
DEFAULT_ANDROID_API = 31
MIN_ANDROID_API = 27  # NNAPI EP takes nothing below API 27
MAX_ANDROID_API = 36  # Android 16; NNAPI is deprecated from 35 on but still present


@dataclass(frozen=True)
class EPTarget:
    ep: str  # "nnapi" | "coreml" | "xnnpack"
    coreml_format: str | None = None  # "mlprogram" | "neuralnetwork"; CoreML only (default mlprogram)
    android_api: int = DEFAULT_ANDROID_API  # NNAPI only
    require_static_shapes: bool = False  # CoreML RequireStaticInputShapes; NNAPI always needs fixed shapes
    nnapi_stop_ops: tuple[str, ...] = ("NonMaxSuppression",)

    def __post_init__(self) -> None:
        if self.ep not in EPS:
            raise UsageError(f"unknown execution provider '{self.ep}'", hint=f"use one of: {', '.join(EPS)}")
        if self.ep == "coreml":
            if self.coreml_format is None:
                object.__setattr__(self, "coreml_format", "mlprogram")
            elif self.coreml_format not in COREML_FORMATS:
                raise UsageError(
                    f"unknown CoreML format '{self.coreml_format}'", hint=f"use one of: {', '.join(COREML_FORMATS)}"
                )
        elif self.coreml_format is not None:
            raise UsageError(f"coreml_format applies to the coreml EP only, not '{self.ep}'")
        if not MIN_ANDROID_API <= self.android_api <= MAX_ANDROID_API:
            raise UsageError(
                f"Android API level {self.android_api} is outside {MIN_ANDROID_API}..{MAX_ANDROID_API}",
                hint="NNAPI needs API 27 (Android 8.1) or newer",
            )
        object.__setattr__(self, "nnapi_stop_ops", tuple(self.nnapi_stop_ops))

    @property
    def label(self) -> str:
        return f"{self.ep}/{self.coreml_format}" if self.coreml_format else self.ep

    def settings(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.ep == "nnapi":
            out["android_api"] = self.android_api
            out["nnapi_stop_ops"] = list(self.nnapi_stop_ops)
            out["require_static_shapes"] = True
        elif self.ep == "coreml":
            out["require_static_shapes"] = self.require_static_shapes
        else:
            out["require_static_shapes"] = self.require_static_shapes
        return out
