"""The React Native package's provider chains, asked of the provider registry: each provider whose
``template_data("react-native")`` names an ``os`` ("android", "ios") is an entry of that platform's chain
(``src/providers.<os>.ts``), in rank order, before the CPU provider.

The data keys a provider gives (``mobilegen.providers.<name>.react_native``): ``os``; ``entry``, its
``ProviderChoice`` literal; ``reads``, which of its options onnxruntime-react-native reads (a comment
phrase); ``fp16``, whether it may compute in float16 (then the device tolerances widen); ``context``, a
function of "every input dim is fixed" giving its render-context variables. Its fragments under
``templates/providers/<name>/react-native/``: ``constants.ts.jinja`` (declarations before the chain) and
``readme_options.md.jinja`` (inline: its options after its README name).
"""

from __future__ import annotations

from typing import Any

from mobilegen import providers
from mobilegen.render.tree import has_fragment

TARGET = "react-native"
OSES = ("android", "ios")


def chains() -> dict[str, list[dict[str, Any]]]:
    """os -> its chain's entries (name, display, entry, reads, fp16, readme: has readme_options), by rank."""
    out: dict[str, list[dict[str, Any]]] = {os: [] for os in OSES}
    for p in sorted(providers.all_providers(), key=lambda p: p.rank):
        data = p.template_data(TARGET)
        if data.get("os") in out:
            out[data["os"]].append(
                {
                    "name": p.name,
                    "display": p.display_name,
                    "entry": data["entry"],
                    "reads": data.get("reads", f"no {p.display_name} options"),
                    "fp16": bool(data.get("fp16")),
                    "readme": has_fragment(p.name, f"{TARGET}/readme_options.md.jinja"),
                    "context": data.get("context"),
                }
            )
    return out


def context(static: bool) -> dict[str, Any]:
    """The chains' part of the render context: ``rn_android``, ``rn_ios``, every provider's own variables, and
    ``rn_fp16_names`` (the providers that may compute in float16)."""
    found = chains()
    out: dict[str, Any] = {f"rn_{os}": entries for os, entries in found.items()}
    every = [e for os in OSES for e in found[os]]
    for e in every:
        if e["context"] is not None:
            out.update(e["context"](static))
    out["rn_names"] = [e["display"] for e in every]
    out["rn_fp16_names"] = [e["display"] for e in every if e["fp16"]]
    return out


def may_compute_fp16() -> bool:
    """Whether a provider of the chains may compute in float16 (the device tests then use wider tolerances)."""
    return any(e["fp16"] for entries in chains().values() for e in entries)
