"""The Android project on LiteRT (``--runtime litert``): the target's tree with its ORT module replaced by
``templates/backends/litert/android/`` — the Kotlin wrapper on CompiledModel (same public API: ``create``,
``newInstance``, ``run``, ``Inputs`` / ``Outputs``, ``Options``, ``activeProviders`` / ``skippedProviders``,
``close``), the module's Gradle script on the pinned LiteRT Maven artifacts, and the ``.tflite`` in its assets.

The ORT-only parts go: the sample app and the module's ORT sources, JVM tests and benchmark (they call
ONNX Runtime). The golden vectors stay in the instrumented tests' assets.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import numpy as np

from mobilegen.backends.litert import MAVEN_VERSION, VERSIONS, TensorInfo, inspect
from mobilegen.errors import InternalError, UsageError
from mobilegen.render.lang import kotlin as kt
from mobilegen.render.tree import render_tree, templates_root

if TYPE_CHECKING:
    from mobilegen.artifacts import ProjectSpec

# ONNX dtype of the wrapper's array → what the .tflite tensor may be, and the TensorBuffer call for it.
_WRITE = {
    ("float32", "float32"): "writeFloat(inputs.{p})",
    ("float32", "int8"): "writeInt8(quantize(inputs.{p}, {scale}f, {zp}))",
    ("int32", "int32"): "writeInt(inputs.{p})",
    ("int64", "int32"): "writeInt(narrow({name}, inputs.{p}))",
    ("bool", "bool"): "writeBoolean(inputs.{p})",
}
_READ = {
    ("float32", "float32"): "BUF.readFloat()",
    ("float32", "int8"): "dequantize(BUF.readInt8(), {scale}f, {zp})",
    ("int32", "int32"): "BUF.readInt()",
    ("int64", "int32"): "widen(BUF.readInt())",
    ("int64", "int64"): "widen(BUF.readInt())",
    ("bool", "bool"): "BUF.readBoolean()",
}
_GONE = ("app", "{module}/src", "{module}/consumer-rules.pro")


def _calls(table: Mapping[tuple[str, str], str], role: str, t: Mapping[str, Any], info: TensorInfo) -> str:
    form = table.get((t["dtype"], info.dtype))
    if form is None:
        raise UsageError(
            f"--runtime litert: {role} {t['name']!r} is {t['dtype']} in the model and {info.dtype} in the .tflite, which the generated Kotlin cannot carry",
            hint="LiteRT's Kotlin TensorBuffer reads and writes float32, int32 (int64 is narrowed), int8 and bool: cast the tensor in the model, or build with --runtime ort",
        )
    return form.format(p=t["prop"], name=t["name_const"], scale=repr(float(info.scale)), zp=info.zero_point)


def render(spec: ProjectSpec, context: Mapping[str, Any], dest: Path, written: list[PurePosixPath]) -> list[PurePosixPath]:
    if spec.runtime_model is None or not spec.runtime_model.is_file():
        raise InternalError("the LiteRT model file is missing", hint="this is a bug in the pipeline")
    model = inspect(spec.runtime_model)
    if len(model.inputs) != len(context["inputs"]) or len(model.outputs) != len(context["outputs"]):
        raise InternalError(f"{spec.runtime_model.name} has {len(model.inputs)} inputs / {len(model.outputs)} outputs, the ONNX model {len(context['inputs'])} / {len(context['outputs'])}")
    module = context["module"]
    asset = f"{context['asset_dir']}/model.tflite"
    inputs = [dict(t, lt_write=_calls(_WRITE, "input", t, i)) for t, i in zip(context["inputs"], model.inputs, strict=True)]
    outputs = [dict(t, lt_read=_calls(_READ, "output", t, o)) for t, o in zip(context["outputs"], model.outputs, strict=True)]
    accel_atol, accel_rtol = spec.accelerated_tolerances(fp16=True)  # LiteRT's GPU / NPU accelerators may compute in float16
    ctx = dict(context, inputs=inputs, outputs=outputs, model_asset=asset, tflite_file="model.tflite", litert_version=MAVEN_VERSION,
               litert_torch_version=VERSIONS["litert-torch"], quantized=model.int8_io, lt_accel_atol=repr(accel_atol), lt_accel_rtol=repr(accel_rtol))
    kept = []
    gone = [g.format(module=module) for g in _GONE]
    for rel in written:
        if any(rel.as_posix() == g or rel.as_posix().startswith(g + "/") for g in gone):
            continue
        kept.append(rel)
    for g in gone:
        p = dest / g
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    fragment = templates_root() / "backends" / "litert" / "android"
    staged = dest.parent / (dest.name + ".litert")
    try:
        new = render_tree(fragment, ctx, staged, filters=kt.FILTERS)
        for rel in new:
            target = dest.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(staged.joinpath(*rel.parts)), target)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    golden = PurePosixPath(module, "src/androidTest/assets", context["golden_asset"])
    copies = {PurePosixPath(module, "src/main/assets", asset): spec.runtime_model}
    for rel, src in copies.items():
        target = dest.joinpath(*rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
    target = dest.joinpath(*golden.parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(_golden_for(spec.runtime_model, spec.golden_mgv, model.int8_io))
    return sorted(set(kept) | set(new) | set(copies) | {golden})


def _golden_for(tflite: Path, golden_mgv: Path, int8: bool) -> bytes:
    """The instrumented tests' golden vectors: the package's (PyTorch's outputs) for a float model; for an int8
    one, its own outputs on the same inputs on this host (the int8 accuracy gate judged it against the float
    model; the device test then checks the phone's kernels, as ORT's quantized projects do)."""
    from mobilegen.backends.litert import host_runner
    from mobilegen.verify.golden import GoldenCase, decode_mgv, encode_mgv

    data = golden_mgv.read_bytes()
    if not int8:
        return data
    case = decode_mgv(data)
    got = host_runner(tflite)(dict(case.inputs))
    if len(got) != len(case.outputs):
        raise InternalError(f"{tflite.name} gave {len(got)} outputs on the golden inputs, the golden vectors hold {len(case.outputs)}")
    outputs = {name: np.asarray(a).astype(np.asarray(ref).dtype) for (name, ref), a in zip(case.outputs.items(), got, strict=True)}
    return encode_mgv(GoldenCase(dict(case.inputs), outputs))
