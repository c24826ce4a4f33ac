"""The JSON value type: what the manifest, the reports and the records can hold (a leaf module, so the
plain-data modules that write JSON need not import :mod:`mobilegen.artifacts`)."""

from __future__ import annotations

JSONValue = str | int | float | bool | None | list["JSONValue"] | dict[str, "JSONValue"]
