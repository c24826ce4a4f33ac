"""What the JavaScript targets (Web, React Native) share: the typed wrapper's context, the dtype table,
the IO check and the golden files, rendered from ``templates/js`` (the same wrapper, golden decoder and
tensor checks on both; only ``src/ort.ts`` differs, from each target's own templates).

Facts (``shared/research/rn-web-2026-11-27.md``): onnxruntime-common's ``Tensor`` takes the typed arrays
below per element type (bool as ``Uint8Array``, int64 as ``BigInt64Array``, float16 as the raw bits in a
``Uint16Array``); it has no bfloat16 tensors, and the wrapper handles numeric tensors only.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from mobilegen.artifacts import ProjectSpec
from mobilegen.errors import InternalError, UsageError
from mobilegen.infra.digest import copy_file
from mobilegen.render import task_wrappers as tw
from mobilegen.render.lang import typescript as ts
from mobilegen.render.markdown import md_code, md_escape
from mobilegen.render.tree import render_tree, templates_root
from mobilegen.spec import IOSpec, TensorSpec

# dtype -> the typed array the wrapper takes and returns (tensors.ts ARRAY_TYPES must agree)
ARRAY_TYPES: dict[str, str] = {
    "float32": "Float32Array",
    "float64": "Float64Array",
    "float16": "Uint16Array",
    "int8": "Int8Array",
    "uint8": "Uint8Array",
    "bool": "Uint8Array",
    "int16": "Int16Array",
    "uint16": "Uint16Array",
    "int32": "Int32Array",
    "uint32": "Uint32Array",
    "int64": "BigInt64Array",
    "uint64": "BigUint64Array",
}

# Pinned npm versions of the generated packages' tools (their lock files are template data).
TYPESCRIPT_VERSION = "5.9.3"  # ts-jest 29 refuses TypeScript 7


@dataclass(frozen=True)
class JsOptions:
    class_name: str | None = None
    ort_version: str | None = None


def check_js_io(io: IOSpec, runtime: str) -> None:
    """Refuse tensors onnxruntime's JS Tensor cannot carry (naming every one)."""
    details = [
        f"{role} {t.name!r} is {t.dtype}"
        for role, tensors in (("input", io.inputs), ("output", io.outputs))
        for t in tensors
        if t.dtype not in ARRAY_TYPES
    ]
    if details:
        raise UsageError(
            "; ".join(details) + f": the generated {runtime} wrapper carries numeric and bool tensors only",
            hint="make the model take/return float32 (or an integer type) at its boundary",
            details=details,
        )


def validate_js_options(opts: JsOptions) -> None:
    if opts.class_name is not None:
        ts.check_type_name(opts.class_name)


def class_name_for(spec: ProjectSpec, opts: JsOptions) -> str:
    return ts.check_type_name(opts.class_name) if opts.class_name is not None else ts.ts_type_name(spec.model_name)


def _tensor(t: TensorSpec) -> dict[str, Any]:
    dims = ", ".join(str(d) if isinstance(d, int) else "null" for d in t.shape)
    doc = f"{t.name}: {t.dtype}, shape [{', '.join(str(d) for d in t.shape)}]"
    return {
        "name": t.name,
        "dtype": t.dtype,
        "dims": dims,
        "array_type": ARRAY_TYPES[t.dtype],
        "doc": doc,
        "md_name": md_code(t.name),
        "md_shape": md_escape(t.shape_str()),
    }


def golden_files(spec: ProjectSpec) -> list[Path]:
    """The model's golden files: its .mgv (case 0) and every ``golden*.npz`` next to it (all cases)."""
    folder = spec.golden_mgv.parent
    return [spec.golden_mgv, *sorted(folder.glob("golden*.npz"))]


def js_context(spec: ProjectSpec, opts: JsOptions, *, model_file: str, golden_dir: str, asset_dir: str) -> dict[str, Any]:
    """The render context of ``templates/js`` and the targets' own templates (pure but for listing files).
    ``asset_dir``: the package folder the model's data files (labels, tokenizer) ship in."""
    validate_js_options(opts)
    class_name = class_name_for(spec, opts)
    files = [f"{golden_dir}/{p.name}" for p in golden_files(spec)]
    inputs = [_tensor(t) for t in spec.io.inputs]
    outputs = [_tensor(t) for t in spec.io.outputs]
    task = tw.task_context(tw.mobile_task(spec.task, spec.io), inputs, outputs)
    golden_task = tw.task_golden_dir(spec) if task else None
    return {
        "class_name": class_name,
        "model_name": spec.model_name,
        "model_name_md": md_escape(spec.model_name),
        "mobilegen_version": spec.mobilegen_version or "dev",
        "inputs": inputs,
        "outputs": outputs,
        "atol": ts.ts_number(spec.atol),
        "rtol": ts.ts_number(spec.rtol),
        "model_file": model_file,
        "golden_files_json": "[" + ", ".join(ts.ts_string(f) for f in files) + "]",
        "golden_files": files,
        "typescript_version": TYPESCRIPT_VERSION,
        "quantization": spec.quantization,
        "notes": [md_escape(n) for n in spec.notes],
        # --task (mobilegen.render.task_wrappers): the task API's files render only with a task
        "task": task,
        "task_file": "task.ts" if task else "",
        "pixels_file": "pixels.ts" if task and task["is_image"] else "",
        "tokenizer_file": "tokenizer.ts" if task and task["is_text"] else "",
        "task_test_file": "task-replay.ts" if golden_task is not None else "",
        "task_golden": golden_task is not None,
        "jest_task_test": "task.test.ts" if golden_task is not None else "",
        "labels_path": f"{asset_dir}/{tw.LABELS_FILE}" if task and task["is_classification"] else "",
        "tokenizer_path": f"{asset_dir}/{tw.TOKENIZER_FILE}" if task and task["is_text"] else "",
    }


def render_js(spec: ProjectSpec, target_templates: str, context: dict[str, Any], dest: Path, extra: dict[PurePosixPath, Path]) -> list[PurePosixPath]:
    """Render ``templates/js`` then ``templates/<target_templates>`` into ``dest`` (must not exist) and copy
    ``extra`` files (package path -> source); nothing is left behind on failure."""
    if dest.exists():
        raise UsageError(f"{dest} already exists", hint="choose another output folder or pass --force")
    for label, path in (("model", spec.model_file), ("golden vectors", spec.golden_mgv)):
        if not path.is_file():
            raise InternalError(f"the {label} file {path} does not exist", hint="this is a bug in the pipeline; please report it")
    try:
        written = render_tree(templates_root() / "js", context, dest, filters=ts.FILTERS)
        written += render_tree(templates_root() / target_templates, context, dest, filters=ts.FILTERS)
        for p in golden_files(spec):
            extra[PurePosixPath("test", "golden", p.name)] = p
        task = context.get("task")
        if task:
            if context["labels_path"]:
                written += tw.write_labels(dest, PurePosixPath(context["labels_path"]), spec.task)
            if context["tokenizer_path"]:
                written += tw.copy_tokenizer(dest, PurePosixPath(context["tokenizer_path"]), spec)
            written += tw.copy_task_golden(dest, PurePosixPath("test", "golden", "task"), tw.task_golden_dir(spec))
        for rel, src in extra.items():
            target = dest.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            copy_file(src, target)  # a model's recorded digest goes with it
            written.append(rel)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return sorted(set(written))


def json_text(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=True)
