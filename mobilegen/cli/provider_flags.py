"""The provider flags of the commands, made from the provider registry (``mobilegen.providers``).

Two kinds:

- a provider :class:`~mobilegen.providers.Setting` with a ``flag`` (``--android-api``, ``--ort-version``...)
  is an option of ``check`` and ``fix``;
- a provider :class:`~mobilegen.providers.TargetFlag` (the flag that turns the provider on, and its
  options) is an option of the build commands of its platforms.

A command names :func:`setting_params` or :func:`target_params` among its parts (``mobilegen.cli.flags``):
its signature, as Typer reads it, gets one parameter per flag, made when the command is built (on use:
``mobilegen --help`` imports no provider), so plug-ins registered by then get their flags too.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from mobilegen.providers import ExecutionProvider, Setting, SettingValue, TargetFlag


def setting_help(setting: Setting, *, variants_each: bool = True) -> str:
    """A provider flag's help from the registry: what it sets, its choices or range, and its default
    (``variants_each``: a variant setting left out reports every choice, as ``check`` does)."""
    if setting.variant and variants_each:
        return f"{setting.help}: {' or '.join(setting.choices)} (default: report each)."
    if setting.choices:
        return f"{setting.help}: {', '.join(setting.choices)} (default: {setting.default})."
    if setting.minimum is not None or setting.maximum is not None:
        return f"{setting.help} ({setting.range_text}; default {setting.default})."
    return f"{setting.help}."


def _parser(parse: Callable[[str], Any]) -> Callable[[Any], Any]:
    """A Typer ``parser`` for a provider's parse function: its UsageError is Click's bad value."""

    def parser(value: Any) -> Any:
        from mobilegen.errors import UsageError

        try:
            return parse(str(value))
        except UsageError as err:
            raise typer.BadParameter(err.message) from None

    return parser


def _option(name: str, flag: str, kind: type, default: Any, help_: str, metavar: str, parse: Callable[[str], Any] | None) -> inspect.Parameter:
    if kind is bool:
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=bool(default), annotation=Annotated[bool, typer.Option(flag, help=help_)])
    extra: dict[str, Any] = {"metavar": metavar} if metavar else {}
    if parse is not None:
        extra["parser"] = _parser(parse)
    if kind is tuple:  # a list of names: repeatable
        annotation: Any = Annotated[list[str] | None, typer.Option(flag, help=help_, **extra)]
    elif default is None:
        annotation = Annotated[kind | None, typer.Option(flag, help=help_, **extra)]
    else:
        annotation = Annotated[kind, typer.Option(flag, help=help_, **extra)]
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def flagged_settings() -> list[Setting]:
    """Every provider setting with a flag, once per name (the first provider declaring it), in registry order."""
    from mobilegen import providers

    out: dict[str, Setting] = {}
    for provider in providers.all_providers():
        for s in provider.settings:
            if s.flag and s.name not in out:
                out[s.name] = s
    return sorted(out.values(), key=lambda s: s.name == "ort_version")  # --ort-version, every provider's, last


def setting_params(*, variants_each: bool = True) -> list[inspect.Parameter]:
    """One option per flagged provider setting; not given: None (a bool flag: False)."""
    params = []
    for s in flagged_settings():
        kind: type = type(s.default) if not isinstance(s.default, tuple) else tuple
        params.append(_option(s.name, s.flag, kind, False if kind is bool else None, setting_help(s, variants_each=variants_each), s.metavar, s.parse))
    return params


def settings_given(flags: Mapping[str, Any]) -> dict[str, SettingValue | None]:
    """The settings among the values a command received (None: not given; a bool flag left off is not given)."""
    names = {s.name for s in flagged_settings()}
    return {name: (tuple(v) if isinstance(v, list) else v) if v is not False else None for name, v in flags.items() if name in names}


def target_flags(platforms: Iterable[str]) -> list[tuple[ExecutionProvider, TargetFlag]]:
    """The providers' target flags for any of ``platforms``, once per name, in registry order."""
    from mobilegen import providers

    wanted = set(platforms)
    out: dict[str, tuple[ExecutionProvider, TargetFlag]] = {}
    for provider in providers.all_providers():
        if wanted & set(provider.platforms):
            for f in provider.target_flags:
                out.setdefault(f.name, (provider, f))
    return list(out.values())


def target_params(platforms: Iterable[str]) -> list[inspect.Parameter]:
    return [_option(f.name, f.flag, f.kind, f.default, _target_flag_help(p, f), f.metavar, f.parse) for p, f in target_flags(platforms)]


def _target_flag_help(provider: ExecutionProvider, flag: TargetFlag) -> str:
    """A target flag's help: its own, or (``help_from_setting``) its provider's setting of that name's."""
    setting = provider.setting(flag.name) if flag.help_from_setting else None
    return flag.help if setting is None else setting_help(setting)


def target_options(platform: str, flags: Mapping[str, Any], options_type: type) -> dict[str, Any]:
    """The keywords of ``platform``'s target options (``options_type``, a dataclass) that the received target
    flags set: a field of that name, or else (a plug-in provider's flag) an entry of its ``provider_options``."""
    fields = {f.name for f in dataclasses.fields(options_type)}
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for provider, f in target_flags((platform,)):
        if platform in provider.platforms and f.name in flags:
            value = flags[f.name]
            (out if f.name in fields else extra)[f.name] = f.convert(value) if f.convert is not None else value
    if extra:
        out["provider_options"] = extra
    return out


def refuse_without_target(chosen: Iterable[str], flags: Mapping[str, Any]) -> None:
    """A provider's ``needs_target`` flags given while none of its platforms is chosen: a UsageError
    naming them (``--a/--b need --android``)."""
    from mobilegen import providers
    from mobilegen.errors import UsageError

    chosen = set(chosen)
    for provider in providers.all_providers():
        if chosen & set(provider.platforms):
            continue
        needing = [f for f in provider.target_flags if f.needs_target]
        if any(f.given(flags.get(f.name)) for f in needing):
            platform = provider.platforms[0]
            names = "/".join(f.flag for f in needing)
            raise UsageError(f"{names} {'need' if len(needing) > 1 else 'needs'} --{platform}", hint=f"add --{platform}")
