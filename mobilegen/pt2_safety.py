"""Load a torch.export archive (.pt2) without running code from it.

``torch.export.load`` trusts the file it opens. It unpickles parts of it (sample inputs that need more
than tensors, weights and constants marked ``use_pickle``, custom and opaque objects, the pre-2.8
layout), loads AOTInductor shared libraries, and evaluates every symbolic shape expression with
``sympy.sympify`` — Python ``eval``. Later, ``ExportedProgram.module()`` pastes names from the file
(parameter and input names, pytree keys) and its shape guards into Python source that it executes.

Without ``--trust-pickle``:

- :func:`check_archive` reads the archive with torch's own zip reader (so it sees exactly the entries
  torch will read) and refuses it if any of that could happen while loading, naming the entry;
- while torch loads, :func:`_no_unpickling` is the backstop: any pickle that asks for a Python global
  fails (an audit hook on ``pickle.find_class``), so a path this module did not foresee still runs no code;
- :func:`check_program` refuses a loaded program whose names or guards would not be inert in the code
  ``module()`` generates.
"""

from __future__ import annotations

import io
import json
import keyword
import os
import sys
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mobilegen.errors import LoadError, first_line
from mobilegen.pt2_exprs import is_inert_string, is_safe_guard, is_safe_sympy

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
    with _no_unpickling() as blocked:
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
    return LoadError(f"{path}: a pickle inside the archive asks for {blocked[0]}; loading it could run code from the file", hint=HINT)


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
    if r := _expression_refusal(program, _json(path, reader, program)):
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


def _expression_refusal(entry: str, program: Any) -> Refusal | None:
    """Every ``expr_str`` in the program goes through ``sympy.sympify`` (``eval``) when torch loads it."""
    stack = [program]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "expr_str" in node and not (isinstance(node["expr_str"], str) and is_safe_sympy(node["expr_str"])):
                return Refusal(entry, f"has the shape expression {_clip(node['expr_str'])}, which is not plain arithmetic (torch evaluates it as Python)")
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


def _clip(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ---- while torch loads ----------------------------------------------------------------------------

_state = threading.local()
_hook_lock = threading.Lock()
_hook_installed = False


class UnpicklingBlocked(Exception):
    """Raised inside pickle's find_class while an untrusted archive loads (deliberately not a
    RuntimeError: torch.export.load catches those and retries with the legacy, pickling reader)."""


def _audit(event: str, args: tuple[Any, ...]) -> None:
    blocked = getattr(_state, "blocked", None)
    if blocked is not None and event == "pickle.find_class":
        blocked.append(f"{args[0]}.{args[1]}")
        raise UnpicklingBlocked(f"unpickling {args[0]}.{args[1]} from an untrusted archive")


@contextmanager
def _no_unpickling() -> Iterator[list[str]]:
    """Within the block (this thread only), any pickle that resolves a Python global fails; the list
    collects what was asked for. ``torch.load(weights_only=True)`` does not resolve globals this way."""
    global _hook_installed
    with _hook_lock:
        if not _hook_installed:
            sys.addaudithook(_audit)  # audit hooks cannot be removed; this one is idle outside the block
            _hook_installed = True
    previous = getattr(_state, "blocked", None)
    blocked: list[str] = []
    _state.blocked = blocked
    try:
        yield blocked
    finally:
        _state.blocked = previous


# ---- after torch loaded the program, before anything calls module() ------------------------------


def check_program(path: Path, ep: Any) -> None:
    refusal = program_refusal(ep)
    if refusal is not None:
        raise _refuse(path, refusal)


def program_refusal(ep: Any) -> Refusal | None:
    from torch.export.pt2_archive import constants as c

    program = c.MODELS_FILENAME_FORMAT.format("model")
    for guard in getattr(ep, "_guards_code", None) or []:
        if not (isinstance(guard, str) and is_safe_guard(guard)):
            return Refusal(program, f"has the shape guard {_clip(guard)}, which is not a plain size check (torch runs it as Python)")
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

