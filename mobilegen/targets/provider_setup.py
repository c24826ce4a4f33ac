"""The providers' part of a target's project, asked of the provider registry.

A target calls these with its platform and options; each provider answers for itself through the target
hooks of :class:`~mobilegen.providers.base.ExecutionProvider` (its settings for the analysis, its option
problems, its render-context variables, its README label, its manifest record, its notices, whether the
device computes in float16), so no target branches on a provider's name.

Each provider's pieces of the generated code (adding it to the session options, planning it into the
chain) are template fragments of its own, ``templates/providers/<name>/<platform>/`` (or a plug-in's
``fragments`` folder), which the project's templates include for every provider listed by
:func:`template_providers`: those of the platform that have the piece, in chain order
(:attr:`ExecutionProvider.rank <mobilegen.providers.base.ExecutionProvider.rank>`).
"""

from __future__ import annotations

import re
from typing import Any

from mobilegen import providers
from mobilegen.coverage.target import EPTarget
from mobilegen.errors import UsageError
from mobilegen.notices import Notice
from mobilegen.providers import ExecutionProvider
from mobilegen.render.tree import fragments_dir, has_fragment

_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def in_chain_order(platform: str) -> list[ExecutionProvider]:
    """The providers of ``platform`` in the order the generated wrapper asks them (rank, then registry)."""
    return sorted(providers.on_platform(platform), key=lambda p: p.rank)


def chosen(platform: str, opts: Any) -> list[ExecutionProvider]:
    """The providers the options turn on, in chain order."""
    return [p for p in in_chain_order(platform) if p.chosen_on(platform, opts)]


def ep_targets(platform: str, opts: Any, *, static: bool, ort_version: str) -> list[EPTarget]:
    """The chosen providers with their settings, in chain order (the first is what the quantize stage's
    recipe keys on), with the rules of the runtime the project pins (``ort_version``)."""
    return [EPTarget(p.name, **p.target_settings(platform, opts, static=static), ort_version=ort_version) for p in chosen(platform, opts)]


def problems(platform: str, opts: Any) -> tuple[list[str], list[str]]:
    """Every provider's problems with the options and its hints, in registry order."""
    details: list[str] = []
    hints: list[str] = []
    declared = set(providers.target_flag_defaults(platform))
    unknown = sorted(set(getattr(opts, "provider_options", None) or {}) - declared)
    if unknown:
        details.append(f"provider_options: {', '.join(unknown)} {'is not an option' if len(unknown) == 1 else 'are not options'} of any {platform} provider")
        hints.append("the providers' target flags are: " + (", ".join(sorted(declared)) or "none"))
    for p in providers.on_platform(platform):
        d, h = p.target_problems(platform, opts)
        details += d
        hints += h
    return details, hints


def context(platform: str, opts: Any) -> dict[str, Any]:
    """Every provider's render-context variables (each provider's, chosen or not: its fragments read them)."""
    out: dict[str, Any] = {}
    for p in providers.on_platform(platform):
        out.update(p.target_context(platform, opts))
    return out


def accelerated_label(platform: str, opts: Any) -> str:
    """The chosen providers as the generated README names them (their labels joined by " + "), or "none (CPU)"."""
    labels = [p.target_label(platform, opts) for p in chosen(platform, opts)]
    return " + ".join(labels) if labels else "none (CPU)"


def record(platform: str, opts: Any) -> dict[str, Any]:
    """Every provider's options as the manifest records them, in registry order."""
    out: dict[str, Any] = {}
    for p in providers.on_platform(platform):
        out.update(p.target_record(platform, opts))
    return out


def notices(platform: str, opts: Any) -> tuple[Notice, ...]:
    return tuple(n for p in providers.on_platform(platform) for n in p.target_notices(platform, opts))


def fp16_reason(platform: str, opts: Any) -> str:
    """Why the accelerated configuration computes float models in float16 on the device (the first
    provider in chain order that says so), or ""."""
    return next((r for p in in_chain_order(platform) if (r := p.fp16_reason(platform, opts))), "")


def float32_reason(platform: str, opts: Any, default: str) -> str:
    """Why it computes in float32: a provider's sentence (chain order), else ``default``."""
    return next((r for p in in_chain_order(platform) if (r := p.float32_reason(platform, opts))), default)


def template_providers(platform: str, piece: str) -> list[dict[str, str]]:
    """The providers of ``platform`` with the fragment ``<platform>/<piece>``, in chain order: ``name``;
    ``enum``, the Kotlin ``ExecutionProvider`` entry; ``kotlin``, the ``Options.use…`` suffix; ``swift``, the
    Swift ``ExecutionProvider`` case; ``display``."""
    found = [p for p in in_chain_order(platform) if has_fragment(p.name, f"{platform}/{piece}")]
    out = [
        {"name": p.name, "enum": p.display_name.upper(), "kotlin": p.name.capitalize(), "swift": _swift_case(p.display_name), "display": p.display_name}
        for p in found
    ]
    for entry in out:  # they name generated code: a plug-in's display name must make identifiers
        if not all(_IDENT.fullmatch(entry[k]) for k in ("enum", "swift")):
            raise UsageError(
                f"execution provider '{entry['name']}' has the display name {entry['display']!r}, which makes no Kotlin/Swift identifier",
                hint="give it a display name of ASCII letters and digits, starting with a letter",
            )
    return out


class Pieces(dict[str, list[str]]):
    """Fragment name -> the include paths of the providers that have it; a name none has gives []."""

    def __missing__(self, key: str) -> list[str]:
        return []


def pieces(platform: str, *, chain: bool = False) -> Pieces:
    """Every template fragment of ``platform``'s providers (``<platform>/<piece>.jinja`` in their fragment
    folders): the piece's name without ``.jinja`` -> the include paths (``providers/<name>/<platform>/...``),
    in registry order, or in chain order with ``chain``. A generic template includes a piece for every
    provider that has it (``{% for f in pieces["wrapper_imports.kt"] %}{% include f %}{% endfor %}``), so it
    names none of them."""
    out = Pieces()
    for p in in_chain_order(platform) if chain else providers.on_platform(platform):
        folder = fragments_dir(p.name) / platform
        for f in sorted(folder.glob("*.jinja")) if folder.is_dir() else ():
            out.setdefault(f.name[: -len(".jinja")], []).append(f"providers/{p.name}/{platform}/{f.name}")
    return out


def _swift_case(display: str) -> str:
    """The Swift enum case of a provider: its display name with a leading acronym lowercased ("ToyNPU" ->
    "toyNPU", "GPUDelegate" -> "gpuDelegate", an all-capitals "NPU" -> "npu")."""
    if display.isupper():
        return display.lower()
    head = len(display) - len(display.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    head = max(1, head - 1) if head > 1 else 1
    return display[:head].lower() + display[head:]
