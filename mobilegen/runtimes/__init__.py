"""The ONNX Runtime versions the generated apps run: the releases table and the channels they come from.

The table of releases and the targets' default channels is :mod:`mobilegen.runtimes.releases`. A provider
whose platform's default build lacks it declares the build it needs (``RuntimeArtifact``: its channel, its
coordinates and the releases published there); this module adds those channels and rows, asked of the
provider registry, so a target pins a provider's own build through the same lookups. The defaults are the
newest published row per channel. ``check_loadable`` refuses a model the pinned runtime cannot load
(ORT-format version, ai.onnx opset of any node).
"""

from __future__ import annotations

from mobilegen.runtimes import releases as _table
from mobilegen.runtimes.releases import (
    PLATFORM_CHANNEL,
    RELEASES,
    RuntimeRelease,
    check_loadable,
    rules_release,
    version_key,
)

__all__ = [
    "CHANNELS",
    "PLATFORM_CHANNEL",
    "RELEASES",
    "RuntimeRelease",
    "channels",
    "check_loadable",
    "default_release",
    "find_release",
    "provider_releases",
    "rules_release",
    "version_key",
]

CHANNELS = _table.CHANNELS  # the targets' default channels; :func:`channels` adds the providers' own


def provider_releases() -> tuple[RuntimeRelease, ...]:
    """The rows of every provider's own runtime builds (``RuntimeArtifact.releases``), in registry order."""
    from mobilegen import providers

    return tuple(r for p in providers.all_providers() for a in p.runtime_artifacts for r in a.releases)


def channels() -> tuple[str, ...]:
    """Every channel a project may pin from: the targets' defaults, then the providers' own builds'."""
    out = list(CHANNELS)
    for r in provider_releases():
        out.extend(c for c in r.channels if c not in out)
    return tuple(out)


def _table_for(channel: str) -> tuple[RuntimeRelease, ...]:
    return RELEASES if channel in CHANNELS else provider_releases()


def default_release(channel: str) -> RuntimeRelease:
    """The newest release published on ``channel`` (a default channel, or a provider's own build's)."""
    return _table.default_release(channel, _table_for(channel))


def find_release(version: str | None, channel: str) -> RuntimeRelease:
    """The row for ``--ort-version`` (or the default) on ``channel``; refuse versions not known to be published."""
    return _table.find_release(version, channel, _table_for(channel))
