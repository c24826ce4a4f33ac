"""PyTorch → ``.aimodel`` with Apple's ``coreai-torch``, from the same module mobilegen exports to ONNX.

The module becomes a ``torch.export`` program first: an ``.pt2`` is one already; an ``nn.Module`` (pickle,
state dict + class) is exported non-strict with the ONNX model's named dims as dynamic dims; a TorchScript
file goes through ``torch._export.converter.TS2EPConverter`` (torch's own TorchScript → ExportedProgram
converter). The program's decompositions are coreai-torch's (``get_decomp_table()``), and the converter names
the function's inputs and outputs as the ONNX model does, so every generated wrapper, golden vector and
verification row uses the same names on every runtime.

Int8 goes through ``coreai-opt`` (``Quantizer`` → ``prepare`` → calibration → ``finalize``) before the same
export and conversion (research/runtimes-scout-2026-11-27.md §7).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mobilegen.artifacts import LoadedModel
from mobilegen.backends.coreai.deps import require
from mobilegen.backends.coreai.facts import INT8_MODES, NARROWED
from mobilegen.errors import ConversionError, UsageError, first_line
from mobilegen.infra.digest import sha256_file
from mobilegen.infra.quiet import quiet
from mobilegen.spec import IOSpec, TensorSpec


@dataclass(frozen=True)
class CoreAIArtifact:
    """One converted ``.aimodel`` folder."""

    path: Path
    variant: str  # "fp32", "int8-w8", "int8-w8a8"
    files: tuple[tuple[str, int, str], ...]  # every file in the folder: (relative path, bytes, sha256)
    inputs: tuple[TensorSpec, ...]  # as the Core AI function takes them (int64 narrowed to int32)
    narrowed: tuple[str, ...]  # inputs the app passes as int32 although the PyTorch module takes int64
    export_seconds: float  # torch.export (or the TorchScript conversion), plus coreai-opt for int8
    convert_seconds: float  # coreai-torch: decompositions, conversion, save

    @property
    def size(self) -> int:
        return sum(n for _, n, _ in self.files)

    @property
    def seconds(self) -> float:
        return self.export_seconds + self.convert_seconds


def core_inputs(io: IOSpec) -> tuple[tuple[TensorSpec, ...], tuple[str, ...]]:
    """The inputs as the Core AI function takes them, and the names narrowed from 64-bit integers."""
    specs = tuple(TensorSpec(s.name, NARROWED.get(s.dtype, s.dtype), s.shape) for s in io.inputs)
    return specs, tuple(s.name for s in io.inputs if s.dtype in NARROWED)


def _args(io: IOSpec, example: Mapping[str, np.ndarray]) -> tuple[Any, ...]:
    import torch

    return tuple(torch.from_numpy(np.asarray(example[s.name]).copy(order="C")) for s in io.inputs)


def _dynamic_shapes(io: IOSpec) -> tuple[dict[int, Any], ...] | None:
    import torch

    shapes = tuple({i: torch.export.Dim.DYNAMIC for i, d in enumerate(s.shape) if isinstance(d, str)} for s in io.inputs)
    return shapes if any(shapes) else None


def kind_of(module: Any) -> str:
    """The LoadedModel kind a bare module stands for (the registry hands over the module alone)."""
    import torch

    if isinstance(module, torch.export.ExportedProgram):
        return "exported_program"
    if isinstance(module, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        return "torchscript"
    return "pickle"


def exported_program(loaded: LoadedModel, io: IOSpec, example: Mapping[str, np.ndarray]) -> Any:
    """The model as a ``torch.export.ExportedProgram`` taking ``io.inputs`` in order."""
    if loaded.kind in ("onnx", "ort"):
        raise UsageError(
            f"--runtime coreai converts from PyTorch, and {loaded.source.name} is an {loaded.kind.upper()} file",
            hint="give the PyTorch model (.pt, .pt2) that the ONNX file was exported from",
        )
    if loaded.consts:
        raise UsageError(
            "--runtime coreai does not take --const inputs yet",
            hint="bind the constant inside the model's forward, or drop --runtime coreai",
        )
    return program_of(loaded.module, loaded.kind, io, example, loaded.source.name)


def program_of(module: Any, kind: str, io: IOSpec, example: Mapping[str, np.ndarray], name: str = "the model") -> Any:
    """``module`` (of LoadedModel kind ``kind``) as an ExportedProgram: an .pt2's as it is, a TorchScript
    module through TS2EPConverter, an ``nn.Module`` through non-strict ``torch.export`` with the named dims
    dynamic."""
    import torch

    if kind == "exported_program":
        return module
    args = _args(io, example)
    try:
        with quiet():
            if kind == "torchscript":
                from torch._export.converter import TS2EPConverter

                return TS2EPConverter(module, args).convert()
            return torch.export.export(module.eval(), args, dynamic_shapes=_dynamic_shapes(io), strict=False)
    except Exception as err:  # noqa: BLE001 — torch.export raises anything the model's code raises
        raise ConversionError(
            f"torch.export cannot capture {name} for Core AI: {first_line(err)}",
            hint="Core AI converts a torch.export program: make forward exportable (no data-dependent Python control flow), "
            "or save it with torch.export.save and pass the .pt2",
        ) from err


def convert(program: Any, io: IOSpec, out: Path, *, variant: str = "fp32", export_seconds: float = 0.0) -> CoreAIArtifact:
    """Convert ``program`` and save it as the ``.aimodel`` folder ``out`` (which must not exist)."""
    mods = require("coreai-torch", "coreai-core")
    ct = mods["coreai-torch"]
    t0 = time.perf_counter()
    try:
        with quiet():
            ep = program.run_decompositions(ct.get_decomp_table())
            converter = ct.TorchConverter().add_exported_program(
                ep, input_names=[s.name for s in io.inputs], output_names=[s.name for s in io.outputs]
            )
            converter.to_coreai().save_asset(out)
    except Exception as err:  # noqa: BLE001 — the converter reports unsupported ops and shapes as plain exceptions
        raise ConversionError(
            f"coreai-torch cannot convert the model: {first_line(err)}",
            hint="an operator Core AI does not lower is named above; keep the ORT build for this model (drop --runtime coreai)",
        ) from err
    seconds = time.perf_counter() - t0
    inputs, narrowed = core_inputs(io)
    return CoreAIArtifact(out, variant, folder_files(out), inputs, narrowed, export_seconds, seconds)


def folder_files(folder: Path) -> tuple[tuple[str, int, str], ...]:
    """Every file of an ``.aimodel`` folder, sorted: the manifest hashes each one (the folder is the model)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    return tuple((p.relative_to(folder).as_posix(), p.stat().st_size, sha256_file(p)) for p in files)


