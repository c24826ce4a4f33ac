"""Build commands: android, ios, package — the whole chain into one handoff folder."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mobilegen.cli import app, run_command
from mobilegen.cli.options import (
    AllowDegenerateOpt,
    ApproximateOpt,
    AtolOpt,
    CalibrationMethodOpt,
    CalibrationOpt,
    ConstOpt,
    DebugOpt,
    DynamicOpt,
    EvalOpt,
    ForceOpt,
    InputOpt,
    JsonOpt,
    MinCosineOpt,
    MinTop1Opt,
    ModelArg,
    ModelClassOpt,
    ModelKwargsOpt,
    NameOpt,
    NoCompareExportersOpt,
    NoFixOpt,
    OpsetOpt,
    OrtVersionOpt,
    OutputNameOpt,
    QuantizeOpt,
    RangeOpt,
    RtolOpt,
    RuntimeOpt,
    SampleOnlyOpt,
    SampleOpt,
    TrustPickleOpt,
    model_options,
    quantize_options,
    verify_options,
)
from mobilegen.cli.provider_flags import (
    refuse_without_target,
    target_options,
    target_params,
    with_provider_flags,
)
from mobilegen.cli.task_options import (
    ChannelsOpt,
    CropOpt,
    LabelsOpt,
    LayoutOpt,
    MeanOpt,
    NormalizeOpt,
    PoolingOpt,
    ResizeFilterOpt,
    ResizeOpt,
    SampleRateOpt,
    ScaleOpt,
    SoftmaxOpt,
    StateOpt,
    StdOpt,
    TaskOpt,
    TokenizerOpt,
    TopKOpt,
    task_spec,
)

if TYPE_CHECKING:
    from rich.console import Console


def _out_opt(command: str) -> Any:
    """``-o``; each command has its own default folder, so `android` then `ios` on one model keep both."""
    return typer.Option("--output", "-o", metavar="DIR", help=f"Output folder (default: ./MODEL-{command}, named after the model file).")


AndroidOutOpt = Annotated[Path | None, _out_opt("android")]
IosOutOpt = Annotated[Path | None, _out_opt("ios")]
PackageOutOpt = Annotated[Path | None, _out_opt("package")]
PackageOpt = Annotated[str | None, typer.Option("--package", metavar="NAME", help="Kotlin package of the generated code, e.g. com.example.vision.")]
MavenGroupOpt = Annotated[str | None, typer.Option("--maven-group", metavar="GROUP", help="groupId of the Android library's Maven publication (default: the Kotlin package).")]
MavenArtifactOpt = Annotated[str | None, typer.Option("--maven-artifact", metavar="ARTIFACT", help="artifactId of the Android library's Maven publication (default: the library module's name).")]
LibVersionOpt = Annotated[str | None, typer.Option("--lib-version", metavar="X.Y.Z", help="Version of the generated library: the AAR's Maven version and the Swift package's release tag (default 1.0.0).")]
KeepDynamicOpt = Annotated[bool, typer.Option("--keep-dynamic", help="With --nnapi, keep dynamic dims (NNAPI then takes no node with a symbolic dim).")]
ZipOpt = Annotated[bool, typer.Option("--zip", help="Also write OUT.zip (deterministic).")]
StyleOpt = Annotated[str, typer.Option("--optimization-style", metavar="STYLE", help="ORT-format optimization style: runtime (default) or fixed.")]


def default_out(model: Path, command: str) -> Path:
    """``./MODEL-android``, ``./MODEL-ios``, ``./MODEL-package``: one folder per command, so the README's
    quick start (``android`` then ``ios`` on one model) keeps both results."""
    return Path(f"{model.stem}-{command}")


def _android_flags() -> list[inspect.Parameter]:
    return target_params(("android",))


def _ios_flags() -> list[inspect.Parameter]:
    return target_params(("ios",))


def _package_flags() -> list[inspect.Parameter]:
    return target_params(("android", "ios"))


def _build(
    model: Path,
    out: Path,
    mopts: Any,
    *,
    targets: dict[str, Any],
    atol: float,
    rtol: float,
    sample: Path | None,
    keep_dynamic: bool,
    style: str,
    force: bool,
    zip_out: bool,
    no_fix: bool = False,
    no_compare_exporters: bool = False,
    approximate: list[str] | None = None,
    ranges: list[str] | None = None,
    sample_only: bool = False,
    allow_degenerate: bool = False,
    quantize: Any = None,
    task: Any = None,
    standalone: bool = False,
    runtime: str | None = None,
) -> Any:
    from mobilegen.backends import parse_runtimes
    from mobilegen.pipeline import BuildOptions, build

    if task is not None and task.is_text:  # --sample of a text task is its sample texts (in the task spec)
        sample = None
    return build(
        BuildOptions(
            model=model,
            out=out,
            targets=targets,
            model_opts=mopts,
            verify=verify_options(atol, rtol, sample, ranges, sample_only, allow_degenerate),
            keep_dynamic=keep_dynamic,
            fix=not no_fix,
            compare_exporters=not no_compare_exporters,
            approximate=tuple(approximate or ()),
            style=style,
            force=force,
            zip=zip_out,
            standalone=standalone,
            quantize=quantize,
            task=task,
            runtimes=parse_runtimes(runtime, list(targets)),
        )
    )


# The package documents list every notice; the CLI says the build-scope ones (mobilegen.notices).
_SEVERITY_STYLE = {"warning": "yellow", "severe": "bold red"}


def _human_build(r: Any, console: Console) -> None:
    from rich.markup import escape as esc
    from rich.table import Table

    console.print(f"[bold green]wrote[/bold green] {esc(str(r.out_dir))}/ ({', '.join(r.targets)})" + (f" and {esc(str(r.zip_path))}" if r.zip_path else ""))
    console.print(
        f"model: {r.loaded.kind} → ONNX opset {r.onnx.opset} ({r.onnx.exporter} exporter) → ORT format v{r.ort.ort_format_version} "
        f"({r.ort.optimization_style} style)"
    )
    from mobilegen.report.facts import checks_text

    v = r.verification
    worst = max((row.max_abs for row in v.rows), default=0.0)
    console.print(f"verification: {checks_text([row.status for row in v.rows])} (max abs error {worst:.2e}, atol {v.atol:g}, rtol {v.rtol:g})")
    console.print("runtimes: " + ", ".join(f"onnxruntime {ver} ({ch})" for ch, ver in r.runtimes.items()))
    for m in r.options.get("runtimes") or ():  # --runtime litert: the other runtimes' models
        q = " (int8)" if m.get("quantization") else ""
        console.print(f"{m['runtime']}: {esc(m['file'])}{q} for {', '.join(m['platforms'])}: {m['bytes']:,} bytes, converted in {m['convert_seconds']:.1f} s")
    if r.coverage:
        t = Table("EP", "nodes", "partitions", "verdict", "top refused ops", box=None, pad_edge=False)
        for rep in r.coverage:
            refused = ", ".join(f"{op}×{n}" for op, n, _ in rep.unsupported_summary()[:4])
            colour = {"yes": "green", "maybe": "yellow"}.get(rep.verdict, "red")
            estimate = " (estimate)" if rep.estimate else ""  # the device has the last word on this provider
            t.add_row(esc(rep.shown), f"{rep.supported_nodes}/{rep.total_nodes}", str(len(rep.partitions)), f"[{colour}]{rep.verdict}[/{colour}]{estimate}", esc(refused))
        console.print(t)
        for rep in r.coverage:
            if rep.estimate:
                console.print(f"[dim]note: {esc(rep.estimate)}[/dim]")
    _human_fixes(r, console)
    from mobilegen.report.quantization import summary_lines

    for line in summary_lines(r.shipped):
        console.print(f"quantization: {esc(line)}")
    from mobilegen.notices import build_notices

    for w in build_notices(r.warnings):
        style = _SEVERITY_STYLE[w.severity]
        console.print(f"[{style}]warning:[/{style}] {esc(w.text)}")
    console.print(f"report: {esc(str(r.out_dir))}/report/report.html")


def _human_fixes(r: Any, console: Console) -> None:
    """The graph passes each provider's model got, with its coverage before them; the per-target models."""
    from rich.markup import escape as esc

    from mobilegen.report.facts import fixes_text

    for rep in r.coverage:
        text = fixes_text(r, rep)
        if text:
            console.print(f"graph passes for {esc(rep.shown)}: {esc(text)}")
    if r.per_target:
        console.print("models: " + ", ".join(f"{esc(m.ort_file)} ({esc(' and '.join(m.targets))})" for m in r.shipped))


