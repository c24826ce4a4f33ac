"""The stage order, and nothing else: load → export → (fix dims) → convert → verify → check → render → package.

Everything is written into a staging folder beside the output and renamed into place at the end, so a
failure at any stage leaves no partial output.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from mobilegen import __version__, artifacts
from mobilegen.artifacts import (
    BuildResult,
    LoadedModel,
    OnnxModel,
    OrtModel,
    ProjectSpec,
    VerificationReport,
)
from mobilegen.errors import UsageError
from mobilegen.export import MAX_DEFAULT_OPSET, ExportOptions, export_onnx
from mobilegen.load import LoadOptions, load_model
from mobilegen.outputs import stage_zip, staged_output
from mobilegen.spec import apply_dynamic, parse_dynamic_spec, parse_input_spec
from mobilegen.verify import VerifyOptions, ort_runner, torch_reference, verify
from mobilegen.warnings import (
    NNAPI_DEPRECATED,
    Notice,
    build_notices,
    collect,
    coverage_notices,
    dims_fixed,
    dims_fixed_text,
    export_notices,
    texts,
)

MIN_OPSET = 7
MAX_EXAMPLE_BYTES = 1 << 30  # seeded inputs are built several times (reference + every artifact, two sizes)



@dataclass(frozen=True)
class ModelOptions:
    """How to load and export a model (shared by every command that takes MODEL)."""

    inputs: tuple[str, ...] = ()  # raw --input specs
    dynamic: tuple[str, ...] = ()  # raw --dynamic specs
    opset: int | None = None
    output_names: tuple[str, ...] = ()
    load: LoadOptions = LoadOptions()

    def export_options(self) -> ExportOptions:
        specs = [parse_input_spec(t) for t in self.inputs]
        names = [s.name for s in specs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise UsageError(f"--input {dupes[0]!r} is given more than once", hint="give each input once")
        sizes: dict[str, int] = {}
        if self.dynamic:
            specs, sizes = apply_dynamic(specs, [parse_dynamic_spec(d) for d in self.dynamic])
        if self.opset is not None and not MIN_OPSET <= self.opset <= MAX_DEFAULT_OPSET:
            raise UsageError(
                f"--opset {self.opset} is out of range",
                hint=f"use an opset between {MIN_OPSET} and {MAX_DEFAULT_OPSET}: the pinned mobile runtimes and the NNAPI/CoreML EPs take up to {MAX_DEFAULT_OPSET}",
            )
        total = 0
        for s in specs:
            shape = s.concrete_shape({**{d: 1 for d in s.dynamic_dims}, **sizes})
            # math.prod is exact: np.prod in int64 wraps for huge dims and would let them through
            total += math.prod(shape) * np.dtype(s.dtype if s.dtype != "bfloat16" else "float32").itemsize
        if total > MAX_EXAMPLE_BYTES:
            raise UsageError(
                f"the --input shapes make {total / 2**30:.1f} GiB of example data per run",
                hint=f"use a smaller example shape (mark large axes dynamic with a name); the limit is {MAX_EXAMPLE_BYTES // 2**30} GiB",
            )
        return ExportOptions(
            inputs=tuple(specs),
            example_sizes=tuple(sorted(sizes.items())),
            opset=self.opset,
            output_names=self.output_names,
            dynamic_given=bool(self.dynamic),
        )


def load_and_export(path: Path, opts: ModelOptions, out_path: Path) -> tuple[LoadedModel, OnnxModel]:
    export_opts = opts.export_options()  # parse flags before any heavy work
    loaded = load_model(path, opts.load)
    return loaded, export_onnx(loaded, export_opts, out_path)


def reference_for(loaded: LoadedModel, exported: OnnxModel) -> tuple[Any, str]:
    """PyTorch; for an ONNX input, the source model under onnxruntime with optimizations off — or, when
    this onnxruntime cannot load the source as written (a newer IR version), mobilegen's normalized copy."""
    if loaded.kind != "onnx":
        return torch_reference(loaded), "PyTorch"
    assert loaded.onnx_path is not None
    try:
        return ort_runner(loaded.onnx_path, basic_only=True), "the source ONNX model (no PyTorch model given)"
    except Exception:  # noqa: BLE001 — onnxruntime raises its own Fail/InvalidGraph types
        return ort_runner(exported.path, basic_only=True), "the normalized source ONNX model (no PyTorch model given)"


def fix_dynamic_dims(model: OnnxModel, out_path: Path) -> tuple[OnnxModel, str | None]:
    """Replace every named input dim by its example size (NNAPI takes no symbolic dims)."""
    import onnx
    from onnxruntime.tools.onnx_model_utils import fix_output_shapes, make_dim_param_fixed

    dims = sorted({d for t in model.io.inputs for d in t.dynamic_dims})
    if not dims:
        return model, None
    proto = onnx.load_model(str(model.path))
    for d in dims:
        make_dim_param_fixed(proto.graph, d, model.example_sizes.get(d, 1))
    fix_output_shapes(proto)
    tmp = out_path.with_name(out_path.name + ".tmp")
    onnx.save_model(proto, str(tmp))
    os.replace(tmp, out_path)
    from mobilegen.load import onnx_io_spec

    note = dims_fixed_text({d: model.example_sizes.get(d, 1) for d in dims})
    return replace(model, path=out_path, io=onnx_io_spec(proto), notes=model.notes + (note,)), note


