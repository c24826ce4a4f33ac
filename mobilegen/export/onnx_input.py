"""An ONNX model given as input: passed through (checked, weights inlined, outputs renamed) rather than
exported, or, for ``mobilegen check``, analysed as given when it is too large for one file."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from mobilegen.artifacts import LoadedModel, OnnxModel
from mobilegen.errors import LoadError, UsageError, first_line
from mobilegen.export.const_inputs import bind_consts, bind_onnx_inputs
from mobilegen.export.exporter import (
    ExportOptions,
    default_dim_size,
    finish_model,
    match_model_input,
    opset_of,
    refuse_large_examples,
    rename_outputs,
    save_onnx,
)
from mobilegen.export.limits import refuse_too_large
from mobilegen.infra.onnx_size import model_bytes
from mobilegen.spec import IOSpec, TensorSpec, onnx_io_spec


def read_onnx_source(loaded: LoadedModel, options: ExportOptions) -> Any:
    """The source ONNX model without its external data (checked at load), flags that need PyTorch refused,
    inputs bound by ``--const`` made initializers."""
    import onnx


    assert loaded.onnx_path is not None
    if options.opset is not None or options.dynamic_given:
        raise UsageError(
            f"{'--opset' if options.opset is not None else '--dynamic'} applies to PyTorch models; {loaded.source.name} is ONNX already",
            hint="re-export it from PyTorch with that flag, or drop the flag (an ONNX model keeps its opset and dims)",
        )
    consts = bind_consts(loaded, options.consts).consts
    return bind_onnx_inputs(onnx.load_model(str(loaded.onnx_path), load_external_data=False), consts)


def load_weights(model: Any, loaded: LoadedModel) -> None:
    """Read the external data into the model, from the model's folder (every file was checked at load)."""
    from onnx.external_data_helper import load_external_data_for_model

    assert loaded.onnx_path is not None
    try:
        load_external_data_for_model(model, os.path.dirname(os.path.abspath(loaded.onnx_path)))
    except (OSError, ValueError) as err:  # changed since it was checked, or onnx's own checks refuse it
        raise LoadError(f"the external data of {loaded.source.name} cannot be read: {first_line(err)}", hint="put the data files next to the model, as it was saved") from err


def passthrough(loaded: LoadedModel, options: ExportOptions, out_path: Path, model: Any, *, write: bool = True, examples: bool = True) -> OnnxModel:
    """``examples``: the model will be run on seeded example inputs (every command but ``check``)."""
    refuse_too_large(model_bytes(model), f"{loaded.source.name} is", "; `mobilegen check` still analyses it as it is")
    load_weights(model, loaded)
    notes = constant_initializers(model)
    rename_outputs(model, options.output_names)
    specs, sizes = check_onnx_inputs(onnx_io_spec(model), options, loaded.source, examples=examples)
    model = finish_model(model, out_path, source=loaded.source, write=False)
    if write:  # the source proto is gone now (see finish_model)
        save_onnx(model, out_path)
    return OnnxModel(
        path=out_path,
        io=replace(onnx_io_spec(model), inputs=tuple(specs)),
        opset=opset_of(model),
        exporter="passthrough",
        example_sizes=sizes,
        notes=notes,
        proto=model,
    )


def constant_initializers(model: Any) -> tuple[str, ...]:
    """Old (IR < 4) models list every initializer as a graph input too, which makes weights overridable
    inputs: the ORT-format session then demands them at run time. Mobile apps never feed weights, so
    they become plain constants (IR version raised to 4, where that is valid)."""
    inits = {i.name for i in model.graph.initializer}
    overridable = [vi for vi in model.graph.input if vi.name in inits]
    if not overridable:
        return ()
    for vi in overridable:
        model.graph.input.remove(vi)
    model.ir_version = max(model.ir_version, 4)
    return (f"{len(overridable)} initializers were also graph inputs (IR < 4 style); they are constants now",)


def check_onnx_inputs(io_spec: IOSpec, options: ExportOptions, source: Path, *, examples: bool = True) -> tuple[list[TensorSpec], dict[str, int]]:
    sizes = dict(options.example_sizes)
    graph = {t.name: t for t in io_spec.inputs}
    user = {t.name: t for t in options.inputs}
    unknown = [n for n in user if n not in graph]
    if unknown:
        raise UsageError(f"--input names {', '.join(map(repr, unknown))}, which the model does not take", hint=f"the model's inputs are: {', '.join(graph)}")
    specs = []
    for name, g in graph.items():
        u = user.get(name)
        if u is not None:
            match_model_input(u, g, sizes)
        for axis, d in enumerate(g.shape):
            if isinstance(d, str) and d not in sizes:
                sizes[d] = default_dim_size(axis)
        specs.append(g)
    if examples:  # `check` analyses the graph and builds no example inputs
        refuse_large_examples(specs, sizes, source, options.inputs)
    return specs, sizes
