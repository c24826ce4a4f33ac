"""Core commands: inspect, export, convert."""

from __future__ import annotations

import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape as esc
from rich.table import Table

from mobilegen.cli import app, run_command
from mobilegen.cli.options import (
    AtolOpt,
    DebugOpt,
    DynamicOpt,
    ForceOpt,
    InputOpt,
    JsonOpt,
    ModelArg,
    ModelClassOpt,
    ModelKwargsOpt,
    OpsetOpt,
    OutputNameOpt,
    RtolOpt,
    SampleOpt,
    TrustPickleOpt,
    model_options,
)


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


def _inspect(model: Path, opts: Any) -> Inspection:
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

        opsets, ops = summary(model.read_bytes())
        return Inspection(
            path=str(model), kind="ort", sha256=loaded.sha256,
            inputs=[meta(v) for v in sess.get_inputs()], outputs=[meta(v) for v in sess.get_outputs()],
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
        with tempfile.TemporaryDirectory(prefix="mobilegen-inspect-") as tmp:
            from mobilegen.export import export_onnx

            onnx_model = export_onnx(loaded, opts.export_options(), Path(tmp) / "model.onnx")
            proto = onnx.load_model(str(onnx_model.path))
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


def _human_inspect(r: Inspection, console: Console) -> None:
    console.print(f"[bold]{esc(r.path)}[/bold]  ({r.kind})  sha256 {r.sha256[:16]}…")
    t = Table("", "name", "dtype", "shape", box=None, pad_edge=False)
    for role, items in (("input", r.inputs), ("output", r.outputs)):
        for i in items:
            t.add_row(role, esc(i["name"]), i["dtype"], esc("x".join(str(d) for d in i["shape"])) or "scalar")
    console.print(t)
    if r.opset:
        console.print("opset: " + ", ".join(f"{k} {v}" for k, v in r.opset.items()))
    if r.parameters is not None:
        console.print(f"parameters: {r.parameters:,} ({(r.parameter_bytes or 0) / 1e6:.2f} MB)")
    if r.ort_format_version is not None:
        console.print(f"ORT format version: {r.ort_format_version}")
    if r.op_histogram:
        console.print(esc("ops: " + ", ".join(f"{k}×{v}" for k, v in r.op_histogram.items())))
    for n in r.notes:
        console.print(f"[dim]{esc(n)}[/dim]")


@app.command()
def inspect(
    model: ModelArg,
    input: InputOpt = None,
    dynamic: DynamicOpt = None,
    opset: OpsetOpt = None,
    trust_pickle: TrustPickleOpt = False,
    model_class: ModelClassOpt = None,
    model_kwargs: ModelKwargsOpt = None,
    json_out: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Show a model's inputs/outputs, opset, op histogram and parameter count (.pt, .pt2, .onnx, .ort)."""

    def action() -> Inspection:
        return _inspect(model, model_options(input, dynamic, opset, None, trust_pickle, model_class, model_kwargs))

    run_command(action, json_out=json_out, debug=debug, human=_human_inspect, to_json=lambda r: r.to_dict())


@dataclass(frozen=True)
class ExportResult:
    output: str
    exporter: str
    fallback_reason: str | None
    opset: int
    io: dict[str, Any]
    verification: dict[str, Any] | None
    notes: list[str]


def _human_export(r: ExportResult, console: Console) -> None:
    console.print(f"[green]wrote[/green] {esc(r.output)} (opset {r.opset}, {r.exporter} exporter)")
    if r.fallback_reason:
        console.print(f"[yellow]fell back to the TorchScript exporter:[/yellow] {esc(r.fallback_reason)}")
    if r.verification:
        _print_verification(r.verification, console)
    for n in r.notes:
        console.print(f"[yellow]note:[/yellow] {esc(n)}")


def _print_verification(v: dict[str, Any], console: Console) -> None:
    t = Table(title=f"verification (atol {v['atol']:g}, rtol {v['rtol']:g})")
    for col in ("artifact", "case", "output", "max abs", "max rel", "cosine", "top-1", ""):
        t.add_column(col, overflow="fold")
    for r in v["rows"]:
        t.add_row(
            r["artifact"], esc(r["case"]), esc(r["output"]), f"{r['max_abs']:.2e}", f"{r['max_rel']:.2e}", f"{r['cosine']:.6f}",
            "" if r["top1"] is None else f"{r['top1']:.2f}", "[green]ok[/green]" if r["passed"] else "[red]FAIL[/red]",
        )
    console.print(t)


@app.command()
def export(
    model: ModelArg,
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write the .onnx.")],
    input: InputOpt = None,
    dynamic: DynamicOpt = None,
    opset: OpsetOpt = None,
    output_name: OutputNameOpt = None,
    trust_pickle: TrustPickleOpt = False,
    model_class: ModelClassOpt = None,
    model_kwargs: ModelKwargsOpt = None,
    atol: AtolOpt = 1e-4,
    rtol: RtolOpt = 1e-3,
    sample: SampleOpt = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Export MODEL to one self-contained .onnx file, verified against PyTorch."""

    def action() -> ExportResult:
        from mobilegen.outputs import staged_files, temp_dir
        from mobilegen.pipeline import load_and_export, reference_for
        from mobilegen.verify import VerifyOptions, verify

        opts = model_options(input, dynamic, opset, output_name, trust_pickle, model_class, model_kwargs)
        # -o is checked now and again right before it is replaced (mobilegen.outputs)
        with staged_files([output], force=force, protect=(model,)) as (staged,), temp_dir("export") as tmp:
            loaded, onnx_model = load_and_export(model, opts, tmp / "model.onnx")
            ref, label = reference_for(loaded, onnx_model)
            report = verify(ref, {"onnx": onnx_model.path}, onnx_model, VerifyOptions(atol, rtol, sample), reference_label=label)
            staged.copy_from(onnx_model.path)
        return ExportResult(str(output), onnx_model.exporter, onnx_model.fallback_reason, onnx_model.opset, onnx_model.io.to_dict(), report.to_dict(), list(onnx_model.notes))

    run_command(action, json_out=json_out, debug=debug, human=_human_export, to_json=lambda r: r.__dict__)


@dataclass(frozen=True)
class ConvertResult:
    output: str
    required_operators: str
    optimization_style: str
    optimization_level: str
    ort_format_version: int
    converter_version: str
    opset: int
    verification: dict[str, Any]
    notes: list[str]


def _human_convert(r: ConvertResult, console: Console) -> None:
    console.print(
        f"[green]wrote[/green] {esc(r.output)} (ORT format v{r.ort_format_version}, optimization style {r.optimization_style}, "
        f"level {r.optimization_level}, onnxruntime {r.converter_version}) and {esc(r.required_operators)}"
    )
    _print_verification(r.verification, console)
    for n in r.notes:
        console.print(f"[yellow]note:[/yellow] {esc(n)}")


@app.command()
def convert(
    model: ModelArg,
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write the .ort (NAME.required_operators.config goes beside it).")],
    input: InputOpt = None,
    dynamic: DynamicOpt = None,
    opset: OpsetOpt = None,
    output_name: OutputNameOpt = None,
    style: Annotated[str, typer.Option("--optimization-style", help="runtime (default: what NNAPI/CoreML can take) or fixed (CPU/XNNPACK only: bakes in com.microsoft fused ops).")] = "runtime",
    trust_pickle: TrustPickleOpt = False,
    model_class: ModelClassOpt = None,
    model_kwargs: ModelKwargsOpt = None,
    atol: AtolOpt = 1e-4,
    rtol: RtolOpt = 1e-3,
    sample: SampleOpt = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Convert MODEL (.onnx or any PyTorch artifact) to ORT format (.ort), verified against the reference."""

    def action() -> ConvertResult:
        from mobilegen.convert import config_path_for, convert_to_ort
        from mobilegen.outputs import staged_files, temp_dir
        from mobilegen.pipeline import load_and_export, reference_for
        from mobilegen.verify import VerifyOptions, verify

        opts = model_options(input, dynamic, opset, output_name, trust_pickle, model_class, model_kwargs)
        config_out = config_path_for(output)
        with staged_files([output, config_out], force=force, protect=(model,)) as (staged_ort, staged_config), temp_dir("convert") as work:
            loaded, onnx_model = load_and_export(model, opts, work / "model.onnx")
            (work / "ort").mkdir()  # the final names, so the config's header names the .ort the user gets
            ort_model = convert_to_ort(onnx_model, work / "ort" / output.name, work / "ort" / config_out.name, style=style)
            from mobilegen.runtimes import check_loadable, default_release

            for channel in ("maven", "swiftpm"):  # the runtimes the generated apps pin by default
                check_loadable(default_release(channel), max_opset=ort_model.max_opset, ort_format_version=ort_model.ort_format_version, channel=channel)
            ref, label = reference_for(loaded, onnx_model)
            report = verify(ref, {"onnx": onnx_model.path, "ort": ort_model.path}, onnx_model, VerifyOptions(atol, rtol, sample), reference_label=label)
            staged_ort.copy_from(ort_model.path)
            staged_config.copy_from(ort_model.config_path)
        return ConvertResult(
            str(output), str(config_out), ort_model.optimization_style, ort_model.optimization_level,
            ort_model.ort_format_version, ort_model.converter_version, onnx_model.opset, report.to_dict(), list(onnx_model.notes),
        )

    run_command(action, json_out=json_out, debug=debug, human=_human_convert, to_json=lambda r: r.__dict__)