def stamp_cache_key(model: OnnxModel) -> str:
    """Write COREML_CACHE_KEY into the model's metadata: the CoreML EP reuses its compiled model across
    launches when the key is unchanged (a content hash, so a new model gets a new key)."""
    import onnx

    proto = onnx.load_model(str(model.path))
    for p in list(proto.metadata_props):
        if p.key == "COREML_CACHE_KEY":
            proto.metadata_props.remove(p)
    key = hashlib.sha256(proto.SerializeToString(deterministic=True)).hexdigest()[:32]
    proto.metadata_props.add(key="COREML_CACHE_KEY", value=key)
    tmp = model.path.with_name(model.path.name + ".tmp")
    onnx.save_model(proto, str(tmp))
    os.replace(tmp, model.path)
    return key


# ----------------------------------------------------------------------------- full build


@dataclass(frozen=True)
class BuildOptions:
    model: Path
    out: Path
    model_opts: ModelOptions = ModelOptions()
    verify: VerifyOptions = VerifyOptions()
    android: Any = None  # mobilegen.android.AndroidOptions when building for Android
    ios: Any = None  # mobilegen.ios.IosOptions when building for iOS
    keep_dynamic: bool = False
    android_api: int | None = None  # target API level for the NNAPI analysis
    style: str = "runtime"
    force: bool = False
    zip: bool = False


def build(opts: BuildOptions) -> BuildResult:
    from mobilegen.convert import convert_to_ort

    android_opts, ios_opts = opts.android, opts.ios
    if android_opts is None and ios_opts is None:
        raise UsageError("nothing to build", hint="pass --android and/or --ios")
    runtimes: dict[str, Any] = {}
    if android_opts is not None:
        from mobilegen.android import android_runtime, validate_android_options

        validate_android_options(android_opts)
        runtimes["maven"] = android_runtime(android_opts)
    if ios_opts is not None:
        from mobilegen.ios import ios_runtime, validate_ios_options

        validate_ios_options(ios_opts)
        runtimes["swiftpm"] = ios_runtime(ios_opts)
    opts.model_opts.export_options()  # flag errors before any heavy work
    from mobilegen.package import source_date_epoch

    source_date_epoch()  # a malformed SOURCE_DATE_EPOCH fails now, not after the whole build
    out = Path(os.path.abspath(opts.out))
    zip_path = Path(str(out) + ".zip") if opts.zip else None
    notices: list[Notice] = []
    with staged_output(out, force=opts.force, zip_path=zip_path, protect=(opts.model,)) as root:
        (root / "model").mkdir()
        loaded, onnx_model = load_and_export(opts.model, opts.model_opts, root / artifacts.MODEL_ONNX)
        notices.extend(export_notices(loaded, onnx_model, output_names_given=bool(opts.model_opts.output_names)))
        if ios_opts is not None:
            from mobilegen.ios import check_ios_io

            check_ios_io(onnx_model.io)
        if android_opts is not None:
            from mobilegen.android import check_android_io

            check_android_io(onnx_model.io)
        if android_opts is not None and android_opts.nnapi:
            notices.append(NNAPI_DEPRECATED)
            if not onnx_model.io.is_static and not opts.keep_dynamic:
                onnx_model, note = fix_dynamic_dims(onnx_model, root / artifacts.MODEL_ONNX)
                if note:
                    notices.append(dims_fixed(note, ios_too=ios_opts is not None))
        stamp_cache_key(onnx_model)
        ort_model = convert_to_ort(onnx_model, root / artifacts.MODEL_ORT, root / artifacts.MODEL_OPS_CONFIG, style=opts.style)
        reference, ref_label = reference_for(loaded, onnx_model)
        verification = verify(
            reference,
            {"onnx": onnx_model.path, "ort": ort_model.path},
            onnx_model,
            opts.verify,
            root / "golden",
            reference_label=ref_label,
        )
        (root / artifacts.GOLDEN_TOLERANCES).write_text(
            json.dumps({"atol": opts.verify.atol, "rtol": opts.verify.rtol}, indent=2) + "\n", encoding="utf-8"
        )
        from mobilegen.runtimes import check_loadable

        for channel, release in runtimes.items():
            check_loadable(release, max_opset=ort_model.max_opset, ort_format_version=ort_model.ort_format_version, channel=channel)
        coverage = analyse(onnx_model, android_opts, ios_opts, opts.android_api)
        notices.extend(coverage_notices(coverage))
        warnings = collect(notices, onnx_model, coverage, source_kind=loaded.kind)
        model_name = opts.model.stem
        spec_common = dict(
            model_name=model_name,
            io=onnx_model.io,
            model_file=ort_model.path,
            golden_mgv=root / artifacts.GOLDEN_MGV,
            atol=opts.verify.atol,
            rtol=opts.verify.rtol,
            mobilegen_version=__version__,
            notes=tuple(texts(build_notices(warnings))),
        )
        targets: list[str] = []
        device_tolerances: dict[str, tuple[float, float]] = {}
        if android_opts is not None:
            from mobilegen.android import render_android

            spec = ProjectSpec(coverage=tuple(r for r in coverage if r.ep in ("nnapi", "xnnpack")), ort_version=runtimes["maven"].version, **spec_common)  # type: ignore[arg-type]
            render_android(spec, android_opts, root / artifacts.ANDROID_DIR)
            from mobilegen.android import accelerated_tolerances as android_tolerances

            device_tolerances["android_accelerated"] = android_tolerances(spec, android_opts)
            targets.append("android")
        if ios_opts is not None:
            from mobilegen.ios import render_ios

            spec = ProjectSpec(coverage=tuple(r for r in coverage if r.ep == "coreml"), ort_version=runtimes["swiftpm"].version, **spec_common)  # type: ignore[arg-type]
            render_ios(spec, ios_opts, root / artifacts.IOS_DIR)
            from mobilegen.ios import accelerated_tolerances as ios_tolerances

            device_tolerances["ios_coreml"] = ios_tolerances(spec, ios_opts)
            targets.append("ios")
        result = BuildResult(
            out_dir=root,
            model_name=model_name,
            loaded=loaded,
            onnx=onnx_model,
            verification=verification,
            ort=ort_model,
            coverage=tuple(coverage),
            targets=tuple(targets),
            options={
                **_options_record(opts, onnx_model, ort_model),
                # what the generated device tests assert for accelerated runs (fp16 paths are wider)
                "device_tolerances": {k: {"atol": a, "rtol": r} for k, (a, r) in device_tolerances.items()},
            },
            runtimes={c: r.version for c, r in runtimes.items()},
            warnings=warnings,
        )
        from mobilegen.package import finalize_package

        finalize_package(root, result)
        if zip_path is not None:
            stage_zip(root, zip_path)
    return relocate(result, root, out, zip_path)


