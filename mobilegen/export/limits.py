"""The sizes and opsets the export stays within, and the refusals past them."""

from __future__ import annotations

from mobilegen.errors import ExportError

# The newest opset mobilegen exports and verifies. The pinned runtimes (1.24.2, 1.27.0) take one more: ORT
# moved to ONNX 1.20.1 (opset 25) in de398c412 (#26579, 1.24.0), which also lifted the mobile EPs' op-builder
# opset cap to 25.
MAX_DEFAULT_OPSET = 24
MAX_INLINE_BYTES = 2_000_000_000  # ORT format (FlatBuffers) and one-file assets stop at 2 GB
TORCHSCRIPT_MAX_OPSET = 20  # torch.onnx._constants.ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET in torch 2.13
MAX_EXAMPLE_BYTES = 1 << 30  # seeded inputs are built several times (reference + every artifact, two sizes)


def refuse_too_large(size: int, what: str, extra_hint: str = "") -> None:
    if size > MAX_INLINE_BYTES:
        raise ExportError(
            f"{what} {size / 1e9:.1f} GB; ORT format (FlatBuffers) and one-file mobile assets stop at 2 GB",
            hint="quantize or shrink the model before packaging it for mobile" + extra_hint,
        )
