"""``inspect``: what a model file is, without building anything."""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen.convert.ortformat import summary
from mobilegen.convert.to_ort import ort_format_version
from mobilegen.errors import InternalError, LoadError, first_line
from mobilegen.export.const_inputs import bind_consts, bind_onnx_inputs, model_args
from mobilegen.export.errors import SHAPE_HELP
from mobilegen.export.exporter import forward_arg_names
from mobilegen.infra.onnx_size import tensor_nbytes
from mobilegen.infra.outputs import temp_dir
from mobilegen.load.loader import load_model
from mobilegen.load.traced_inputs import input_flags
from mobilegen.spec import onnx_io_spec

if TYPE_CHECKING:
    from mobilegen.options import ModelOptions


@dataclass(frozen=True)
class Inspection:
    path: str
    kind: str
    sha256: str
    inputs: list[dict[str, Any]]
    outputs: list[dict[str, Any]]
    opset: dict[str, int] = field(default_factory=dict)
    op_histogram: dict[str, int] = field(default_factory=dict)
    # One count per source kind, the same with and without --input: a PyTorch file's own tensors (its
    # parameters and floating-point buffers), an ONNX file's weight initializers. ``parameters_counted``
    # says which; ``onnx_parameters`` is the exported graph's count, when a PyTorch model was exported.
    parameters: int | None = None
    parameter_bytes: int | None = None
    parameters_counted: str | None = None
    onnx_parameters: int | None = None
    onnx_parameter_bytes: int | None = None
    ort_format_version: int | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def parameter_lines(self) -> list[str]:
        """The parameter counts as the CLI shows them, each saying what it counts."""
        out = []
        if self.parameters is not None:
            out.append(f"parameters: {_count(self.parameters, self.parameter_bytes)} — {self.parameters_counted}")
        if self.onnx_parameters is not None:
            out.append(
                f"exported ONNX weights: {_count(self.onnx_parameters, self.onnx_parameter_bytes)} — {ONNX_COUNTED}; "
                "this can differ from the PyTorch count: the exporter folds BatchNorm into convolutions and drops or adds constants"
            )
        return out


TORCH_COUNTED = "elements of the PyTorch module's parameters and floating-point buffers (e.g. BatchNorm statistics)"
ONNX_COUNTED = "elements of the graph's floating-point and 8-bit initializers (not shape or index constants)"


def format_size(nbytes: int) -> str:
    """A byte count for people: ``512 bytes``, ``86.1 kB``, ``12.3 MB``, ``1.21 GB`` (powers of 1000)."""
    if nbytes < 1000:
        return f"{nbytes} byte{'s' if nbytes != 1 else ''}"
    for unit, scale in (("kB", 1e3), ("MB", 1e6)):
        if nbytes < scale * 999.95:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes / 1e9:.2f} GB"


def _count(n: int, nbytes: int | None) -> str:
    return f"{n:,}" + (f" ({format_size(nbytes)})" if nbytes else "")


def inspect_model(model: Path, opts: ModelOptions) -> Inspection:
    """What a model file is: kind, IO, opsets, op histogram, parameters (exported first when it is PyTorch)."""
    loaded = load_model(model, opts.load)
    if loaded.kind == "ort":
        import onnxruntime as ort


        so = ort.SessionOptions()
        so.log_severity_level = 3
        try:
            sess = ort.InferenceSession(str(model), sess_options=so, providers=["CPUExecutionProvider"])
        except Exception as err:  # noqa: BLE001 — onnxruntime raises its own Fail/InvalidGraph types

            raise LoadError(f"{model} is not a loadable ORT-format model: {first_line(err)}", hint="re-convert it with mobilegen convert") from err

        def meta(v: Any) -> dict[str, Any]:
            dtype = v.type.replace("tensor(", "").replace(")", "").replace("float)", "float32")
            dtype = {"float": "float32", "double": "float64"}.get(dtype, dtype)
            return {"name": v.name, "dtype": dtype, "shape": [d if d is not None else "?" for d in v.shape]}


        try:
            opsets, ops = summary(model.read_bytes())
            inputs, outputs = [meta(v) for v in sess.get_inputs()], [meta(v) for v in sess.get_outputs()]
        except (UnicodeDecodeError, struct.error, IndexError, ValueError) as err:
            # onnxruntime's verifier checks the layout, not the text: a name that is not UTF-8 loads, and
            # then neither pybind11 nor our reader can return it

            what = "a name in it is not UTF-8 text" if isinstance(err, UnicodeDecodeError) else f"its tables cannot be read ({first_line(err)})"
            raise LoadError(f"{model} is damaged: {what}", hint="re-convert it with mobilegen convert") from err
        return Inspection(
            path=str(model), kind="ort", sha256=loaded.sha256,
            inputs=inputs, outputs=outputs,
            opset=_used_opsets(opsets, ops),
            op_histogram=_histogram(ops),
            ort_format_version=ort_format_version(model),
        )
    import onnx

    if loaded.kind == "onnx":
        assert loaded.onnx_path is not None

        proto = bind_onnx_inputs(onnx.load_model(str(loaded.onnx_path), load_external_data=False), bind_consts(loaded, opts.consts).consts)
        onnx_model = None
    elif loaded.io_hint is None and not opts.inputs:
        return _inspect_module(loaded, opts.consts)
    else:
        from mobilegen.export.stage import export_onnx
        with temp_dir("inspect") as tmp:
            onnx_model = export_onnx(loaded, opts.export_options(), Path(tmp) / "model.onnx", write=False)
        if onnx_model.proto is None:
            raise InternalError("the export kept no in-memory model")
        proto = onnx_model.proto
    hist = _histogram([(n.domain, n.op_type) for n in proto.graph.node])
    import math


    params = 0
    nbytes = 0
    # Counted from dims and types, never from the data: external data is not read for an inspection.
    for init in proto.graph.initializer:
        kind = onnx.TensorProto.DataType.Name(init.data_type) if init.data_type in onnx.TensorProto.DataType.values() else ""
        if "FLOAT" not in kind and kind not in ("DOUBLE", "UINT8", "INT8"):  # shape constants are not parameters
            continue
        params += math.prod(init.dims)
        nbytes += tensor_nbytes(init) or 0
    io = onnx_io_spec(proto)
    notes = []
    counts: dict[str, Any] = {"parameters": params, "parameter_bytes": nbytes, "parameters_counted": ONNX_COUNTED}
    if onnx_model is not None:
        notes.append(_exporter_note(onnx_model.exporter, onnx_model.fallback_reason))
        notes.extend(onnx_model.notes)
        torch_params, torch_bytes = _module_parameters(loaded.module)  # the count without --input too
        counts = {
            "parameters": torch_params, "parameter_bytes": torch_bytes, "parameters_counted": TORCH_COUNTED,
            "onnx_parameters": params, "onnx_parameter_bytes": nbytes,
        }
    return Inspection(
        path=str(model), kind=loaded.kind, sha256=loaded.sha256,
        inputs=[t.to_dict() for t in io.inputs], outputs=[t.to_dict() for t in io.outputs],
        opset={(o.domain or "ai.onnx"): o.version for o in proto.opset_import},
        op_histogram=hist,
        notes=notes, **counts,
    )


