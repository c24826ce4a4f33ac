"""Quantize one ONNX model with a :class:`~mobilegen.quantize.recipes.Recipe` (``onnxruntime.quantization``).

- int8: ``quant_pre_process`` (shape inference and a basic-level optimization; ORT's docs optimize here,
  not after quantizing), then static QDQ (``quantize_static``, or the provider's own configuration:
  :meth:`~mobilegen.providers.base.ExecutionProvider.quantize_static`), calibrated on the :class:`Calibration`'s samples;
- dynamic: ``quant_pre_process``, then ``quantize_dynamic`` (int8 weights, activations at run time);
- fp16: ``onnxruntime.transformers.float16.convert_float_to_float16`` with the model IO kept float32, then
  sorted topologically (the converter appends the IO casts at the end of the node list; onnx.checker, and
  tools that read the shipped ``model.onnx``, refuse an unsorted graph).

The result is written through a temp file and a rename, and must load in onnxruntime (CPU) with the
source's input and output names and dtypes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen import providers
from mobilegen.errors import ConversionError, InternalError, first_line
from mobilegen.infra.outputs import temp_dir
from mobilegen.providers.base import StaticQuantization
from mobilegen.quantize.calibration import Calibration
from mobilegen.quantize.options import CalibrationMethod
from mobilegen.quantize.recipes import Recipe
from mobilegen.quantize.resolution import FloatOp, float_ops, measure
from mobilegen.quantize.units import named_nodes, own_biases, refused_unit_breakers

if TYPE_CHECKING:
    import numpy as np
    import onnx


QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")
DYNAMIC_OPS = ("MatMulInteger", "ConvInteger", "DynamicQuantizeMatMul", "DynamicQuantizeLSTM", "QAttention")


@dataclass(frozen=True)
class QuantizedModel:
    path: Path
    recipe: Recipe
    size_before: int  # bytes of the fp32 .onnx
    size_after: int  # bytes of the quantized .onnx
    quantized_nodes: int  # ops inside QDQ units (int8), integer ops (dynamic), ops computing in fp16 (fp16)
    left_float: tuple[str, ...] = ()  # int8: the nodes of the recipe's op types left float by name (exclude, unit breakers)
    # int8: the ops the recipe's activation rules left float (a sentinel tensor; one too coarse for 8 bits)
    float_ops: tuple[FloatOp, ...] = ()


def quantize(
    src: Path,
    recipe: Recipe,
    calib: Calibration,
    dest: Path,
    *,
    method: CalibrationMethod = "minmax",
    exclude: Sequence[str] = (),
    ranges: Path | None = None,
    min_steps: float = 0.0,
) -> QuantizedModel:
    """Write ``dest``: ``src`` quantized as ``recipe`` says, the nodes named in ``exclude`` left float (int8;
    :mod:`mobilegen.quantize.judged` narrows a recipe so). ``ranges``: a calibration cache (JSON) of the
    activation ranges: written by the first int8 call that gets a path that does not exist yet, read by
    the next ones (a narrowed recipe is calibrated once, not once per round); the activation statistics of
    the recipe's rules (:mod:`mobilegen.quantize.resolution`) are cached beside it. ``min_steps``: the ops
    around tensors whose typical value is under that many 8-bit steps are left float too (the accuracy
    narrowing of :mod:`mobilegen.quantize.judged`); sentinel tensors' ops always are."""
    import onnx

    from mobilegen.infra.quiet import quiet  # imports numpy: not at package import

    left: list[str] = []
    floated: list[FloatOp] = []
    src = Path(os.path.abspath(src))  # the quantizer's pre-processing runs in another current folder (_cwd)
    with temp_dir("quantize") as work:
        work = Path(os.path.abspath(work))
        out = work / "quantized.onnx"
        try:
            with quiet(), _ort_logs_quiet(), _cwd(work / "cwd"):
                if recipe.mode == "fp16":
                    _fp16(src, out)
                else:
                    pre = _preprocess(src, work, recipe)
                    if recipe.mode == "int8":
                        cache = ranges or work / "ranges.json"
                        floated = _rule_floats(pre, recipe, calib, cache, min_steps)
                        rule_names = [f.node for f in floated if f.node not in exclude]
                        left = _static_for_provider(pre, out, recipe, calib, method, (*exclude, *rule_names), cache)
                    else:
                        _dynamic(pre, out, recipe)
        except (MemoryError, KeyboardInterrupt):
            raise
        except OSError:
            raise  # storage errors: temp_dir names TMPDIR
        except Exception as err:  # noqa: BLE001 — onnxruntime.quantization raises plain exceptions
            raise ConversionError(
                f"onnxruntime could not quantize the model ({recipe.mode}, {recipe.provider}): {first_line(err)}",
                hint="try another --quantize mode, or ship fp32 (drop --quantize); rerun with --debug for the trace",
            ) from err
        model = onnx.load_model(str(out), load_external_data=False)  # only the nodes are counted
        _check_loads(src, out)
        count = _count(model, recipe)
        del model
        tmp = dest.with_name(dest.name + ".tmp")
        shutil.copyfile(out, tmp)
        os.replace(tmp, dest)
    return QuantizedModel(dest, recipe, src.stat().st_size, dest.stat().st_size, count, tuple(left), tuple(floated))


