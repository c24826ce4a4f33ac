"""OnnxModel → OrtModel through ``onnxruntime.tools`` (in-process, not a subprocess).

Style: ``Runtime`` by default. The ``Fixed`` style at level "all" bakes Microsoft-only fused ops
(com.microsoft:Gelu, FusedConv...) into the graph, which the accelerator EPs' op builders (standard ONNX
ops only) cannot take; the Runtime style saves a basic-level graph plus optional runtime optimizations,
so the EPs on the device see standard ONNX ops. ``Fixed`` stays available for apps on CPU kernels only.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mobilegen.artifacts import OnnxModel, OrtModel
from mobilegen.convert.ortformat import canonicalize_file, format_version
from mobilegen.errors import ConversionError, InternalError, UsageError, first_line
from mobilegen.infra.digest import remember_written
from mobilegen.infra.memory import release_memory
from mobilegen.infra.outputs import temp_dir
from mobilegen.infra.quiet import quiet
from mobilegen.infra.threads import ORT_NO_SPINNING

STYLES = ("runtime", "fixed")
LEVEL = "all"


def ort_format_version(path: Path) -> int | None:
    """The ``ort_version`` field of the InferenceSession FlatBuffer (ort.fbs), e.g. 6 (read through a map:
    only the pages of the root table are touched, not the weights)."""
    import mmap

    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return None
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return format_version(data)


CONFIG_SUFFIX = ".required_operators.config"


def config_path_for(ort_path: Path) -> Path:
    """``DIR/NAME.ort`` → ``DIR/NAME.required_operators.config`` (onnxruntime's own converter names it so):
    several models converted into one folder each keep their config."""
    ort_path = Path(ort_path)
    if ort_path.name == "required_operators.config" or ort_path.name.endswith(CONFIG_SUFFIX):
        raise UsageError(
            f"-o {ort_path} is named like an operator config",
            hint=f"give the .ort path, e.g. -o model.ort (the config is written beside it as model{CONFIG_SUFFIX})",
        )
    return ort_path.with_name(ort_path.stem + CONFIG_SUFFIX)


Session = Any  # an onnxruntime.InferenceSession (untyped)


class _UseFailed(Exception):
    """What a ``use`` callback raised: its own error, not the conversion's (re-raised as it was)."""


def convert_to_ort(
    model: OnnxModel, out_ort: Path, out_config: Path, *, style: str = "runtime", use: Callable[[Session], None] | None = None
) -> OrtModel:
    """``model``'s ``.ort`` and operator config. ``use(session)``, when given, is called with the converting
    session of the ``.onnx`` once it is made and before it goes (a build runs its verification cases on
    it: the file as onnxruntime loads it, at the conversion's optimization level, without another session
    and its copy of the weights); what it raises is raised as it is."""
    import onnxruntime

    if style not in STYLES:
        raise UsageError(f"unknown optimization style {style!r}", hint="use runtime (for accelerator EPs) or fixed")
    with temp_dir("ort") as work:  # a storage error in here names TMPDIR; the results are written elsewhere
        src = work / "model.onnx"
        try:  # onnxruntime only reads it: a second name for the file when TMPDIR is on the same file system
            os.link(model.path, src)
        except OSError:  # else a copy: a full TMPDIR fails here, with its name (onnxruntime's own write would not say)
            shutil.copyfile(model.path, src)
        raw = work / "model.ort"
        try:
            with quiet():
                ops = _convert(src, raw, work, runtime=style == "runtime", use=use)
        except _UseFailed as err:
            raise err.__cause__ from None  # type: ignore[misc]  # always set: raised from the callback's error
        except Exception as err:  # noqa: BLE001 — ORT raises plain exceptions (Fail, RuntimeError, ...)
            if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
                raise  # a full TMPDIR, not a model problem (temp_dir says so)
            raise ConversionError(
                f"onnxruntime could not convert the model to ORT format: {first_line(err)}",
                hint="the model may use an op or opset this onnxruntime does not implement"
                + ("; re-export it with another opset" if model.exporter == "passthrough" else "; try another --opset"),
            ) from err
        config_text = _clean_config(_config_text(ops), out_ort.name)
        # The converter's layout varies from run to run (hash-map order); rebuild it in sorted order,
        # file to file (the weights are never all in memory).
        tmp_ort = out_ort.with_name(out_ort.name + ".tmp")
        sha256 = canonicalize_file(raw, tmp_ort)
    os.replace(tmp_ort, out_ort)
    remember_written(out_ort, sha256)  # hashed as it was written: the manifest does not read it again
    out_config.write_text(config_text, encoding="utf-8")
    version = ort_format_version(out_ort)
    if version is None:
        raise InternalError(f"{out_ort} is not a readable ORT-format file", hint="this is a bug; rerun with --debug")
    return OrtModel(
        path=out_ort,
        config_path=out_config,
        optimization_style="Runtime" if style == "runtime" else "Fixed",
        optimization_level=LEVEL,
        ort_format_version=version,
        converter_version=onnxruntime.__version__,
        max_opset=model.opset,  # the ai.onnx opset import, read when the model was exported
        sha256=sha256,
    )


Ops = dict[str, dict[int, set[str]]]  # {domain: {opset: {op_type}}}, as onnxruntime's converter collects them


def _convert(src: Path, out_ort: Path, work: Path, *, runtime: bool, use: Callable[[Session], None] | None = None) -> Ops:
    """What ``onnxruntime.tools.convert_onnx_models_to_ort`` does for one model (ORT 1.32: the same session
    options, so the same ``.ort``), with less memory:

    - the converting sessions skip weight prepacking (``session.disable_prepacking``) and the CPU memory
      arena: they are never run, and prepacking happens after the model is saved, so the file is the
      same but a packed copy of every MatMul/Conv weight is not made;
    - the operators for the config are read from each ``.ort`` through a read-only map (the converter
      reads each file into memory twice, and two files at once).

    The Runtime style converts twice, like onnxruntime's converter: the saved model with runtime
    optimizations, and a temporary Fixed one whose operators the config must list too (the runtime
    optimizations may not be applied on the device). The second conversion is skipped when it cannot give
    another graph (:func:`_fixed_same_as_saved`). ``use`` gets the first (the saved model's) session.
    Returns the operators of the converted models."""
    ops: Ops = {}
    _save_ort(src, out_ort, minimal_build="save" if runtime else "", use=use)
    recorded = _collect_ops(out_ort, ops)
    if runtime and not _fixed_same_as_saved(recorded, ops):
        fixed = work / "model.without_runtime_opt.ort"
        _save_ort(src, fixed, minimal_build="apply")
        _collect_ops(fixed, ops)
        fixed.unlink()
    return ops


def _save_ort(src: Path, out: Path, *, minimal_build: str, use: Callable[[Session], None] | None = None) -> None:
    """One converting session (``convert_onnx_models_to_ort._convert``, target platform not given, level
    from ``LEVEL``, NCHWc transformer excluded as the converter does for ARM targets), handed to ``use``
    (its errors wrapped in :class:`_UseFailed`) before it goes."""
    import onnxruntime as ort
    from onnxruntime.tools.onnx_model_utils import get_optimization_level

    so = ort.SessionOptions()
    so.optimized_model_filepath = str(out)
    level = get_optimization_level(LEVEL)
    so.graph_optimization_level = level
    so.add_session_config_entry("session.qdqisint8allowed", "0")
    so.add_session_config_entry("session.save_model_format", "ORT")
    if minimal_build:
        so.add_session_config_entry("optimization.minimal_build_optimizations", minimal_build)
    so.add_session_config_entry("session.disable_prepacking", "1")  # never run: no packed copy of the weights
    so.enable_cpu_mem_arena = False  # nor an arena (its memory would outlive the session in this process)
    so.add_session_config_entry(*ORT_NO_SPINNING)  # ``use``'s runs: idle threads sleep (no effect on the file)
    exclude = ["NchwcTransformer"] if level in (ort.GraphOptimizationLevel.ORT_ENABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_LAYOUT) else None
    session = ort.InferenceSession(str(src), sess_options=so, providers=["CPUExecutionProvider"], disabled_optimizers=exclude)
    if use is not None:
        try:
            use(session)
        except Exception as err:  # noqa: BLE001 — the caller's, whatever it is: raised as it was by convert_to_ort
            raise _UseFailed() from err
    del session  # its weights go before the next session or the canonical copy
    release_memory(collect=False)  # freed when its last reference went


# Operators the "apply" conversion's transformers that record nothing in a saved model act on (onnxruntime
# 1.32, optimizer/graph_transformer_utils.cc, GenerateTransformersForMinimalBuild): QDQFinalCleanupTransformer
# (Q/DQ pairs) and the NhwcTransformer (quantized ops and int8 MaxPool; float16 ones only on ARM hosts).
_APPLY_ONLY_TARGETS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MaxPool"})


def _fixed_same_as_saved(recorded: int, ops: Ops) -> bool:
    """Whether the Runtime style's second (Fixed, "apply") conversion would give the saved model's graph,
    so its operators are the saved model's and the conversion can be skipped. In "apply" mode onnxruntime
    runs the same level-1 transformers as in "save" mode; at higher levels it applies the selector-action
    transformers (the QDQ fusions, ConvActivationFusion) that "save" mode records instead, plus two that
    record nothing (:data:`_APPLY_ONLY_TARGETS`). With no record in any graph and none of those operators,
    nothing differs: a float model with no fusable Conv, e.g. a transformer, converts once."""
    if recorded:
        return False
    types = {t for by_opset in ops.values() for names in by_opset.values() for t in names}
    return not any(t in _APPLY_ONLY_TARGETS or t.startswith("QLinear") or t.endswith("Integer") for t in types)


def _collect_ops(ort_path: Path, ops: Ops) -> int:
    """Add the operators of an ``.ort`` to ``ops`` with onnxruntime's own model processor (every graph,
    subgraphs included), reading the file through a read-only map instead of two in-memory copies.
    Returns how many runtime-optimization records its graphs hold (the "save" mode's)."""
    import mmap

    from onnxruntime.tools.ort_format_model import ort_model_processor

    fbs = ort_model_processor.fbs
    root = fbs.InferenceSession.InferenceSession

    class Mapped(ort_model_processor.OrtFormatModelProcessor):  # type: ignore[misc]  # untyped onnxruntime.tools
        def __init__(self, data: mmap.mmap) -> None:  # the processor's own __init__ reads the file (twice)
            self._required_ops = ops
            self._op_type_processors = None
            self._model = root.GetRootAsInferenceSession(data, 0).Model()
            self.records = 0

        def _process_graph(self, graph: object, outer_scope_value_typeinfo: dict[str, object]) -> None:  # every graph, subgraphs too
            found = graph.RuntimeOptimizations()  # type: ignore[attr-defined]  # a flatbuffers fbs.Graph
            self.records += 0 if found is None else found.RecordsLength()
            super()._process_graph(graph, outer_scope_value_typeinfo)

    with open(ort_path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if not root.InferenceSessionBufferHasIdentifier(data, 0):
            raise InternalError(f"{ort_path.name} is not a readable ORT-format file", hint="this is a bug; rerun with --debug")
        processor = Mapped(data)
        processor.process()
        return processor.records


def _config_text(ops: Ops) -> str:
    """``required_operators.config`` as onnxruntime's ``create_config_from_models`` writes it (no type
    reduction); the model paths of its header are replaced by ``_clean_config``."""
    lines = ["# Generated from model/s:"]
    for domain in sorted(ops):
        for opset in sorted(ops[domain]):
            if ops[domain][opset]:
                lines.append(f"{domain};{opset};{','.join(sorted(ops[domain][opset]))}")
    return "\n".join(lines) + "\n"


def _clean_config(text: str, ort_name: str) -> str:
    """The converter lists absolute temp paths in comments: keep the file reproducible."""
    lines = [ln for ln in text.splitlines() if not re.match(r"^#\s*-\s", ln)]
    out = []
    for ln in lines:
        out.append(ln)
        if ln.startswith("# Generated from model"):
            out.append(f"# - {ort_name}")
    return "\n".join(out) + "\n"
