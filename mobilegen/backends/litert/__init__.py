"""LiteRT (Android): the PyTorch module → ``.tflite`` with litert-torch, run on this host with
ai-edge-litert for the verification gate, int8 with litert-torch's PT2E quantizer.

Facts this module builds on (checked on this host, ../research/runtimes-scout-2026-11-27.md §2):

* ``litert_torch.convert(module, sample_args)`` exports with ``torch.export`` (static shapes: a
  ``dynamic_shapes`` conversion fails in its jax bridge) and names the signature's inputs ``args_0`` … and
  its outputs ``output_0`` … in positional order; NCHW inputs stay NCHW (a TRANSPOSE is added inside).
* A TorchScript file cannot be ``torch.export``-ed; ``torch._export.converter.TS2EPConverter`` turns it
  into an ExportedProgram first (mobilenet_tiny.pt: 2.2e-8 max error against TorchScript).
* int64 inputs become int32 in the ``.tflite``; the host runner (and the Kotlin wrapper) narrow them.
* A PT2E int8 model converted with ``quant_config`` has int8 I/O: the runner quantizes/dequantizes with
  the scale and zero point stored in the model (as the generated Kotlin does).

Heavy imports (torch, litert_torch ~10 s, ai_edge_litert) happen inside the functions only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mobilegen.errors import ConversionError, VerificationError, first_line
from mobilegen.infra.quiet import quiet

if TYPE_CHECKING:
    from mobilegen.backends import Runner

# The exact versions mobilegen converts and verifies with (pyproject.toml's [litert] extra pins them), and
# the Maven version of the Android runtime the generated project pins (the same LiteRT release, 2.3.0).
VERSIONS = {"litert-torch": "0.10.0", "ai-edge-litert": "2.3.0", "litert-converter": "0.5.0"}
MAVEN_VERSION = "2.3.0"
SIGNATURE = "serving_default"


@dataclass(frozen=True)
class TensorInfo:
    """One signature tensor of a .tflite: its signature name, dtype, shape and (int8) quantization."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    scale: float = 0.0
    zero_point: int = 0


@dataclass(frozen=True)
class TfliteModel:
    """A converted model: its file, signature I/O in positional order, and its op list."""

    path: Path
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    ops: tuple[str, ...]

    @property
    def int8_io(self) -> bool:
        return any(t.dtype == "int8" for t in self.inputs + self.outputs)


def _flat_module(fn: Callable[..., Any]) -> Any:
    """``fn`` as an nn.Module whose forward returns a flat tuple of tensors (ModelOutput, dicts, nesting)."""
    import torch

    from mobilegen.infra.nested import flatten_outputs as _flatten  # as the gate's reference flattens

    class Flat(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            if isinstance(fn, torch.nn.Module):
                self.inner = fn

        def forward(self, *args: Any) -> Any:
            return tuple(_flatten(fn(*args)))

    return Flat()  # not .eval(): an ExportedProgram's module refuses train(); the inner module is already in eval mode


def exportable(module: Any, example: Sequence[np.ndarray]) -> Any:
    """An nn.Module ``torch.export`` can trace: a TorchScript module through TS2EPConverter, an
    ExportedProgram's ``module()``, any other module as it is; outputs flattened to a tuple."""
    import torch

    args = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in example)
    if isinstance(module, torch.jit.ScriptModule):
        from torch._export.converter import TS2EPConverter

        try:
            with quiet():
                module = TS2EPConverter(module, args).convert().module()
        except Exception as err:  # noqa: BLE001 — the TorchScript converter raises anything
            raise ConversionError(
                f"torch cannot turn the TorchScript model into an ExportedProgram for LiteRT: {first_line(err)}",
                hint="give the nn.Module itself (a state_dict with --model-class, or torch.export.save's .pt2)",
            ) from err
    elif isinstance(module, torch.export.ExportedProgram):
        module = module.module()
    return _flat_module(module)


