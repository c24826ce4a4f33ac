"""NNAPI (Android): settings, how ORT's NNAPI EP forms partitions, and the API-level suggestion.

The per-node rules are in :mod:`~mobilegen.providers.nnapi.table` and
:mod:`~mobilegen.providers.nnapi.rules`, read from onnxruntime/core/providers/nnapi/nnapi_builtin/.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from mobilegen.notices import Notice
from mobilegen.providers.base import (
    API,
    DYNAMIC,
    GROUP,
    STOP,
    ExecutionProvider,
    Reason,
    Setting,
    SettingValue,
    TargetFlag,
    WhatIf,
)
from mobilegen.providers.nnapi.facts import DISPLAY_NAME, MIN_API
from mobilegen.providers.nnapi.fixes import FIX_REASONS, FIXES

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from mobilegen.coverage.partition import Support
    from mobilegen.coverage.rules import EPTable
    from mobilegen.coverage.target import EPTarget
    from mobilegen.providers.quantization import QuantizeMode, Recipe, Refusal

# Shown wherever NNAPI is chosen (CLI, project READMEs, report).
DEPRECATION = (
    "NNAPI is deprecated as of Android 15 (API 35): it keeps working on current devices, but vendors no "
    "longer improve their drivers; keep the CPU/XNNPACK path tested too."
)
DEPRECATED = Notice("nnapi-deprecated", "warning", DEPRECATION)
MAX_API = 36  # Android 16; NNAPI is deprecated from 35 on but still present
# ORT_NNAPI_MAX_SUPPORTED_API_LEVEL: what GetCapability assumes off-device. The default, so results compare
# with ORT's own view; pass your app's minSdk to be strict.
ORT_HOST_API = 31
DEFAULT_STOP_OPS = ("NonMaxSuppression",)
GROUP_DROP_OPS = ("Reshape", "Flatten", "Identity")  # helper.cc::IsValidSupportedNodeGroup
INTERNAL_QUANT_OPS = ("Transpose", "Resize", "Concat", "MaxPool")  # helper.cc: uint8 only inside a partition
_UINT8 = 2  # onnx.TensorProto.UINT8 (onnx is not imported here)


SETTINGS = (
    Setting(
        "android_api",
        ORT_HOST_API,
        "Android API level the NNAPI rules assume",
        label="Android API level",
        flag="--android-api",
        minimum=MIN_API,
        maximum=MAX_API,
        hint="NNAPI needs API 27 (Android 8.1) or newer",
        metavar="LEVEL",
    ),
    Setting(
        "nnapi_stop_ops",
        DEFAULT_STOP_OPS,
        "ops NNAPI partitioning stops at: they and everything downstream stay on the CPU",
        label="NNAPI stop ops",
    ),
)


def _comma_list(text: str | None) -> tuple[str, ...]:
    return tuple(f.strip() for f in text.split(",") if f.strip()) if text else ()


TARGET_FLAGS = (
    TargetFlag("nnapi", "--nnapi", False, "Set up the NNAPI EP (Android ≥ 8.1) with CPU fallback; fixes dynamic dims unless --keep-dynamic.", needs_target=True),
    TargetFlag(
        "nnapi_flags", "--nnapi-flags", None, "Comma list of NNAPI flags: fp16, nchw, cpu-disabled, cpu-only.",
        kind=str, metavar="FLAGS", convert=_comma_list, needs_target=True,
    ),  # fmt: skip
    # its help on screen is the android_api setting's, with the range and default
    TargetFlag("android_api", "--android-api", None, "Android API level the NNAPI analysis targets.", kind=int, metavar="LEVEL", help_from_setting=True),
)


class Nnapi(ExecutionProvider):
    def rule_table(self) -> EPTable:
        # Imported here: the table imports onnx and numpy, needed only when a model is analysed.
        from mobilegen.providers.nnapi.qdq import TABLE  # the float table plus its QDQ node-unit rules

        return TABLE

    def refine(self, support: Support, target: EPTarget) -> None:
        """Stop ops and everything downstream of them stay on the CPU (CreateExcludedNodeSet)."""
        graph = support.graph
        stop_ops = target.names_value("nnapi_stop_ops")
        stops = [node.index for node in graph.nodes if node.op_type in stop_ops]
        if not stops:
            return
        for index, root in support.downstream_of(stops).items():
            rn = graph.nodes[root]
            text = (
                f"{rn.op_type} is an NNAPI partitioning stop op"
                if index == root
                else f"downstream of {rn.op_type} '{rn.name}' (NNAPI stop op): kept on CPU"
            )
            support.refuse(index, Reason(text, STOP, "nnapi.stop_ops"))

    def refuse_in_group(self, support: Support, index: int, group_outputs: Collection[str]) -> Reason | None:
        """uint8 Transpose/Resize/Concat/MaxPool only with their input produced inside the partition."""
        node = support.graph.nodes[index]
        if node.op_type not in INTERNAL_QUANT_OPS or not node.inputs:
            return None
        info = support.graph.info(node.inputs[0])
        if info is None or info.elem_type != _UINT8 or node.inputs[0] in group_outputs:
            return None
        text = f"uint8 {node.op_type} input '{node.inputs[0]}' is not produced inside the NNAPI partition"
        return Reason(text, GROUP, "nnapi.uint8_internal")

    def drop_group(self, support: Support, group: Sequence[int]) -> Reason | None:
        """A lone Reshape/Flatten/Identity, or a partition fed only by constants (IsValidSupportedNodeGroup)."""
        if len(group) == 1 and support.graph.nodes[group[0]].op_type in GROUP_DROP_OPS:
            op = support.graph.nodes[group[0]].op_type
            return Reason(f"a partition of a lone {op} is dropped: not worth running on NNAPI", GROUP, "nnapi.group")
        if support.only_constant_inputs(group):
            return Reason("partition fed only by constants is dropped by NNAPI", GROUP, "nnapi.group")
        return None

    def suggest(self, whatif: WhatIf, target: EPTarget) -> list[str]:
        """Raise the API level to what the nodes refused only for it need, when taking them helps; nodes
        also refused for a symbolic dim count only together with fixed dims, and the text then says so."""
        reasons = whatif.rule_reasons
        api_only = [bool(r) and all(x.category == API for x in r) for r in reasons]
        with_dims = [bool(r) and all(x.category in (API, DYNAMIC) for x in r) and any(x.category == API for x in r) for r in reasons]
        for lifted, also in ((api_only, ""), (with_dims, " and fix the dynamic dims")):
            needed = max((x.min_api or 0 for r, hit in zip(reasons, lifted, strict=True) if hit for x in r if x.category == API), default=0)
            if not needed or (also and lifted == api_only):
                continue
            change = whatif.change_if_taken(lifted)
            if change:
                return [f"target Android API {needed}+ (--android-api {needed}){also}: {change}"]
        return []

    def recipe(self, mode: QuantizeMode, settings: Mapping[str, SettingValue | None]) -> Recipe | Refusal:
        from mobilegen.providers.nnapi import recipe

        return recipe.recipe(self, mode)

    def qdq_table(self) -> EPTable:
        return self.rule_table()

    def preprocess(self, model: Path, work: Path, recipe: Recipe) -> Path:
        from mobilegen.providers.nnapi.recipe import preprocess

        return preprocess(model, work, recipe)

    # --- the Android project (mobilegen.providers.nnapi.android) ------------------------------------------

    def target_settings(self, platform: str, opts: Any, *, static: bool) -> dict[str, SettingValue | None]:
        return {"android_api": opts.android_api}

    def target_problems(self, platform: str, opts: Any) -> tuple[list[str], list[str]]:
        from mobilegen.providers.nnapi import android

        return android.problems(opts)

    def target_context(self, platform: str, opts: Any) -> dict[str, Any]:
        from mobilegen.providers.nnapi import android

        return android.context(opts)

    def target_label(self, platform: str, opts: Any) -> str:
        from mobilegen.providers.nnapi import android

        return android.label(opts)

    def target_record(self, platform: str, opts: Any) -> dict[str, Any]:
        from mobilegen.providers.nnapi import android

        return android.record(opts)

    def fp16_reason(self, platform: str, opts: Any) -> str:
        from mobilegen.providers.nnapi import android

        return android.fp16_reason(opts)

    def report_settings(self, values: Mapping[str, SettingValue]) -> dict[str, object]:
        # NNAPI always needs fixed shapes: recorded, so reports of different EPs read the same way.
        return {**super().report_settings(values), "require_static_shapes": True}


    def bench_configs(self, platform: str) -> tuple[str, ...]:
        return ("nnapi", "nnapi-fp16", "nnapi-no-cpu") if platform == "android" else ()

PROVIDER = Nnapi(
    name="nnapi",
    display_name=DISPLAY_NAME,
    platform="android",
    ort_name="NnapiExecutionProvider",
    rank=20,
    settings=SETTINGS,
    target_flags=TARGET_FLAGS,
    notices=(DEPRECATED,),
    severe_if_none_taken=True,
    fixes=FIXES,
    fix_reasons=FIX_REASONS,
    # NNAPI wants Softmax/Sigmoid outputs at scale 1/256, zero point 0 (softmax_op_builder.cc), while
    # calibration gives the output the scale of its measured range (a Softmax unit quantized anyway split
    # the task CNN's partition): an int8 recipe leaves them float.
    never_taken_qdq_rules=frozenset({"nnapi.qdq.fixed_output"}),
    # "TODO: Task 812756: NNAPI EP, add support for subgraph (If and Loop operators)": returns nothing
    subgraph_source="onnxruntime/core/providers/nnapi/nnapi_builtin/nnapi_execution_provider.cc",
    in_default_runtime=("android",),
    static_shapes_only=True,  # table.py: a symbolic dim refuses the node ("NNAPI needs fixed shapes")
    # the help of --keep-dynamic, --no-fix, --optimization-style and --approximate (mobilegen.cli.provider_help)
    keep_dynamic_cost="NNAPI then takes no node with a symbolic dim",
    fixed_style=False,
    approximate_example=("gelu", "tanh GELU"),
)
