"""The accuracy gate: the quantized model against the fp32 one on held-out samples (onnxruntime CPU).

Per output: cosine similarity (over every sample's values together), the largest absolute difference,
and top-1 agreement for classifier-shaped outputs (``[N, C]``, C > 1) — except outputs the caller names as
already sorted (``--top-k``'s ``scores``, from the task spec): their argmax is the first column in both
models, so a top-1 figure would always be 1.0 and say nothing. Integer and bool outputs (class ids,
``--top-k``'s ``indices``) are compared by exact agreement: the fraction of equal elements, gated by
``--min-top1`` — for ``--top-k``'s ``indices`` the fraction of equal rank-1 classes (ranks 2..K are
near-ties that quantization may swap: their agreement is shown, not gated); their cosine and max abs (differences of ids) are neither gated nor shown. For QDQ models the tensors with
the lowest signal-to-quantization-noise ratio come from ``onnxruntime.quantization.qdq_loss_debug``
(activations of both models matched by name, and dequantized weights against the float ones).

The quantized model runs with onnxruntime's graph optimizations off: DequantizeLinear → float op →
QuantizeLinear, the QDQ model's own semantics, which the phones' integer kernels (exact int32 sums)
reproduce. With optimizations on, an x86 host without VNNI fuses the units into u8s8/s8s8 kernels whose
16-bit intermediate sums saturate on full-range int8 weights: the trained CNN fixture with per-channel s8
weights measured cosine 0.934 fused against 0.9994 unfused — the host's error, not the model's.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen.artifacts import JSONValue
from mobilegen.errors import InternalError, VerificationError
from mobilegen.infra.outputs import temp_dir
from mobilegen.quantize.calibration import Calibration
from mobilegen.quantize.options import QuantizeOptions

if TYPE_CHECKING:
    import numpy as np
    import onnx

WORST_LAYERS = 5
NOISE_SAMPLES = 8  # activations compared on at most this many samples (each run saves every tensor)


@dataclass(frozen=True)
class OutputAccuracy:
    name: str
    cosine: float
    max_abs: float
    top1: float | None  # agreement of the argmax for classifier-shaped outputs; of every element when exact
    exact: bool = False  # an integer/bool output: compared by exact agreement, cosine and max_abs not gated
    all_ranks: float | None = None  # top-k indices: agreement of every rank (shown); top1 is rank 1's (gated)


@dataclass(frozen=True)
class LayerNoise:
    tensor: str  # an activation, or a weight (initializer) name
    sqnr_db: float


@dataclass(frozen=True)
class AccuracyReport:
    outputs: tuple[OutputAccuracy, ...]
    worst_layers: tuple[LayerNoise, ...]
    samples: int
    min_cosine: float
    min_top1: float
    passed: bool
    failures: tuple[str, ...]  # "logits: cosine 0.912 < 0.99"
    calibration: str = ""  # the calibration source, when known
    trustworthy: bool = True  # False when the calibration data was random

    @property
    def float_error(self) -> float:
        """The largest finite error on float outputs: what the golden vectors' atol widens to. Integer
        outputs (``--top-k``'s indices) are ids: their differences are no tolerance for the scores."""
        return max((o.max_abs for o in self.outputs if not o.exact and math.isfinite(o.max_abs)), default=0.0)

    def record(self) -> dict[str, JSONValue]:
        return {
            "samples": self.samples,
            "min_cosine": self.min_cosine,
            "min_top1": self.min_top1,
            "passed": self.passed,
            "failures": list(self.failures),
            "outputs": [_output_record(o) for o in self.outputs],
            "worst_layers": [{"tensor": w.tensor, "sqnr_db": _num(w.sqnr_db)} for w in self.worst_layers],
            "calibration": self.calibration,
            "trustworthy": self.trustworthy,
        }

    def table(self) -> str:
        """Plain text: one row per output, then the noisiest tensors."""
        rows = [("output", "cosine", "max abs", "top-1", "")]
        for o in self.outputs:
            ok = (o.exact or o.cosine >= self.min_cosine) and (o.top1 is None or o.top1 >= self.min_top1)
            cos, err = ("-", "-") if o.exact else (cosine_text(o.cosine, self.min_cosine), f"{o.max_abs:.4g}")
            top1 = "-" if o.top1 is None else f"{o.top1:.3f}" + (" equal" if o.exact else "")
            if o.all_ranks is not None:
                top1 = f"{o.top1:.3f} of rank 1 equal ({o.all_ranks:.3f} of all ranks)"
            rows.append((o.name, cos, err, top1, "ok" if ok else "FAIL"))
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
        lines.append(f"({self.samples} sample{'' if self.samples == 1 else 's'}; gate: cosine >= {self.min_cosine}, top-1 >= {self.min_top1})")
        if self.worst_layers:
            lines.append("lowest signal-to-quantization-noise:")
            width = max(len(w.tensor) for w in self.worst_layers)
            lines += [f"  {w.tensor.ljust(width)}  {w.sqnr_db:6.1f} dB" for w in self.worst_layers]
        if not self.trustworthy:
            lines.append(f"calibration: {self.calibration}: untrustworthy (random data)")
        return "\n".join(lines)


def _output_record(o: OutputAccuracy) -> dict[str, JSONValue]:
    # an integer output (class ids) has no cosine or max abs worth reading: they are null, as the tables' "-"
    cosine, max_abs = (None, None) if o.exact else (_num(o.cosine), _num(o.max_abs))
    out: dict[str, JSONValue] = {"name": o.name, "cosine": cosine, "max_abs": max_abs, "top1": o.top1}
    if o.all_ranks is not None:
        out["all_ranks"] = o.all_ranks
    return out | {"exact": True} if o.exact else out


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None


def cosine_text(cosine: float, threshold: float) -> str:
    """The cosine with 4 decimals, or with as many more as it takes to tell it from ``threshold`` (a
    cosine of 0.99999 against --min-cosine 0.999999 is no "1.0000 < 0.999999")."""
    for digits in range(4, 17):
        text = f"{cosine:.{digits}f}"
        if (float(text) >= threshold) == (cosine >= threshold) and float(text) != threshold:
            return text
    return repr(cosine)


def gate(report: AccuracyReport) -> None:
    """Raise the numeric-mismatch error (exit 5) with the table when the report failed."""
    if report.passed:
        return
    raise VerificationError(
        f"the quantized model lost too much accuracy: {'; '.join(report.failures)}",
        hint="calibrate on more representative data (--calibration), try --calibration-method entropy or "
        "percentile, another --quantize mode, or lower --min-cosine/--min-top1 knowingly",
        details=report.table().splitlines(),
        data={"accuracy": report.record()},
    )


def accuracy(
    fp32: Path,
    quantized: Path,
    data: Mapping[str, np.ndarray],
    opts: QuantizeOptions,
    *,
    calib: Calibration | None = None,
    sorted_outputs: Collection[str] = (),
    worst: int = WORST_LAYERS,
) -> AccuracyReport:
    """Run both models on every sample of ``data`` (``[N, *input shape]``, or ``[N, *shape[1:]]`` for a
    batch dim of one) and compare their outputs. ``quantized`` may be an ``.ort`` file (then
    ``worst_layers`` is (): the per-tensor noise needs the ``.onnx``). ``sorted_outputs``: outputs whose
    values are sorted by the graph (top-k scores): no top-1 agreement for them. ``worst``: how many of
    the noisiest tensors to keep (0: none computed; the judge's accuracy probes need only the verdict)."""
    ref_sess, q_sess = _session(fp32), _session(quantized, reference=True)
    feeds = _feeds(ref_sess, data)
    if not feeds:  # two empty outputs compare as equal: a gate on no samples would pass any model
        raise InternalError("the accuracy gate got no samples", hint="this is a bug in mobilegen.quantize: the callers check the sample counts")
    names = [o.name for o in ref_sess.get_outputs()]
    ref = [ref_sess.run(names, f) for f in feeds]
    got = [q_sess.run(names, f) for f in feeds]
    return accuracy_of_runs(
        names, ref, got, opts, calib=calib, sorted_outputs=sorted_outputs,
        worst_layers=_worst_layers(fp32, quantized, feeds[:NOISE_SAMPLES], worst) if worst > 0 else (),
    )


def accuracy_of_runs(
    names: Sequence[str],
    ref: Sequence[Sequence[Any]],
    got: Sequence[Sequence[Any]],
    opts: QuantizeOptions,
    *,
    calib: Calibration | None = None,
    sorted_outputs: Collection[str] = (),
    worst_layers: tuple[LayerNoise, ...] = (),
) -> AccuracyReport:
    """The gate on outputs already computed: ``ref[i]`` / ``got[i]`` are the fp32 and the quantized model's
    outputs (ordered as ``names``) on sample ``i``. :func:`accuracy` runs two onnxruntime sessions and calls
    this; a backend with its own runtime (Core AI's int8 ``.aimodel``, ``mobilegen.backends.coreai``) runs its
    models and calls it directly, so both are judged by the same thresholds and formulas."""
    import numpy as np

    if not ref:
        raise InternalError("the accuracy gate got no samples", hint="this is a bug in mobilegen.quantize: the callers check the sample counts")
    outputs = []
    for k, name in enumerate(names):
        if ref and not np.issubdtype(np.asarray(ref[0][k]).dtype, np.inexact):
            ranked = name in sorted_outputs  # top-k indices: the gate holds rank 1 (the top-1 class)
            outputs.append(_agreement(name, [np.asarray(r[k]) for r in ref], [np.asarray(g[k]) for g in got], ranked=ranked))
            continue
        a = [np.asarray(r[k], dtype=np.float64) for r in ref]
        b = [np.asarray(g[k], dtype=np.float64) for g in got]
        outputs.append(_compare(name, a, b, top1=name not in sorted_outputs))
    failures = []
    for o in outputs:
        if not o.exact and not o.cosine >= opts.min_cosine:
            failures.append(f"{o.name}: cosine {cosine_text(o.cosine, opts.min_cosine)} < {opts.min_cosine}")
        if o.top1 is not None and not o.top1 >= opts.min_top1:
            what = "top-1 classes equal to fp32's" if o.all_ranks is not None else "values equal to fp32's" if o.exact else "top-1 agreement"
            failures.append(f"{o.name}: {what} {o.top1:.3f} < {opts.min_top1}")
    return AccuracyReport(
        outputs=tuple(outputs),
        worst_layers=worst_layers,
        samples=len(ref),
        min_cosine=opts.min_cosine,
        min_top1=opts.min_top1,
        passed=not failures,
        failures=tuple(failures),
        calibration=calib.source if calib is not None else "",
        trustworthy=calib.trustworthy if calib is not None else True,
    )


def _session_options(*, reference: bool) -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    if reference:  # no QDQ fusion into the host's integer kernels (see the module docstring)
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return opts


def _session(path: Path, *, reference: bool = False) -> Any:
    import onnxruntime as ort

    return ort.InferenceSession(str(path), _session_options(reference=reference), providers=["CPUExecutionProvider"])


def _feeds(sess: Any, data: Mapping[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    """One feed per sample; an array with the input's rank (not rank + 1) has its samples axis in place of
    a batch dim of one."""
    ranks = {i.name: len(i.shape) for i in sess.get_inputs()}
    if not data:
        return []
    n = int(next(iter(data.values())).shape[0])
    feeds: list[dict[str, np.ndarray]] = [{} for _ in range(n)]
    for name, arr in data.items():
        for i in range(n):
            feeds[i][name] = arr[i] if arr.ndim == ranks.get(name, arr.ndim - 1) + 1 else arr[i : i + 1]
    return feeds


def _compare(name: str, ref: list[np.ndarray], got: list[np.ndarray], *, top1: bool = True) -> OutputAccuracy:
    import numpy as np

    agree = _top1(ref, got) if top1 else None

    a = np.concatenate([r.ravel() for r in ref]) if ref else np.zeros(0)
    b = np.concatenate([g.ravel() for g in got]) if got else np.zeros(0)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        same = bool(np.array_equal(a, b, equal_nan=True))
        return OutputAccuracy(name, 1.0 if same else 0.0, 0.0 if same else math.inf, agree)
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 and nb == 0.0:
        cosine = 1.0
    elif na == 0.0 or nb == 0.0:
        cosine = 0.0
    else:
        cosine = float(np.dot(a, b) / (na * nb))
    max_abs = float(np.max(np.abs(a - b))) if a.size else 0.0
    return OutputAccuracy(name, min(1.0, cosine), max_abs, agree)


def _agreement(name: str, ref: list[np.ndarray], got: list[np.ndarray], *, ranked: bool = False) -> OutputAccuracy:
    """An integer/bool output: the fraction of its elements (over every sample) equal to fp32's. ``ranked``
    (top-k indices, best first along the last axis): the fraction of rows whose first element, the top-1
    class, is equal; ``all_ranks`` keeps the agreement of every rank for the table."""
    import numpy as np

    a = np.concatenate([r.ravel() for r in ref]) if ref else np.zeros(0)
    b = np.concatenate([g.ravel() for g in got]) if got else np.zeros(0)
    if a.shape != b.shape:
        return OutputAccuracy(name, 0.0, math.inf, 0.0, exact=True)
    equal = float(np.mean(a == b)) if a.size else 1.0
    with np.errstate(all="ignore"):
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    cosine, max_abs = 1.0 if equal == 1.0 else 0.0, float(diff.max()) if diff.size else 0.0
    if not ranked or any(r.ndim == 0 for r in ref):
        return OutputAccuracy(name, cosine, max_abs, equal, exact=True)
    first = np.concatenate([(r[..., 0] == g[..., 0]).ravel() for r, g in zip(ref, got, strict=True)])
    return OutputAccuracy(name, cosine, max_abs, float(np.mean(first)), exact=True, all_ranks=equal)


def _top1(ref: list[np.ndarray], got: list[np.ndarray]) -> float | None:
    """Argmax agreement over the rows of ``[N, C]`` outputs (C > 1); None for other shapes."""
    import numpy as np

    if not ref or any(r.ndim != 2 or r.shape[1] < 2 for r in ref):
        return None
    hits = [np.argmax(r, axis=1) == np.argmax(g, axis=1) for r, g in zip(ref, got, strict=True)]
    return float(np.mean(np.concatenate(hits)))


def _worst_layers(fp32: Path, quantized: Path, feeds: list[dict[str, np.ndarray]], count: int = WORST_LAYERS) -> tuple[LayerNoise, ...]:
    """The tensors with the lowest SQNR (float vs QDQ activations, float vs dequantized weights); () for
    models without QuantizeLinear/DequantizeLinear (fp16, dynamic) or without samples."""
    import onnx

    if quantized.suffix.lower() == ".ort":  # an ORT-format file is no ONNX protobuf: the .onnx twin has the layers
        return ()
    model = onnx.load_model(str(quantized), load_external_data=False)
    if not feeds or not any(n.op_type == "DequantizeLinear" for n in model.graph.node):
        return ()
    from onnxruntime.quantization import qdq_loss_debug as dbg

    from mobilegen.infra.quiet import quiet
    from mobilegen.quantize.engine import _ort_logs_quiet

    noise: dict[str, float] = {}
    with temp_dir("qdq-debug") as work, quiet(), _ort_logs_quiet():
        aug_f, aug_q = work / "float.onnx", work / "qdq.onnx"
        # the weights in a file beside each (aug_f.name + ".data"): the chunks' models only refer to them
        dbg.modify_model_output_intermediate_tensors(str(fp32), str(aug_f), save_as_external_data=True)
        dbg.modify_model_output_intermediate_tensors(str(quantized), str(aug_q), save_as_external_data=True)
        noise.update(_activation_noise(dbg, aug_f, aug_q, feeds))
    noise.update(_weight_noise(fp32, model))
    # a tensor reproduced exactly (a zero bias: no signal and no noise, which the ratio's epsilons make 0 dB)
    # is no worst layer
    noisy = {t: v for t, v in noise.items() if v != math.inf}
    worst = sorted(noisy.items(), key=lambda kv: (kv[1] if not math.isnan(kv[1]) else -math.inf, kv[0]))
    return tuple(LayerNoise(t, v) for t, v in worst[:count])


_CHUNK = 32  # activation pairs per pair of sessions: each run holds these tensors (and recomputes the model)


def _activation_noise(dbg: Any, aug_f: Path, aug_q: Path, feeds: list[dict[str, np.ndarray]]) -> dict[str, float]:
    """SQNR (dB) of each activation of the QDQ model (after its QDQ) against the float model's, a few tensors
    at a time, sample by sample. ``qdq_loss_debug.collect_activations`` keeps every tensor of every sample of
    both models (for a 224x224 ConvNeXt config, 8 samples took 1.1 GB, twice the whole fp32 build's peak), and
    a session of its augmented model holds every tensor of a run, fetched or not (each is a graph output,
    which onnxruntime keeps until the run ends: the Whisper encoder config of ``benchmarks/architectures.py``,
    1 GB for both models). So each chunk of :data:`_CHUNK` pairs gets sessions of its own, whose models save
    only those tensors (:class:`_Saving`; ``aug_f`` and ``aug_q`` keep their weights in external data). The
    pairs are those of its ``create_activation_matching``; the sums of squares give the ratio its
    ``compute_signal_to_quantization_noice_ratio`` computes on the concatenation."""
    import numpy as np
    import onnxruntime as ort

    plain = ort.SessionOptions()
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # collect_activations' default
    cpu = ["CPUExecutionProvider"]
    qdq = _session_options(reference=True)
    for so in (plain, qdq):  # an arena would keep the largest run's tensors all along, for both sessions
        so.enable_cpu_mem_arena = False
    suffix = dbg._TENSOR_SAVE_POSTFIX
    saving_f, saving_q = _Saving(aug_f, suffix), _Saving(aug_q, suffix)
    # the matching on the names themselves: which float tensor goes with which QDQ one (it passes values through)
    by_name = dbg.create_activation_matching({n: [n] for n in saving_q.saved}, {n: [n] for n in saving_f.saved})
    pairs = [(t, m["float"][0], m["post_qdq"][0]) for t, m in by_name.items()
             if m.get("float") and m.get("pre_qdq") is not None and m.get("post_qdq") is not None]  # fmt: skip
    signal: dict[str, float] = {}
    error: dict[str, float] = {}
    for k in range(0, len(pairs), _CHUNK):
        chunk = pairs[k : k + _CHUNK]
        names_f, names_q = [f + suffix for _t, f, _q in chunk], [q + suffix for _t, _f, q in chunk]
        sess_f = ort.InferenceSession(str(saving_f.only(names_f)), plain, providers=cpu)
        sess_q = ort.InferenceSession(str(saving_q.only(names_q)), qdq, providers=cpu)
        for feed in feeds:
            refs = sess_f.run(names_f, dict(feed))
            gots = sess_q.run(names_q, dict(feed))
            for (tensor, _f, _q), r, g in zip(chunk, refs, gots, strict=True):
                ref = np.asarray(r, dtype=np.float64).reshape(-1)
                got = np.asarray(g, dtype=np.float64).reshape(-1)
                if ref.shape != got.shape:
                    continue
                signal[tensor] = signal.get(tensor, 0.0) + float(np.dot(ref, ref))
                error[tensor] = error.get(tensor, 0.0) + float(np.dot(ref - got, ref - got))
            del refs, gots
        del sess_f, sess_q
    eps = float(np.finfo("float").eps)
    return {t: 20 * math.log10(max(math.sqrt(signal[t]), eps) / max(math.sqrt(error[t]), eps)) if error[t] else math.inf for t in signal}


class _Saving:
    """A model augmented by ``qdq_loss_debug.modify_model_output_intermediate_tensors`` (a Reshape per saved
    tensor, whose output is a graph output named ``tensor + suffix``), written again with only some of them:
    read without its external data, so the copies written beside it refer to the same weights file."""

    def __init__(self, path: Path, suffix: str) -> None:
        import onnx

        self._path = path
        self._model = onnx.load_model(str(path), load_external_data=False)
        self._outputs = list(self._model.graph.output)
        self._nodes = list(self._model.graph.node)
        saved = [o.name for o in self._outputs if o.name.endswith(suffix)]
        self.saved = [x[: -len(suffix)] for x in saved]  # the tensors it saves, by their own names
        names = set(saved)
        self._saver = {n.output[0] for n in self._nodes if n.op_type == "Reshape" and n.output and n.output[0] in names}

    def only(self, names: Sequence[str]) -> Path:
        """The model that saves the tensors ``names`` (saved outputs) and computes its own outputs, written
        beside the augmented one (one file, rewritten per call)."""
        import onnx

        keep = set(names)
        graph = self._model.graph
        del graph.output[:]
        graph.output.extend(o for o in self._outputs if o.name not in self._saver or o.name in keep)
        del graph.node[:]
        graph.node.extend(n for n in self._nodes if not n.output or n.output[0] not in self._saver or n.output[0] in keep)
        out = self._path.with_name(self._path.stem + "-chunk.onnx")
        onnx.save_model(self._model, str(out))
        return out


def _weight_noise(fp32: Path, qdq: onnx.ModelProto) -> dict[str, float]:
    """SQNR of each dequantized weight against the float one of the same name. (qdq_loss_debug's
    create_weight_matching subtracts a uint8 zero point in uint8 and wraps around: done here in float.)"""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    floats = {t.name: t for t in onnx.load_model(str(fp32), load_external_data=True).graph.initializer}
    inits = {t.name: t for t in qdq.graph.initializer}
    out: dict[str, float] = {}
    for node in qdq.graph.node:
        if node.op_type != "DequantizeLinear" or node.input[0] not in inits:
            continue
        name = node.input[0].removesuffix("_quantized")
        if name not in floats or node.input[1] not in inits:
            continue
        q = numpy_helper.to_array(inits[node.input[0]]).astype(np.float64)
        scale = numpy_helper.to_array(inits[node.input[1]]).astype(np.float64)
        zp = numpy_helper.to_array(inits[node.input[2]]).astype(np.float64) if len(node.input) > 2 and node.input[2] in inits else np.zeros_like(scale)
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        if scale.size > 1:
            shape = [1] * q.ndim
            shape[axis] = scale.size
            scale, zp = scale.reshape(shape), zp.reshape(shape)
        ref = numpy_helper.to_array(floats[name]).astype(np.float64)
        if ref.shape == q.shape:
            out[name] = _sqnr([ref], [(q - zp) * scale])
    return out


def _sqnr(ref: Sequence[np.ndarray], got: Sequence[np.ndarray]) -> float:
    """onnxruntime's SQNR (dB) on flattened tensors: it concatenates them, which 0-d arrays (a scalar
    weight such as ``x * 0.5``'s, or a scalar activation) cannot be."""
    import numpy as np
    from onnxruntime.quantization.qdq_loss_debug import compute_signal_to_quantization_noice_ratio as sqnr

    flat_ref, flat_got = [r.reshape(-1) for r in ref], [g.reshape(-1) for g in got]
    if all(np.array_equal(r, g) for r, g in zip(flat_ref, flat_got, strict=True)):
        return math.inf  # exact (onnxruntime's epsilons would say 0 dB for an all-zero tensor)
    return float(sqnr(flat_ref, flat_got))
