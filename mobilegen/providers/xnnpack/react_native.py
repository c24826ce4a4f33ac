"""XNNPACK in the React Native package: its entry of the Android provider chain (``src/providers.android.ts``),
read by :mod:`mobilegen.targets.react_native.chains`. onnxruntime-react-native's JSI code takes it by name
and reads no XNNPACK options (``shared/research/rn-web-2026-11-27.md`` §3)."""

from __future__ import annotations

from typing import Any

TEMPLATE_DATA: dict[str, Any] = {
    "os": "android",
    "entry": "{ name: 'xnnpack', config: 'xnnpack' }",
    "reads": "no XNNPACK options",
}
