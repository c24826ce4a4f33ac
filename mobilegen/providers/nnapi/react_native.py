"""NNAPI in the React Native package: its entry of the Android provider chain (``src/providers.android.ts``),
read by :mod:`mobilegen.targets.react_native.chains`.

onnxruntime-react-native's JSI code (``shared/research/rn-web-2026-11-27.md`` §3) reads the NNAPI options
useFP16, useNCHW, cpuDisabled and cpuOnly.
"""

from __future__ import annotations

from typing import Any

TEMPLATE_DATA: dict[str, Any] = {
    "os": "android",
    "entry": "{ name: 'nnapi', config: { name: 'nnapi', useFP16: false, useNCHW: false, cpuDisabled: false } }",
    "reads": "useFP16/useNCHW/cpuDisabled/cpuOnly for NNAPI",
    "fp16": True,  # NNAPI may run on a GPU/NPU that computes in float16
}
