"""``inspect``: what a model file is, without building anything."""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen.errors import InternalError

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
    parameters: int | None = None
    parameter_bytes: int | None = None
    ort_format_version: int | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def inspect_model(model: Path, opts: ModelOptions) -> Inspection:
    """What a model file is: kind, IO, opsets, op histogram, parameters (exported first when it is PyTorch)."""
    from mobilegen.load import load_model, onnx_io_spec

    loaded = load_model(model, opts.load)
    if loaded.kind == "ort":
        import onnxruntime as ort

        from mobilegen.convert import ort_format_version

        so = ort.SessionOptions()
        so.log_severity_level = 3
        try:
            sess = ort.InferenceSession(str(model), sess_options=so, providers=["CPUExecutionProvider"])
        except Exception as err:  # noqa: BLE001 — onnxruntime raises its own Fail/InvalidGraph types
            from mobilegen.errors import LoadError, first_line

            raise LoadError(f"{model} is not a loadable ORT-format model: {first_line(err)}", hint="re-convert it with mobilegen convert") from err

        def meta(v: Any) -> dict[str, Any]:
            dtype = v.type.replace("tensor(", "").replace(")", "").replace("float)", "float32")
            dtype = {"float": "float32", "double": "float64"}.get(dtype, dtype)
            return {"name": v.name, "dtype": dtype, "shape": [d if d is not None else "?" for d in v.shape]}

        from mobilegen.ortformat import summary

        try:
            opsets, ops = summary(model.read_bytes())
            inputs, outputs = [meta(v) for v in sess.get_inputs()], [meta(v) for v in sess.get_outputs()]
        except (UnicodeDecodeError, struct.error, IndexError, ValueError) as err:
            # onnxruntime's verifier checks the layout, not the text: a name that is not UTF-8 loads, and
            # then neither pybind11 nor our reader can return it
            from mobilegen.errors import LoadError, first_line

            what = "a name in it is not UTF-8 text" if isinstance(err, UnicodeDecodeError) else f"its tables cannot be read ({first_line(err)})"
            raise LoadError(f"{model} is damaged: {what}", hint="re-convert it with mobilegen convert") from err
        return Inspection(
            path=str(model), kind="ort", sha256=loaded.sha256,
            inputs=inputs, outputs=outputs,
            opset=opsets,
            op_histogram=_histogram(ops),
            ort_format_version=ort_format_version(model),
        )
    import onnx

    if loaded.kind == "onnx":
        assert loaded.onnx_path is not None
        proto = onnx.load_model(str(loaded.onnx_path), load_external_data=False)
        onnx_model = None
    elif loaded.io_hint is None and not opts.inputs:
        return _inspect_module(loaded)
    else:
        from mobilegen.export import export_onnx
        from mobilegen.outputs import temp_dir

        with temp_dir("inspect") as tmp:
            onnx_model = export_onnx(loaded, opts.export_options(), Path(tmp) / "model.onnx", write=False)
        if onnx_model.proto is None:
            raise InternalError("the export kept no in-memory model")
        proto = onnx_model.proto
    hist = _histogram([(n.domain, n.op_type) for n in proto.graph.node])
    import math

    from mobilegen.onnx_checks import tensor_nbytes

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
    if onnx_model is not None:
        notes.append(f"exported with the {onnx_model.exporter} exporter" + (f" ({onnx_model.fallback_reason})" if onnx_model.fallback_reason else ""))
        notes.extend(onnx_model.notes)
    return Inspection(
        path=str(model), kind=loaded.kind, sha256=loaded.sha256,
        inputs=[t.to_dict() for t in io.inputs], outputs=[t.to_dict() for t in io.outputs],
        opset={(o.domain or "ai.onnx"): o.version for o in proto.opset_import},
        op_histogram=hist,
        parameters=params, parameter_bytes=nbytes, notes=notes,
    )


def _histogram(ops: list[tuple[str, str]]) -> dict[str, int]:
    hist = Counter((f"{d}:" if d not in ("", "ai.onnx") else "") + op for d, op in ops)
    return dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])))


def _inspect_module(loaded: Any) -> Inspection:
    """A PyTorch file that records no input shapes: what can be told without exporting it."""
    from mobilegen.export import forward_arg_names

    module = loaded.module
    params = list(module.parameters()) + list(module.buffers())
    names = forward_arg_names(loaded)
    return Inspection(
        path=str(loaded.source), kind=loaded.kind, sha256=loaded.sha256,
        inputs=[{"name": n, "dtype": "?", "shape": ["?"]} for n in names], outputs=[],
        parameters=sum(int(p.numel()) for p in params if p.is_floating_point()),
        parameter_bytes=sum(int(p.numel()) * p.element_size() for p in params),
        notes=[
            f"a {loaded.kind} file records no input shapes: add "
            + " ".join(f"--input {n}:SHAPE[:DTYPE]" for n in names or ["x"])
            + " for the opset and op histogram"
        ],
    )
