"""Which providers' setup a generated project includes, and the names its templates use for each.

Each provider's pieces of the generated code (adding it to the session options, planning it into the
chain) are template fragments of its own, ``templates/providers/<name>/<platform>/`` (or a plug-in's
``fragments`` folder), which the project's templates include for every provider listed here: those of
the platform that have the piece, in chain order (:attr:`ExecutionProvider.rank
<mobilegen.providers.base.ExecutionProvider.rank>`).
"""

from __future__ import annotations

from mobilegen import providers
from mobilegen.render.tree import has_fragment


def template_providers(platform: str, piece: str) -> list[dict[str, str]]:
    """The providers of ``platform`` with the fragment ``<platform>/<piece>``, in chain order: ``name``;
    ``enum``, the Kotlin ``ExecutionProvider`` entry; ``kotlin``, the ``Options.use…`` suffix; ``display``."""
    found = [p for p in providers.on_platform(platform) if has_fragment(p.name, f"{platform}/{piece}")]
    return [
        {"name": p.name, "enum": p.display_name.upper(), "kotlin": p.name.capitalize(), "display": p.display_name}
        for p in sorted(found, key=lambda p: p.rank)
    ]
