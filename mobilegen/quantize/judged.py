"""Quantization recipes judged like graph passes: the quantized model's coverage on the target's first
execution provider against the fp32 (fixed) model's, and a recipe that makes it worse narrowed or refused.

The fix stage keeps a graph pass only when the coverage analysis says it helps (:mod:`mobilegen.passes.stage`);
a recipe cannot help placement (it only adds QuantizeLinear/DequantizeLinear nodes), so it is held to
*no worse*: no more partitions and no more refused nodes than the fp32 model on that provider (a provider
that takes nothing of the fp32 model is not judged; refused QuantizeLinear/DequantizeLinear nodes count
only through the partitions they split: :func:`worse`). A worse recipe is narrowed: the nodes the analysis
refuses in the quantized model and not in the fp32 one (per-node verdicts; the op of a refused QDQ node
unit, or, for a lone refused DequantizeLinear/QuantizeLinear, the op it feeds or comes from) are left float,
and the model is quantized again (with the activation ranges of the first calibration) — until it is no
worse, or no node is left to blame, or :data:`MAX_ROUNDS` passed: then the target ships its fp32 model with
the reason (:class:`Judgement` ``refused``), as for a recipe that quantizes nothing.

What the ViT and ConvNeXt configs of ``benchmarks/fix.py`` showed on an Android accelerator: a quantized
batch MatMul of two activations (attention's Q·Kᵀ) is a unit the provider refuses (its QDQ table's MatMul
unit takes a constant B only, with the ORT source) while its rules take the float batch MatMul — a provider
limit: narrowed.
A Gemm whose bias initializer was shared got no unit (a recipe mistake, fixed in
:func:`mobilegen.quantize.units.own_biases`).

Accuracy is judged too when the caller gives the accuracy gate (:func:`judged_quantize`'s ``gate``). The
recipe's :class:`~mobilegen.providers.quantization.ActivationRules` always leave float the ops around a
sentinel tensor (an attention mask's -3.4e38); a placed model that still fails the gate gets the ops around
its coarsest activations left float (:mod:`mobilegen.quantize.resolution`: a typical value under ``T``
8-bit steps of its range), ``T`` climbing the rules' ladder (a bisection: each probe costs a quantization,
a coverage analysis and a gate run), keeping the least ``T`` whose model passes the gate and places no
worse than fp32 — or, when none does, the reason (``accuracy_refused``; the stage's gate then refuses the
build with it). Ranking by how many steps a tensor's typical value gets, measured on the fp32 model, blames
the cause; the gate's per-layer SQNR of the quantized model (an earlier attempt) blames where the noise
ends up, downstream of it, and did not help all-MiniLM-L6-v2 (sentence-embedding cosine 0.19).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen.artifacts import CoverageCounts, JSONValue
from mobilegen.coverage import analyze_all
from mobilegen.infra.outputs import temp_dir
from mobilegen.quantize.engine import quantize

if TYPE_CHECKING:
    import onnx

    from mobilegen.coverage import CoverageReport, EPTarget
    from mobilegen.quantize.accuracy import AccuracyReport
    from mobilegen.quantize.calibration import Calibration
    from mobilegen.quantize.engine import QuantizedModel
    from mobilegen.quantize.options import CalibrationMethod
    from mobilegen.quantize.recipes import Recipe

MAX_ROUNDS = 4  # narrowing rounds after the recipe as it is; each re-quantizes from the cached ranges
_QDQ = ("QuantizeLinear", "DequantizeLinear")
_SHOWN = 12  # node names a reason lists


@dataclass(frozen=True)
class Judgement:
    """The coverage of one quantized model on its target's first provider: fp32's, the recipe's as it was,
    and what ships (after narrowing); the nodes left float by the narrowing; ``refused``: why the model
    ships fp32 ("" when the quantized model ships)."""

    provider: str  # the coverage label of the first provider
    fp32: CoverageCounts
    recipe: CoverageCounts  # the recipe as it is, before any narrowing
    quantized: CoverageCounts  # the last model quantized (what ships unless refused)
    left_float: tuple[str, ...] = ()  # the ops the narrowing blamed
    rounds: int = 0  # narrowing rounds run
    refused: str = ""
    # the ops left float with them because they would wrap a blamed op into a QDQ unit again (the quantized
    # Add after attention's Q·Kᵀ puts a Q on the float MatMul's output): engine._static_for_provider
    wrapping: tuple[str, ...] = ()
    # the ops the recipe's activation rules left float (node, tensor, rule, reason), the least steps the
    # accuracy narrowing needed (0: none), the gate runs it took, and why the model still fails ("" if it passes)
    float_ops: tuple[tuple[str, str, str, str], ...] = ()
    min_steps: float = 0.0
    accuracy_rounds: int = 0
    accuracy_refused: str = ""

    @property
    def narrowed(self) -> bool:
        return bool(self.left_float)

    def record(self) -> dict[str, JSONValue]:
        return {
            "provider": self.provider,
            "fp32": dict(self.fp32.to_dict()),
            "recipe": dict(self.recipe.to_dict()),
            "quantized": dict(self.quantized.to_dict()),
            "left_float": list(self.left_float),
            "wrapping": list(self.wrapping),
            "rounds": self.rounds,
            "refused": self.refused or None,
            "accuracy_float": [{"node": n, "tensor": x, "rule": r, "reason": why} for n, x, r, why in self.float_ops],
            "min_steps": self.min_steps,
            "accuracy_rounds": self.accuracy_rounds,
            "accuracy_refused": self.accuracy_refused or None,
        }


def worse(fp32: CoverageCounts, quantized: CoverageCounts, cpu_ops: tuple[int, int] | None = None) -> bool:
    """More partitions or more refused nodes than the fp32 model, on a provider that takes some of it.
    ``cpu_ops``: the refused ops other than QuantizeLinear/DequantizeLinear (fp32's, the quantized model's);
    given, they are compared instead of all refused nodes: a lone Q or DQ at the edge of a partition the
    fp32 model has too (a provider that leaves the input's QuantizeLinear to the CPU) costs one conversion, not a
    partition, and the quantized model has more nodes to refuse than the fp32 one."""
    if fp32.partitions == 0:
        return False
    if quantized.partitions > fp32.partitions:
        return True
    if cpu_ops is not None:
        return cpu_ops[1] > cpu_ops[0]
    return quantized.cpu_nodes > fp32.cpu_nodes


def refused_ops(report: CoverageReport) -> int:
    """The nodes ``report``'s provider refuses, other than QuantizeLinear/DequantizeLinear."""
    return sum(1 for n in report.nodes if not n.supported and n.op_type not in _QDQ)


def counts_text(c: CoverageCounts) -> str:
    return f"{c.supported_nodes}/{c.total_nodes} nodes, {c.partitions} partition{'s' if c.partitions != 1 else ''}"


@dataclass
class _State:
    left: list[str] = field(default_factory=list)
    first: CoverageCounts | None = None


def judged_quantize(
    src: Path,
    recipe: Recipe,
    calib: Calibration,
    dest: Path,
    target: EPTarget,
    *,
    method: CalibrationMethod = "minmax",
    gate: Callable[[Path], AccuracyReport] | None = None,
) -> tuple[QuantizedModel, Judgement]:
    """``src`` quantized as ``recipe`` says into ``dest``, narrowed until its coverage on ``target`` is no
    worse than ``src``'s, or refused (``Judgement.refused``; ``dest`` then holds the last attempt).
    ``gate``: the accuracy gate on a quantized model's path: a placed model that fails it is narrowed
    further (:func:`_accuracy_narrowed`)."""
    with temp_dir("judge") as work:
        ranges = Path(work) / "ranges.json"
        qm, j, before = _placed(src, recipe, calib, dest, target, method, ranges)
        if gate is None or j.refused or not qm.quantized_nodes:
            return qm, j
        return _accuracy_narrowed(src, recipe, calib, dest, target, method, ranges, before, qm, j, gate)


def _placed(
    src: Path, recipe: Recipe, calib: Calibration, dest: Path, target: EPTarget, method: CalibrationMethod, ranges: Path
) -> tuple[QuantizedModel, Judgement, CoverageReport]:
    (before,) = analyze_all(None, [target], source=src)
    fp32 = CoverageCounts.of(before)
    refused_fp32 = {n.name for n in before.nodes if not n.supported}
    state = _State()
    baseline: tuple[str, ...] = ()  # what the recipe as it is leaves float (its own unit breakers)
    for round_ in range(MAX_ROUNDS + 1):
        qm = quantize(src, recipe, calib, dest, method=method, exclude=tuple(state.left), ranges=ranges)
        (after,) = analyze_all(None, [target], source=qm.path)
        got = CoverageCounts.of(after)
        state.first = state.first or got
        baseline = baseline if round_ else qm.left_float
        rule_floats = {f.node for f in qm.float_ops}
        wrapping = tuple(n for n in qm.left_float if n not in baseline and n not in state.left and n not in rule_floats)
        judgement = Judgement(before.label, fp32, state.first, got, tuple(state.left), round_, "", wrapping, _ops(qm))
        if not worse(fp32, got, (refused_ops(before), refused_ops(after))):
            return qm, judgement, before
        more = [n for n in offenders(after, refused_fp32, qm.path, state.left) if n not in state.left]
        if not more or round_ == MAX_ROUNDS:
            return qm, _refusal(judgement, after, refused_fp32, recipe, more), before
        state.left += more
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns on its last round


def _ops(qm: QuantizedModel) -> tuple[tuple[str, str, str, str], ...]:
    return tuple((f.node, f.tensor, f.rule, f.reason) for f in qm.float_ops)


def _accuracy_narrowed(
    src: Path,
    recipe: Recipe,
    calib: Calibration,
    dest: Path,
    target: EPTarget,
    method: CalibrationMethod,
    ranges: Path,
    before: CoverageReport,
    qm: QuantizedModel,
    j: Judgement,
    gate: Callable[[Path], AccuracyReport],
) -> tuple[QuantizedModel, Judgement]:
    """``qm`` (placed no worse than fp32) when it passes ``gate``; else the model of the least ``T`` of the
    rules' ladder whose coarse activations left float make it pass while placing no worse (a bisection
    over the ladder), or ``qm`` with ``accuracy_refused`` saying why none does (``dest`` holds it again)."""
    report = gate(qm.path)
    rules = recipe.activations
    if report.passed or rules is None or not rules.ladder:
        return qm, j
    first = "; ".join(report.failures)
    ladder = rules.ladder
    notes: dict[float, str] = {}
    probed: list[float] = []

    def probe(steps: float) -> tuple[QuantizedModel, Judgement] | None:
        probed.append(steps)
        trial = quantize(src, recipe, calib, dest, method=method, exclude=j.left_float, ranges=ranges, min_steps=steps)
        (after,) = analyze_all(None, [target], source=trial.path)
        got = CoverageCounts.of(after)
        if worse(j.fp32, got, (refused_ops(before), refused_ops(after))):
            notes[steps] = f"placement gets worse than fp32's: {counts_text(j.fp32)} → {counts_text(got)}"
            return None
        rep = gate(trial.path)
        if not rep.passed:
            notes[steps] = "; ".join(rep.failures)
            return None
        return trial, replace(j, quantized=got, float_ops=_ops(trial), min_steps=steps)

    # bisection: ladder[lo] fails (-1: the model as placed, which failed), ladder[hi] passes (len: none probed yet)
    best = probe(ladder[-1])
    lo, hi = (-1, len(ladder) - 1) if best is not None else (len(ladder) - 1, len(ladder))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        got = probe(ladder[mid])
        if got is None:
            lo = mid
        else:
            best, hi = got, mid
    if best is not None:
        won, judged = best
        if probed[-1] != judged.min_steps:  # a later probe overwrote dest: the winner again, from the cached ranges
            won = quantize(src, recipe, calib, dest, method=method, exclude=j.left_float, ranges=ranges, min_steps=judged.min_steps)
        return won, replace(judged, accuracy_rounds=len(probed))
    why = notes.get(ladder[-1], "")
    reason = (
        f"the {recipe.provider} int8 model fails the accuracy gate ({first}) and still does with every op around "
        f"an activation under {ladder[-1]:g} 8-bit steps left float ({why})"
    )
    qm = quantize(src, recipe, calib, dest, method=method, exclude=j.left_float, ranges=ranges)
    return qm, replace(j, accuracy_rounds=len(probed), accuracy_refused=reason)


def _refusal(j: Judgement, after: CoverageReport, refused_fp32: set[str], recipe: Recipe, more: list[str]) -> Judgement:
    blamed = [n.name for n in after.nodes if not n.supported and n.name not in refused_fp32]
    shown = ", ".join(blamed[:_SHOWN]) + (f" (+{len(blamed) - _SHOWN} more)" if len(blamed) > _SHOWN else "")
    left = f" after leaving {len(j.left_float)} node(s) float ({', '.join(j.left_float[:_SHOWN])})" if j.left_float else ""
    why = f"still refused: {shown}" if blamed else "no node the analysis refuses can be left float"
    if more:
        why += f" ({MAX_ROUNDS} narrowing rounds were not enough)"
    reason = (
        f"the {recipe.provider} int8 recipe makes {j.provider} placement worse than the fp32 model's "
        f"({counts_text(j.fp32)} → {counts_text(j.quantized)}{left}; {why}), so this target ships its fp32 model "
        "(a quantized model that splits the accelerator's partition runs slower than the fp32 one it replaces)"
    )
    return Judgement(j.provider, j.fp32, j.recipe, j.quantized, j.left_float, j.rounds, reason, j.wrapping)


def offenders(after: CoverageReport, refused_fp32: set[str], model_path: Path, left: Sequence[str] = ()) -> list[str]:
    """Names of the quantized model's nodes to leave float: the ops the analysis refuses (not refused in
    the fp32 model) — a refused QDQ node unit is refused with its op — or, when only lone Q/DQ nodes are
    refused, the ops they feed (DequantizeLinear) or come from (QuantizeLinear). An op already left float
    (in ``left``) that is still refused is still in a unit: its neighbours quantize its inputs and its
    output (a quantized Add after attention's float Q·Kᵀ MatMul puts a Q on the MatMul's output), so the
    ops that put a Q on its output are left float too, which breaks the unit. The analysis sees the
    graph onnxruntime optimizes: a node it renamed (``name/Fusion``, ``name/duplicated``) is found by the
    longest ``/``-separated prefix of its name that names a node (a node's own name may hold ``/``)."""
    import onnx

    model = onnx.load_model(str(model_path), load_external_data=False)
    nodes = {n.name: n for n in model.graph.node if n.name}
    producer = {o: n for n in model.graph.node for o in n.output}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for n in model.graph.node:
        for x in n.input:
            consumers.setdefault(x, []).append(n)

    def found(name: str) -> onnx.NodeProto | None:
        # onnxruntime appends "/duplicated", "/Fusion", ...; names may hold "/" themselves (the TorchScript
        # exporter's "/encoder/0/Slice_4", fold-if's "If_0/..."): strip trailing parts until one is a node
        while name:
            node: onnx.NodeProto | None = nodes.get(name)
            if node is not None:
                return node
            name = name.rpartition("/")[0]
        return None

    refused = [found(v.name) for v in after.nodes if not v.supported and v.name not in refused_fp32]
    ops = [n.name for n in refused if n is not None and n.op_type not in _QDQ and n.name not in refused_fp32]
    if ops:
        picked = [x for x in ops if x not in left]
        for x in ops:
            if x in left:
                picked += _quantizing_consumers(nodes[x], consumers)
        return list(dict.fromkeys(picked))
    out: list[str] = []
    for n in refused:
        if n is None:
            continue
        if n.op_type == "DequantizeLinear":
            out += [c.name for c in consumers.get(n.output[0], []) if c.op_type not in _QDQ and c.name]
        elif n.op_type == "QuantizeLinear":
            p = producer.get(n.input[0])
            if p is not None and p.op_type not in _QDQ and p.name:
                out.append(p.name)
    return list(dict.fromkeys(x for x in out if x not in refused_fp32))


def _quantizing_consumers(node: onnx.NodeProto, consumers: dict[str, list[onnx.NodeProto]]) -> list[str]:
    """The ops past ``node``'s QuantizeLinear/DequantizeLinear outputs: those that quantized its output."""
    names: list[str] = []
    todo = [o for o in node.output if o]
    seen: set[str] = set(todo)
    while todo:
        for c in consumers.get(todo.pop(), []):
            if c.op_type in _QDQ:
                for o in c.output:
                    if o not in seen:
                        seen.add(o)
                        todo.append(o)
            elif c.name and any(x in seen and x not in node.output for x in c.input):
                names.append(c.name)
    return names
