"""The ONNX Runtime versions the generated apps run, in one place.

Each row is a runtime release known to be *published* on a channel, with what it can load. The
defaults are the newest published row per channel. ``check_loadable`` refuses a model the pinned
runtime cannot load (ORT-format version, ai.onnx opset of any node).
"""

from __future__ import annotations

from dataclasses import dataclass

from mobilegen.errors import UsageError

CHANNELS = ("maven", "swiftpm", "cocoapods")


@dataclass(frozen=True)
class RuntimeRelease:
    version: str
    channels: tuple[str, ...]  # where this exact version is published
    max_opset: int  # highest ai.onnx opset its CPU kernels implement
    ort_format_versions: tuple[int, ...]  # ORT-format model versions its loader accepts
    source: str  # where the facts come from


# Facts, each with its source; keep sorted oldest → newest.
RELEASES: tuple[RuntimeRelease, ...] = (
    RuntimeRelease(
        version="1.24.2",
        channels=("maven", "swiftpm", "cocoapods"),
        max_opset=24,
        ort_format_versions=(5, 6),
        source=(
            "SwiftPM tag 1.24.2 (microsoft/onnxruntime-swift-package-manager Package.swift, 2026-02-25); "
            "opset 24 cap: onnxruntime PR #25678 (ONNX 1.19); ORT format: core/flatbuffers/ort_format_version.h"
        ),
    ),
)


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


def default_release(channel: str) -> RuntimeRelease:
    rows = [r for r in RELEASES if channel in r.channels]
    return max(rows, key=lambda r: _key(r.version))


def find_release(version: str | None, channel: str) -> RuntimeRelease:
    """The row for ``--ort-version`` (or the default); refuse versions not known to be published."""
    if version is None:
        return default_release(channel)
    for r in RELEASES:
        if r.version == version and channel in r.channels:
            return r
    known = ", ".join(r.version for r in RELEASES if channel in r.channels)
    raise UsageError(
        f"ONNX Runtime {version} is not a release mobilegen knows to be published on {channel}",
        hint=f"use one of: {known}",
    )


def check_loadable(release: RuntimeRelease, *, max_opset: int, ort_format_version: int | None, channel: str) -> None:
    problems = []
    if max_opset > release.max_opset:
        problems.append(f"a node needs ai.onnx opset {max_opset}, runtime {release.version} implements up to {release.max_opset}")
    if ort_format_version is not None and ort_format_version not in release.ort_format_versions:
        problems.append(
            f"the .ort is format version {ort_format_version}, runtime {release.version} loads "
            + "/".join(map(str, release.ort_format_versions))
        )
    if problems:
        raise UsageError(
            f"the pinned {channel} runtime onnxruntime {release.version} cannot load this model: " + "; ".join(problems),
            hint=f"export with --opset {release.max_opset} or lower, or pick a newer --ort-version",
        )
