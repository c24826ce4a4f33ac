"""Why a ``.pt2`` that torch cannot load returns something other than tensors.

A Hugging Face model exported with ``torch.export`` as it comes (``return_dict`` on, the default)
returns a ``ModelOutput`` (``BaseModelOutputWithPooling``, ``SequenceClassifierOutput``, ...). The
program records that type in its output pytree spec; torch can only rebuild it when ``transformers``
has registered it, which loading a file must not do (importing from a spec is code the file chose).
Either way the load fails with a message about pytree registration or re-saving, although the archive
is fine: the cause is the output type. :func:`output_type_error` names it and the fix.

Read from the archive's JSON alone (no unpickling), and only after a load has failed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mobilegen.errors import LoadError

_MAX_JSON_BYTES = 64 * 2**20  # a program's JSON is small; a bigger entry is not read for a hint


@dataclass(frozen=True)
class ForeignOutput:
    """The output type a program's ``out_spec`` names: ``type_name`` (dotted), its field names."""

    type_name: str
    fields: tuple[str, ...]

    @property
    def is_hf_model_output(self) -> bool:
        return self.type_name.startswith("transformers.")


def foreign_output(path: Path) -> ForeignOutput | None:
    """The first output container of the programs in ``path`` that is not a tuple/list/dict/namedtuple
    torch writes itself, or None (also when the archive cannot be read: the caller's error stands)."""
    try:
        import torch
        from torch.export.pt2_archive import constants as c

        reader = torch._C.PyTorchFileReader(str(path))
        names = [n for n in reader.get_all_records() if n.startswith(c.MODELS_DIR) and n.endswith(".json")]
        for name in names:
            data = reader.get_record(name)
            if len(data) > _MAX_JSON_BYTES:
                continue
            found = _from_program(json.loads(data))
            if found is not None:
                return found
    except Exception:  # noqa: BLE001 — a hint only: an unreadable archive keeps the caller's own error
        return None
    return None


_TORCH_CONTAINERS = {"builtins.tuple", "builtins.list", "builtins.dict", "collections.OrderedDict", "collections.defaultdict", "collections.namedtuple"}


def _from_program(program: object) -> ForeignOutput | None:
    graph_module = program.get("graph_module") if isinstance(program, dict) else None
    calls = graph_module.get("module_call_graph") if isinstance(graph_module, dict) else None
    for call in calls if isinstance(calls, list) else []:
        sig = call.get("signature") if isinstance(call, dict) and call.get("fqn", "") == "" else None
        spec = sig.get("out_spec") if isinstance(sig, dict) else None
        if isinstance(spec, str):
            try:
                spec = json.loads(spec)
            except ValueError:
                return None
        if isinstance(spec, list) and len(spec) == 2:
            return _first_foreign(spec[1], depth=0)
    return None


def _first_foreign(node: object, depth: int) -> ForeignOutput | None:
    if not isinstance(node, dict) or depth > 32:
        return None
    kind = node.get("type")
    if isinstance(kind, str) and kind not in _TORCH_CONTAINERS:
        fields: tuple[str, ...] = ()
        ctx = node.get("context")
        try:
            keys = json.loads(ctx) if isinstance(ctx, str) else None
        except ValueError:
            keys = None
        if isinstance(keys, list):
            fields = tuple(str(k) for k in keys if isinstance(k, str | int))[:8]
        return ForeignOutput(kind, fields)
    children = node.get("children_spec")
    for child in children if isinstance(children, list) else []:
        found = _first_foreign(child, depth + 1)
        if found is not None:
            return found
    return None


def output_type_error(path: Path, refusal: BaseException | None = None) -> LoadError | None:
    """The load error that names the real cause when ``path``'s program returns a foreign type. With
    ``refusal`` (mobilegen's own safety refusal), only when that refusal is about this very type: a file
    refused for anything else keeps its refusal."""
    out = foreign_output(path)
    if out is None or (refusal is not None and out.type_name[:40] not in str(refusal)):
        return None
    short = out.type_name.rsplit(".", 1)[-1]
    fields = f" ({', '.join(out.fields)})" if out.fields else ""
    if out.is_hf_model_output:
        return LoadError(
            f"{path.name}: the program returns transformers' {short}{fields}, a ModelOutput, not a tuple of tensors; "
            "torch cannot rebuild that output type when it loads the file",
            hint="set model.config.return_dict = False before torch.export.export (a return_dict=False keyword argument would "
            "become an input of the program), or wrap the model in a module whose forward returns a tuple of tensors "
            f"(e.g. outputs.{out.fields[0] if out.fields else 'logits'}), then torch.export.save it again",
        )
    return LoadError(
        f"{path.name}: the program returns {out.type_name}{fields}, a type of its own, not a tuple of tensors; "
        "torch cannot rebuild that output type when it loads the file",
        hint="wrap the model in a module whose forward returns a tuple of tensors, then torch.export.save it again",
    )


__all__ = ["ForeignOutput", "foreign_output", "output_type_error"]
