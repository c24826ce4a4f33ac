"""``--xnnpack`` on iOS: XNNPACK's part of the generated Swift package besides its fragments
(templates/providers/xnnpack/ios/), read by the iOS target (mobilegen.targets.ios.project documents the keys)."""

from __future__ import annotations

from typing import Any

TEMPLATE_DATA: dict[str, Any] = {
    # the wrapper members its fragments declare: tensor identifiers must not take these names
    "swift_members": ("appendXnnpack",),
    # the ORT build option that puts it in the pinned package (ORT's
    # tools/ci_build/github/apple/default_full_apple_framework_build_settings.json)
    "ort_build_flag": "--use_xnnpack",
}
