"""The manifest's ``options`` record: what the build was asked and what it became."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mobilegen.artifacts import JSONValue, ShippedModel
from mobilegen.quantize.stage import options_record as options_record_quantize

if TYPE_CHECKING:
    from mobilegen.options import BuildOptions
    from mobilegen.targets.chosen import Chosen


def options_record(
    opts: BuildOptions, chosen: Sequence[Chosen], models: Sequence[ShippedModel], tolerances: dict[str, tuple[float, float]]
) -> dict[str, JSONValue]:
    """The manifest's ``options``: what was asked and what it became."""
    onnx_model, ort_model = models[0].onnx, models[0].converted()
    rec: dict[str, JSONValue] = {
        "inputs": list(opts.model_opts.inputs),
        "dynamic": list(opts.model_opts.dynamic),
        "const": {c.name: c.value for c in opts.model_opts.consts},  # inputs baked into the model (--const)
        "opset": onnx_model.opset,
        "exporter": onnx_model.exporter,
        "optimization_style": ort_model.optimization_style,
        "optimization_level": ort_model.optimization_level,
        "atol": opts.verify.atol,
        "rtol": opts.verify.rtol,
        "ranges": opts.verify.record()["ranges"],
        "sample_only": opts.verify.sample_only,
        "allow_degenerate": opts.verify.allow_degenerate,
        "keep_dynamic": opts.keep_dynamic,
        "fix": opts.fix,
        "approximate": list(opts.approximate),
        "quantize": options_record_quantize(opts.quantize),
    }
    for c in chosen:
        rec[c.target.name] = dict(c.target.options_record(c.opts))
    # what the generated device tests assert for accelerated runs (fp16 paths are wider)
    rec["device_tolerances"] = {k: {"atol": a, "rtol": r} for k, (a, r) in tolerances.items()}
    return rec

