"""The help of generic flags whose words come from the provider registry, completed when a help is shown.

A flag's declared help is provider-neutral. When a command's help is shown (``MobilegenCommand.format_help``;
``scripts/gen_docs.py`` writes docs/cli.md the same way) :func:`completed_help` rewrites it from what the
registered providers declare: their names (``--ep``) and their words for generic flags
(``ExecutionProvider.keep_dynamic_cost``, ``fixed_style``, ``approximate_example``; the providers
``mobilegen bench`` runs on this host: ``host_session``). A plug-in's declarations show up as a built-in's do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mobilegen.providers import ExecutionProvider


def _providers() -> tuple[ExecutionProvider, ...]:
    from mobilegen import providers

    return providers.all_providers()


def _names() -> str:
    from mobilegen import providers

    return ", ".join(providers.names())


def _or(words: Sequence[str]) -> str:
    return f"{', '.join(words[:-1])} or {words[-1]}" if len(words) > 1 else "".join(words)


def _fixing_dims() -> list[ExecutionProvider]:
    """The providers whose build fixes dynamic dims unless ``--keep-dynamic``."""
    return [p for p in _providers() if p.keep_dynamic_cost]


def _switch(provider: ExecutionProvider) -> str:
    """The build flag that turns ``provider`` on (``--<name>``)."""
    return next((f.flag for f in provider.target_flags if f.name == provider.name), f"--{provider.name}")


def keep_dynamic_build() -> str | None:
    fixing = _fixing_dims()
    if not fixing:
        return None
    return f"With {_or([_switch(p) for p in fixing])}, keep dynamic dims ({'; '.join(p.keep_dynamic_cost for p in fixing)})."


def keep_dynamic_fix() -> str | None:
    fixing = _fixing_dims()
    return f"Keep dynamic dims ({'; '.join(p.keep_dynamic_cost for p in fixing)})." if fixing else None


def no_fix() -> str | None:
    fixing = _fixing_dims()
    if not fixing:
        return None
    names = " and ".join(p.display_name for p in fixing)
    return f"Ship the exported graph as it is: no graph passes for the execution providers (fixed dims for {names} still follow --keep-dynamic)."


def approximate() -> str | None:
    example = next(((p.approximate_example, p.display_name) for p in _providers() if p.approximate_example), None)
    if example is None:
        return None
    (word, what), name = example
    return f"Allow an approximate graph pass by name, e.g. {word} ({what} for {name}); its effect on the outputs is reported. Repeatable."


def optimization_style() -> str | None:
    runtime_only = [p.display_name for p in _providers() if p.fixed_style is False]
    fixed_ok = [p.display_name for p in _providers() if p.fixed_style is True]
    if not runtime_only or not fixed_ok:
        return None
    return (
        f"runtime (default: what {'/'.join(runtime_only)} can take) or fixed (CPU/{'/'.join(fixed_ok)} only: bakes in com.microsoft fused ops)."
    )


def bench_ep() -> str | None:
    from mobilegen.bench.host import host_providers
    from mobilegen.bench.runtimes import others

    choices = ["cpu", *(p.name for p in host_providers())]
    runtimes = [b.name for b in others()]  # a package's models for the other runtimes (--runtime litert / coreai)
    return (
        f"Configuration to run: default (what the apps ship), {_or(choices)}; or another runtime the package ships, "
        f"{_or(runtimes)}. Repeat the option for several (--ep {choices[0]} --ep {runtimes[0] if runtimes else choices[-1]}). "
        "Without it: a package's shipped defaults, then cpu, then its other runtimes."
    )


def check_ep() -> str:
    return f"Execution provider: {_names()}. Repeatable."


def fix_ep() -> str:
    return f"Execution provider to fix the model for: {_names()}. Repeatable."


# (command, parameter) -> its help; "*": that parameter of every command without its own entry.
HELP: dict[tuple[str, str], Callable[[], str | None]] = {
    ("*", "keep_dynamic"): keep_dynamic_build,
    ("fix", "keep_dynamic"): keep_dynamic_fix,
    ("*", "no_fix"): no_fix,
    ("*", "approximate"): approximate,
    ("convert", "style"): optimization_style,
    ("bench", "ep"): bench_ep,
    ("check", "ep"): check_ep,
    ("fix", "ep"): fix_ep,
}


def completed_help(command: str | None, param: str | None) -> str | None:
    """The help of ``command``'s parameter ``param`` from the registry; None keeps the declared one."""
    make = HELP.get((command or "", param or "")) or HELP.get(("*", param or ""))
    return None if make is None else make()
