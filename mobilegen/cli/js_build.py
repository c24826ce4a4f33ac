"""Build commands of the JavaScript targets: web and react-native (after the mobile ones in --help)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from mobilegen.cli import app, run_command
from mobilegen.cli.build import StyleOpt, ZipOpt, _build, _human_build, _json_build, _out_opt, default_out
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
    SampleOnlyOpt,
    SampleOpt,
    TrustPickleOpt,
    model_options,
    quantize_options,
)
from mobilegen.cli.task_options import (
    ChannelsOpt,
    CropOpt,
    LabelsOpt,
    LayoutOpt,
    MeanOpt,
    ResizeFilterOpt,
    ResizeOpt,
    SampleRateOpt,
    ScaleOpt,
    SoftmaxOpt,
    StateOpt,
    StdOpt,
    TaskOpt,
    TopKOpt,
    task_spec,
)


def _js_command(target: str, summary: str) -> None:
    """Register ``mobilegen TARGET``: the same flags and build for each JavaScript target."""

    def command(
        model: ModelArg,
        output: Path | None = None,  # annotated below: the help names this target
        input: InputOpt = None,
        dynamic: DynamicOpt = None,
        const: ConstOpt = None,
        opset: OpsetOpt = None,
        output_name: OutputNameOpt = None,
        name: NameOpt = None,
        ort_version: OrtVersionOpt = None,
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
        style: StyleOpt = "runtime",
        trust_pickle: TrustPickleOpt = False,
        model_class: ModelClassOpt = None,
        model_kwargs: ModelKwargsOpt = None,
        zip_out: ZipOpt = False,
        force: ForceOpt = False,
        json_out: JsonOpt = False,
        debug: DebugOpt = False,
    ) -> None:

        def action() -> Any:
            from mobilegen.targets.jsshared import JsOptions

            i = JsOptions(class_name=name, ort_version=ort_version)
            mopts = model_options(input, dynamic, opset, output_name, trust_pickle, model_class, model_kwargs, consts=const)
            return _build(model, output or default_out(model, target), mopts, targets={target: i}, atol=atol, rtol=rtol, sample=sample, keep_dynamic=True,
                          style=style, force=force, zip_out=zip_out, no_fix=no_fix, no_compare_exporters=no_compare_exporters, approximate=approximate,
                          ranges=range_, sample_only=sample_only, allow_degenerate=allow_degenerate,
                          quantize=quantize_options(quantize, calibration, calibration_method, eval_, min_cosine, min_top1),
                          task=task_spec(task, labels, resize, crop, mean, std, scale, channels, layout, sample_rate, softmax, top_k,
                                         resize_filter=resize_filter, state=state))

        run_command(action, json_out=json_out, debug=debug, human=_human_build, to_json=_json_build)

    command.__doc__ = summary
    command.__annotations__["output"] = Annotated[Path | None, _out_opt(target)]
    app.command(target)(command)


_js_command(
    "web",
    "Build an npm package for the browser (TypeScript wrapper on onnxruntime-web, WebGPU then WASM, the .onnx, golden replay in Node and headless Chromium).",
)
_js_command(
    "react-native",
    "Build an npm package for React Native (the TypeScript wrapper on onnxruntime-react-native, the .ort as an asset, per-platform providers, Jest golden tests on onnxruntime-node).",
)
