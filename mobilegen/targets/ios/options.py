"""The iOS target's options (``mobilegen ios``'s flags): the target's own fields, and the flags its providers
declare (:class:`~mobilegen.providers.TargetFlag`: its name is a keyword, its value the flag's), which the registry
knows and :attr:`IosOptions.provider_options` holds.

A provider flag reads like a field (``opts.compute_units``): the value given, else the flag's default. An
option no iOS provider declares is a TypeError as a keyword (as a dataclass's unknown field is) and a usage
error inside ``provider_options`` (:func:`mobilegen.targets.provider_setup.problems`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mobilegen import providers

PLATFORM = "ios"


@dataclass(frozen=True, init=False)
class IosOptions:
    class_name: str | None = None
    ort_version: str | None = None
    lib_version: str | None = None  # --lib-version: the package's release tag (None: mobilegen.render.library.DEFAULT_VERSION)
    # The iOS providers' target flags given (their TargetFlag name -> value); values equal to the flag's
    # default are left out, so equal options compare equal however they were spelled.
    provider_options: Mapping[str, Any] = field(default_factory=dict)

    def __init__(
        self,
        *,
        class_name: str | None = None,
        ort_version: str | None = None,
        lib_version: str | None = None,
        provider_options: Mapping[str, Any] | None = None,
        **flags: Any,
    ) -> None:
        defaults = providers.target_flag_defaults(PLATFORM)
        unknown = sorted(set(flags) - set(defaults))
        if unknown:
            raise TypeError(f"IosOptions got an unexpected keyword argument {unknown[0]!r}")
        given = {**dict(provider_options or {}), **flags}
        kept = {k: v for k, v in given.items() if k not in defaults or v != defaults[k]}
        object.__setattr__(self, "class_name", class_name)
        object.__setattr__(self, "ort_version", ort_version)
        object.__setattr__(self, "lib_version", lib_version)
        object.__setattr__(self, "provider_options", kept)

    def __getattr__(self, name: str) -> Any:
        """A provider flag's value: given, else its default (only called for names that are no field)."""
        if name.startswith("_"):
            raise AttributeError(name)
        given = self.__dict__.get("provider_options", {})
        if name in given:
            return given[name]
        defaults = providers.target_flag_defaults(PLATFORM)
        if name in defaults:
            return defaults[name]
        raise AttributeError(f"'IosOptions' object has no attribute {name!r}")