def _rule_floats(pre: Path, recipe: Recipe, calib: Calibration, ranges: Path, min_steps: float) -> list[FloatOp]:
    """The ops ``recipe``'s activation rules leave float in ``pre`` (none without rules)."""
    rules = recipe.activations
    if rules is None:
        return []
    stats = measure(pre, recipe.op_types, calib.samples, rules.sentinel, ranges.with_name(ranges.stem + "-activations.json"))
    return float_ops(pre, recipe.op_types, stats, rules, min_steps)



@contextlib.contextmanager
def _cwd(folder: Path) -> Iterator[None]:
    """Run in ``folder`` (made here, inside the caller's temp folder) and come back, also on an error.

    ORT's ``SymbolicShapeInference.infer_shapes`` (1.2x, called by ``quant_pre_process``) saves an
    incomplete inference as ``sym_shape_infer_temp.onnx`` plus a ``<uuid>.data`` file into the current
    folder, a name it takes no argument for: without this, ``--quantize dynamic`` or ``int8`` of a model
    with dynamic dims it cannot merge leaves both wherever mobilegen was started. The current folder is
    per process: a build runs its stages on one thread, and the paths given to ORT are absolute."""
    folder.mkdir(parents=True, exist_ok=True)
    back = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(back)


@contextlib.contextmanager
def _ort_logs_quiet() -> Iterator[None]:
    """onnxruntime.quantization logs progress and warnings through the root logger."""
    root = logging.getLogger()
    old = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(old)


