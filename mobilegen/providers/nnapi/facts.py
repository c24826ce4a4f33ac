"""NNAPI's facts that its rule modules and its registry entry both read (kept apart from the entry so
that the rule modules do not import the package that imports them)."""

from __future__ import annotations

DISPLAY_NAME = "NNAPI"
MIN_API = 27  # ORT_NNAPI_MIN_API_LEVEL: below it GetCapability takes nothing