def convert(module: Any, example: Sequence[np.ndarray], out: Path, *, quantize_calibration: Sequence[Sequence[np.ndarray]] | None = None) -> Path:
    """The module → ``out`` (.tflite). With ``quantize_calibration``: PT2E static int8 (per-channel
    symmetric weights), calibrated on those cases, converted with ``quant_config`` (int8 I/O)."""
    import torch

    with quiet():
        import litert_torch

    m = exportable(module, example)
    args = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in example)
    try:
        with torch.no_grad(), quiet():
            if quantize_calibration is None:
                edge = litert_torch.convert(m, args)
            else:
                qm, qconfig = _pt2e_int8(m, args, quantize_calibration)
                edge = litert_torch.convert(qm, args, quant_config=qconfig)
            edge.export(str(out))
    except ConversionError:
        raise
    except Exception as err:  # noqa: BLE001 — litert-torch and its jax bridge raise anything
        raise ConversionError(f"litert-torch could not convert the model: {first_line(err)}", hint="rerun with --debug; or build with --runtime ort") from err
    return out


def _pt2e_int8(m: Any, args: tuple[Any, ...], calibration: Sequence[Sequence[np.ndarray]]) -> tuple[Any, Any]:
    """The module quantized PT2E-style (litert-torch's own quantizer) and the convert() arguments."""
    import torch
    from litert_torch.quantize import pt2e_quantizer as pq
    from litert_torch.quantize.quant_config import QuantConfig
    from torchao.quantization.pt2e import quantize_pt2e

    q = pq.PT2EQuantizer().set_global(pq.get_symmetric_quantization_config(is_per_channel=True))
    gm = quantize_pt2e.prepare_pt2e(torch.export.export(m, args).module(), q)
    for case in calibration:
        gm(*(torch.from_numpy(np.ascontiguousarray(a)) for a in case))
    gm = quantize_pt2e.convert_pt2e(gm, fold_quantize=False)
    return gm, QuantConfig(pt2e_quantizer=q)


def _index(name: str) -> int:
    m = re.search(r"(\d+)$", name)
    return int(m.group(1)) if m else 0


def _info(name: str, d: dict[str, Any]) -> TensorInfo:
    scale, zp = d.get("quantization", (0.0, 0))
    return TensorInfo(name, np.dtype(d["dtype"]).name, tuple(int(x) for x in d["shape"]), float(scale), int(zp))


def inspect(path: Path) -> TfliteModel:
    """The signature I/O (``args_N`` / ``output_N`` in positional order) and the op list of a .tflite."""
    from ai_edge_litert.interpreter import Interpreter

    with quiet():
        it = Interpreter(model_path=str(path))
        runner = it.get_signature_runner(SIGNATURE)
        ins = sorted(runner.get_input_details().items(), key=lambda kv: _index(kv[0]))
        outs = sorted(runner.get_output_details().items(), key=lambda kv: _index(kv[0]))
        ops = tuple(sorted({o["op_name"] for o in it._get_ops_details()}))
    return TfliteModel(path, tuple(_info(n, d) for n, d in ins), tuple(_info(n, d) for n, d in outs), ops)


def to_tensor(a: np.ndarray, t: TensorInfo) -> np.ndarray:
    """A host array as the .tflite input wants it: int64 narrowed to int32, float quantized for int8 I/O."""
    if t.dtype == "int8" and a.dtype.kind == "f":
        return np.clip(np.round(a / t.scale) + t.zero_point, -128, 127).astype(np.int8)
    return np.asarray(a).astype(t.dtype, copy=False)


def from_tensor(a: np.ndarray, t: TensorInfo) -> np.ndarray:
    """A .tflite output as float when it is int8 (dequantized with its scale/zero point)."""
    if t.dtype == "int8" and t.scale:
        return ((a.astype(np.float32) - t.zero_point) * t.scale).astype(np.float32)
    return np.asarray(a)


