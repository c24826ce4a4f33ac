"""The graph-pass registry: every rewrite the fix stage can run, found by name.

A pass is one module exposing ``PASS: GraphPass`` (:mod:`mobilegen.passes.base`). The built-in ones are
listed in :data:`BUILTIN`, one line each, in the order the fix stage tries them, and imported on first
use; a line whose module is not there (yet) is simply not offered. Code (a test, an embedding
application) adds passes with :func:`register`. Execution providers name the passes that help them
(``ExecutionProvider.fixes``), and why each helps them (``ExecutionProvider.fix_reasons``, read by
:func:`reasons`); a name nothing registers is skipped. A pass says what it rewrites, never for whom.

``fixed-dims`` (:data:`FIXED_DIMS`) is one of those names but no ``GraphPass``: it needs the model's
example sizes, changes the inputs every target sees, and is never judged by coverage (a provider that
declares it takes no symbolic dim at all). The fix stage runs it first, for the whole build
(:mod:`mobilegen.passes.dims`).

Importing this module costs nothing: no onnx, and no pass module until one is asked for.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Iterable

from mobilegen import providers
from mobilegen.errors import InternalError, UsageError, first_line
from mobilegen.passes.base import GraphPass

__all__ = [
    "BUILTIN",
    "FIXED_DIMS",
    "approximate_choices",
    "candidates",
    "check_approximate",
    "find",
    "get",
    "is_known",
    "names",
    "reasons",
    "register",
    "unregister",
    "wants_fixed_dims",
]

FIXED_DIMS = "fixed-dims"

# name -> "module:attribute" of the GraphPass, in the order the fix stage tries them: folding and shape
# clean-ups first (later patterns match more), exact rewrites before the approximate one of the same op
# (which, when asked for, is tried in the exact one's place: see candidates).
BUILTIN: dict[str, str] = {
    "fold-if": "mobilegen.passes.fold_if:PASS",  # first: the branch's nodes are what every later pass matches
    "fold-constants": "mobilegen.passes.fold_constants:PASS",
    "nan-guard": "mobilegen.passes.nan_guard:PASS",  # before layernorm/gelu: it cannot see through their forms
    "softmax-mask": "mobilegen.passes.softmax_mask:PASS",  # the guards nan-guard must keep (-inf masks)
    "rank6": "mobilegen.passes.rank6:PASS",
    "int64-indices": "mobilegen.passes.int64_indices:PASS",
    "sum-add": "mobilegen.passes.sum_add:PASS",
    "bool-mask": "mobilegen.passes.bool_mask:PASS",  # after softmax-mask (its finite mask), before the two below
    "gathernd-gather": "mobilegen.passes.gathernd_gather:PASS",  # after bool-mask: a bool GatherND gains nothing
    "flatten-reshape": "mobilegen.passes.flatten_reshape:PASS",
    "reduce": "mobilegen.passes.reduce:PASS",
    "pad": "mobilegen.passes.pad:PASS",
    "avgpool-pad": "mobilegen.passes.avgpool_pad:PASS",
    "layernorm": "mobilegen.passes.layernorm:PASS",
    "instancenorm": "mobilegen.passes.instancenorm:PASS",
    "gelu": "mobilegen.passes.gelu:PASS",
    "gelu-tanh": "mobilegen.passes.gelu_tanh:PASS",
    "matmul-2d": "mobilegen.passes.matmul_2d:PASS",
    "conv1d-2d": "mobilegen.passes.conv1d_2d:PASS",
    "lstm": "mobilegen.passes.lstm:PASS",
}
_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")

_loaded: dict[str, GraphPass] = {}
_registered: dict[str, GraphPass] = {}


def register(graph_pass: GraphPass) -> GraphPass:
    """Make ``graph_pass`` available by its name (returned, so a module can write ``PASS = register(...)``)."""
    if not isinstance(graph_pass, GraphPass):
        raise UsageError(f"cannot register {graph_pass!r}: not a mobilegen.passes.base.GraphPass")
    name = graph_pass.name
    if not _NAME.fullmatch(name):
        raise UsageError(f"graph pass name '{name}' is not kebab-case", hint="e.g. 'layernorm' or 'matmul-2d'")
    if name in BUILTIN or name == FIXED_DIMS:
        raise UsageError(f"graph pass '{name}' is built in", hint="register yours under another name")
    if not graph_pass.exact and not graph_pass.approximate_as:
        raise UsageError(f"graph pass '{name}' is approximate but names no --approximate word", hint="set approximate_as")
    current = _registered.get(name)
    if current is not None and current is not graph_pass:
        raise UsageError(f"graph pass '{name}' is already registered", hint="unregister it first")
    _registered[name] = graph_pass
    return graph_pass


def unregister(name: str) -> None:
    """Forget a pass added by :func:`register` (built-ins stay)."""
    _registered.pop(name, None)


def _available(name: str) -> bool:
    module = BUILTIN[name].partition(":")[0]
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def names() -> tuple[str, ...]:
    """Every pass the fix stage can run, in the order it tries them: the built-ins whose module exists,
    then the registered ones in registration order. Imports no pass module."""
    return (*(n for n in BUILTIN if _available(n)), *(n for n in _registered if n not in BUILTIN))


def wants_fixed_dims(eps: Iterable[str]) -> bool:
    """Whether any of these execution providers (registry names) declares ``fixed-dims``."""
    return any(FIXED_DIMS in providers.get(ep).fixes for ep in eps)


def reasons(name: str, eps: Iterable[str] | None = None) -> tuple[tuple[str, str], ...]:
    """Why the pass ``name`` is declared: (provider display name, its reason) for each provider of ``eps``
    (registry names; None: every provider) that declares it, in registry order. A provider that declares
    the pass without a reason gives ""."""
    chosen = providers.all_providers() if eps is None else tuple(providers.get(ep) for ep in dict.fromkeys(eps))
    return tuple((p.display_name, p.fix_reason(name)) for p in chosen if name in p.fixes)


def is_known(name: str) -> bool:
    """Whether ``name`` is a pass mobilegen knows of (built in, even when not there yet, or registered)."""
    return name == FIXED_DIMS or name in BUILTIN or name in _registered


def find(name: str) -> GraphPass | None:
    """The pass called ``name``, imported on first use; None when there is none."""
    if name in _registered:
        return _registered[name]
    if name not in _loaded:
        if name not in BUILTIN or not _available(name):
            return None
        _loaded[name] = _load(name, BUILTIN[name])
    return _loaded[name]


def get(name: str) -> GraphPass:
    graph_pass = find(name)
    if graph_pass is None:
        raise UsageError(f"unknown graph pass '{name}'", hint=f"use one of: {', '.join(names()) or 'none available'}")
    return graph_pass


def approximate_choices() -> tuple[str, ...]:
    """The words ``--approximate`` takes: ``approximate_as`` of every inexact pass (sorted, distinct)."""
    return tuple(sorted({p.approximate_as for n in names() if not (p := get(n)).exact}))


def check_approximate(words: Iterable[str]) -> tuple[str, ...]:
    """``words`` (lowercased, distinct, in order) when every one names an approximate pass, else a
    UsageError listing the choices."""
    out = tuple(dict.fromkeys(w.strip().lower() for w in words))
    if not out:
        return out
    choices = approximate_choices()
    for w in out:
        if w not in choices:
            raise UsageError(
                f"unknown --approximate '{w}'",
                hint=f"use one of: {', '.join(choices)}" if choices else "no approximate graph pass is available",
            )
    return out


def candidates(fixes: Iterable[str], approximate: Iterable[str] = ()) -> tuple[GraphPass, ...]:
    """The passes to try for providers declaring ``fixes`` (names), in registry order: the exact ones,
    and an approximate one only when its word is in ``approximate``. An approximate pass whose word is
    the name of an exact pass (``gelu-tanh``, ``--approximate gelu``) replaces that pass: it is tried in
    its place, just before it (the exact one then finds nothing left when it was kept; it still gets its
    chance when it was not). Names not registered are skipped."""
    wanted = set(fixes)
    words = set(approximate)
    chosen = [get(name) for name in names() if name in wanted]
    out = [p for p in chosen if p.exact]
    for graph_pass in (p for p in chosen if not p.exact and p.approximate_as in words):
        at = next((i for i, p in enumerate(out) if p.name == graph_pass.approximate_as), None)
        if at is None:  # it replaces nothing: its own place in the registry order
            at = sum(1 for p in out if chosen.index(p) < chosen.index(graph_pass))
        out.insert(at, graph_pass)
    return tuple(out)


def _load(name: str, ref: str) -> GraphPass:
    module_name, _, attr = ref.partition(":")
    try:
        graph_pass = getattr(importlib.import_module(module_name), attr)
    except Exception as err:  # noqa: BLE001 — a broken built-in pass is a bug: name it and its cause
        raise InternalError(f"built-in graph pass '{name}' failed to load: {first_line(err)}") from err
    if not isinstance(graph_pass, GraphPass) or graph_pass.name != name:
        what = f"'{graph_pass.name}'" if isinstance(graph_pass, GraphPass) else "not a GraphPass"
        raise InternalError(f"{ref} is {what}, registered as '{name}'")
    if not graph_pass.exact and not graph_pass.approximate_as:
        raise InternalError(f"built-in graph pass '{name}' is approximate but names no --approximate word")
    return graph_pass
