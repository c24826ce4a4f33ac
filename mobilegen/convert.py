"""OnnxModel → OrtModel through ``onnxruntime.tools`` (in-process, not a subprocess).

Style: ``Runtime`` by default. The ``Fixed`` style at level "all" bakes Microsoft-only fused ops
(com.microsoft:Gelu, FusedConv...) into the graph, which the NNAPI and CoreML EPs cannot take; the
Runtime style saves a basic-level graph plus optional runtime optimizations, so the EPs on the device
see standard ONNX ops. ``Fixed`` stays available for CPU/XNNPACK-only apps.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import shutil
from pathlib import Path

from mobilegen.artifacts import OnnxModel, OrtModel
from mobilegen.errors import ConversionError, InternalError, UsageError, first_line
from mobilegen.export import quiet
from mobilegen.ortformat import canonicalize, format_version
from mobilegen.outputs import temp_dir

STYLES = ("runtime", "fixed")
LEVEL = "all"


def ort_format_version(path: Path) -> int | None:
    """The ``ort_version`` field of the InferenceSession FlatBuffer (ort.fbs), e.g. 6."""
    return format_version(path.read_bytes())


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


def convert_to_ort(model: OnnxModel, out_ort: Path, out_config: Path, *, style: str = "runtime") -> OrtModel:
    import onnxruntime
    from onnxruntime.tools.convert_onnx_models_to_ort import OptimizationStyle, convert_onnx_models_to_ort

    if style not in STYLES:
        raise UsageError(f"unknown optimization style {style!r}", hint="use runtime (for NNAPI/CoreML) or fixed")
    ort_style = OptimizationStyle.Runtime if style == "runtime" else OptimizationStyle.Fixed
    with temp_dir("ort") as work:  # a storage error in here names TMPDIR; the results are written after it
        src = work / "model.onnx"
        shutil.copyfile(model.path, src)
        out_dir = work / "out"
        old_level = os.environ.get("ORT_CONVERT_ONNX_MODELS_TO_ORT_OPTIMIZATION_LEVEL")
        os.environ["ORT_CONVERT_ONNX_MODELS_TO_ORT_OPTIMIZATION_LEVEL"] = LEVEL
        ort_logger = logging.getLogger("ort_format_model.utils")
        old_log = ort_logger.level
        ort_logger.setLevel(logging.WARNING)
        try:
            with quiet():
                convert_onnx_models_to_ort(src, output_dir=out_dir, optimization_styles=[ort_style])
        except Exception as err:  # noqa: BLE001 — ORT raises plain exceptions (Fail, RuntimeError, ...)
            if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
                raise  # a full TMPDIR, not a model problem (temp_dir says so)
            raise ConversionError(
                f"onnxruntime could not convert the model to ORT format: {first_line(err)}",
                hint="the model may use an op or opset this onnxruntime does not implement"
                + ("; re-export it with another opset" if model.exporter == "passthrough" else "; try another --opset"),
            ) from err
        finally:
            ort_logger.setLevel(old_log)
            if old_level is None:
                os.environ.pop("ORT_CONVERT_ONNX_MODELS_TO_ORT_OPTIMIZATION_LEVEL", None)
            else:
                os.environ["ORT_CONVERT_ONNX_MODELS_TO_ORT_OPTIMIZATION_LEVEL"] = old_level
        orts = sorted(out_dir.glob("*.ort"))
        configs = sorted(out_dir.glob("*.config"))
        if len(orts) != 1 or len(configs) != 1:
            raise InternalError("the ORT converter did not write exactly one .ort and one config", hint="this is a bug; rerun with --debug")
        # The converter's layout varies from run to run (hash-map order); rebuild it in sorted order.
        ort_bytes = canonicalize(orts[0].read_bytes())
        config_text = _clean_config(configs[0].read_text(encoding="utf-8"), out_ort.name)
    tmp_ort = out_ort.with_name(out_ort.name + ".tmp")
    tmp_ort.write_bytes(ort_bytes)
    os.replace(tmp_ort, out_ort)
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
    )


def _clean_config(text: str, ort_name: str) -> str:
    """The converter lists absolute temp paths in comments: keep the file reproducible."""
    lines = [ln for ln in text.splitlines() if not re.match(r"^#\s*-\s", ln)]
    out = []
    for ln in lines:
        out.append(ln)
        if ln.startswith("# Generated from model"):
            out.append(f"# - {ort_name}")
    return "\n".join(out) + "\n"
