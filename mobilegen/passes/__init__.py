"""Graph passes on the in-memory ONNX model, each ``model -> model`` with a note of what it changed.

They run between export and the one write of ``model.onnx``: nothing here reads or writes a file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace

from mobilegen.artifacts import OnnxModel
from mobilegen.errors import InternalError

CACHE_KEY = "COREML_CACHE_KEY"


def _proto(model: OnnxModel):  # type: ignore[no-untyped-def]  # onnx.ModelProto (onnx is imported lazily)
    if model.proto is None:
        raise InternalError("graph passes need the in-memory model; the export stage did not keep it")
    return model.proto


def fix_dynamic_dims(model: OnnxModel) -> tuple[OnnxModel, dict[str, int]]:
    """Replace every named input dim by its example size (NNAPI takes no symbolic dims).

    Returns the new model and the sizes it fixed (empty: nothing to fix, the model is returned as is)."""
    from onnxruntime.tools.onnx_model_utils import fix_output_shapes, make_dim_param_fixed

    from mobilegen.load import onnx_io_spec

    dims = sorted({d for t in model.io.inputs for d in t.dynamic_dims})
    if not dims:
        return model, {}
    proto = _proto(model)
    fixed = {d: model.example_sizes.get(d, 1) for d in dims}
    for d, size in fixed.items():
        make_dim_param_fixed(proto.graph, d, size)
    fix_output_shapes(proto)
    return replace(model, io=onnx_io_spec(proto)), fixed


def stamp_cache_key(model: OnnxModel) -> str:
    """Write COREML_CACHE_KEY into the model's metadata: the CoreML EP reuses its compiled model across
    launches while the key is unchanged (a content hash, so a new model gets a new key)."""
    proto = _proto(model)
    for p in list(proto.metadata_props):
        if p.key == CACHE_KEY:
            proto.metadata_props.remove(p)
    key = hashlib.sha256(proto.SerializeToString(deterministic=True)).hexdigest()[:32]
    proto.metadata_props.add(key=CACHE_KEY, value=key)
    return key


def fixed_dims_note(fixed: Mapping[str, int]) -> str:
    dims = ", ".join(f"{d}={n}" for d, n in fixed.items())
    return f"dynamic dims fixed for NNAPI (which takes no symbolic dims): {dims}; pass --keep-dynamic to keep them"