def host_runner(path: Path) -> Runner:
    """Runs the .tflite on this host with ai-edge-litert's Interpreter (LiteRT's own CPU kernels, the ones the
    app's CPU accelerator runs; :func:`compiled_runner` is the CompiledModel API the Kotlin calls, same
    numbers, but it logs natively outside any redirection). Inputs in the ONNX model's order map to
    ``args_0`` …; int8 I/O is quantized/dequantized with the model's scale and zero point."""
    from ai_edge_litert.interpreter import Interpreter

    model = inspect(path)
    with quiet():
        runner = Interpreter(model_path=str(path)).get_signature_runner(SIGNATURE)

    def run(arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        values = _check_count(path, model, arrays)
        with quiet():
            out = runner(**{t.name: np.ascontiguousarray(to_tensor(a, t)) for a, t in zip(values, model.inputs, strict=True)})
        return [from_tensor(np.asarray(out[t.name]), t) for t in model.outputs]

    return run


def _check_count(path: Path, model: TfliteModel, arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
    values = list(arrays.values())
    if len(values) != len(model.inputs):
        raise VerificationError(f"{path.name} takes {len(model.inputs)} inputs, got {len(values)}", hint="rerun with --debug")
    return values


def compiled_runner(path: Path, accelerator: str = "cpu") -> Runner:
    """The same through LiteRT 2.x's CompiledModel (``CompiledModel.from_file``, input/output buffers,
    ``run_by_index``), the API the generated Kotlin calls; ``accelerator``: "cpu" or "gpu" (GPU creation
    fails on a host without a GPU adapter LiteRT can use, as the scout found: no silent CPU fallback)."""
    from ai_edge_litert.compiled_model import CompiledModel
    from ai_edge_litert.hardware_accelerator import HardwareAccelerator

    model = inspect(path)
    accel = {"cpu": HardwareAccelerator.CPU, "gpu": HardwareAccelerator.GPU}[accelerator]
    cm = CompiledModel.from_file(str(path), hardware_accel=accel)

    def run(arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        values = _check_count(path, model, arrays)
        ins, outs = cm.create_input_buffers(0), cm.create_output_buffers(0)
        for buf, a, t in zip(ins, values, model.inputs, strict=True):
            buf.write(np.ascontiguousarray(to_tensor(a, t)).reshape(-1))
        cm.run_by_index(0, ins, outs)
        got = []
        for buf, t in zip(outs, model.outputs, strict=True):
            n = int(np.prod(t.shape)) if t.shape else 1
            got.append(from_tensor(np.asarray(buf.read(n, np.dtype(t.dtype))).reshape(t.shape), t))
        return got

    return run


# --- the benchmark's hooks (mobilegen.bench.runtimes) -------------------------------------------------


class InterpreterSession:
    """The .tflite loaded once for ``mobilegen bench``: ai-edge-litert's Interpreter and its signature
    runner (LiteRT's default CPU kernels, as :func:`host_runner`; the CompiledModel API logs natively on
    every creation, which no redirection here can keep off the CLI's streams)."""

    api = "ai-edge-litert Interpreter, signature runner, default CPU kernels"

    def __init__(self, path: Path) -> None:
        from ai_edge_litert.interpreter import Interpreter

        self.path = path
        self.model = inspect(path)
        with quiet():
            self._runner = Interpreter(model_path=str(path)).get_signature_runner(SIGNATURE)

    def run(self, arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        values = _check_count(self.path, self.model, arrays)
        with quiet():
            out = self._runner(**{t.name: np.ascontiguousarray(to_tensor(a, t)) for a, t in zip(values, self.model.inputs, strict=True)})
        return [from_tensor(np.asarray(out[t.name]), t) for t in self.model.outputs]

    def close(self) -> None:
        self._runner = None


def open_session(path: Path) -> InterpreterSession:
    """The registry's benchmark hook: the model loaded and its tensors allocated, ready to run many times."""
    return InterpreterSession(path)


def sample_inputs(path: Path) -> dict[str, np.ndarray]:
    """Deterministic inputs from the .tflite's own signature (``args_0`` …, in order): floats in [0, 1)
    (float for an int8 input too: the session quantizes it), integers 0."""
    rng = np.random.default_rng(0)
    out: dict[str, np.ndarray] = {}
    for t in inspect(path).inputs:
        floating = t.dtype in ("float32", "float16", "int8")
        out[t.name] = rng.random(t.shape).astype(np.float32) if floating else np.zeros(t.shape, dtype=t.dtype)
    return out