class _Reader:
    """A ``CalibrationDataReader``: one feed per sample."""

    def __init__(self, samples: Mapping[str, np.ndarray]) -> None:
        n = int(next(iter(samples.values())).shape[0])
        self._feeds = iter([{k: v[i] for k, v in samples.items()} for i in range(n)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._feeds, None)

    def rewind(self) -> None:  # pragma: no cover - part of the reader protocol, unused by quantize_static
        raise NotImplementedError


def _reader(samples: Mapping[str, np.ndarray]) -> Any:
    from onnxruntime.quantization import CalibrationDataReader

    class Reader(_Reader, CalibrationDataReader):  # type: ignore[misc]  # ORT's base class is untyped
        pass

    return Reader(samples)


def _preprocess(src: Path, work: Path, recipe: Recipe) -> Path:
    """``quant_pre_process`` (symbolic + ONNX shape inference, basic optimization), then the provider's own
    steps (:meth:`~mobilegen.providers.base.ExecutionProvider.preprocess`); a recipe of chosen op types
    then gets one bias initializer per node and a name on every node (``nodes_to_exclude`` names them).
    A model the pre-processing cannot take is quantized as it is (the quantizer infers shapes itself)."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    pre = work / "pre.onnx"
    try:
        quant_pre_process(str(src), str(pre))  # in quantize's _cwd: it may save into the current folder
    except Exception:  # noqa: BLE001 — symbolic shape inference refuses some graphs; quantizing still works
        logging.getLogger(__name__).debug("quant_pre_process failed", exc_info=True)
        shutil.copyfile(src, pre)
    provider = providers.find(recipe.provider)
    if provider is not None:
        pre = provider.preprocess(pre, work, recipe)
    if recipe.mode == "int8" and recipe.op_types:
        return named_nodes(own_biases(pre, work), work)
    if recipe.mode == "int8" and recipe.activations is not None:  # the rules leave nodes float by name
        return named_nodes(pre, work)
    return pre


def _qtype(name: str) -> Any:
    from onnxruntime.quantization import QuantType

    types = {"uint8": QuantType.QUInt8, "int8": QuantType.QInt8, "uint16": QuantType.QUInt16, "int16": QuantType.QInt16}
    if name not in types:
        raise InternalError(f"recipe type {name!r} is not an integer quantization type")
    return types[name]


def _method(method: CalibrationMethod) -> Any:
    from onnxruntime.quantization import CalibrationMethod as OrtMethod

    return {"minmax": OrtMethod.MinMax, "entropy": OrtMethod.Entropy, "percentile": OrtMethod.Percentile}[method]


# Rounds of ``_static_for_provider``: each breaks the refused units the previous one made (a float op between
# two quantized ones); one more round is left to see that none remain.
_UNIT_ROUNDS = 3


def _static_for_provider(
    pre: Path, out: Path, recipe: Recipe, calib: Calibration, method: CalibrationMethod, exclude: Sequence[str], ranges: Path
) -> list[str]:
    """``_static``, then again without quantizing the consumers that made a unit the provider refuses.

    The recipe quantizes only ops whose units the provider takes, but a float op between a DQ and the Q its
    consumer adds for its own input (GlobalAveragePool or ReduceMean before a quantized Gemm) still forms
    an ORT node unit (``NodeGroup::CanCreateNodeGroup`` looks at the graph, not at what was meant), which the
    provider refuses whole. Where the provider takes that op in float and standalone Q/DQ, the
    consumer is left float: the unit goes away and the op, the DQ and the Q run on the provider.
    ``exclude``: nodes to leave float from the start; ``ranges``: the calibration cache every round shares.
    Returns the nodes left float by name."""
    left = list(exclude)
    for _ in range(_UNIT_ROUNDS):
        _static(pre, out, recipe, calib, method, left, ranges)
        more = [name for name in refused_unit_breakers(out, recipe, exclude) if name not in left]
        if not more:
            return left
        left += more
    _static(pre, out, recipe, calib, method, left, ranges)
    return left


def _static(
    pre: Path, out: Path, recipe: Recipe, calib: Calibration, method: CalibrationMethod, exclude: list[str] | None = None,
    ranges: Path | None = None,
) -> None:
    from onnxruntime.quantization import QuantFormat, quantize_static

    # The activation ranges are computed once and read back (onnxruntime's calibration cache): every round
    # of a narrowed recipe calibrates the same tensors (leaving nodes float only drops some of them).
    if method in ("entropy", "percentile"):
        cache: Path | None = _histogram_ranges(pre, recipe, calib, method, ranges)
    else:
        cache = ranges
    provider = providers.find(recipe.provider)
    static = StaticQuantization(
        _reader(calib.samples), _method(method), _qtype(recipe.activation_type), _qtype(recipe.weight_type), cache, tuple(exclude or ())
    )
    if provider is not None and provider.quantize_static(pre, out, recipe, static):
        return  # its own configuration may calibrate other tensors, or other ranges: its calibrator computes them
    if method == "minmax":  # quantize_static's own ranges, computed in less memory (_minmax_ranges)
        cache = _minmax_ranges(pre, recipe, calib, cache)
    quantize_static(
        str(pre),
        str(out),
        _reader(calib.samples),
        calibration_cache_path=cache,
        quant_format=QuantFormat.QDQ,
        op_types_to_quantize=list(recipe.op_types) or None,
        nodes_to_exclude=list(exclude or ()) or None,
        per_channel=False,
        activation_type=_qtype(recipe.activation_type),
        weight_type=_qtype(recipe.weight_type),
        calibrate_method=_method(method),
        calibration_providers=["CPUExecutionProvider"],
        extra_options={
            # Symmetric int8 weights (zero point 0): what the int8 recipes' per-channel and u8s8 paths take.
            "WeightSymmetric": recipe.weight_type == "int8",
            "ActivationSymmetric": False,
            "TensorQuantOverrides": _conv_per_channel(pre) if recipe.per_channel else {},
        },
    )


def _histogram_ranges(pre: Path, recipe: Recipe, calib: Calibration, method: CalibrationMethod, cache: Path | None = None) -> Path:
    """Percentile ranges (onnxruntime's defaults), or entropy (KL) ranges computed with 512 histogram bins, handed to ``quantize_static`` as its
    calibration cache: through ``quantize_static`` the entropy calibrator keeps its defaults of 128 bins and
    128 quantized bins, whose only candidate threshold is the full range — min-max under another name
    (measured: identical scales). ``create_calibrator`` in onnxruntime/python/tools/quantization/calibrate.py.
    ORT's KL search is Python: 2048 bins (TensorRT's count) took 95 s on the 37-tensor transformer fixture,
    512 bins 14 s. Both histogram calibrators keep every tensor of every sample of one ``collect_data``
    call (the model's whole activations, times the samples): they get a few samples at a time."""
    from onnxruntime.quantization.calibrate import create_calibrator, save_tensors_data

    cache = cache or pre.with_name(f"{method}-ranges.json")
    if cache.is_file():
        return cache
    calibrator = create_calibrator(
        pre,
        list(recipe.op_types) or None,
        augmented_model_path=str(pre.with_name(f"{method}-augmented.onnx")),
        calibrate_method=_method(method),
        providers=["CPUExecutionProvider"],
        extra_options={"num_bins": 512, "num_quantized_bins": 128} if method == "entropy" else {},
    )
    for batch in _batches(calib.samples):  # histograms of a few samples at a time: each run keeps every tensor
        calibrator.collect_data(_reader(batch))
    save_tensors_data(calibrator.compute_data(), cache)
    return cache


def _minmax_ranges(pre: Path, recipe: Recipe, calib: Calibration, cache: Path | None = None) -> Path:
    """The min-max ranges ``quantize_static`` computes (onnxruntime's ``MinMaxCalibrater`` with its defaults, on
    the tensors of the recipe's op types), written as its calibration cache: the same numbers, from a session
    that runs each tensor's ReduceMin/ReduceMax next to it.

    The calibrator adds a ReduceMin and a ReduceMax per tensor (before the tensor's first consumer) and runs
    the augmented model in a session of its own making, in onnxruntime's default node order, which puts the
    reductions far from their tensors: each run held nearly every activation of the model at once, and the
    session's memory pattern a second block of that size (the Whisper encoder config of
    ``benchmarks/architectures.py``: 575 MB per session, against 27 MB for the model alone).
    ``ExecutionOrder.PRIORITY_BASED`` keeps the graph's own order: 26 MB."""
    from onnxruntime.quantization.calibrate import save_tensors_data

    cache = cache or pre.with_name("minmax-ranges.json")
    if cache.is_file():
        return cache
    calibrator = _minmax_calibrator(pre, list(recipe.op_types) or None, pre.with_name("minmax-augmented.onnx"))
    calibrator.collect_data(_reader(calib.samples))
    save_tensors_data(calibrator.compute_data(), cache)
    del calibrator
    return cache


def _minmax_calibrator(model: Path, op_types: list[str] | None, augmented: Path) -> Any:
    """What ``create_calibrator(model, op_types, str(augmented), CalibrationMethod.MinMax,
    providers=["CPUExecutionProvider"])`` returns (``quantize_static``'s calibrator), its session made with
    :func:`_calibration_session_options`."""
    import onnxruntime as ort
    from onnxruntime.quantization.calibrate import MinMaxCalibrater

    class Calibrater(MinMaxCalibrater):  # type: ignore[misc]  # ORT's class is untyped
        def create_inference_session(self) -> None:
            self.infer_session = ort.InferenceSession(self.augmented_model_path, _calibration_session_options(), providers=self.execution_providers)

    calibrator = Calibrater(model, op_types, str(augmented))
    calibrator.augment_graph()
    calibrator.execution_providers = ["CPUExecutionProvider"]
    calibrator.create_inference_session()
    return calibrator


def _calibration_session_options() -> Any:
    """The calibrator's session options (``CalibraterBase.create_inference_session``: no graph optimization,
    the tensors as named), its nodes run in the graph's order (see :func:`_minmax_ranges`)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.execution_order = ort.ExecutionOrder.PRIORITY_BASED
    return opts


_BATCH = 4  # samples per collect_data call of the histogram (entropy) calibrator


def _batches(samples: Mapping[str, np.ndarray]) -> Iterator[dict[str, np.ndarray]]:
    n = int(next(iter(samples.values())).shape[0])
    for i in range(0, n, _BATCH):
        yield {k: v[i : i + _BATCH] for k, v in samples.items()}


def _conv_per_channel(pre: Path) -> dict[str, list[dict[str, Any]]]:
    """Per-channel (output channel, axis 0) for Conv weights only. ``per_channel=True`` would also split
    MatMul/Gemm weights on axis 1 and LayerNorm scales, which cost the trained transformer fixture accuracy
    (cosine 0.988 against 0.997 per-tensor), and the providers' QDQ units take per-channel weights on Conv only."""
    import onnx

    model = onnx.load_model(str(pre), load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    return {n.input[1]: [{"axis": 0}] for n in model.graph.node if n.op_type == "Conv" and len(n.input) > 1 and n.input[1] in inits}


def _dynamic(pre: Path, out: Path, recipe: Recipe) -> None:
    from onnxruntime.quantization import quantize_dynamic

    quantize_dynamic(
        str(pre),
        str(out),
        op_types_to_quantize=list(recipe.op_types) or None,
        per_channel=recipe.per_channel,
        weight_type=_qtype(recipe.weight_type),
    )


def _fp16(src: Path, out: Path) -> None:
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    model = onnx.load_model(str(src), load_external_data=True)
    converted = convert_float_to_float16(model, keep_io_types=True)
    sort_graph(converted.graph)
    onnx.save_model(converted, str(out))


def sort_graph(graph: onnx.GraphProto) -> None:
    """Order ``graph``'s nodes (and its subgraphs') so each comes after the producers of its inputs, keeping
    the original order wherever it already holds (a depth-first walk, iterative: graphs are deep). The values
    a node's subgraphs read from this graph count as its inputs."""
    nodes = list(graph.node)
    producer = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    for n in nodes:
        for a in n.attribute:
            for sub in (*([a.g] if a.HasField("g") else []), *a.graphs):
                sort_graph(sub)
    deps = [sorted({producer[x] for x in (*n.input, *_free_names(n)) if x in producer}) for n in nodes]
    order: list[int] = []
    state = [0] * len(nodes)  # 0 new, 1 on the stack, 2 placed
    for start in range(len(nodes)):
        stack = [start]
        while stack:
            i = stack[-1]
            if state[i] == 2:
                stack.pop()
                continue
            state[i] = 1
            todo = [d for d in deps[i] if state[d] == 0]
            if todo:
                stack.append(todo[0])
                continue
            state[i] = 2
            order.append(i)
            stack.pop()
    if order != list(range(len(nodes))):
        del graph.node[:]
        graph.node.extend(nodes[i] for i in order)


def _free_names(node: onnx.NodeProto) -> set[str]:
    """Names a node's subgraphs read without producing them: values of the enclosing graph."""
    names: set[str] = set()
    for a in node.attribute:
        for sub in (*([a.g] if a.HasField("g") else []), *a.graphs):
            local = {t.name for t in (*sub.input, *sub.initializer)} | {o for n in sub.node for o in n.output}
            names |= {x for n in sub.node for x in (*n.input, *_free_names(n)) if x and x not in local}
            names |= {o.name for o in sub.output if o.name not in local}
    return names


def _check_loads(src: Path, out: Path) -> None:
    """The quantized model loads in onnxruntime (CPU) and keeps the source's IO names and dtypes."""
    import onnxruntime as ort

    def io(path: Path) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        so = ort.SessionOptions()
        so.log_severity_level = 3  # its failure is raised below; onnxruntime's warnings (unused initializers) say nothing to the user
        sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        return [(i.name, i.type) for i in sess.get_inputs()], [(o.name, o.type) for o in sess.get_outputs()]

    try:
        after = io(out)
    except Exception as err:  # noqa: BLE001 — onnxruntime raises plain exceptions
        raise ConversionError(
            f"the quantized model does not load in onnxruntime: {first_line(err)}",
            hint="try another --quantize mode, or ship fp32 (drop --quantize)",
        ) from err
    before = io(src)
    if before != after:
        raise InternalError(f"quantizing changed the model's inputs/outputs: {before} -> {after}", hint="this is a bug; rerun with --debug")


def _count(model: onnx.ModelProto, recipe: Recipe) -> int:
    nodes = list(model.graph.node)
    if recipe.mode == "int8":
        dq_outputs = {o for n in nodes if n.op_type == "DequantizeLinear" for o in n.output}
        return sum(1 for n in nodes if n.op_type not in QDQ_OPS and any(i in dq_outputs for i in n.input))
    if recipe.mode == "dynamic":
        return sum(1 for n in nodes if n.op_type in DYNAMIC_OPS)
    return sum(1 for n in nodes if n.op_type != "Cast")