def analyse(onnx_model: OnnxModel, android_opts: Any, ios_opts: Any, android_api: int | None) -> list[Any]:
    import onnx

    from mobilegen.coverage import EPTarget, analyze_all

    # Which providers each target enables, with which settings (None: the provider's default).
    targets = []
    if android_opts is not None and android_opts.nnapi:
        targets.append(EPTarget(ep="nnapi", android_api=android_api))
    if android_opts is not None and android_opts.xnnpack:
        targets.append(EPTarget(ep="xnnpack"))
    if ios_opts is not None and ios_opts.coreml:
        targets.append(EPTarget(ep="coreml", coreml_format=ios_opts.coreml_format, require_static_shapes=onnx_model.io.is_static))
    if not targets:
        return []
    return list(analyze_all(onnx.load_model(str(onnx_model.path)), targets))


def _options_record(opts: BuildOptions, onnx_model: OnnxModel, ort_model: OrtModel) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "inputs": list(opts.model_opts.inputs),
        "dynamic": list(opts.model_opts.dynamic),
        "opset": onnx_model.opset,
        "exporter": onnx_model.exporter,
        "optimization_style": ort_model.optimization_style,
        "optimization_level": ort_model.optimization_level,
        "atol": opts.verify.atol,
        "rtol": opts.verify.rtol,
        "keep_dynamic": opts.keep_dynamic,
    }
    if opts.android is not None:
        a = opts.android
        rec["android"] = {"nnapi": a.nnapi, "nnapi_flags": list(a.nnapi_flags), "xnnpack": a.xnnpack, "package": a.package, "name": a.class_name}
        if opts.android_api:
            rec["android"]["android_api"] = opts.android_api
    if opts.ios is not None:
        i = opts.ios
        rec["ios"] = {"coreml": i.coreml, "coreml_format": i.coreml_format, "compute_units": i.compute_units, "name": i.class_name}
    return rec


def relocate(result: BuildResult, old: Path, new: Path, zip_path: Path | None) -> BuildResult:
    """Point every path of the result at the final folder (after the staging rename)."""

    def mv(p: Path) -> Path:
        try:
            return new / p.relative_to(old)
        except ValueError:
            return p

    def mv_opt(p: Path | None) -> Path | None:
        return None if p is None else mv(p)

    onnx_model = replace(result.onnx, path=mv(result.onnx.path))
    ort_model = replace(result.ort, path=mv(result.ort.path), config_path=mv(result.ort.config_path))
    ver: VerificationReport = replace(result.verification, golden_npz=mv_opt(result.verification.golden_npz), golden_mgv=mv_opt(result.verification.golden_mgv))
    return replace(result, out_dir=new, onnx=onnx_model, ort=ort_model, verification=ver, zip_path=zip_path)
