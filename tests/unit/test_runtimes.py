"""The pinned runtime table: sorted, sourced, defaults per channel, loadability check."""

from __future__ import annotations

import pytest

from mobilegen.errors import UsageError
from mobilegen.runtimes import CHANNELS, RELEASES, check_loadable, default_release, find_release


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


def test_table_is_sorted_sourced_and_unique() -> None:
    versions = [r.version for r in RELEASES]
    assert versions == sorted(versions, key=_key)
    assert len(set(versions)) == len(versions)
    for r in RELEASES:
        assert r.source and set(r.channels) <= set(CHANNELS) and r.channels
        assert 6 in r.ort_format_versions


@pytest.mark.parametrize("channel", CHANNELS)
def test_default_is_newest_on_its_channel(channel: str) -> None:
    newest = max((r for r in RELEASES if channel in r.channels), key=lambda r: _key(r.version))
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
