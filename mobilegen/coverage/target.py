"""What one analysis is for: an execution provider and the values of its settings."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from mobilegen import providers
from mobilegen.errors import InternalError
from mobilegen.providers.base import ExecutionProvider, SettingValue


@dataclass(frozen=True, init=False)
class EPTarget:
    """``EPTarget(ep, **settings)``: the provider by its registry name, each setting it declares as a
    keyword (None or left out: the default). Unknown providers and settings are UsageErrors."""

    ep: str
    values: tuple[tuple[str, SettingValue], ...]  # every setting of the provider, in declared order

    def __init__(self, ep: str, **settings: SettingValue | None) -> None:
        object.__setattr__(self, "ep", ep)
        object.__setattr__(self, "values", providers.get(ep).resolve(settings))

    @property
    def provider(self) -> ExecutionProvider:
        return providers.get(self.ep)

    def value(self, name: str) -> SettingValue:
        for key, value in self.values:
            if key == name:
                return value
        raise InternalError(f"execution provider '{self.ep}' has no setting '{name}'")

    def int_value(self, name: str) -> int:
        value = self.value(name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InternalError(f"setting '{name}' of '{self.ep}' is {value!r}, not an integer")
        return value

    def str_value(self, name: str) -> str:
        value = self.value(name)
        if not isinstance(value, str):
            raise InternalError(f"setting '{name}' of '{self.ep}' is {value!r}, not a string")
        return value

    def bool_value(self, name: str) -> bool:
        value = self.value(name)
        if not isinstance(value, bool):
            raise InternalError(f"setting '{name}' of '{self.ep}' is {value!r}, not true/false")
        return value

    def names_value(self, name: str) -> tuple[str, ...]:
        value = self.value(name)
        if not isinstance(value, tuple):
            raise InternalError(f"setting '{name}' of '{self.ep}' is {value!r}, not a list of names")
        return value

    @functools.cached_property
    def variant(self) -> str | None:
        """The value of the provider's variant setting (a model format), None when it has none."""
        setting = self.provider.variant
        return None if setting is None else self.str_value(setting.name)

    @property
    def label(self) -> str:
        variant = self.variant
        return f"{self.ep}/{variant}" if variant else self.ep

    def settings(self) -> dict[str, object]:
        """What the coverage report records under ``settings``."""
        return self.provider.report_settings(dict(self.values))
