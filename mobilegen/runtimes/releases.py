"""The ONNX Runtime releases mobilegen knows, and the channels the targets pin them from by default.

Each row is an ONNX Runtime release with what it can load and where it is *published* among the
channels the targets' projects pin by default (:data:`CHANNELS`). A release published only on a
provider's own build (``RuntimeArtifact.releases``, :mod:`mobilegen.runtimes`) is a row here too, on none
of these channels: its provider rules apply (``--ort-version``) wherever it is published.

Imports no provider: the providers' settings check their ``--ort-version`` against this table
(:func:`rules_release`); :mod:`mobilegen.runtimes` adds the providers' own channels.
"""

from __future__ import annotations

from dataclasses import dataclass

from mobilegen.errors import UsageError

# The channels the targets pin from by default. "npm": onnxruntime-web (the Web target);
# "npm-react-native": onnxruntime-react-native, whose JS API (onnxruntime-common) has that exact version
# (its native libraries are pinned to it by the generated app config). A provider that needs its own
# runtime build declares its channel (``RuntimeArtifact.channel``).
CHANNELS = ("maven", "swiftpm", "cocoapods", "npm", "npm-react-native")


@dataclass(frozen=True)
class RuntimeRelease:
    version: str
    channels: tuple[str, ...]  # where this exact version is published
    max_opset: int  # highest ai.onnx opset its CPU kernels implement (a sourced lower bound)
    ort_format_versions: tuple[int, ...]  # ORT-format model versions its loader accepts
    source: str  # where the facts come from
    released: str = ""  # publication date on the first channel named in ``source`` (ISO), when known


# Facts shared by every row below (checked 2026-11, Maven Central itself is not reachable from here):
#
# * Maven: com.microsoft.onnxruntime:onnxruntime-android versions and dates from
#   mvnrepository.com/artifact/com.microsoft.onnxruntime/onnxruntime-android (35 versions, newest 1.27.0,
#   2026-06-30; 1.24.1 is *not* listed for -android, only for other artifacts: desktop, a provider's own build) and
#   javadoc.io/doc/com.microsoft.onnxruntime (onnxruntime-android: 35 versions, latest 1.27.0).
#   1.28.0 and 1.29.0 are published on a provider's own build only (2026-07/08): no source seen here
#   lists them for onnxruntime-android, so their rows are on none of these channels.
# * SwiftPM: microsoft/onnxruntime-swift-package-manager tags 1.24.2 (HEAD, "Update ORT to 1.24.2",
#   2026-02-25), 1.24.1, 1.20.0; PR #44 (1.24.3) still open.
# * CocoaPods: onnxruntime-objc is published per release (onnxruntime.ai/docs/get-started/with-obj-c.html)
#   but the exact version list was not verifiable here; only 1.24.2 (the SPM version) is marked.
# * max_opset: ORT 1.23 integrated ONNX 1.19 = opset 24 (microsoft/onnxruntime PR #25678), so 24 is a
#   lower bound for every later release; the installed onnxruntime 1.31.1 accepts opset 26 and refuses 27
#   (model_load_utils.h ValidateOpsetForDomain), which is not claimed for the older mobile releases.
# * ORT format: kOrtModelVersion 6, loader accepts 5 and 6 (onnxruntime/core/flatbuffers/
#   ort_format_version.h at 5d24c9547, 1.24.0); onnxruntime 1.31.1 still writes version "6"
#   (InferenceSession.ort_version of a converted model), so every release in between reads 5 and 6.
_MVN = "mvnrepository.com/artifact/com.microsoft.onnxruntime/onnxruntime-android; javadoc.io"
_FACTS = "opset >= 24: onnxruntime PR #25678 (ONNX 1.19); ORT format 5/6: core/flatbuffers/ort_format_version.h"

