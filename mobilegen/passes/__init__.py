"""Graph passes on the in-memory ONNX model, each ``model -> model`` with a note of what it changed.

They run between export and the one write of ``model.onnx``: nothing here reads or writes a file.
"""

from __future__ import annotations

import hashlib
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


def serialized_with_cache_key(model: OnnxModel) -> tuple[bytes, ...]:
    """The model's bytes with COREML_CACHE_KEY in its metadata: the CoreML EP reuses its compiled model
    across launches while the key is unchanged (a content hash of the model without the key, so a new
    model gets a new key). The key is also added to the in-memory model. Returns the bytes as chunks to
    write one after another (a large model's bytes are not copied to join them).

    The model is serialized once: the key's metadata entry (field 14) is appended to the bytes that were
    hashed, which is what protobuf writes itself when no field numbered above 14 is set."""
    import onnx

    proto = _proto(model)
    for p in list(proto.metadata_props):
        if p.key == CACHE_KEY:
            proto.metadata_props.remove(p)
    data: bytes = proto.SerializeToString(deterministic=True)
    key = hashlib.sha256(data).hexdigest()[:32]
    entry = proto.metadata_props.add(key=CACHE_KEY, value=key)
    if any(len(getattr(proto, f.name)) for f in proto.DESCRIPTOR.fields if f.number > 14):  # all repeated
        return (bytes(proto.SerializeToString(deterministic=True)),)
    body: bytes = onnx.StringStringEntryProto(key=entry.key, value=entry.value).SerializeToString()
    return data, _field_header(14, len(body)), body


def _field_header(number: int, length: int) -> bytes:
    """A length-delimited protobuf field's tag and length (varints)."""
    out = bytearray()
    for value in ((number << 3) | 2, length):
        while True:
            byte = value & 0x7F
            value >>= 7
            out.append(byte | (0x80 if value else 0))
            if not value:
                break
    return bytes(out)


