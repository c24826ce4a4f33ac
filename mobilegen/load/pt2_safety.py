"""Load a torch.export archive (.pt2) without running code from it.

``torch.export.load`` trusts the file it opens. It unpickles parts of it (sample inputs that need more
than tensors, weights and constants marked ``use_pickle``, custom and opaque objects, the pre-2.8
layout), loads AOTInductor shared libraries, and evaluates every symbolic shape expression with
``sympy.sympify`` — Python ``eval``. Later, ``ExportedProgram.module()`` pastes names from the file
(parameter and input names, pytree keys) and its shape guards into Python source that it executes.

Its JSON hooks import too: a pytree spec (``in_spec``/``out_spec``) whose context holds
``{"__enum__": true, "fqn": "ctypes:cdll", "name": "./libx.so"}`` makes ``treespec_loads`` import a module,
walk an attribute chain and index it (``ctypes.cdll[...]`` loads a library and runs its constructor), and
a ``collections.defaultdict`` spec imports its ``default_factory_module``. Node targets are resolved by
walking attributes of ``torch``/``operator``/``math``, so a program can call any function reachable from
there when it runs; and every symbolic shape expression is evaluated exactly (``9**9**9**9`` never ends).

Without ``--trust-pickle``:

- :func:`check_archive` reads the archive with torch's own zip reader (so it sees exactly the entries
  torch will read) and refuses it if any of that could happen while loading, naming the entry: pickles
  that need more than tensors, native code, pytree specs with anything but the containers torch itself
  registers (:data:`SPEC_TYPES`), node targets outside the operator allowlist (:mod:`mobilegen.load.pt2_ops`),
  functions passed as arguments, and shape expressions that are not bounded arithmetic;
- while torch loads, :func:`_untrusted_load` is the backstop, so a path this module did not foresee still
  runs no code: any pickle that asks for a Python global fails (an audit hook on ``pickle.find_class``),
  torch's pytree deserializer cannot import (its ``importlib`` is gated), and loading a native library or
  starting a process fails (audit hooks on ``ctypes.dlopen``, ``os.system``, ``subprocess.Popen``...);
- :func:`check_program` refuses a loaded program that calls anything outside the operator allowlist, or
  whose names or guards would not be inert in the code ``module()`` generates — before anything runs it.
"""

from __future__ import annotations

import io
import json
import keyword
import os
import sys
import threading
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mobilegen.errors import LoadError, first_line
from mobilegen.load.pt2_exprs import guard_refusal, is_inert_string, sympy_refusal
from mobilegen.load.pt2_ops import node_refusal, target_name_refusal

MAX_JSON_INT = 2**64  # |any integer in the program|: sizes, strides, hints and ranges are int64
HINT = "pass --trust-pickle only if you trust this file, or re-save the model with torch.export.save from plain tensors"


@dataclass(frozen=True)
class Refusal:
    entry: str  # the archive entry that would need trust
    reason: str  # completes "its entry X ..."


def _refuse(path: Path, r: Refusal) -> LoadError:
    return LoadError(f"{path}: entry {r.entry!r} {r.reason}; loading it could run code from the file", hint=HINT)


def load_exported_program(path: Path, trust: bool) -> Any:
    """``torch.export.load(path)``; without ``trust``, only if no code from the file can run."""
    import torch

    if trust:
        return torch.export.load(str(path))
    check_archive(path)
    with _untrusted_load() as blocked:
        try:
            ep = torch.export.load(str(path))
        except Exception as err:
            if blocked:
                raise _blocked_error(path, blocked) from err
            raise
    if blocked:  # torch caught the failure and carried on
        raise _blocked_error(path, blocked)
    check_program(path, ep)
    return ep


def _blocked_error(path: Path, blocked: list[str]) -> LoadError:
    return LoadError(f"{path}: {blocked[0]}; loading it could run code from the file", hint=HINT)


# ---- before torch opens the archive -------------------------------------------------------------


def check_archive(path: Path) -> None:
    refusal = archive_refusal(path)
    if refusal is not None:
        raise _refuse(path, refusal)