def to_coreai(loaded: LoadedModel, io: IOSpec, example: Mapping[str, np.ndarray], out: Path) -> CoreAIArtifact:
    """The fp32 ``.aimodel``: export, then convert."""
    require("coreai-torch", "coreai-core")
    t0 = time.perf_counter()
    program = exported_program(loaded, io, example)
    return convert(program, io, out, export_seconds=time.perf_counter() - t0)


def to_coreai_int8(
    loaded: LoadedModel,
    io: IOSpec,
    example: Mapping[str, np.ndarray],
    calibration: Sequence[Mapping[str, np.ndarray]],
    out: Path,
    *,
    mode: str = "w8",
) -> CoreAIArtifact:
    """An int8 ``.aimodel`` through coreai-opt: ``w8`` (weights only; no calibration needed) or ``w8a8``
    (activations observed on ``calibration``, one case per element)."""
    check_int8(mode, calibration)
    t0 = time.perf_counter()
    program = exported_program(loaded, io, example)
    quantized = int8_program(program, io, example, calibration, mode)
    return convert(quantized, io, out, variant=f"int8-{mode}", export_seconds=time.perf_counter() - t0)


def check_int8(mode: str, calibration: Sequence[Mapping[str, np.ndarray]]) -> None:
    if mode not in INT8_MODES:
        raise UsageError(f"Core AI int8 mode {mode!r} is not one of {', '.join(INT8_MODES)}", hint="; ".join(f"{k}: {v}" for k, v in INT8_MODES.items()))
    if mode == "w8a8" and not calibration:
        raise UsageError("Core AI int8 w8a8 needs calibration samples", hint="pass --calibration, or use w8 (weights only)")


def int8_program(program: Any, io: IOSpec, example: Mapping[str, np.ndarray], calibration: Sequence[Mapping[str, np.ndarray]], mode: str) -> Any:
    """``program`` quantized by coreai-opt and exported again (with the same dynamic dims)."""
    import torch

    require("coreai-opt")
    from coreai_opt.quantization import Quantizer, QuantizerConfig

    args = _args(io, example)
    config = QuantizerConfig.presets.w8() if mode == "w8" else QuantizerConfig()
    try:
        with quiet(), torch.no_grad():
            # (a TorchScript source's program calls aten.convolution / aten.batch_norm: W8 then leaves its size
            # at ~0.99× — measured on mobilenet_tiny; rewriting them to conv2d made it 1.5× — while an .pt2 or
            # nn.Module shrinks to ~0.26×: benchmarks/results/coreai.md)
            quantizer = Quantizer(program.module(), config)
            dynamic = _dynamic_shapes(io)  # the int8 model takes the same dynamic dims as the fp32 one
            prepared = quantizer.prepare(args, dynamic_shapes=dynamic)
            if mode == "w8a8":
                with quantizer.calibration_mode():
                    for case in calibration:
                        prepared(*_args(io, case))
            finalized = quantizer.finalize()
            # prepare() works on the graph in training mode (coreai-opt re-enables .eval() on what finalize()
            # returns): without it BatchNorm stays a training op Core AI does not lower
            finalized.eval()
            return torch.export.export(finalized, args, dynamic_shapes=dynamic, strict=False)
    except Exception as err:  # noqa: BLE001 — coreai-opt and torch.export raise anything
        raise ConversionError(
            f"coreai-opt cannot quantize the model ({mode}): {first_line(err)}",
            hint="ship the fp32 .aimodel (drop the int8 request), or try the other mode",
        ) from err


def convert_module(
    module: Any, example: Sequence[np.ndarray], out: Path, *, io: IOSpec, quantize_calibration: Sequence[Sequence[np.ndarray]] | None = None
) -> Path:
    """The registry's entry (``mobilegen.backends.BackendImpl.convert``): the PyTorch ``module`` → ``out``
    (.aimodel), its function's inputs and outputs named as ``io`` (the ONNX model's names). With
    ``quantize_calibration`` (``--quantize int8``): coreai-opt W8, weights int8 per channel (the cases are not
    needed: W8A8 calibrated on 8 samples failed the int8 gate on ViT, cosine 0.961, and MiniLM, 0.573, where W8
    passed on all three models; benchmarks/results/coreai.md)."""
    names = [s.name for s in io.inputs]
    first = dict(zip(names, example, strict=True))
    kind = kind_of(module)
    program = program_of(module, kind, io, first)
    if quantize_calibration is not None:
        program = int8_program(program, io, first, [], "w8")
    convert(program, io, out, variant="fp32" if quantize_calibration is None else "int8-w8")
    return out
