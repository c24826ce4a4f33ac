"""Check and shape-infer an ONNX model without copying its weights.

onnx's checker and shape inference serialize the whole model to hand it to C++, and shape inference
parses a whole new copy back: for a 1.2 GB model that is ~25 s and two extra copies in memory. Neither
needs the bytes of a large weight, only its type and dims (small constants, e.g. Reshape targets, stay
in place for data propagation). So the large initializers' bytes are lifted out of the graph while
the checker and shape inference run, and put back into the result: the same bytes as running them on
the whole model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mobilegen.infra.onnx_size import model_bytes
from mobilegen.infra.outputs import temp_dir

if TYPE_CHECKING:
    import onnx

# Initializers at least this big are lifted out; everything data propagation reads is far smaller.
LIFT_MIN_BYTES = 1 << 20
_STAND_IN = "mobilegen-lifted-weights"  # the external-data location the checker sees (an empty file)


@dataclass(frozen=True)
class _Lifted:
    raw_data: bytes
    had_location: bool
    location: int


@contextlib.contextmanager
def _weights_lifted(model: onnx.ModelProto) -> Iterator[dict[str, _Lifted]]:
    """Inside: the large initializers of ``model``'s main graph point at an empty external file. On error
    they are put back; on success they are not (the caller goes on with a copy made inside, e.g. the
    shape-inferred model, and copying the weights back would cost a copy of them)."""
    import onnx

    lifted: dict[str, _Lifted] = {}
    try:
        for t in model.graph.initializer:
            if t.data_location == onnx.TensorProto.EXTERNAL or t.name in lifted:
                continue
            raw = t.raw_data  # a copy: read it once
            if len(raw) >= LIFT_MIN_BYTES:
                lifted[t.name] = _Lifted(raw, t.HasField("data_location"), t.data_location)
                t.ClearField("raw_data")
                t.data_location = onnx.TensorProto.EXTERNAL
                t.external_data.add(key="location", value=_STAND_IN)
        yield lifted
    except BaseException:
        put_back(model, lifted)
        raise


def put_back(model: onnx.ModelProto, lifted: dict[str, _Lifted]) -> None:
    """The lifted weights back into ``model``; each entry leaves ``lifted`` as it goes in (its bytes are
    freed one tensor at a time, not after all of them are copied back)."""
    for t in model.graph.initializer:
        entry = lifted.get(t.name)
        if entry is None or t.data_location != 1:  # 1: onnx.TensorProto.EXTERNAL
            continue
        del lifted[t.name]
        t.ClearField("external_data")
        t.raw_data = entry.raw_data
        if entry.had_location:
            t.data_location = entry.location
        else:
            t.ClearField("data_location")


def _check_lifted(model: onnx.ModelProto, lifted: dict[str, _Lifted]) -> None:
    """onnx.checker.check_model on a model inside :func:`_weights_lifted`."""
    import onnx

    if not lifted:
        onnx.checker.check_model(model)
        return
    with temp_dir("check") as tmp:  # the checker reads a lifted model from a file, beside its stand-in
        (tmp / _STAND_IN).touch()
        onnx.save_model(model, str(tmp / "model.onnx"))
        onnx.checker.check_model(str(tmp / "model.onnx"))


def check_and_infer(model: onnx.ModelProto, lowest_ir_version: int) -> tuple[onnx.ModelProto, int]:
    """Check ``model`` at ``lowest_ir_version`` (kept at its own IR version when the lower one does not
    check) and return it shape-inferred, with the model's size in bytes (weights inline; measured
    without serializing the weights, which is as slow as writing them and fails past 2 GiB). ``model``
    itself is left without its large weights: the caller goes on with the result. Raises the checker's
    ValidationError or an InferenceError."""
    import onnx

    with _weights_lifted(model) as lifted:
        size = model_bytes(model)  # the lifted weights count by their dims and type
        original = model.ir_version
        if lowest_ir_version < original:
            model.ir_version = lowest_ir_version
            try:
                _check_lifted(model, lifted)
            except onnx.checker.ValidationError:
                model.ir_version = original
        if model.ir_version == original:
            _check_lifted(model, lifted)
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    put_back(inferred, lifted)
    return inferred, size