# Keep sorted oldest → newest.
RELEASES: tuple[RuntimeRelease, ...] = (
    RuntimeRelease(
        version="1.24.1",
        channels=("swiftpm",),
        max_opset=24,
        ort_format_versions=(5, 6),
        source=f"SwiftPM tag 1.24.1 (microsoft/onnxruntime-swift-package-manager); {_FACTS}",
    ),
    RuntimeRelease(
        version="1.24.2",
        channels=("maven", "swiftpm", "cocoapods"),
        max_opset=24,
        ort_format_versions=(5, 6),
        source=(
            f"Maven {_MVN} (2026-02-19); SwiftPM tag 1.24.2 (Package.swift, 2026-02-25); "
            f"CocoaPods onnxruntime-objc 1.24.2 assumed with the SPM release (not verified); {_FACTS}"
        ),
        released="2026-02-19",
    ),
    RuntimeRelease(
        version="1.24.3",
        channels=("maven", "npm-react-native"),
        max_opset=24,
        ort_format_versions=(5, 6),
        source=(
            f"Maven {_MVN} (2026-03-06); SwiftPM PR #44 for 1.24.3 not merged; npm onnxruntime-react-native 1.24.3 "
            f"(latest on npm 2026-11-27; depends on onnxruntime-common 1.24.3 exactly); {_FACTS}"
        ),
        released="2026-03-06",
    ),
    RuntimeRelease(
        version="1.25.0",
        channels=("maven",),
        max_opset=24,
        ort_format_versions=(5, 6),
        source=f"Maven {_MVN} (2026-04-20); {_FACTS}",
        released="2026-04-20",
    ),
    RuntimeRelease(
        version="1.25.1",
        channels=("maven",),
        max_opset=24,
        ort_format_versions=(5, 6),
        source=f"Maven {_MVN} (2026-04-29); {_FACTS}",
        released="2026-04-29",
    ),
    RuntimeRelease(
        version="1.26.0",
        channels=("maven",),
        max_opset=24,
        ort_format_versions=(5, 6),
        source=f"Maven {_MVN} (2026-05-09); {_FACTS}",
        released="2026-05-09",
    ),
    RuntimeRelease(
        version="1.27.0",
        channels=("maven",),
        max_opset=24,
        ort_format_versions=(5, 6),
        source=f"Maven {_MVN} (2026-06-30); {_FACTS}",
        released="2026-06-30",
    ),
    # On no default channel: a provider's own build publishes them (its RuntimeArtifact.releases, with the
    # dates and sources of that publication); the rules of every provider know these releases.
    RuntimeRelease(
        version="1.28.0",
        channels=(),
        max_opset=24,
        ort_format_versions=(5, 6),
        source=f"ONNX Runtime 1.28.0 (2026-07), published on a provider's own build only; {_FACTS}",
    ),
    RuntimeRelease(
        version="1.29.0",
        channels=(),
        max_opset=24,
        ort_format_versions=(5, 6),
        source=f"ONNX Runtime 1.29.0 (2026-08), published on a provider's own build only; {_FACTS}",
    ),
    RuntimeRelease(
        version="1.30.0",
        channels=("npm",),
        max_opset=24,
        ort_format_versions=(5, 6),
        source=(
            "npm onnxruntime-web 1.30.0 (latest on npm 2026-11-27; golden vectors run in headless Chromium 156, "
            f"shared/research/rn-web-2026-11-27.md); {_FACTS}"
        ),
    ),
)


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


def version_key(v: str) -> tuple[int, ...]:
    """``"1.27.0"`` -> ``(1, 27, 0)``, for comparing releases (rule version ranges, pins)."""
    return _key(v)


# The channel each platform's projects pin their runtime from by default (the targets' ``channel``; a
# provider's own build: its RuntimeArtifact.channel).
PLATFORM_CHANNEL = {"android": "maven", "ios": "swiftpm", "web": "npm"}


def rules_release(version: str, platform: str) -> str:
    """The ONNX Runtime release whose provider rules an analysis applies: ``version`` when given (a
    release in the table, on any channel: ``check --ort-version``), else the platform's pinned default."""
    if not version:
        return default_release(PLATFORM_CHANNEL.get(platform, "maven")).version
    if any(r.version == version for r in RELEASES):
        return version
    known = ", ".join(r.version for r in RELEASES)
    raise UsageError(f"--ort-version {version} is not an ONNX Runtime release mobilegen knows", hint=f"use one of: {known}")


def default_release(channel: str, table: tuple[RuntimeRelease, ...] = RELEASES) -> RuntimeRelease:
    """The newest release of ``table`` published on ``channel``."""
    rows = [r for r in table if channel in r.channels]
    return max(rows, key=lambda r: _key(r.version))


def find_release(version: str | None, channel: str, table: tuple[RuntimeRelease, ...] = RELEASES) -> RuntimeRelease:
    """The row of ``table`` for ``--ort-version`` (or the default); refuse versions not known to be published."""
    if version is None:
        return default_release(channel, table)
    for r in table:
        if r.version == version and channel in r.channels:
            return r
    known = ", ".join(r.version for r in table if channel in r.channels)
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