def _json_build(r: Any) -> dict[str, Any]:
    from mobilegen.notices import build_notices, texts
    from mobilegen.report.facts import fix_fields

    return {
        "output": str(r.out_dir),
        "zip": str(r.zip_path) if r.zip_path else None,
        "targets": list(r.targets),
        "model": {"source": str(r.loaded.source), "kind": r.loaded.kind, "sha256": r.loaded.sha256},
        "onnx": {"path": str(r.onnx.path), "opset": r.onnx.opset, "exporter": r.onnx.exporter, "fallback_reason": r.onnx.fallback_reason},
        "ort": {
            "path": str(r.ort.path),
            "required_operators": str(r.ort.config_path),
            "format_version": r.ort.ort_format_version,
            "optimization_style": r.ort.optimization_style,
            "optimization_level": r.ort.optimization_level,
        },
        "io": r.onnx.io.to_dict(),
        "verification": r.verification.to_dict(),
        "runtimes": r.runtimes,
        "task": r.options.get("task"),  # --task: the spec and its files (as the manifest's options.task)
        "exporter_advice": r.options.get("exporter_advice"),  # the other exporter's placement (mobilegen.export.advice)
        "models": [
            {
                "targets": list(m.targets),
                "onnx": str(m.onnx.path),
                "ort": str(m.converted().path),
                "required_operators": str(m.converted().config_path),
                "fixes": [f.to_dict() for f in m.fixes],
                "quantization": None if m.quantization is None else m.quantization.to_dict(),
            }
            for m in r.shipped
        ],
        "coverage": [
            {k: v for k, v in rep.to_dict().items() if k != "nodes"} | {"supported_percent": round(rep.percent, 1)} | fix_fields(r, rep)
            for rep in r.coverage
        ],
        "warnings": texts(build_notices(r.warnings)),
    } | ({"runtime_models": r.options["runtimes"]} if r.options.get("runtimes") else {})


