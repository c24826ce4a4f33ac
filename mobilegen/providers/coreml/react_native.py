"""CoreML in the React Native package: its entry of the iOS provider chain (``src/providers.ios.ts``), read by
:mod:`mobilegen.targets.react_native.chains`, with the fragments ``templates/providers/coreml/react-native/``.

onnxruntime-react-native 1.24.3's JSI code (``shared/research/rn-web-2026-11-27.md`` §3) reads only
``coreMlFlags`` for CoreML (the COREML_FLAG_* bits of ORT's coreml_provider_factory.h); its other documented
CoreML options are ignored.
"""

from __future__ import annotations

from typing import Any

COREML_FLAG_CREATE_MLPROGRAM = 0x010
COREML_FLAG_ONLY_ALLOW_STATIC_INPUT_SHAPES = 0x008


def context(static: bool) -> dict[str, Any]:
    """Its variables of the package's render context: the flags (MLProgram; static shapes only when every
    input dim is fixed)."""
    flags = COREML_FLAG_CREATE_MLPROGRAM | (COREML_FLAG_ONLY_ALLOW_STATIC_INPUT_SHAPES if static else 0)
    return {"coreml_flags": f"0x{flags:03x}"}


TEMPLATE_DATA: dict[str, Any] = {
    "os": "ios",
    "entry": "{ name: 'coreml', config: { name: 'coreml', coreMlFlags: COREML_FLAGS } }",
    "reads": (
        f"only coreMlFlags for CoreML (COREML_FLAG_CREATE_MLPROGRAM = 0x{COREML_FLAG_CREATE_MLPROGRAM:03x},\n"
        f"// COREML_FLAG_ONLY_ALLOW_STATIC_INPUT_SHAPES = 0x{COREML_FLAG_ONLY_ALLOW_STATIC_INPUT_SHAPES:03x}); "
        "its other documented CoreML options are ignored"
    ),
    "fp16": True,  # CoreML may run on the GPU or the Neural Engine, which compute in float16
    "context": context,
}
