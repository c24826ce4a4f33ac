"""Which quantization a target's execution providers take, with the source of every verdict.

The first provider of a target's chain decides (it is the one the app asks first; the fix stage uses the
same rule): :func:`recipe_for` asks it through its
:meth:`~mobilegen.providers.base.ExecutionProvider.recipe` hook, and a chain of no provider gets the CPU
kernels' recipe (:func:`~mobilegen.providers.quantization.cpu_recipe`). Each provider keeps its answers,
with the ONNX Runtime sources they rest on, in ``mobilegen/providers/<name>/recipe.py`` (the built-in
ones' table: :mod:`mobilegen.providers.quantization`).

An int8 recipe for a provider with a QDQ table (its
:meth:`~mobilegen.providers.base.ExecutionProvider.qdq_table`) quantizes only the op types whose QDQ node
units that provider takes with the recipe's types, plus the Relu/Clip the quantizer folds into the Q
before them: a unit the provider refuses moves its DQs, op and Q to the CPU and splits the partition,
where the float op between a DQ and a Q may run on the provider.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mobilegen import providers
from mobilegen.errors import UsageError
from mobilegen.providers.quantization import (
    MODES,
    REMOVABLE,
    QuantizeMode,
    Recipe,
    Refusal,
    UnitOps,
    cpu_recipe,
)
from mobilegen.providers.quantization import unit_ops as _unit_ops

if TYPE_CHECKING:
    from mobilegen.coverage.rules import EPTable
    from mobilegen.coverage.target import EPTarget
    from mobilegen.providers import SettingValue

__all__ = ["REMOVABLE", "CPU", "Recipe", "Refusal", "UnitOps", "qdq_table", "recipe_for", "unit_ops"]

CPU = "cpu"  # the recipe of a chain without providers (and a chain naming "cpu")


def recipe_for(mode: QuantizeMode, chain: Sequence[str | EPTarget], **settings: SettingValue | None) -> Recipe | Refusal:
    """The recipe for a target whose provider chain is ``chain`` (in order; () is the CPU only): provider
    names, or the chain's :class:`~mobilegen.coverage.EPTarget` s, whose setting values the first
    provider's recipe reads (with names, ``settings`` gives them as keywords)."""
    names = [(ep if isinstance(ep, str) else ep.ep).lower() for ep in chain]
    unknown = [n for n in names if n != CPU and not _quantizes(n)]
    if unknown:
        known = [p.name for p in providers.all_providers() if p.quantizes]
        raise UsageError(f"no quantization recipe for provider {unknown[0]!r}", hint="known: " + ", ".join([*known, CPU]))
    if mode not in MODES:
        raise UsageError(f"unknown --quantize mode {mode!r}", hint="use int8, dynamic or fp16")
    if not names or names[0] == CPU:
        return cpu_recipe(mode)
    first = chain[0]
    values = settings if isinstance(first, str) else dict(first.values)
    decision = providers.get(names[0]).recipe(mode, values)
    if decision is None:  # pragma: no cover - _quantizes checked the hook is there
        raise UsageError(f"no quantization recipe for provider {names[0]!r}")
    return decision


def _quantizes(name: str) -> bool:
    provider = providers.find(name)
    return provider is not None and provider.quantizes


def qdq_table(provider: str) -> EPTable | None:
    """The provider's coverage table with its QDQ node-unit rules (None: it has none the quantizer reads)."""
    found = providers.find(provider)
    return None if found is None else found.qdq_table()


def unit_ops(provider: str, activation_type: str) -> UnitOps:
    """The QDQ unit ops the provider called ``provider`` takes with ``activation_type`` activations."""
    found = providers.find(provider)
    return UnitOps((), ()) if found is None else _unit_ops(found, activation_type)