# After --output-name: the target flags of the providers Android apps run, from the registry
# (mobilegen.cli.provider_flags).
@app.command()
@with_provider_flags(_android_flags, after="output_name")
def android(
    model: ModelArg,
    output: AndroidOutOpt = None,
    input: InputOpt = None,
    dynamic: DynamicOpt = None,
    const: ConstOpt = None,
    opset: OpsetOpt = None,
    output_name: OutputNameOpt = None,
    name: NameOpt = None,
    package: PackageOpt = None,
    maven_group: MavenGroupOpt = None,
    maven_artifact: MavenArtifactOpt = None,
    lib_version: LibVersionOpt = None,
    ort_version: OrtVersionOpt = None,
    runtime: RuntimeOpt = None,
    keep_dynamic: KeepDynamicOpt = False,
    no_fix: NoFixOpt = False,
    no_compare_exporters: NoCompareExportersOpt = False,
    approximate: ApproximateOpt = None,
    quantize: QuantizeOpt = None,
    calibration: CalibrationOpt = None,
    calibration_method: CalibrationMethodOpt = "minmax",
    eval_: EvalOpt = None,
    min_cosine: MinCosineOpt = 0.99,
    min_top1: MinTop1Opt = 0.98,
    atol: AtolOpt = 1e-4,
    rtol: RtolOpt = 1e-3,
    sample: SampleOpt = None,
    sample_only: SampleOnlyOpt = False,
    range_: RangeOpt = None,
    allow_degenerate: AllowDegenerateOpt = False,
    task: TaskOpt = None,
    labels: LabelsOpt = None,
    resize: ResizeOpt = None,
    resize_filter: ResizeFilterOpt = None,
    crop: CropOpt = None,
    mean: MeanOpt = None,
    std: StdOpt = None,
    scale: ScaleOpt = None,
    channels: ChannelsOpt = None,
    layout: LayoutOpt = None,
    sample_rate: SampleRateOpt = None,
    state: StateOpt = None,
    softmax: SoftmaxOpt = False,
    top_k: TopKOpt = None,
    tokenizer: TokenizerOpt = None,
    pooling: PoolingOpt = None,
    normalize: NormalizeOpt = None,
    style: StyleOpt = "runtime",
    trust_pickle: TrustPickleOpt = False,
    model_class: ModelClassOpt = None,
    model_kwargs: ModelKwargsOpt = None,
    zip_out: ZipOpt = False,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
    debug: DebugOpt = False,
    **flags: Any,
) -> None:
    """Build a Gradle project (Kotlin wrapper, model in assets, EPs with CPU fallback, golden-vector tests)."""

    def action() -> Any:
        from mobilegen.targets.android.project import AndroidOptions

        a = AndroidOptions(package=package, class_name=name, ort_version=ort_version, maven_group=maven_group, maven_artifact=maven_artifact,
                           lib_version=lib_version, **target_options("android", flags, AndroidOptions))
        mopts = model_options(input, dynamic, opset, output_name, trust_pickle, model_class, model_kwargs, consts=const)
        return _build(model, output or default_out(model, "android"), mopts, targets={"android": a}, atol=atol, rtol=rtol, sample=sample, keep_dynamic=keep_dynamic,
                      style=style, force=force, zip_out=zip_out, no_fix=no_fix, no_compare_exporters=no_compare_exporters, approximate=approximate,
                      ranges=range_, sample_only=sample_only, allow_degenerate=allow_degenerate,
                      quantize=quantize_options(quantize, calibration, calibration_method, eval_, min_cosine, min_top1),
                      task=task_spec(task, labels, resize, crop, mean, std, scale, channels, layout, sample_rate, softmax, top_k,
                                     resize_filter=resize_filter, state=state, tokenizer=tokenizer, pooling=pooling, normalize=normalize,
                                     sample=sample, model=model), standalone=True, runtime=runtime)

    run_command(action, json_out=json_out, debug=debug, human=_human_build, to_json=_json_build)


