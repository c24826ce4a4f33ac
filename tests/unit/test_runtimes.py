"""The pinned runtime table: sorted, sourced, defaults per channel, loadability check."""

from __future__ import annotations

import pytest

from mobilegen.errors import UsageError
from mobilegen.runtimes import (
    CHANNELS,
    RELEASES,
    channels,
    check_loadable,
    default_release,
    find_release,
    provider_releases,
)


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


def test_table_is_sorted_sourced_and_unique() -> None:
    versions = [r.version for r in RELEASES]
    assert versions == sorted(versions, key=_key)
    assert len(set(versions)) == len(versions)
    own = {r.version for r in provider_releases()}
    for r in RELEASES:
        assert r.source and set(r.channels) <= set(CHANNELS)
        assert r.channels or r.version in own  # on no default channel: a provider's own build publishes it
        assert 6 in r.ort_format_versions


def test_provider_channels_are_their_own_and_known_releases() -> None:
    """A provider's own build publishes on a channel of its own, sorted, and only releases the table knows
    (whose provider rules ``--ort-version`` can select)."""
    rows = provider_releases()
    assert rows  # a built-in provider ships its own build
    known = {r.version: r for r in RELEASES}
    for r in rows:
        assert r.source and r.channels and not set(r.channels) & set(CHANNELS)
        assert r.version in known and r.max_opset == known[r.version].max_opset
        assert r.ort_format_versions == known[r.version].ort_format_versions
    for ch in set(channels()) - set(CHANNELS):
        versions = [r.version for r in rows if ch in r.channels]
        assert versions == sorted(versions, key=_key)


@pytest.mark.parametrize("channel", channels())
def test_default_is_newest_on_its_channel(channel: str) -> None:
    rows = (*RELEASES, *provider_releases())
    newest = max((r for r in rows if channel in r.channels), key=lambda r: _key(r.version))
    assert default_release(channel) == newest
    assert find_release(None, channel) == newest


def test_unknown_or_unpublished_versions_are_refused() -> None:
    with pytest.raises(UsageError):
        find_release("9.9.9", "maven")
    with pytest.raises(UsageError):
        find_release("1.27.0", "swiftpm")  # Maven only


def test_check_loadable() -> None:
    r = find_release("1.24.2", "maven")
    check_loadable(r, max_opset=20, ort_format_version=6, channel="maven")
    with pytest.raises(UsageError) as err:
        check_loadable(r, max_opset=r.max_opset + 1, ort_format_version=4, channel="maven")
    assert "opset" in err.value.message and "format version 4" in err.value.message


def test_a_plugin_providers_own_build_is_a_channel_of_the_table() -> None:
    """A provider that declares its own runtime build adds its channel and releases to the lookups the
    targets and ``mobilegen verify`` use, without an edit to the table; unregistered, they are gone."""
    from dataclasses import replace

    from mobilegen import providers
    from mobilegen.providers import ExecutionProvider, RuntimeArtifact

    base = find_release("1.27.0", "maven")
    rows = (replace(base, channels=("maven-toy",), source="a toy build"),)
    toy = ExecutionProvider(
        name="toyrt", display_name="ToyRT", platform="android",
        runtime_artifacts=(RuntimeArtifact("android", "maven-toy", "org.example:toy-android", releases=rows),),
    )  # fmt: skip
    providers.register(toy)
    try:
        assert "maven-toy" in channels() and "maven-toy" not in CHANNELS
        assert default_release("maven-toy") == rows[0] and find_release("1.27.0", "maven-toy") == rows[0]
        with pytest.raises(UsageError, match="published on maven-toy"):
            find_release("1.24.2", "maven-toy")
        assert default_release("maven") == base  # the default channel's pin is unchanged
    finally:
        providers.unregister("toyrt")
    assert "maven-toy" not in channels()
    with pytest.raises(UsageError, match="published on maven-toy"):
        find_release("1.27.0", "maven-toy")
