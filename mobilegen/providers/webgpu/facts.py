"""WebGPU's facts that its rule modules and its registry entry both read (kept apart from the entry so
that the rule modules do not import the package that imports them)."""

from __future__ import annotations

DISPLAY_NAME = "WebGPU"
JS = "onnxruntime/core/providers/js/"
EP_SOURCE = JS + "js_execution_provider.cc"
ORT_WEB_VERSION = "1.30.0"  # the onnxruntime-web release the table was measured in (templates/web/package-lock.json)
