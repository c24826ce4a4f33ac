"""CoreML (iOS): one provider, two model formats (each its own report), static shapes on request.

The per-node rules are in :mod:`~mobilegen.providers.coreml.table` and
:mod:`~mobilegen.providers.coreml.rules`, read from onnxruntime/core/providers/coreml/builders/.
CoreML forms partitions the generic way; from ONNX Runtime 1.27.0 it drops a partition made only of
trivial ops (:func:`~mobilegen.providers.coreml.releases.trivial_partition`, the ``drop_group`` hook).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mobilegen.providers.base import ExecutionProvider, Reason, Setting, SettingValue, TargetFlag
from mobilegen.providers.coreml.facts import DISPLAY_NAME
from mobilegen.providers.coreml.fixes import FIX_REASONS, FIXES

if TYPE_CHECKING:
    from collections.abc import Mapping

    from mobilegen.coverage.partition import Support
    from mobilegen.coverage.rules import EPTable
    from mobilegen.providers.quantization import QuantizeMode, Recipe, Refusal

# The CoreML EP reuses its compiled model across launches while this metadata entry is unchanged
# (coreml_execution_provider.cc: ModelCacheDirectory with the model's COREML_CACHE_KEY).
CACHE_KEY = "COREML_CACHE_KEY"
FORMATS = ("mlprogram", "neuralnetwork")


SETTINGS = (
    Setting(
        "coreml_format",
        "mlprogram",
        "CoreML model format",
        label="CoreML format",
        flag="--coreml-format",
        choices=FORMATS,
        variant=True,
        metavar="FORMAT",
    ),
    Setting(
        "require_static_shapes",
        False,
        "CoreML: refuse nodes with symbolic dims (RequireStaticInputShapes)",
        flag="--require-static-shapes",
    ),
)

TARGET_FLAGS = (
    TargetFlag("coreml", "--coreml", False, "Set up the CoreML EP with CPU fallback.", needs_target=True),
    TargetFlag(
        "coreml_format", "--coreml-format", "mlprogram",
        "mlprogram (default: ORT's MLProgram builders cover LayerNorm, GELU, Erf, Where, ConvTranspose... that NeuralNetwork lacks; iOS 15+) or neuralnetwork.",
        kind=str, metavar="FORMAT",
    ),  # fmt: skip
    TargetFlag("compute_units", "--compute-units", "all", "CoreML compute units: all, cpu-and-ne, cpu-and-gpu, cpu-only.", kind=str, metavar="UNITS"),
)


class CoreML(ExecutionProvider):
    def rule_table(self) -> EPTable:
        # Imported here: the table imports onnx and numpy, needed only when a model is analysed.
        from mobilegen.providers.coreml.table import TABLE

        return TABLE

    def drop_group(self, support: Support, group: Sequence[int]) -> Reason | None:
        """GetCapability's on_group_closed (#28293): a partition of trivial ops only is left to the CPU."""
        from mobilegen.providers.coreml.releases import trivial_partition

        return trivial_partition([support.graph.nodes[i].op_type for i in group], support.ort_version)

    def recipe(self, mode: QuantizeMode, settings: Mapping[str, SettingValue | None]) -> Recipe | Refusal:
        from mobilegen.providers.coreml import recipe

        return recipe.recipe(mode)

    # --- the iOS project (mobilegen.providers.coreml.ios) ------------------------------------------------

    def target_settings(self, platform: str, opts: Any, *, static: bool) -> dict[str, SettingValue | None]:
        return {"coreml_format": opts.coreml_format, "require_static_shapes": static}

    def target_problems(self, platform: str, opts: Any) -> tuple[list[str], list[str]]:
        from mobilegen.providers.coreml import ios

        return ios.problems(opts)

    def target_context(self, platform: str, opts: Any) -> dict[str, Any]:
        from mobilegen.providers.coreml import ios

        return ios.context(opts)

    def target_record(self, platform: str, opts: Any) -> dict[str, Any]:
        from mobilegen.providers.coreml import ios

        return ios.record(opts)

    def fp16_reason(self, platform: str, opts: Any) -> str:
        from mobilegen.providers.coreml import ios

        return ios.fp16_reason(opts)

    def float32_reason(self, platform: str, opts: Any) -> str:
        from mobilegen.providers.coreml import ios

        return ios.float32_reason(opts)


PROVIDER = CoreML(
    name="coreml",
    display_name=DISPLAY_NAME,
    platform="ios",
    ort_name="CoreMLExecutionProvider",
    rank=20,
    settings=SETTINGS,
    target_flags=TARGET_FLAGS,
    fixes=FIXES,
    fix_reasons=FIX_REASONS,
    # returns nothing for a subgraph unless COREML_FLAG_ENABLE_ON_SUBGRAPH / EnableOnSubgraphs, which the
    # generated iOS code does not set
    subgraph_source="onnxruntime/core/providers/coreml/coreml_execution_provider.cc",
    in_default_runtime=("ios",),
    cache_key_metadata=CACHE_KEY,
    static_shapes_only=True,  # with RequireStaticInputShapes (rules.py), a symbolic dim refuses the node
    fixed_style=False,  # the help of --optimization-style (mobilegen.cli.provider_help)
)
