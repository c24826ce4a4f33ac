"""QNN (Android, Qualcomm Hexagon NPU "HTP"): an *estimate* of what ORT's QNN execution provider takes.

The per-node rules (:mod:`~mobilegen.providers.qnn.table`) are what ORT's QNN op builders check before
they ask the QNN SDK; QDQ node units are grouped by :mod:`mobilegen.coverage.qdq` as for every QDQ
provider, and :mod:`~mobilegen.providers.qnn.units` adds what ``QNNExecutionProvider::GetCapability``
(onnxruntime/core/providers/qnn/qnn_execution_provider.cc) does beyond that: the selectors the shared
grouping lacks, the Gelu fusion, and dropping a partition of one lone Q/DQ node. The final word on every
node is the QNN SDK's ``backendValidateOpConfig`` on the phone, so every verdict is labelled an estimate
(:data:`ESTIMATE`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen.errors import UsageError
from mobilegen.providers.base import (
    GROUP,
    OTHER,
    ExecutionProvider,
    Reason,
    Setting,
    SettingValue,
    StaticQuantization,
    TargetFlag,
)
from mobilegen.providers.qnn.facts import (
    AAR,
    DEFAULT_HTP_ARCH,
    DISPLAY_NAME,
    FP16_MIN_ARCH,
    HTP_ARCHS,
)
from mobilegen.providers.qnn.fixes import FIX_REASONS, FIXES

if TYPE_CHECKING:
    from mobilegen.coverage.partition import Support
    from mobilegen.coverage.qdq import Units
    from mobilegen.coverage.rules import EPTable
    from mobilegen.coverage.target import EPTarget
    from mobilegen.notices import Notice
    from mobilegen.providers.quantization import QuantizeMode, Recipe, Refusal

ESTIMATE = (
    "QNN coverage is an estimate: mobilegen checks what ORT's QNN op builders check, but the QNN SDK on the "
    "phone (backendValidateOpConfig) decides each node, and that depends on the SDK version, the SoC and its "
    "HTP generation; run the device benchmark with CPU fallback disabled to see what the NPU really takes"
)


def parse_htp_arch(value: str) -> int:
    """``--qnn-htp-arch``'s value: ``75``, or ``v75`` as Qualcomm writes the Hexagon generations (whether
    QNN knows the generation is checked with the other options)."""
    text = str(value).strip()
    digits = text[1:] if text[:1] in ("v", "V") else text
    if not (digits.isascii() and digits.isdigit()):
        raise UsageError(f"{text!r} is not a Hexagon generation: use one of {', '.join(HTP_ARCHS)} (a leading v is fine: v75)")
    return int(digits)


SETTINGS = (
    Setting(
        "qnn_htp_arch",
        DEFAULT_HTP_ARCH,
        "Hexagon (HTP) generation the QNN estimate assumes (v73+ computes float models in fp16; older ones need QDQ)",
        label="QNN HTP architecture",
        flag="--qnn-htp-arch",
        choices=HTP_ARCHS,
        metavar="N",
        parse=lambda text: str(parse_htp_arch(text)),
    ),
)


TARGET_FLAGS = (
    TargetFlag(
        "qnn", "--qnn", False,
        "Set up Qualcomm's QNN EP (Snapdragon Hexagon NPU) first, on onnxruntime-android-qnn; its coverage is an estimate.",
        needs_target=True,
    ),  # fmt: skip
    TargetFlag(
        "qnn_htp_arch", "--qnn-htp-arch", None,
        f"Hexagon generation the QNN estimate and --quantize assume: {', '.join(HTP_ARCHS[:-1])} or {HTP_ARCHS[-1]} (default {DEFAULT_HTP_ARCH}).",
        kind=int, metavar="N", parse=parse_htp_arch, needs_target=True,
    ),  # fmt: skip
)


def _float(support: Support, index: int) -> bool:
    from mobilegen.coverage.rules import F16, F32

    graph = support.graph
    node = graph.nodes[index]
    for t in (*node.inputs, *node.outputs):
        info = graph.info(t) if t else None
        if info is not None and info.elem_type in (F32, F16):
            return True
    return False


def _per_channel(support: Support, index: int) -> bool:
    graph = support.graph
    node = graph.nodes[index]
    scale = node.inputs[1] if len(node.inputs) > 1 else ""
    info = graph.info(scale) if scale else None
    if info is None or info.shape is None:
        return False
    n = 1
    for d in info.shape:
        n *= d if isinstance(d, int) else 2
    return n > 1


class Qnn(ExecutionProvider):
    def rule_table(self) -> EPTable:
        # Imported here: the table imports onnx and numpy, needed only when a model is analysed.
        from mobilegen.providers.qnn.table import TABLE

        return TABLE

    def resolve(self, given: Mapping[str, object]) -> tuple[tuple[str, SettingValue], ...]:
        # Without --ort-version the rules are those of the QNN AAR mobilegen pins, not onnxruntime-android's.
        if given.get("ort_version") in (None, ""):
            from mobilegen.runtimes import default_release

            given = {**given, "ort_version": default_release(AAR.channel).version}
        return super().resolve(given)

    def refine(self, support: Support, target: EPTarget) -> None:
        # QDQ node units are grouped and judged as a whole by mobilegen.coverage.qdq (the table's ``qdq``);
        # this adds what QNN's GetCapability does beyond that.
        from mobilegen.coverage.qdq import table_units
        from mobilegen.providers.qnn.units import gelu_group, is_qdq

        graph = support.graph
        found = table_units(self.rule_table(), graph)
        in_unit = found.by_node if found is not None else {}
        arch = int(target.str_value("qnn_htp_arch"))
        for node in graph.nodes:
            i = node.index
            if not support.taken[i] or i in in_unit:
                continue
            if node.op_type == "Erf" and gelu_group(graph, i) is None:
                text = "Erf has no QNN builder: QNN takes it only inside a decomposed Gelu (x/√2 → Erf → +1 → ×x → ×0.5)"
                support.refuse(i, Reason(text, OTHER, "qnn.fusion"))
            elif is_qdq(graph, i):
                self._standalone_qdq(support, i)
            elif arch < FP16_MIN_ARCH and _float(support, i):
                text = (
                    f"float {node.op_type} outside a QDQ unit: HTP v{arch} has no fp16 compute (v{FP16_MIN_ARCH}+), so "
                    "only quantized (QDQ) nodes run on it; quantize the model (--quantize int8) or target v73+"
                )
                support.refuse(i, Reason(text, OTHER, "qnn.htp_precision"))
        if arch < FP16_MIN_ARCH and found is not None:
            self._float_unit_outputs(support, found, arch)
        self._fused_gelus(support)

    @staticmethod
    def _float_unit_outputs(support: Support, units: Units, arch: int) -> None:
        """A unit with no Q after a float output (Gemm, Einsum, Reciprocal may have none) computes it in
        float: below v73 it is refused like a float node (its members follow the target)."""
        from mobilegen.coverage.rules import F16, F32

        graph = support.graph
        for unit in units.units:
            outs = zip(unit.node.outputs, unit.outputs, strict=False)
            floats = [o for o, q in outs if o and q is None and (info := graph.info(o)) is not None and info.elem_type in (F32, F16)]
            if floats and support.taken[unit.target]:
                text = (
                    f"{unit.label(graph)}: float output '{floats[0]}' (no QuantizeLinear after it): HTP v{arch} has no "
                    f"fp16 compute (v{FP16_MIN_ARCH}+); quantize the model (--quantize int8) or target v73+"
                )
                support.refuse(unit.target, Reason(text, OTHER, "qnn.htp_precision"))

    @staticmethod
    def _standalone_qdq(support: Support, i: int) -> None:
        """simple_op_builder.cc ExplicitOpCheck: a Q/DQ outside a node unit must be per-tensor, and with
        offload_graph_io_quantization (default on) a Q of a graph input / DQ to a graph output stays on CPU."""
        graph = support.graph
        node = graph.nodes[i]
        reasons = []
        if _per_channel(support, i):
            reasons.append(f"a standalone {node.op_type} with per-channel scales is not taken by QNN")
        if node.op_type == "QuantizeLinear" and node.inputs and node.inputs[0] in graph.graph_inputs:
            reasons.append("QuantizeLinear of a graph input is left to the CPU (QNN offload_graph_io_quantization)")
        if node.op_type == "DequantizeLinear" and any(o in graph.graph_outputs for o in node.outputs):
            reasons.append("DequantizeLinear to a graph output is left to the CPU (QNN offload_graph_io_quantization)")
        for text in reasons:
            support.refuse(i, Reason(text, OTHER, "qnn.qdq"))

    @staticmethod
    def _fused_gelus(support: Support) -> None:
        """A fused Gelu is taken or refused as a whole (GetSupportedNodes on its IQnnNodeGroup). A unit
        target refused here takes its unit with it (coverage.qdq.follow_targets runs after this hook)."""
        from mobilegen.providers.qnn.units import gelu_group

        graph = support.graph
        for node in graph.nodes:
            members = gelu_group(graph, node.index) if node.op_type == "Erf" else None
            refused = [m for m in members or () if not support.taken[m]]
            if not members or not refused:
                continue
            first = graph.nodes[refused[0]]
            text = f"part of the fused Gelu around Erf '{node.name}', which QNN refuses as a whole ({first.op_type} '{first.name}' is refused)"
            for m in members:
                if support.taken[m]:
                    support.refuse(m, Reason(text, GROUP, "qnn.group"))

    def drop_group(self, support: Support, group: Sequence[int]) -> Reason | None:
        from mobilegen.providers.qnn.units import is_qdq

        if len(group) == 1 and is_qdq(support.graph, group[0]):
            op = support.graph.nodes[group[0]].op_type
            return Reason(f"a partition of a lone {op} is dropped by QNN", GROUP, "qnn.group")
        return None

    def report_settings(self, values: Mapping[str, SettingValue]) -> dict[str, object]:
        return {**super().report_settings(values), "require_static_shapes": True, "estimate": True}

    # --- the Android project (mobilegen.providers.qnn.android) --------------------------------------------

    def target_settings(self, platform: str, opts: Any, *, static: bool) -> dict[str, SettingValue | None]:
        from mobilegen.providers.qnn import android

        return {"qnn_htp_arch": android.htp_arch(opts)}

    def target_problems(self, platform: str, opts: Any) -> tuple[list[str], list[str]]:
        from mobilegen.providers.qnn import android

        return android.problems(opts)

    def target_context(self, platform: str, opts: Any) -> dict[str, Any]:
        from mobilegen.providers.qnn import android

        return android.context(opts)

    def target_label(self, platform: str, opts: Any) -> str:
        return "QNN (HTP)"

    def target_record(self, platform: str, opts: Any) -> dict[str, Any]:
        from mobilegen.providers.qnn import android

        return android.options_record(opts)

    def target_notices(self, platform: str, opts: Any) -> tuple[Notice, ...]:
        from mobilegen.providers.qnn import android

        return android.notices(opts)

    def fp16_reason(self, platform: str, opts: Any) -> str:
        from mobilegen.providers.qnn import android

        return android.fp16_reason(opts)

    def recipe(self, mode: QuantizeMode, settings: Mapping[str, SettingValue | None]) -> Recipe | Refusal:
        from mobilegen.providers.qnn import recipe

        return recipe.recipe(mode, settings)

    def preprocess(self, model: Path, work: Path, recipe: Recipe) -> Path:
        from mobilegen.providers.qnn.recipe import preprocess

        return preprocess(model, work, recipe)

    def quantize_static(self, model: Path, out: Path, recipe: Recipe, static: StaticQuantization) -> bool:
        from mobilegen.providers.qnn.recipe import quantize_static

        quantize_static(model, out, recipe, static)
        return True


    def bench_configs(self, platform: str) -> tuple[str, ...]:
        return ("qnn", "qnn-no-cpu") if platform == "android" else ()

PROVIDER = Qnn(
    name="qnn",
    display_name=DISPLAY_NAME,
    platform="android",
    ort_name="QNNExecutionProvider",
    rank=10,  # the NPU first: before every other Android provider (lower rank, earlier in the chain), then the CPU
    settings=SETTINGS,
    target_flags=TARGET_FLAGS,
    runtime_artifacts=(AAR,),
    fixes=FIXES,
    fix_reasons=FIX_REASONS,
    estimate=ESTIMATE,
    subgraph_source="onnxruntime/core/providers/qnn/qnn_execution_provider.cc",  # IsSubgraph(): returns nothing
)
