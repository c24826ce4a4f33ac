"""The target registry: every platform mobilegen renders a project for, found by name.

A target is one module declaring a :class:`~mobilegen.targets.base.Target` (options, validation, IO
dtype check, pinned runtime channel, execution providers, rendering, device tolerances). The built-in
ones are listed in :data:`BUILTIN`, one line each, and imported on first use; :func:`register` adds
another (a test, an embedding application). ``pipeline.build`` loops over the chosen targets and
never branches on a target's name.

The CLI makes each target's build command (``mobilegen <name>``, ``package --<name>``) from
:func:`command`: a built-in's from :mod:`mobilegen.targets.commands` (no target module imported), a
registered target's from its ``command`` attribute.
"""

from __future__ import annotations

import importlib
from typing import Any

from mobilegen.errors import InternalError, UsageError
from mobilegen.targets.base import BuildContext, Target
from mobilegen.targets.commands import TargetCommand

__all__ = ["BUILTIN", "BuildContext", "Target", "TargetCommand", "command", "get", "names", "register", "unregister"]

# name -> "module:attribute". Adding a platform is a module plus a line here (and its templates).
BUILTIN: dict[str, str] = {
    "android": "mobilegen.targets.android:TARGET",
    "ios": "mobilegen.targets.ios:TARGET",
    "web": "mobilegen.targets.web:TARGET",
    "react-native": "mobilegen.targets.react_native:TARGET",
}

_loaded: dict[str, Target[Any]] = {}
_registered: dict[str, Target[Any]] = {}


def register(target: Target[Any]) -> Target[Any]:
    if not isinstance(target, Target):
        raise UsageError(f"cannot register {target!r}: not a mobilegen.targets.Target")
    if target.name in BUILTIN or target.name in _registered:
        raise UsageError(f"target '{target.name}' already exists", hint="register yours under another name")
    _registered[target.name] = target
    return target


def unregister(name: str) -> None:
    _registered.pop(name, None)


def names() -> tuple[str, ...]:
    return (*BUILTIN, *(n for n in _registered if n not in BUILTIN))


def get(name: str) -> Target[Any]:
    if name in _registered:
        return _registered[name]
    if name not in _loaded:
        ref = BUILTIN.get(name)
        if ref is None:
            raise UsageError(f"unknown target '{name}'", hint="targets are: " + ", ".join(names()))
        module, _, attr = ref.partition(":")
        target = getattr(importlib.import_module(module), attr)
        if not isinstance(target, Target) or target.name != name:
            raise InternalError(f"{ref} is not the target '{name}'")
        _loaded[name] = target
    return _loaded[name]


def command(name: str) -> TargetCommand | None:
    """How the CLI builds ``mobilegen <name>`` and ``package --<name>``: a built-in's description
    (imports no target module), a registered target's ``command`` (None: it gets no command)."""
    from mobilegen.targets import commands

    if name in _registered:
        return _registered[name].command
    if name not in BUILTIN:
        raise UsageError(f"unknown target '{name}'", hint="targets are: " + ", ".join(names()))
    return commands.BUILTIN[name]
