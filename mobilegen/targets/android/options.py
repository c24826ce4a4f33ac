"""The Android target's options (``mobilegen android``'s flags): plain data, which the target's modules
(:mod:`~mobilegen.targets.android.project`, :mod:`~mobilegen.targets.android.runtime`) share.

The target's own options are fields; every provider's are its :class:`~mobilegen.providers.TargetFlag`
values in ``provider_options``, built-in and plug-in alike, so this class names no provider. A provider
flag may also be passed as a keyword (``AndroidOptions(<flag name>=value)``, as the Python API did when
these were fields) and read as an attribute, which gives the flag's default when it was not given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PLATFORM = "android"


@dataclass(frozen=True, init=False)
class AndroidOptions:
    package: str | None = None
    class_name: str | None = None
    ort_version: str | None = None
    maven_group: str | None = None  # --maven-group: the AAR publication's groupId (None: the Kotlin package)
    maven_artifact: str | None = None  # --maven-artifact: its artifactId (None: the library module's name)
    lib_version: str | None = None  # --lib-version: the publication's version (None: mobilegen.render.library.DEFAULT_VERSION)
    # The providers' target flags (their TargetFlag name -> value): the Android providers of the registry say
    # which names exist (mobilegen.targets.provider_setup.problems refuses the others).
    provider_options: Mapping[str, Any] = field(default_factory=dict)

    def __init__(
        self,
        package: str | None = None,
        class_name: str | None = None,
        ort_version: str | None = None,
        maven_group: str | None = None,
        maven_artifact: str | None = None,
        lib_version: str | None = None,
        provider_options: Mapping[str, Any] | None = None,
        **provider_flags: Any,
    ) -> None:
        for name, value in (
            ("package", package),
            ("class_name", class_name),
            ("ort_version", ort_version),
            ("maven_group", maven_group),
            ("maven_artifact", maven_artifact),
            ("lib_version", lib_version),
        ):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "provider_options", {**(provider_options or {}), **provider_flags})

    def __getattr__(self, name: str) -> Any:
        """A provider's target option by its flag name: the value given, else the flag's default."""
        if name.startswith("__") or name == "provider_options":
            raise AttributeError(name)
        given = self.__dict__.get("provider_options") or {}
        if name in given:
            return given[name]
        from mobilegen import providers

        defaults = providers.target_flag_defaults(PLATFORM)
        if name in defaults:
            return defaults[name]
        raise AttributeError(f"AndroidOptions has no option {name!r} (no Android provider declares that target flag)")
