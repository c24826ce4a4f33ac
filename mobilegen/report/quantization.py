"""What the report, the CLI and the package README say about ``--quantize``: per shipped model, the recipe,
the calibration (a random one said loudly), the sizes before and after, the accuracy gate's table and the
worst layers by signal-to-quantization-noise ratio. Raw text; the templates escape it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mobilegen.report.facts import human_bytes, num

if TYPE_CHECKING:
    from mobilegen.artifacts import ShippedModel
    from mobilegen.quantize.records import QuantizationRecord


@dataclass(frozen=True)
class Row:
    """One row of a table (the templates' ``table`` macro reads ``cells``)."""

    cells: tuple[str, ...]


@dataclass(frozen=True)
class QuantSection:
    """One shipped model under ``--quantize``."""

    title: str  # "Android model (model/model.ort)"
    headline: str  # "int8: uint8 activations, uint8 weights, per-tensor (<provider>)" / "fp32: --quantize int8 refused ..."
    untrustworthy: str  # "" or the loud line for random calibration
    facts: tuple[Row, ...]  # (fact, value)
    accuracy: tuple[Row, ...]  # artifact, output, cosine, max abs, top-1, result
    worst_layers: tuple[Row, ...]  # tensor, SQNR dB


def recipe_text(record: QuantizationRecord) -> str:
    r = record.recipe
    grain = "per-channel" if r.get("per_channel") else "per-tensor"
    ops = r.get("op_types") or []
    only = f", ops {', '.join(str(o) for o in ops)}" if isinstance(ops, list) and ops else ""
    return f"{r.get('activation_type')} activations, {r.get('weight_type')} weights, {grain}{only} (for {r.get('provider')})"


def untrustworthy_text(record: QuantizationRecord) -> str:
    if not record.quantized or record.trustworthy:
        return ""
    c = record.calibration
    return f"UNTRUSTWORTHY: calibrated on {c.get('source')} ({c.get('count')} samples), not on real data — the scales and the accuracy below say nothing about real inputs"


def size_text(record: QuantizationRecord) -> str:
    return (
        f".ort {human_bytes(record.ort_size_before)} → {human_bytes(record.ort_size_after)} ({record.ratio:.2f}×); "
        f".onnx {human_bytes(record.onnx_size_before)} → {human_bytes(record.onnx_size_after)}"
    )


def _who(model: ShippedModel) -> str:
    from mobilegen import targets

    return " and ".join(targets.get(t).display_name for t in model.targets)


def summary_lines(models: Sequence[ShippedModel]) -> list[str]:
    """One line per shipped model for the CLI."""
    lines = []
    for m in models:
        r = m.quantization
        if r is None:
            continue
        if not r.quantized:
            lines.append(f"{_who(m)}: ships fp32 (--quantize {r.mode} not applied; the warning says why)")
            continue
        worst_cos = min((a.cosine for a in r.accuracy if not a.exact), default=1.0)  # exact: integer outputs
        top1 = [a.top1 for a in r.accuracy if a.top1 is not None]
        agree = f", top-1 ≥ {min(top1):.3f}" if top1 else ""
        calib = r.calibration
        placement = coverage_text(r)
        lines.append(
            f"{_who(m)}: {r.shipped} — {recipe_text(r)}; {m.ort_file}: {size_text(r)}; accuracy vs fp32 on {r.samples} samples: "
            f"cosine ≥ {worst_cos:.4f}{agree}; {' '.join(calibration_fact(calib, r.mode))}" + (f"; placement {placement}" if placement else "")
        )
    return lines


def sections(models: Sequence[ShippedModel]) -> tuple[QuantSection, ...]:
    out = []
    for m in models:
        r = m.quantization
        if r is None:
            continue
        title = f"{_who(m)} model ({m.ort_file})"
        if not r.quantized:
            out.append(QuantSection(title, f"fp32: --quantize {r.mode} refused — {r.reason}", "", coverage_rows(r), (), ()))
            continue
        c = r.calibration
        facts = (
            Row(("recipe", recipe_text(r))),
            Row(("why", r.reason)),
            Row(calibration_fact(c, r.mode, method=True)),
            Row(("accuracy samples", f"{r.samples} ({c.get('eval')})")),
            Row(("size", size_text(r))),
            Row(("quantized nodes", str(r.quantized_nodes))),
            *coverage_rows(r),
            Row(("gate", f"cosine ≥ {r.min_cosine:g} per output, top-1 agreement ≥ {r.min_top1:g} for classifier-shaped outputs, and exact agreement for integer ones (top-k indices: rank 1)")),
            *golden_tolerance_rows(r),
        )
        accuracy = tuple(
            Row((a.artifact, a.output, num(None) if a.exact else f"{a.cosine:.6f}", num(None) if a.exact else num(a.max_abs),
                 num(a.top1) + (f" of rank 1 equal ({num(a.all_ranks)} of all ranks)" if a.all_ranks is not None else " equal" if a.exact else ""), _result(1.0 if a.exact else a.cosine, a.top1, r)))
            for a in r.accuracy
        )
        layers = tuple(Row((w.tensor, f"{w.sqnr_db:.1f}")) for w in r.worst_layers)
        out.append(QuantSection(title, f"{r.shipped}: {recipe_text(r)}", untrustworthy_text(r), facts, accuracy, layers))
    return tuple(out)


def _counts(c: object) -> str:
    if not isinstance(c, Mapping):
        return "?"
    parts = c.get("partitions")
    return f"{c.get('supported_nodes')}/{c.get('total_nodes')} nodes, {parts} partition{'' if parts == 1 else 's'}"


def coverage_text(r: QuantizationRecord) -> str:
    """``<provider>: fp32 352/352 nodes, 1 partition → int8 1068/1068 nodes, 1 partition`` (with the recipe as it
    was, when narrowing changed it); "" when the recipe was not judged."""
    c = r.coverage
    if not c:
        return ""
    text = f"{c.get('provider')}: fp32 {_counts(c.get('fp32'))} → {r.mode} {_counts(c.get('quantized'))}"
    left = c.get("left_float")
    if isinstance(left, list) and left:
        text += f" (the recipe as it was: {_counts(c.get('recipe'))}; narrowed in {c.get('rounds')} round(s))"
    return text


def coverage_rows(r: QuantizationRecord) -> tuple[Row, ...]:
    """The placement of the quantized model on the target's first provider against the fp32 model's, and
    the nodes the narrowing left float (:mod:`mobilegen.quantize.judged`)."""
    text = coverage_text(r)
    if not text:
        return ()
    rows = [Row(("placement", text))]
    left = r.coverage.get("left_float")
    if isinstance(left, list) and left:
        shown = ", ".join(str(x) for x in left[:20]) + (f" (+{len(left) - 20} more)" if len(left) > 20 else "")
        wrapping = r.coverage.get("wrapping")
        also = f"; with them {len(wrapping)} op(s) that would wrap them into a unit again" if isinstance(wrapping, list) and wrapping else ""
        rows.append(Row(("left float", f"{len(left)} node(s) whose QDQ units {r.coverage.get('provider')} refuses or which split its partition: {shown}{also}")))
    rows += accuracy_rows_of(r.coverage)
    return tuple(rows)


def accuracy_rows_of(coverage: Mapping[str, object]) -> list[Row]:
    """The ops the recipe's activation rules left float, per rule: how many, the reason, a few of them
    with the tensor that decided; and why the accuracy narrowing could not pass the gate."""
    rows: list[Row] = []
    floats = coverage.get("accuracy_float")
    if isinstance(floats, list) and floats:
        by_rule: dict[str, list[Mapping[str, object]]] = {}
        for f in floats:
            if isinstance(f, Mapping):
                by_rule.setdefault(str(f.get("rule")), []).append(f)
        for rule, ops in by_rule.items():
            shown = ", ".join(f"{f.get('node')} ({f.get('tensor')})" for f in ops[:8]) + (f" (+{len(ops) - 8} more)" if len(ops) > 8 else "")
            label = "left float for accuracy" if rule == "coarse" else f"left float: {rule}"  # sentinel, divisor
            rows.append(Row((label, f"{len(ops)} op(s): {ops[0].get('reason')}: {shown}")))
    refused = coverage.get("accuracy_refused")
    if isinstance(refused, str) and refused:
        rows.append(Row(("accuracy narrowing", refused)))
    return rows


def golden_tolerance_rows(r: QuantizationRecord) -> tuple[Row, ...]:
    """How the tolerance of the model's own golden vectors (verify, device tests) was derived."""
    how = r.golden_tolerance.get("how")
    if not isinstance(how, str):
        return ()
    rtol = r.golden_tolerance.get("rtol")
    return (Row(("golden tolerance", f"atol {r.golden_atol:.3g}" + (f", rtol {rtol:g}" if isinstance(rtol, float) else "") + f": {how}")),)


def _result(cosine: float, top1: float | None, r: QuantizationRecord) -> str:
    ok = cosine >= r.min_cosine and (top1 is None or top1 >= r.min_top1)
    return "pass" if ok else "FAIL"


def summary_fact(models: Sequence[ShippedModel]) -> str:
    """The report summary's "Quantization" value; "" without ``--quantize``."""
    parts = []
    for m in models:
        r = m.quantization
        if r is None:
            continue
        if not r.quantized:
            parts.append(f"{_who(m)}: fp32 (--quantize {r.mode} refused)")
        else:
            parts.append(f"{_who(m)}: {r.shipped}, {size_text(r)}" + ("; UNTRUSTWORTHY calibration (random)" if not r.trustworthy else ""))
    return "; ".join(parts)


def readme_lines(models: Sequence[ShippedModel]) -> list[str]:
    """The package README's lines: the CLI's, with the golden vectors each model reproduces."""
    lines = summary_lines(models)
    quantized = [m for m in models if m.quantization is not None]
    return [f"{line}; golden vectors {m.golden_npz}" if m.quantization is not None and m.quantization.quantized else line for line, m in zip(lines, quantized, strict=True)]


def convert_line(record: dict[str, object]) -> str:
    """``convert --quantize``'s one line, from the record's JSON (``ConvertResult.quantization``)."""
    recipe = record.get("recipe") if isinstance(record.get("recipe"), dict) else {}
    size = record.get("size") if isinstance(record.get("size"), dict) else {}
    calib = record.get("calibration") if isinstance(record.get("calibration"), dict) else {}
    acc = record.get("accuracy") if isinstance(record.get("accuracy"), dict) else {}
    assert isinstance(recipe, dict) and isinstance(size, dict) and isinstance(calib, dict) and isinstance(acc, dict)
    outputs = [o for o in acc.get("outputs", []) if isinstance(o, dict)]
    cos = [float(o["cosine"]) for o in outputs if isinstance(o.get("cosine"), int | float) and not o.get("exact")]
    top1 = [float(o["top1"]) for o in outputs if isinstance(o.get("top1"), int | float)]
    before, after = size.get("ort_before"), size.get("ort_after")
    sizes = f".ort {human_bytes(before)} → {human_bytes(after)}" if isinstance(before, int) and isinstance(after, int) else ""
    grain = "per-channel" if recipe.get("per_channel") else "per-tensor"
    return (
        f"{record.get('shipped')} ({recipe.get('activation_type')} activations, {recipe.get('weight_type')} weights, {grain}, for {recipe.get('provider')}); "
        f"{sizes}; accuracy vs fp32 on {acc.get('samples')} samples: cosine ≥ {min(cos, default=1.0):.4f}"
        + (f", top-1 ≥ {min(top1):.3f}" if top1 else "")
        + f"; {' '.join(calibration_fact(calib, str(record.get('mode'))))}"
    )


def calibration_fact(calib: Mapping[str, object], mode: str, *, method: bool = False) -> tuple[str, str]:
    """(``calibration``, ``51 samples from calib.npz`` / ``16 samples from random (seed 0), UNTRUSTWORTHY: not
    real data``); when nothing was calibrated (``dynamic``, ``fp16``: count 0) what the accuracy gate ran on:
    (``accuracy measured on``, ``random (seed 0) inputs (--quantize fp16 calibrates nothing)``)."""
    if not calib.get("count"):
        return "accuracy measured on", f"{calib.get('source')} (--quantize {mode} calibrates nothing)"
    loud = "" if calib.get("trustworthy", True) else ", UNTRUSTWORTHY: not real data"
    how = f", method {calib.get('method')}" if method else ""
    return "calibration", f"{calib.get('count')} samples from {calib.get('source')}{loud}{how}"
