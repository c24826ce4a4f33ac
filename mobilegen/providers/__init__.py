"""The execution-provider registry: every provider mobilegen can analyse, found by name.

A provider is one module declaring an :class:`ExecutionProvider` (see :mod:`mobilegen.providers.base`).
The built-in ones are listed in :data:`BUILTIN`, one line each, and imported on first use. Other packages
add theirs through the ``mobilegen.providers`` entry-point group::

    [project.entry-points."mobilegen.providers"]
    mynpu = "mynpu_mobilegen:PROVIDER"

and code (a test, an embedding application) calls :func:`register` / :func:`unregister`. The CLI's
``--ep`` choices, the coverage analysis and its reports all read this registry; nothing outside a
provider's own module branches on a provider's name.

Importing this module costs nothing: no onnx, no numpy, and no provider module until one is asked for.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Mapping
from typing import Any

from mobilegen.errors import InternalError, UsageError, first_line
from mobilegen.providers.base import (
    API,
    DYNAMIC,
    GROUP,
    OP,
    OTHER,
    STOP,
    ExecutionProvider,
    HostSession,
    Reason,
    RuntimeArtifact,
    Setting,
    SettingValue,
    TargetFlag,
)

__all__ = [
    "API",
    "BUILTIN",
    "DYNAMIC",
    "ENTRY_POINT_GROUP",
    "GROUP",
    "OP",
    "OTHER",
    "STOP",
    "ExecutionProvider",
    "HostSession",
    "Reason",
    "RuntimeArtifact",
    "Setting",
    "SettingValue",
    "TargetFlag",
    "all_providers",
    "find",
    "get",
    "names",
    "on_platform",
    "target_flag_defaults",
    "register",
    "unregister",
    "validate_settings",
]

# name -> "module:attribute" of the provider object. Adding a built-in provider is a module plus a line here.
BUILTIN: dict[str, str] = {
    "nnapi": "mobilegen.providers.nnapi:PROVIDER",
    "coreml": "mobilegen.providers.coreml:PROVIDER",
    "xnnpack": "mobilegen.providers.xnnpack:PROVIDER",
    "qnn": "mobilegen.providers.qnn:PROVIDER",
    "webgpu": "mobilegen.providers.webgpu:PROVIDER",
}
ENTRY_POINT_GROUP = "mobilegen.providers"
_NAME = re.compile(r"[a-z][a-z0-9_]*")

_loaded: dict[str, ExecutionProvider] = {}  # built-ins and plug-ins, once imported
_registered: dict[str, ExecutionProvider] = {}  # by register(), in registration order


def register(provider: ExecutionProvider) -> ExecutionProvider:
    """Make ``provider`` available by its name (returned, so a module can write ``PROVIDER = register(...)``)."""
    if not isinstance(provider, ExecutionProvider):
        raise UsageError(f"cannot register {provider!r}: not a mobilegen.providers.ExecutionProvider")
    name = provider.name
    if not _NAME.fullmatch(name):
        raise UsageError(f"execution provider name '{name}' is not a lowercase identifier", hint="e.g. 'mynpu' or 'my_npu'")
    if name in BUILTIN:
        raise UsageError(f"execution provider '{name}' is built in", hint="register yours under another name")
    current = _registered.get(name)
    if current is not None and current is not provider:
        raise UsageError(f"execution provider '{name}' is already registered", hint="unregister it first")
    _registered[name] = provider
    return provider


def unregister(name: str) -> None:
    """Forget a provider added by :func:`register` (built-ins and entry points stay)."""
    _registered.pop(name, None)


def names() -> tuple[str, ...]:
    """Every provider name: the built-ins (nnapi, coreml, xnnpack, qnn, webgpu), then the registered ones in
    registration order, then entry-point plug-ins. Imports no provider module."""
    out = list(BUILTIN)
    for name in [*_registered, *_plugin_refs()]:
        if name not in out:
            out.append(name)
    return tuple(out)


def find(name: str) -> ExecutionProvider | None:
    """The provider called ``name``, imported on first use; None when there is none."""
    if name in _registered:
        return _registered[name]
    if name not in _loaded:
        ref = BUILTIN.get(name) or _plugin_refs().get(name)
        if ref is None:
            return None
        _loaded[name] = _load(name, ref, builtin=name in BUILTIN)
    return _loaded[name]


def get(name: str) -> ExecutionProvider:
    """The provider called ``name``; a UsageError listing the known names when there is none."""
    provider = find(name)
    if provider is None:
        raise UsageError(f"unknown execution provider '{name}'", hint=f"use one of: {', '.join(names())}")
    return provider


def all_providers() -> tuple[ExecutionProvider, ...]:
    return tuple(get(n) for n in names())


def on_platform(platform: str) -> tuple[ExecutionProvider, ...]:
    """The providers a platform's apps can use ("android", "ios", "web"), in :func:`names` order."""
    return tuple(p for p in all_providers() if platform in p.platforms)


def target_flag_defaults(platform: str) -> dict[str, Any]:
    """Every target flag the platform's providers declare (its name, the target options' keyword) -> its
    default, in :func:`names` order: what a target's options read when a flag was not given."""
    return {f.name: f.default for p in on_platform(platform) for f in p.target_flags}


def validate_settings(values: Mapping[str, object]) -> None:
    """Check each given value (None: not given) against every provider declaring a setting of that name;
    messages name the setting by its CLI flag. For CLIs that take a setting before choosing providers."""
    for key, value in values.items():
        if value is None:
            continue
        for provider in all_providers():
            setting = provider.setting(key)
            if setting is not None:
                setting.check(value, said_as=setting.flag or None)


# --- loading ----------------------------------------------------------------------------------------


@functools.cache
def _plugin_refs() -> dict[str, str]:
    """Entry points of the ``mobilegen.providers`` group, name -> "module:attribute" (read once)."""
    from importlib import metadata  # lazy: ~30 ms, and only a plug-in lookup needs it

    return {ep.name: ep.value for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name not in BUILTIN}


def _load(name: str, ref: str, *, builtin: bool) -> ExecutionProvider:
    module_name, _, attr = ref.partition(":")
    try:
        provider = getattr(importlib.import_module(module_name), attr)
    except Exception as err:  # noqa: BLE001 — a plug-in's import can fail any way: name it and its cause
        if builtin:
            raise InternalError(f"built-in execution provider '{name}' failed to load: {first_line(err)}") from err
        raise UsageError(
            f"execution provider plug-in '{name}' ({ref}) could not be loaded: {first_line(err)}",
            hint="fix or uninstall the package that declares it",
        ) from err
    if not isinstance(provider, ExecutionProvider) or provider.name != name:
        what = f"'{provider.name}'" if isinstance(provider, ExecutionProvider) else "not an ExecutionProvider"
        if builtin:
            raise InternalError(f"{ref} is {what}, registered as '{name}'")
        raise UsageError(
            f"execution provider plug-in '{name}' ({ref}) is {what}",
            hint=f"the entry point must name an ExecutionProvider whose name is '{name}'",
        )
    return provider
