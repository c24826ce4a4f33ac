"""Flag errors that can be known before the export, found before it.

The task flags (``--task``, ``--crop``, ``--resize``, ``--layout``, ``--labels``, ``--top-k``,
``--softmax``) are checked against the exported model's IO (``mobilegen.tasks.dispatch.resolve``). For a
PyTorch model that IO is mostly known before the export, which takes most of a build's time:

- the inputs are the specs the export will use (``--input``, else the ``.pt2``'s recorded shapes) —
  ``mobilegen.export.exporter.resolve_inputs``, which only reads flags and the artifact;
- the outputs (the class-score checks) are the ``.pt2`` program's recorded output
  shapes, or (a module, a TorchScript file) the shapes of one forward on the seeded example inputs — the
  forward the export runs first anyway.

:func:`check_task_early` runs the same ``resolve`` on that predicted IO, so the message is the one the
build would give after the export; without a task, :func:`before_export` runs the targets' ``check_io``
(dtypes the generated wrappers cannot carry) on it the same way. It stays quiet when it cannot know: an ONNX source (its passthrough
export is quick and checked right after), outputs that are not tensors, a forward that fails (the
export reports that itself), ``--state`` pairs (they name exported outputs, unknown before the export).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from mobilegen.export.exporter import (
    default_dim_size,
    example_arrays,
    rename_outputs_count_error,
    resolve_inputs,
    torch_callable,
)
from mobilegen.infra.quiet import quiet
from mobilegen.load.loader import _torch_dtype_name
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.tasks.dispatch import resolve

if TYPE_CHECKING:
    from mobilegen.artifacts import LoadedModel
    from mobilegen.export.exporter import ExportOptions
    from mobilegen.tasks.spec import TaskSpec


def before_export(loaded: LoadedModel, options: ExportOptions, *, task: TaskSpec | None, check_io: Sequence[Callable[[IOSpec], None]] = ()) -> None:
    """The build's checks of the exported model's IO, run on the IO known before the export: the
    ``--output-name`` count, then the task's (``resolve``) with ``--task``, else the targets'
    (``Target.check_io``: dtypes their API can carry; with a task the wrapper's IO replaces the model's,
    checked after the export)."""
    if loaded.kind not in _PYTORCH or not (task is not None or check_io or options.output_names):
        return
    io = predicted_io(loaded, options)
    if io is None:
        return
    if options.output_names and len(options.output_names) != len(io.outputs):
        raise rename_outputs_count_error(len(options.output_names), len(io.outputs))
    if task is not None:
        check_task_early(loaded, options, task, io)
        return
    for check in check_io:
        check(io)


_PYTORCH = ("pickle", "state_dict", "torchscript", "exported_program")


def check_task_early(loaded: LoadedModel, options: ExportOptions, spec: TaskSpec, io: IOSpec | None = None) -> None:
    """Raise the UsageError ``resolve`` would raise after the export, when the IO known now shows it."""
    if loaded.kind not in _PYTORCH or getattr(spec, "state", None):  # --state (tasks, being added)
        return

    io = io if io is not None else predicted_io(loaded, options)
    if io is not None:
        resolve(spec, io)


def predicted_input_names(loaded: LoadedModel, options: ExportOptions) -> list[str] | None:
    """The exported model's input names, known before the export for a PyTorch model (``--input``, else
    the ``.pt2``'s recorded inputs; the ``--const`` ones are not inputs); None for other sources."""
    if loaded.kind not in _PYTORCH:
        return None
    specs, _sizes = resolve_inputs(loaded, options.inputs, dict(options.example_sizes))
    bound = {c.name for c in options.consts}
    return [s.name for s in specs if s.name not in bound]


def predicted_io(loaded: LoadedModel, options: ExportOptions) -> IOSpec | None:
    """The exported model's IO as far as it is known without exporting; None when its outputs are not
    known. Input errors (``--input`` against the model) are raised here as the export would raise them."""
    specs, sizes = resolve_inputs(loaded, options.inputs, dict(options.example_sizes))
    shapes = _program_outputs(loaded) if loaded.kind == "exported_program" else _forward_outputs(loaded, specs, sizes)
    if shapes is None:
        return None
    names = options.output_names if len(options.output_names) == len(shapes) else tuple(f"output_{i}" for i in range(len(shapes)))
    return IOSpec(inputs=tuple(specs), outputs=tuple(TensorSpec(n, d, s) for n, (d, s) in zip(names, shapes, strict=True)))


Shape = tuple[int | str, ...]


def _program_outputs(loaded: LoadedModel) -> list[tuple[str, Shape]] | None:
    """A ``.pt2`` program's user outputs as recorded (a symbolic size stays a name)."""
    import torch
    from torch.export.graph_signature import OutputKind, TensorArgument


    ep = loaded.module
    try:
        out_node = next(n for n in ep.graph.nodes if n.op == "output")
        by_name = {getattr(a, "name", None): a for a in out_node.args[0]}
        result: list[tuple[str, Shape]] = []
        for s in ep.graph_signature.output_specs:
            if s.kind != OutputKind.USER_OUTPUT:
                continue
            if not isinstance(s.arg, TensorArgument):
                return None
            val = by_name[s.arg.name].meta.get("val")
            if val is None or not hasattr(val, "shape"):
                return None
            shape = tuple(str(d) if isinstance(d, torch.SymInt) else int(d) for d in val.shape)
            result.append((_torch_dtype_name(val.dtype), shape))
        return result
    except (StopIteration, KeyError, AttributeError, TypeError):
        return None


def _forward_outputs(loaded: LoadedModel, specs: list[TensorSpec], sizes: dict[str, int]) -> list[tuple[str, Shape]] | None:
    """The output shapes of one forward on the seeded example inputs. A size equal to a dynamic input
    dim's example size may follow that dim in the exported model: it is left a name (not checked)."""
    import torch

    sizes = dict(sizes)
    for s in specs:
        for axis, d in enumerate(s.shape):
            if isinstance(d, str):
                sizes.setdefault(d, default_dim_size(axis))
    dynamic = {sizes[d] for s in specs for d in s.shape if isinstance(d, str)}
    arrays = example_arrays(specs, sizes)
    try:
        with torch.no_grad(), quiet():
            out: Any = torch_callable(loaded)(*(torch.from_numpy(arrays[s.name]) for s in specs))
    except Exception:  # noqa: BLE001 — the export runs the same forward and reports its failure with the inputs
        return None
    flat = list(out) if isinstance(out, tuple | list) else [out]
    if not flat or not all(isinstance(t, torch.Tensor) for t in flat):
        return None
    result: list[tuple[str, Shape]] = []
    for t in flat:
        if any(n in dynamic for n in t.shape[1:]):
            return None  # a size that may follow a dynamic input dim: not known before the export
        shape: Shape = tuple(f"d{i}" if n in dynamic else int(n) for i, n in enumerate(t.shape))
        result.append((_torch_dtype_name(t.dtype), shape))
    return result


__all__ = ["before_export", "check_task_early", "predicted_input_names", "predicted_io"]