def archive_refusal(path: Path) -> Refusal | None:
    import torch
    from torch.export.pt2_archive import constants as c

    # torch.export.load falls back to the pre-2.8 layout, read with Python's zipfile and unpickled
    # (weights_only=False as a fallback), whenever the current reader raises a RuntimeError — which a
    # crafted file can arrange. That fallback needs a top-level "version" entry.
    with zipfile.ZipFile(path) as zf:
        if "version" in zf.namelist():
            return Refusal("version", "marks the pre-2.8 torch.export layout, which torch reads with pickle")
    try:
        reader = torch._C.PyTorchFileReader(str(path))
        names = list(reader.get_all_records())
    except Exception as err:  # noqa: BLE001 — torch's C++ reader raises its own error types
        raise LoadError(f"{path} looks like a torch.export program but its archive cannot be read: {first_line(err)}", hint="re-save it with torch.export.save") from err
    for name in names:
        if name.startswith(c.AOTINDUCTOR_DIR):
            return Refusal(name, "is compiled native code (AOTInductor)")
    prefix, suffix = c.MODELS_FILENAME_FORMAT.split("{}")
    for name in names:
        if name.startswith(c.MODELS_DIR):
            # the model name exactly as torch's _load_exported_programs derives it
            refusal = _model_refusal(path, reader, names, name, name[len(prefix) : -len(suffix)])
            if refusal is not None:
                return refusal
    return None


def _model_refusal(path: Path, reader: Any, names: list[str], program: str, model: str) -> Refusal | None:
    from torch.export.pt2_archive import constants as c

    sample = c.SAMPLE_INPUTS_FILENAME_FORMAT.format(model)
    if sample in names and (r := _pickle_refusal(sample, reader.get_record(sample))):
        return r
    if r := _program_json_refusal(program, _json(path, reader, program)):
        return r
    for legacy in (f"{c.WEIGHTS_DIR}{model}.pt", f"{c.CONSTANTS_DIR}{model}.pt"):
        if legacy in names and (r := _pickle_refusal(legacy, reader.get_record(legacy))):
            return r
    weights = c.WEIGHTS_CONFIG_FILENAME_FORMAT.format(model)
    if weights in names:
        for meta in _payloads(path, reader, weights):
            if meta.get("use_pickle"):
                return Refusal(os.path.join(c.WEIGHTS_DIR, meta["path_name"]), "is a pickled weight (use_pickle)")
    constants = c.CONSTANTS_CONFIG_FILENAME_FORMAT.format(model)
    if constants in names:
        for meta in _payloads(path, reader, constants):
            entry, kind = os.path.join(c.CONSTANTS_DIR, meta["path_name"]), meta["path_name"]
            if kind.startswith(c.TENSOR_CONSTANT_FILENAME_PREFIX):
                if meta.get("use_pickle"):
                    return Refusal(entry, "is a pickled constant (use_pickle)")
            elif kind.startswith(c.CUSTOM_OBJ_FILENAME_PREFIX):
                return Refusal(entry, "is a pickled TorchScript object")
            elif kind.startswith(c.OPAQUE_OBJ_FILENAME_PREFIX):
                return Refusal(entry, "is a pickled Python object")
    return None


def _pickle_refusal(entry: str, data: bytes) -> Refusal | None:
    """torch first tries ``weights_only=True`` on these entries and falls back to a full unpickle: if the
    safe loader reads it, so does torch's first attempt, and the fallback never runs."""
    import torch

    if not data:
        return None
    try:
        torch.load(io.BytesIO(data), weights_only=True)
    except Exception:  # noqa: BLE001 — any failure means torch would fall back to weights_only=False
        return Refusal(entry, "is a pickle that needs more than plain tensors")
    return None


def _json(path: Path, reader: Any, entry: str) -> Any:
    try:
        return json.loads(bytes(reader.get_record(entry)).decode("utf-8"))
    except (ValueError, RecursionError) as err:
        raise LoadError(f"{path}: entry {entry!r} is not valid JSON: {first_line(err)}", hint="the file is damaged; re-save it with torch.export.save") from err


