"""Graph passes on the in-memory ONNX model, and what the build does with them.

- :mod:`~mobilegen.passes.base`: the ``GraphPass`` contract (mutate in place, return the nodes rewritten);
- :mod:`~mobilegen.passes.registry`: every pass by name (built-ins one line each, plus ``register``);
- one module per pass (``layernorm.py``, ``gelu.py``...), each exposing ``PASS``;
- :mod:`~mobilegen.passes.dims`: ``fixed-dims``, the build-wide fixed input dims for the providers that
  declare it (then ``fold-if`` on the Ifs the fixed shapes decide);
- :mod:`~mobilegen.passes.bodies`: every pass run inside If/Loop/Scan bodies too;
- :mod:`~mobilegen.passes.stage`: the fix stage: per target, run the passes its providers declare and
  keep each one only if the coverage analysis says it helps;
- here: the providers' compiled-model cache keys stamped into the bytes written
  (:attr:`~mobilegen.providers.base.ExecutionProvider.cache_key_metadata`).

They run between export and the one write of each ``model.onnx``: nothing here reads a file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from mobilegen.artifacts import OnnxModel
from mobilegen.errors import InternalError
from mobilegen.passes.dims import fix_dynamic_dims

__all__ = ["cache_keys", "fix_dynamic_dims", "serialized_with_cache_keys", "serialized_with_digest"]


def cache_keys() -> tuple[str, ...]:
    """The metadata keys under which the providers' EPs reuse a compiled model, in registry order."""
    from mobilegen import providers

    return tuple(dict.fromkeys(p.cache_key_metadata for p in providers.all_providers() if p.cache_key_metadata))


def _proto(model: OnnxModel):  # type: ignore[no-untyped-def]  # onnx.ModelProto (onnx is imported lazily)
    if model.proto is None:
        raise InternalError("graph passes need the in-memory model; the export stage did not keep it")
    return model.proto


def serialized_with_cache_keys(model: OnnxModel, keys: Sequence[str]) -> tuple[bytes, ...]:
    """The model's bytes with each of ``keys`` in its metadata (:func:`cache_keys`: a provider naming one in
    ``ExecutionProvider.cache_key_metadata`` reuses its compiled model across launches while the key is
    unchanged), all set to a content hash of the model without them, so a new model gets a new key. The
    keys are also added to the in-memory model. Returns the bytes as chunks to write one after another (a
    large model's bytes are not copied to join them).

    The model is serialized once: the keys' metadata entries (field 14) are appended to the bytes that were
    hashed, which is what protobuf writes itself when no field numbered above 14 is set."""
    return serialized_with_digest(model, keys)[0]


def serialized_with_digest(model: OnnxModel, keys: Sequence[str]) -> tuple[tuple[bytes, ...], str]:
    """:func:`serialized_with_cache_keys`, and the sha256 of the bytes it returns (the keys' hash carried on
    over their entries: the model's bytes are hashed once)."""
    import onnx

    proto = _proto(model)
    for p in list(proto.metadata_props):
        if p.key in keys:
            proto.metadata_props.remove(p)
    data: bytes = proto.SerializeToString(deterministic=True)
    h = hashlib.sha256(data)
    value = h.hexdigest()[:32]
    entries = [proto.metadata_props.add(key=k, value=value) for k in keys]
    if any(len(getattr(proto, f.name)) for f in proto.DESCRIPTOR.fields if f.number > 14):  # all repeated
        whole = bytes(proto.SerializeToString(deterministic=True))
        return (whole,), hashlib.sha256(whole).hexdigest()
    chunks: list[bytes] = [data]
    for entry in entries:
        body: bytes = onnx.StringStringEntryProto(key=entry.key, value=entry.value).SerializeToString()
        chunks += [_field_header(14, len(body)), body]
    for chunk in chunks[1:]:
        h.update(chunk)
    return tuple(chunks), h.hexdigest()


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