# After --output-name: the target flags of the providers iOS apps run, from the registry.
@app.command()
@with_provider_flags(_ios_flags, after="output_name")
def ios(
    model: ModelArg,
    output: IosOutOpt = None,
    input: InputOpt = None,
    dynamic: DynamicOpt = None,
    const: ConstOpt = None,
    opset: OpsetOpt = None,
    output_name: OutputNameOpt = None,
    name: NameOpt = None,
    ort_version: OrtVersionOpt = None,
    runtime: RuntimeOpt = None,
    lib_version: LibVersionOpt = None,
    no_fix: NoFixOpt = False,
    no_compare_exporters: NoCompareExportersOpt = False,
    approximate: ApproximateOpt = None,
    quantize: QuantizeOpt = None,
    calibration: CalibrationOpt = None,
    calibration_method: CalibrationMethodOpt = "minmax",
    eval_: EvalOpt = None,
    min_cosine: MinCosineOpt = 0.99,
    min_top1: MinTop1Opt = 0.98,
    atol: AtolOpt = 1e-4,
    rtol: RtolOpt = 1e-3,
    sample: SampleOpt = None,
    sample_only: SampleOnlyOpt = False,
    range_: RangeOpt = None,
    allow_degenerate: AllowDegenerateOpt = False,
    task: TaskOpt = None,
    labels: LabelsOpt = None,
    resize: ResizeOpt = None,
    resize_filter: ResizeFilterOpt = None,
    crop: CropOpt = None,
    mean: MeanOpt = None,
    std: StdOpt = None,
    scale: ScaleOpt = None,
    channels: ChannelsOpt = None,
    layout: LayoutOpt = None,
    sample_rate: SampleRateOpt = None,
    state: StateOpt = None,
    softmax: SoftmaxOpt = False,
    top_k: TopKOpt = None,
    tokenizer: TokenizerOpt = None,
    pooling: PoolingOpt = None,
    normalize: NormalizeOpt = None,
    style: StyleOpt = "runtime",
    trust_pickle: TrustPickleOpt = False,
    model_class: ModelClassOpt = None,
    model_kwargs: ModelKwargsOpt = None,
    zip_out: ZipOpt = False,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
    debug: DebugOpt = False,
    **flags: Any,
) -> None:
    """Build a Swift Package (typed wrapper, model as a resource, CoreML EP with CPU fallback, golden-vector XCTests)."""

    def action() -> Any:
        from mobilegen.targets.ios.project import IosOptions

        i = IosOptions(class_name=name, ort_version=ort_version, lib_version=lib_version, **target_options("ios", flags, IosOptions))
        mopts = model_options(input, dynamic, opset, output_name, trust_pickle, model_class, model_kwargs, consts=const)
        return _build(model, output or default_out(model, "ios"), mopts, targets={"ios": i}, atol=atol, rtol=rtol, sample=sample, keep_dynamic=True,
                      style=style, force=force, zip_out=zip_out, no_fix=no_fix, no_compare_exporters=no_compare_exporters, approximate=approximate,
                      ranges=range_, sample_only=sample_only, allow_degenerate=allow_degenerate,
                      quantize=quantize_options(quantize, calibration, calibration_method, eval_, min_cosine, min_top1),
                      task=task_spec(task, labels, resize, crop, mean, std, scale, channels, layout, sample_rate, softmax, top_k,
                                     resize_filter=resize_filter, state=state, tokenizer=tokenizer, pooling=pooling, normalize=normalize,
                                     sample=sample, model=model), standalone=True, runtime=runtime)

    run_command(action, json_out=json_out, debug=debug, human=_human_build, to_json=_json_build)


