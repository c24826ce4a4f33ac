"""The generated projects as libraries an app depends on (issue 31): Maven coordinates of the Android AAR
(``maven-publish``) and the version of both the AAR and the tag-ready Swift package.

One version for both platforms (``--lib-version``): SwiftPM resolves packages by semantic-version git
tags, so the version must be ``MAJOR.MINOR.PATCH`` with an optional ``-prerelease`` (semver.org 2.0.0,
without build metadata, which SwiftPM ignores). Maven groupId / artifactId follow Maven's own
coordinate rule (``[A-Za-z0-9_.-]+``, maven-model's ``validateId``), groupId additionally dotted
segments that start with a letter, like a Java package, since it is the reverse domain of its owner.
"""

from __future__ import annotations

import re

DEFAULT_VERSION = "1.0.0"
COORDINATE_HINT = (
    "use --maven-group like com.example.models, --maven-artifact like my-model, --lib-version like 1.2.0 "
    "(MAJOR.MINOR.PATCH, optionally -rc.1)"
)
_GROUP = re.compile(r"[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)+")
_ARTIFACT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_VERSION = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?")
_MAX = 200


def version_problem(version: str) -> str | None:
    """Why ``version`` cannot be the library's version, or None."""
    if len(version) > _MAX or not _VERSION.fullmatch(version):
        return f"--lib-version {version!r} is not a semantic version MAJOR.MINOR.PATCH[-prerelease] (SwiftPM tags need one)"
    return None


def coordinate_problems(group: str | None, artifact: str | None, version: str | None) -> list[str]:
    """Every problem of the given coordinates (None: the default, always valid)."""
    problems = []
    if group is not None and (len(group) > _MAX or not _GROUP.fullmatch(group)):
        problems.append(f"--maven-group {group!r} is not a Maven groupId (dotted segments of letters, digits, _ or -, each starting with a letter)")
    if artifact is not None and (len(artifact) > _MAX or not _ARTIFACT.fullmatch(artifact)):
        problems.append(f"--maven-artifact {artifact!r} is not a Maven artifactId (letters, digits, _ . -, starting with a letter or digit)")
    if version is not None and (p := version_problem(version)) is not None:
        problems.append(p)
    return problems
