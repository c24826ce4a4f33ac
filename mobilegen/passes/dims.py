"""``fixed-dims``: every named input dim becomes its example size (for the providers that take no symbolic
dims and declare it in their ``fixes``).

Not a :class:`~mobilegen.passes.base.GraphPass`: it needs the model's example sizes, and it changes the
inputs, so every target of a build ships the fixed-size model (the fix stage runs it first, for the
whole build, unless ``--keep-dynamic``). It is never judged by coverage: without it those providers take
nothing.

Once the dims are fixed, ``If`` nodes testing a shape (``If(Shape(x)[0] == 1)``) have a constant
condition: they are folded right away (:mod:`mobilegen.passes.fold_if`), not judged either, because
onnxruntime would inline them itself when it optimizes and fails to on nested ones (silero-vad), so
the model would not even load for the analysis.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from mobilegen.artifacts import OnnxModel
from mobilegen.errors import InternalError
from mobilegen.passes.fold_if import fold_unjudged
from mobilegen.spec import onnx_io_spec

if TYPE_CHECKING:
    import onnx


def fix_dynamic_dims(model: OnnxModel) -> tuple[OnnxModel, dict[str, int]]:
    """Replace every named input dim by its example size.

    Returns the new model and the sizes it fixed (empty: nothing to fix, the model is returned as is)."""
    from onnxruntime.tools.onnx_model_utils import fix_output_shapes, make_dim_param_fixed


    dims = sorted({d for t in model.io.inputs for d in t.dynamic_dims})
    if not dims:  # static already: only the Ifs its shapes decide
        if model.proto is None:
            return model, {}
        notes = _fold(model.proto, model.notes)
        return (model if notes == model.notes else replace(model, notes=notes)), {}
    if model.proto is None:
        raise InternalError("graph passes need the in-memory model; the export stage did not keep it")
    proto = model.proto
    fixed = {d: model.example_sizes.get(d, 1) for d in dims}
    for d, size in fixed.items():
        make_dim_param_fixed(proto.graph, d, size)
    _fix_unnamed(proto, fixed)
    fix_output_shapes(proto)
    return replace(model, io=onnx_io_spec(proto), notes=_fold(proto, model.notes)), fixed


FOLD_NOTE = "fold-if: {} node(s) of If nodes on a constant condition (the fixed shapes, --const) inlined"


def folded_nodes(model: OnnxModel) -> int:
    """How many nodes :func:`fix_dynamic_dims` folded (its note says: the model carries no other record)."""
    head, _, tail = FOLD_NOTE.partition("{}")
    for note in model.notes:
        if note.startswith(head) and note.endswith(tail) and note[len(head) : len(note) - len(tail)].isdigit():
            return int(note[len(head) : len(note) - len(tail)])
    return 0


def _fold(proto: onnx.ModelProto, notes: tuple[str, ...]) -> tuple[str, ...]:
    """``fold-if`` on the Ifs the (fixed) shapes decide; ``notes`` with what it did."""
    folded, error = fold_unjudged(proto)
    if error is not None:
        return (*notes, f"fold-if failed and was skipped: {error}")
    if folded:
        return (*notes, FOLD_NOTE.format(folded))
    return notes


def _fix_unnamed(proto: onnx.ModelProto, fixed: dict[str, int]) -> None:
    """A dim an input declares with neither a size nor a name is known to mobilegen as
    ``<input>_dim<axis>`` (:func:`mobilegen.load.loader.onnx_io_spec`): give it its size in the graph too
    (``make_dim_param_fixed`` only finds named dims; silero-vad's ``input`` has two unnamed ones)."""
    for vi in proto.graph.input:
        if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
            continue
        for axis, dim in enumerate(vi.type.tensor_type.shape.dim):
            if dim.HasField("dim_value") or dim.dim_param:
                continue
            size = fixed.get(f"{vi.name}_dim{axis}")
            if size is not None:
                dim.dim_value = size