# After --output-name: the target flags of every provider, from the registry.
@app.command()
@with_provider_flags(_package_flags, after="output_name")
def package(
    model: ModelArg,
    android_: Annotated[bool, typer.Option("--android", help="Include the Android project.")] = False,
    ios_: Annotated[bool, typer.Option("--ios", help="Include the iOS Swift Package.")] = False,
    web_: Annotated[bool, typer.Option("--web", help="Include the Web npm package (onnxruntime-web).")] = False,
    react_native_: Annotated[bool, typer.Option("--react-native", help="Include the React Native npm package (onnxruntime-react-native).")] = False,
    output: PackageOutOpt = None,
    input: InputOpt = None,
    dynamic: DynamicOpt = None,
    const: ConstOpt = None,
    opset: OpsetOpt = None,
    output_name: OutputNameOpt = None,
    package_name: PackageOpt = None,
    maven_group: MavenGroupOpt = None,
    maven_artifact: MavenArtifactOpt = None,
    lib_version: LibVersionOpt = None,
    name: NameOpt = None,
    android_ort_version: Annotated[str | None, typer.Option("--android-ort-version", metavar="VERSION", help="Pin another published onnxruntime-android version.")] = None,
    ios_ort_version: Annotated[str | None, typer.Option("--ios-ort-version", metavar="VERSION", help="Pin another published ORT Swift package version.")] = None,
    runtime: RuntimeOpt = None,
    keep_dynamic: KeepDynamicOpt = False,
    no_fix: NoFixOpt = False,
    no_compare_exporters: NoCompareExportersOpt = False,
    approximate: ApproximateOpt = None,
    quantize: QuantizeOpt = None,
    calibration: CalibrationOpt = None,
    calibration_method: CalibrationMethodOpt = "minmax",
    eval_: EvalOpt = None,
    min_cosine: MinCosineOpt = 0.99,
    min_top1: MinTop1Opt = 0.98,
    atol: AtolOpt = 1e-4,
    rtol: RtolOpt = 1e-3,
    sample: SampleOpt = None,
    sample_only: SampleOnlyOpt = False,
    range_: RangeOpt = None,
    allow_degenerate: AllowDegenerateOpt = False,
    task: TaskOpt = None,
    labels: LabelsOpt = None,
    resize: ResizeOpt = None,
    resize_filter: ResizeFilterOpt = None,
    crop: CropOpt = None,
    mean: MeanOpt = None,
    std: StdOpt = None,
    scale: ScaleOpt = None,
    channels: ChannelsOpt = None,
    layout: LayoutOpt = None,
    sample_rate: SampleRateOpt = None,
    state: StateOpt = None,
    softmax: SoftmaxOpt = False,
    top_k: TopKOpt = None,
    tokenizer: TokenizerOpt = None,
    pooling: PoolingOpt = None,
    normalize: NormalizeOpt = None,
    style: StyleOpt = "runtime",
    trust_pickle: TrustPickleOpt = False,
    model_class: ModelClassOpt = None,
    model_kwargs: ModelKwargsOpt = None,
    zip_out: ZipOpt = False,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
    debug: DebugOpt = False,
    **flags: Any,
) -> None:
    """Build one handoff package for Android, iOS, Web and/or React Native: projects, model, golden vectors, report, manifest."""

    def action() -> Any:
        from mobilegen.errors import UsageError

        if not (android_ or ios_ or web_ or react_native_):
            raise UsageError("package needs a target", hint="pass --android, --ios, --web and/or --react-native")
        refuse_without_target([t for t, on in (("android", android_), ("ios", ios_)) if on], flags)
        if (maven_group is not None or maven_artifact is not None) and not android_:
            raise UsageError("--maven-group / --maven-artifact name the Android library's publication", hint="add --android, or drop them")
        chosen: dict[str, Any] = {}
        if android_:
            from mobilegen.targets.android.project import AndroidOptions

            chosen["android"] = AndroidOptions(package=package_name, class_name=name, ort_version=android_ort_version, maven_group=maven_group,
                                               maven_artifact=maven_artifact, lib_version=lib_version, **target_options("android", flags, AndroidOptions))
        if ios_:
            from mobilegen.targets.ios.project import IosOptions

            chosen["ios"] = IosOptions(class_name=name, ort_version=ios_ort_version, lib_version=lib_version, **target_options("ios", flags, IosOptions))
        for js_name, js_on in (("web", web_), ("react-native", react_native_)):
            if js_on:
                from mobilegen.targets.jsshared import JsOptions

                chosen[js_name] = JsOptions(class_name=name)
        mopts = model_options(input, dynamic, opset, output_name, trust_pickle, model_class, model_kwargs, consts=const)
        return _build(model, output or default_out(model, "package"), mopts, targets=chosen, atol=atol, rtol=rtol, sample=sample, keep_dynamic=keep_dynamic,
                      style=style, force=force, zip_out=zip_out, no_fix=no_fix, no_compare_exporters=no_compare_exporters, approximate=approximate,
                      ranges=range_, sample_only=sample_only, allow_degenerate=allow_degenerate,
                      quantize=quantize_options(quantize, calibration, calibration_method, eval_, min_cosine, min_top1),
                      task=task_spec(task, labels, resize, crop, mean, std, scale, channels, layout, sample_rate, softmax, top_k,
                                     resize_filter=resize_filter, state=state, tokenizer=tokenizer, pooling=pooling, normalize=normalize,
                                     sample=sample, model=model), runtime=runtime)

    run_command(action, json_out=json_out, debug=debug, human=_human_build, to_json=_json_build)
