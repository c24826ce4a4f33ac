"""The commands' signatures, made from one catalogue of options.

Every option two commands share is declared once (``mobilegen.cli.options``, ``mobilegen.cli.task_options``)
and is a parameter of :data:`CATALOGUE`, by name. A command lists what it takes, in ``--help`` order, with
:func:`command`: catalogue names (or the groups below), parameters of its own, and functions giving
parameters when the command is built (the provider registry's flags: ``mobilegen.cli.provider_flags``).
Its function then takes one :class:`Flags`, the values by parameter name, which makes the stage options
(model, verification, quantization, task) from them.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from mobilegen.cli import options as o
from mobilegen.cli import task_options as t

if TYPE_CHECKING:
    from mobilegen.options import ModelOptions
    from mobilegen.quantize import QuantizeOptions
    from mobilegen.tasks.spec import TaskSpec
    from mobilegen.verify.gate import VerifyOptions

# A command's part: a catalogue name, a parameter of its own, or parameters made when it is built.
Part = str | inspect.Parameter | Callable[[], Sequence[inspect.Parameter]]

_KW = inspect.Parameter.KEYWORD_ONLY  # Typer calls a command with keywords: any order is a valid signature


def param(name: str, annotation: Any, default: Any = inspect.Parameter.empty) -> inspect.Parameter:
    """A command parameter: ``name`` (the keyword the command receives), a Typer ``Annotated`` type, its default."""
    return inspect.Parameter(name, _KW, default=default, annotation=annotation)


CATALOGUE: dict[str, inspect.Parameter] = {
    p.name: p
    for p in (
        param("model", o.ModelArg),
        param("input", o.InputOpt, None),
        param("dynamic", o.DynamicOpt, None),
        param("const", o.ConstOpt, None),
        param("opset", o.OpsetOpt, None),
        param("output_name", o.OutputNameOpt, None),
        param("trust_pickle", o.TrustPickleOpt, False),
        param("model_class", o.ModelClassOpt, None),
        param("model_kwargs", o.ModelKwargsOpt, None),
        param("atol", o.AtolOpt, 1e-4),
        param("rtol", o.RtolOpt, 1e-3),
        param("sample", o.SampleOpt, None),
        param("sample_only", o.SampleOnlyOpt, False),
        param("range_", o.RangeOpt, None),
        param("allow_degenerate", o.AllowDegenerateOpt, False),
        param("quantize", o.QuantizeOpt, None),
        param("calibration", o.CalibrationOpt, None),
        param("calibration_method", o.CalibrationMethodOpt, "minmax"),
        param("eval_", o.EvalOpt, None),
        param("min_cosine", o.MinCosineOpt, 0.99),
        param("min_top1", o.MinTop1Opt, 0.98),
        param("name", o.NameOpt, None),
        param("package", o.PackageOpt, None),
        param("maven_group", o.MavenGroupOpt, None),
        param("maven_artifact", o.MavenArtifactOpt, None),
        param("lib_version", o.LibVersionOpt, None),
        param("ort_version", o.OrtVersionOpt, None),
        param("android_ort_version", o.AndroidOrtVersionOpt, None),
        param("ios_ort_version", o.IosOrtVersionOpt, None),
        param("runtime", o.RuntimeOpt, None),
        param("keep_dynamic", o.KeepDynamicOpt, False),
        param("no_fix", o.NoFixOpt, False),
        param("no_compare_exporters", o.NoCompareExportersOpt, False),
        param("approximate", o.ApproximateOpt, None),
        param("task", t.TaskOpt, None),
        param("labels", t.LabelsOpt, None),
        param("resize", t.ResizeOpt, None),
        param("resize_filter", t.ResizeFilterOpt, None),
        param("crop", t.CropOpt, None),
        param("mean", t.MeanOpt, None),
        param("std", t.StdOpt, None),
        param("scale", t.ScaleOpt, None),
        param("channels", t.ChannelsOpt, None),
        param("layout", t.LayoutOpt, None),
        param("sample_rate", t.SampleRateOpt, None),
        param("state", t.StateOpt, None),
        param("softmax", t.SoftmaxOpt, False),
        param("top_k", t.TopKOpt, None),
        param("tokenizer", t.TokenizerOpt, None),
        param("pooling", t.PoolingOpt, None),
        param("normalize", t.NormalizeOpt, None),
        param("style", o.StyleOpt, "runtime"),
        param("zip_out", o.ZipOpt, False),
        param("force", o.ForceOpt, False),
        param("json_out", o.JsonOpt, False),
        param("debug", o.DebugOpt, False),
    )
}

# Groups, in the order the commands list them.
SHAPE = ("input", "dynamic", "const", "opset")  # how the model is traced and exported
LOAD = ("trust_pickle", "model_class", "model_kwargs")  # how a PyTorch file is loaded
VERIFY = ("atol", "rtol", "sample", "sample_only", "range_", "allow_degenerate")
QUANTIZE = ("quantize", "calibration", "calibration_method", "eval_", "min_cosine", "min_top1")
TASK = ("task", "labels", "resize", "resize_filter", "crop", "mean", "std", "scale", "channels", "layout", "sample_rate", "state", "softmax", "top_k")
TEXT_TASK = ("tokenizer", "pooling", "normalize")  # the text tasks' (targets whose wrappers tokenize)
RUN = ("force", "json_out", "debug")
PASSES = ("no_fix", "no_compare_exporters", "approximate")  # the build's graph passes and exporter comparison


class Flags(dict[str, Any]):
    """The values a command received, by parameter name, and the stage options they make."""

    def model_options(self) -> ModelOptions:
        return o.model_options(
            self["input"], self["dynamic"], self["opset"], self.get("output_name"), self["trust_pickle"], self["model_class"],
            self["model_kwargs"], consts=self["const"],
        )  # fmt: skip

    def verify_options(self, *, with_sample: bool = True) -> VerifyOptions:
        """``with_sample``: False leaves ``--sample`` out (a text task's are its sample texts)."""
        sample = self["sample"] if with_sample else None
        return o.verify_options(self["atol"], self["rtol"], sample, self["range_"], self["sample_only"], self["allow_degenerate"])

    def quantize_options(self) -> QuantizeOptions:
        return o.quantize_options(self["quantize"], self["calibration"], self["calibration_method"], self["eval_"], self["min_cosine"], self["min_top1"])

    def task_spec(self) -> TaskSpec | None:
        """The ``--task`` spec; with the text tasks' flags (a command that takes them), the tokenizer is
        looked for beside the model and ``--sample`` gives the sample texts."""
        text: dict[str, Any] = {}
        if "tokenizer" in self:
            text = {k: self[k] for k in TEXT_TASK} | {"sample": self["sample"], "model": self["model"]}
        return t.task_spec(
            self["task"], self["labels"], self["resize"], self["crop"], self["mean"], self["std"], self["scale"], self["channels"],
            self["layout"], self["sample_rate"], self["softmax"], self["top_k"], resize_filter=self["resize_filter"], state=self["state"], **text,
        )  # fmt: skip


def parameters(parts: Iterable[Part]) -> list[inspect.Parameter]:
    """The parameters ``parts`` name, in order; a name given twice is kept the first time."""
    out: dict[str, inspect.Parameter] = {}
    for part in parts:
        made = [CATALOGUE[part]] if isinstance(part, str) else [part] if isinstance(part, inspect.Parameter) else part()
        for p in made:
            out.setdefault(p.name, p.replace(kind=_KW))
    return list(out.values())


class Command:
    """A command function taking :class:`Flags`, whose signature, as Typer reads it, is its parts' parameters
    (made when the command is built, so ``mobilegen --help`` imports no registry)."""

    def __init__(self, func: Callable[[Flags], None], parts: Callable[[], Iterable[Part]]) -> None:
        functools.update_wrapper(self, func)
        self.__annotations__ = {}  # Typer reads the signature below, not the function's own annotation
        self._func = func
        self._parts = parts

    @property
    def __signature__(self) -> inspect.Signature:  # noqa: PLW3201 — what inspect.signature reads first
        # made on each read (each build of the command): a provider or target registered since is in it
        return inspect.Signature(parameters(self._parts()))

    def __call__(self, **values: Any) -> None:
        self._func(Flags(values))


def command(*parts: Part) -> Callable[[Callable[[Flags], None]], Command]:
    """Give a command function (taking :class:`Flags`) the options ``parts`` name, in this order."""

    def decorate(func: Callable[[Flags], None]) -> Command:
        return Command(func, lambda: parts)

    return decorate
