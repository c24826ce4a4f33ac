"""``fixed-dims``: every named input dim becomes its example size (NNAPI takes no symbolic dims).

Not a :class:`~mobilegen.passes.base.GraphPass`: it needs the model's example sizes, and it changes the
inputs, so every target of a build ships the fixed-size model (the fix stage runs it first, for the
whole build, unless ``--keep-dynamic``). It is never judged by coverage: without it NNAPI takes nothing.
"""

from __future__ import annotations

from dataclasses import replace

from mobilegen.artifacts import OnnxModel
from mobilegen.errors import InternalError


def fix_dynamic_dims(model: OnnxModel) -> tuple[OnnxModel, dict[str, int]]:
    """Replace every named input dim by its example size.

    Returns the new model and the sizes it fixed (empty: nothing to fix, the model is returned as is)."""
    from onnxruntime.tools.onnx_model_utils import fix_output_shapes, make_dim_param_fixed

    from mobilegen.load import onnx_io_spec

    dims = sorted({d for t in model.io.inputs for d in t.dynamic_dims})
    if not dims:
        return model, {}
    if model.proto is None:
        raise InternalError("graph passes need the in-memory model; the export stage did not keep it")
    proto = model.proto
    fixed = {d: model.example_sizes.get(d, 1) for d in dims}
    for d, size in fixed.items():
        make_dim_param_fixed(proto.graph, d, size)
    fix_output_shapes(proto)
    return replace(model, io=onnx_io_spec(proto)), fixed