def _used_opsets(opsets: dict[str, int], ops: list[tuple[str, str]]) -> dict[str, int]:
    """The opset imports of the domains the main graph's nodes use (the converter declares every domain
    ORT knows: ai.onnx.ml, com.microsoft.nchwc, ... also for a model that uses none of them)."""
    used = {d or "ai.onnx" for d, _ in ops}
    return {d: v for d, v in opsets.items() if d in used}


def _module_parameters(module: Any) -> tuple[int, int]:
    """Elements and bytes of a PyTorch module's (or ExportedProgram's) parameters and floating-point
    buffers; a tensor shared by two names counts once."""
    seen: set[int] = set()
    count = nbytes = 0
    for t in [*module.parameters(), *module.buffers()]:
        if not t.is_floating_point() or id(t) in seen:
            continue
        seen.add(id(t))
        count += int(t.numel())
        nbytes += int(t.numel()) * t.element_size()
    return count, nbytes


def _histogram(ops: list[tuple[str, str]]) -> dict[str, int]:
    hist = Counter((f"{d}:" if d not in ("", "ai.onnx") else "") + op for d, op in ops)
    return dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])))


def _exporter_note(exporter: str, fallback_reason: str | None) -> str:
    if fallback_reason:
        return f"exported with the TorchScript exporter, a fallback: torch.export failed: {fallback_reason}"
    if exporter == "torchscript":  # its exporter by design, not a fallback
        return "exported with the TorchScript exporter (a TorchScript file)"
    return f"exported with the {exporter} exporter"


def _inspect_module(loaded: Any, consts: tuple[Any, ...]) -> Inspection:
    """A PyTorch file that records no input shapes: what can be told without exporting it. Its Python
    scalar arguments (``forward(self, x, scale: float)``) take a value (``--const``), not a shape."""
    params, nbytes = _module_parameters(loaded.module)
    given = {c.name for c in consts}
    scalars = {a.name: a for a in model_args(loaded) if a.kind == "scalar"}
    names = [n for n in forward_arg_names(loaded) if n not in scalars and n not in given]
    unbound = [a for a in scalars.values() if not a.has_default and a.name not in given]
    parts = []
    if names or not unbound:
        flags, traced = input_flags(loaded.traced_inputs, names or ["x"])
        parts.append(f"{flags} ({'the example inputs it was traced with' if traced else SHAPE_HELP})")
    if unbound:
        kinds = "; ".join(f"{a.name} is a Python {a.scalar}" for a in unbound)
        parts.append(" ".join(f"--const {a.name}=VALUE" for a in unbound) + f" ({kinds}: a value, not a shape)")
    return Inspection(
        path=str(loaded.source), kind=loaded.kind, sha256=loaded.sha256,
        inputs=[{"name": n, "dtype": "?", "shape": ["?"]} for n in names], outputs=[],
        parameters=params, parameter_bytes=nbytes, parameters_counted=TORCH_COUNTED,
        notes=[f"a {loaded.kind} file records no input shapes: add {' '.join(parts)} for the opset and op histogram"],
    )