def _payloads(path: Path, reader: Any, entry: str) -> list[dict[str, Any]]:
    config = _json(path, reader, entry)
    metas = config.get("config") if isinstance(config, dict) else None
    if not isinstance(metas, dict) or not all(isinstance(m, dict) and isinstance(m.get("path_name"), str) for m in metas.values()):
        raise LoadError(f"{path}: entry {entry!r} is not a torch.export payload table", hint="the file is damaged; re-save it with torch.export.save")
    return list(metas.values())


def _program_json_refusal(entry: str, program: Any) -> Refusal | None:
    """What torch resolves, imports or evaluates while it deserializes the program, checked in its JSON:
    every ``expr_str`` goes through ``sympy.sympify`` (``eval``), every pytree spec through
    ``treespec_loads`` (whose hooks import), every node target and ``as_operator`` argument through an
    attribute walk from ``torch``; the ``guards_code`` strings become Python that ``module()`` runs."""
    stack = [program]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "expr_str" in node:
                text = node["expr_str"]
                why = sympy_refusal(text) if isinstance(text, str) else "is not text"
                if why is not None:
                    return Refusal(entry, f"has the shape expression {_clip(text)}, which {why}")
            guards = node.get("guards_code") or []
            for guard in guards if isinstance(guards, list) else [guards]:
                why = guard_refusal(guard) if isinstance(guard, str) else "is not text"
                if why is not None:  # module() runs it (also checked on the loaded program)
                    return Refusal(entry, f"has the shape guard {_clip(guard)}, which {why}")
            for key in ("in_spec", "out_spec"):
                if key in node and (why := spec_refusal(node[key])) is not None:
                    return Refusal(entry, f"has a pytree spec ({key} of the program's signature) that {why}")
            if {"target", "inputs", "outputs"} <= node.keys() and (why := target_name_refusal(node["target"])) is not None:
                return Refusal(entry, f"has a node that calls {_clip(node['target'])}, which {why}")
            if "as_operator" in node:
                return Refusal(entry, f"passes the function {_clip(node['as_operator'])} as an argument (a program passes tensors, numbers and its own subgraphs)")
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif type(node) is int and abs(node) > MAX_JSON_INT:  # a size hint s0 = 10**4000 feeds every power
            return Refusal(entry, f"has the number {_clip(node) if node.bit_length() < 2000 else '...'}, larger than 2**64 (torch computes with it exactly)")
    return None


# The container types torch itself registers for pytree specs and writes into a program, and what their
# (JSON) context holds: nothing, the keys of a mapping (strings, numbers, lists of them), or a maxlen.
# Anything else — a namedtuple or dataclass type name (looked up in what the loading process registered),
# a defaultdict (torch imports its default_factory_module), an ``__enum__`` object in a context (torch
# imports its module and walks attributes) — needs --trust-pickle.
SPEC_TYPES = {
    "builtins.tuple": "none",
    "builtins.list": "none",
    "torch.Size": "none",
    "torch.fx.immutable_collections.immutable_list": "none",
    "builtins.dict": "keys",
    "collections.OrderedDict": "keys",
    "torch.fx.immutable_collections.immutable_dict": "keys",
    "collections.deque": "maxlen",
}
MAX_SPEC_NODES = 100_000


def spec_refusal(text: object) -> str | None:
    """Why torch's ``treespec_loads`` must not see the serialized pytree spec ``text`` (completes "the
    spec X ..."), or None. Parsed with plain ``json`` (no hooks), iteratively."""
    if not isinstance(text, str):
        return "is not text"
    try:
        doc = json.loads(text)
    except ValueError:
        return "is not JSON"
    except RecursionError:
        return "nests too deeply to read"
    if not (isinstance(doc, list) and len(doc) == 2 and doc[0] == 1 and type(doc[0]) is int):
        return "is not a protocol 1 pytree spec"
    stack, count = [doc[1]], 0
    while stack:
        node = stack.pop()
        count += 1
        if count > MAX_SPEC_NODES:
            return f"has more than {MAX_SPEC_NODES} nodes"
        if not (isinstance(node, dict) and node.keys() == {"type", "context", "children_spec"} and isinstance(node["children_spec"], list)):
            return f"has the node {_clip(node)}, which is not a pytree spec node"
        kind, context = node["type"], node["context"]
        if kind is None:
            if context is not None or node["children_spec"]:
                return "has a leaf with a context or children"
            continue
        expected = SPEC_TYPES.get(kind) if isinstance(kind, str) else None
        if expected is None:
            return f"has the type {_clip(kind)}, which is not a container torch itself registers (a user-defined or hook type: torch would look it up or import it)"
        if (why := _context_refusal(kind, context, expected)) is not None:
            return why
        stack.extend(node["children_spec"])
    return None


