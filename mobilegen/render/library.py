"""The generated projects as libraries an app depends on (issue 31): Maven coordinates of the Android AAR
(``maven-publish``) and the version of both the AAR and the tag-ready Swift package.

One version for both platforms (``--lib-version``), checked per platform, each message naming its tool:

* iOS (:func:`swiftpm_version_problem`): SwiftPM resolves packages by semantic-version git tags, parsed by
  ``Version(versionString:)`` (swift-tools-support-core ``Sources/TSCUtility/Version.swift``): three numeric
  core identifiers, then an optional ``-prerelease`` and an optional ``+build`` metadata, their identifiers of
  ASCII letters, digits and ``-``. mobilegen asks for strict semver.org 2.0.0 (no leading zeros, no empty
  identifiers), which that parser accepts. Build metadata is kept but does not order versions: SwiftPM's
  ``==``/``<`` ignore it, so ``1.2.0+build.5`` and ``1.2.0`` are the same release to a resolver.
* Android (:func:`maven_version_problem`): Maven takes almost any string as a version; maven-model-builder's
  ``DefaultModelValidator`` bans only the file-system characters ``\\ / : " < > | ? *`` (ILLEGAL_VERSION_CHARS),
  and Maven 4 also ``[ ] ( ) { } ,`` (range syntax). mobilegen asks for letters, digits and ``. _ - +``,
  starting with a letter or digit and not ending with ``+``: the version also goes into Gradle's dependency
  notation ``group:artifact:version`` (where ``:`` and ``@`` separate parts and a trailing ``+`` is a dynamic
  version) and into file names. Semantic versions with build metadata (``1.2.0+build.5``) pass.

Maven groupId / artifactId follow Maven's own coordinate rule (``[A-Za-z0-9_.-]+``, maven-model's
``validateId``), groupId additionally dotted segments that start with a letter, like a Java package, since it
is the reverse domain of its owner.
"""

from __future__ import annotations

import re

DEFAULT_VERSION = "1.0.0"
COORDINATE_HINT = (
    "use --maven-group like com.example.models, --maven-artifact like my-model, --lib-version like 1.2.0 "
    "(optionally -rc.1 and +build.5)"
)
SWIFTPM_VERSION_HINT = "use --lib-version like 1.2.0, 1.2.0-rc.1 or 1.2.0+build.5 (MAJOR.MINOR.PATCH[-prerelease][+build])"
_GROUP = re.compile(r"[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)+")
_ARTIFACT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# semver.org 2.0.0: numeric identifiers without leading zeros; build metadata identifiers may have them.
_NUM = r"(?:0|[1-9]\d*)"
_PRE_ID = r"(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"
_SEMVER = re.compile(rf"{_NUM}\.{_NUM}\.{_NUM}(?:-{_PRE_ID}(?:\.{_PRE_ID})*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?")
_MAVEN_VERSION = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._+-]*[A-Za-z0-9._-])?")
_MAX = 200


def swiftpm_version_problem(version: str) -> str | None:
    """Why ``version`` cannot be the Swift package's release tag, or None."""
    if len(version) > _MAX or not _SEMVER.fullmatch(version):
        return (
            f"--lib-version {version!r} is not a semantic version MAJOR.MINOR.PATCH[-prerelease][+build] "
            "(SwiftPM takes the iOS package's version from a git tag of that form)"
        )
    return None


def maven_version_problem(version: str) -> str | None:
    """Why ``version`` cannot be the AAR's Maven version, or None."""
    if len(version) > _MAX or not _MAVEN_VERSION.fullmatch(version):
        return (
            f"--lib-version {version!r} is not a Maven version for the AAR (letters, digits and . _ - +, starting with "
            "a letter or digit, not ending with +, which Gradle reads as a dynamic version)"
        )
    return None


def coordinate_problems(group: str | None, artifact: str | None, version: str | None) -> list[str]:
    """Every problem of the Android library's Maven coordinates (None: the default, always valid)."""
    problems = []
    if group is not None and (len(group) > _MAX or not _GROUP.fullmatch(group)):
        problems.append(f"--maven-group {group!r} is not a Maven groupId (dotted segments of letters, digits, _ or -, each starting with a letter)")
    if artifact is not None and (len(artifact) > _MAX or not _ARTIFACT.fullmatch(artifact)):
        problems.append(f"--maven-artifact {artifact!r} is not a Maven artifactId (letters, digits, _ . -, starting with a letter or digit)")
    if version is not None and (p := maven_version_problem(version)) is not None:
        problems.append(p)
    return problems