def _context_refusal(kind: str, context: object, expected: str) -> str | None:
    try:
        value = json.loads(context) if isinstance(context, str) else ...
    except (ValueError, RecursionError):
        value = ...
    if value is ...:
        return f"has a {kind} context {_clip(context)} that is not JSON text"
    if expected == "none":
        ok = value is None
    elif expected == "maxlen":
        ok = value is None or (type(value) is int and value >= 0)
    else:
        ok = isinstance(value, list) and _plain_keys(value)
    if not ok:
        return f"has the {kind} context {_clip(context)}, which torch would not write (a JSON object there is an import hook such as __enum__)"
    return None


def _plain_keys(keys: list[Any]) -> bool:
    """Mapping keys as torch writes them: strings, numbers, booleans, null, or lists of these (tuples)."""
    stack: list[Any] = list(keys)
    while stack:
        k = stack.pop()
        if isinstance(k, list):
            stack.extend(k)
        elif not (k is None or isinstance(k, (str, int, float, bool))):
            return False
    return True


def _clip(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ---- while torch loads ----------------------------------------------------------------------------

_state = threading.local()
_hook_lock = threading.Lock()
_hook_installed = False
_gate_users = 0
_GATED = "importlib"  # the global of torch.utils._pytree its import hooks call import_module on


class CodeBlocked(Exception):
    """Raised where an untrusted archive would make torch run code (a pickle's find_class, an import by
    torch's pytree hooks, a native library, a process). Deliberately not a RuntimeError: torch.export.load
    catches those and retries with the legacy, pickling reader."""


# audit events that load or start code: what each one means, from its arguments
_BLOCKED_EVENTS: dict[str, Callable[[tuple[Any, ...]], str]] = {
    "pickle.find_class": lambda a: f"a pickle inside the archive asks for {a[0]}.{a[1]}",
    "ctypes.dlopen": lambda a: f"loading the archive loads the native library {a[0]!r}",
    "os.system": lambda a: f"loading the archive runs the command {a[0]!r}",
    "subprocess.Popen": lambda a: f"loading the archive starts the program {a[0]!r}",
    "os.exec": lambda a: f"loading the archive executes {a[0]!r}",
    "os.posix_spawn": lambda a: f"loading the archive starts the program {a[0]!r}",
    "os.spawn": lambda a: f"loading the archive starts the program {a[1]!r}",
    "os.fork": lambda a: "loading the archive forks the process",
}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    blocked = getattr(_state, "blocked", None)
    if blocked is not None and event in _BLOCKED_EVENTS:
        what = _BLOCKED_EVENTS[event](args)
        blocked.append(what)
        raise CodeBlocked(f"{what} (an untrusted archive)")


class _ImportGate:
    """Stands in for the ``importlib`` module inside ``torch.utils._pytree`` while an untrusted archive
    loads: its enum hook (``__enum__``) and defaultdict deserializer import through ``importlib.import_module``.
    On other threads, and outside the block, it is the real module."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def import_module(self, name: str, package: str | None = None) -> Any:
        blocked = getattr(_state, "blocked", None)
        if blocked is not None:
            what = f"a pytree spec inside the archive makes torch import {name!r}"
            blocked.append(what)
            raise CodeBlocked(f"{what} (an untrusted archive)")
        return self._real.import_module(name, package)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@contextmanager
def _untrusted_load() -> Iterator[list[str]]:
    """Within the block (this thread only), any pickle that resolves a Python global fails, torch's pytree
    deserializer cannot import, and native libraries or processes cannot be started; the list collects what
    was asked for. ``torch.load(weights_only=True)`` does not resolve globals this way, and a normal
    ``torch.export.load`` does none of these (it imports its own lazy modules with ``import``, not through
    the gate)."""
    global _hook_installed, _gate_users
    from torch.utils import _pytree

    with _hook_lock:
        if not _hook_installed:
            sys.addaudithook(_audit)  # audit hooks cannot be removed; this one is idle outside the block
            _hook_installed = True
        if _gate_users == 0:
            setattr(_pytree, _GATED, _ImportGate(getattr(_pytree, _GATED)))
        _gate_users += 1
    previous = getattr(_state, "blocked", None)
    blocked: list[str] = []
    _state.blocked = blocked
    try:
        yield blocked
    finally:
        _state.blocked = previous
        with _hook_lock:
            _gate_users -= 1
            gate = getattr(_pytree, _GATED)
            if _gate_users == 0 and isinstance(gate, _ImportGate):
                setattr(_pytree, _GATED, gate._real)


# ---- after torch loaded the program, before anything calls module() ------------------------------


def check_program(path: Path, ep: Any) -> None:
    refusal = program_refusal(ep)
    if refusal is not None:
        raise _refuse(path, refusal)


def program_refusal(ep: Any) -> Refusal | None:
    import torch
    from torch.export.pt2_archive import constants as c

    program = c.MODELS_FILENAME_FORMAT.format("model")
    for module in ep.graph_module.modules():  # the program and its subgraphs (cond branches, ...)
        if isinstance(module, torch.fx.GraphModule):
            for node in module.graph.nodes:
                if (why := node_refusal(node, module)) is not None:
                    return Refusal(program, f"has the node {_clip(node.name)}, which {why}")
    for guard in getattr(ep, "_guards_code", None) or []:
        why = guard_refusal(guard) if isinstance(guard, str) else "is not text"
        if why is not None:
            return Refusal(program, f"has the shape guard {_clip(guard)}, which {why}")
    for name in _generated_code_names(ep):
        if not is_inert_string(name):
            return Refusal(program, f"has the name {_clip(name)}, which torch would paste into the Python it generates")
    for entry in ep.module_call_graph:
        for arg in getattr(entry.signature, "forward_arg_names", None) or []:
            if not (isinstance(arg, str) and arg.isidentifier() and not keyword.iskeyword(arg)):
                return Refusal(program, f"has the input name {_clip(arg)}, which is not a Python identifier (torch generates code from it)")
    for text in _strings(ep.example_inputs):
        if not is_inert_string(text):
            return Refusal(c.SAMPLE_INPUTS_FILENAME_FORMAT.format("model"), f"has the key {_clip(text)}, which torch would paste into the Python it generates")
    return None


def _generated_code_names(ep: Any) -> Iterator[object]:
    """Strings from the file that ``module()`` writes into Python source."""
    import torch

    sig = ep.graph_signature
    for spec in (*sig.input_specs, *sig.output_specs):
        if spec.target is not None:
            yield spec.target
    yield from ep.state_dict
    yield from ep.constants
    for entry in ep.module_call_graph:
        yield entry.fqn
        if entry.signature is not None:
            for spec in (entry.signature.in_spec, entry.signature.out_spec):
                yield from _spec_strings(spec)
    for module in ep.graph_module.modules():
        if isinstance(module, torch.fx.GraphModule):
            for node in module.graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    yield node.target
                elif node.op == "placeholder" and isinstance(node.meta.get("val"), str):
                    yield node.meta["val"]


def _spec_strings(spec: Any) -> Iterator[object]:
    stack = [spec]
    while stack:
        s = stack.pop()
        if s is None:
            continue
        yield from _strings(s.context)
        stack.extend(s.children())


def _strings(value: Any) -> Iterator[object]:
    """Every string key or value inside nested tuples, lists and dicts (an iterative walk)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)

