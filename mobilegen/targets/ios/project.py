"""Render the iOS Swift Package (``templates/ios``) for a converted model.

Input: a :class:`~mobilegen.artifacts.ProjectSpec` and :class:`IosOptions`. Everything the templates
need is computed here (identifiers, escaped literals, shapes, pins) and passed as a plain context;
the templates only place values.

Facts used (see ``shared/research``): the ORT Objective-C API (``objectivec/include/*.h`` as shipped
in ``microsoft/onnxruntime-swift-package-manager``) has tensor element types float, int8, uint8, int32,
uint32, int64, uint64 and string only. The providers' options and their part of the render context are
theirs (``mobilegen.providers.<name>.ios``), asked through :mod:`mobilegen.targets.provider_setup`.
"""

from __future__ import annotations

import math
import re
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from mobilegen.artifacts import ProjectSpec
from mobilegen.errors import InternalError, UsageError
from mobilegen.infra.digest import copy_file, sha256_file
from mobilegen.render import input_contract as ic
from mobilegen.render import library as lib
from mobilegen.render import task_wrappers as tw
from mobilegen.render.lang import swift
from mobilegen.render.markdown import coverage_rows, md_code, md_escape
from mobilegen.render.tree import model_link_context, render_tree, templates_root
from mobilegen.runtimes import RuntimeRelease, find_release
from mobilegen.spec import DTYPES, IOSpec, TensorSpec
from mobilegen.targets import provider_setup, toolchains
from mobilegen.targets.defaults import (
    BENCH_IMAGE_SIZES,
    BENCH_PREPROCESS_MAX_RUNS,
    BENCH_PREPROCESS_MAX_WARMUP,
    default_chain,
    option_flags,
)
from mobilegen.targets.ios import fragments
from mobilegen.targets.ios.options import (
    IosOptions as IosOptions,  # re-exported: mobilegen.IosOptions and the CLI import it from here
)
from mobilegen.targets.tolerances import tolerance_reason

CHANNEL = "swiftpm"
SPM_URL = "https://github.com/microsoft/onnxruntime-swift-package-manager"
SPM_PACKAGE = "onnxruntime-swift-package-manager"
SPM_PRODUCT = "onnxruntime"
SPM_MODULE = "OnnxRuntimeBindings"
COCOAPODS_POD = "onnxruntime-objc"
COCOAPODS_MODULE = "onnxruntime_objc"
# Swift tools / language modes, platforms, XcodeGen: one sourced table in mobilegen.targets.toolchains.
SWIFT_TOOLS_VERSION = toolchains.IOS["swift_tools_version"].value
SWIFT_LANGUAGE_VERSIONS = tuple(toolchains.IOS["swift_language_versions"].value.split(","))
IOS_MIN = toolchains.IOS["ios_min"].value
MACOS_MIN = toolchains.IOS["macos_min"].value
COCOAPODS_IOS_MIN = "15.1"

PLATFORM = "ios"

# dtype → (Swift element type, ORTTensorElementDataType case as Swift imports it). Swift lowercases
# only the leading "U" of "UInt8", hence ``uInt8`` (as in public code using the SPM package).
SWIFT_ELEMENT_TYPES: dict[str, tuple[str, str]] = {
    "float32": ("Float", "float"),
    "int8": ("Int8", "int8"),
    "uint8": ("UInt8", "uInt8"),
    "int32": ("Int32", "int32"),
    "uint32": ("UInt32", "uInt32"),
    "int64": ("Int64", "int64"),
    "uint64": ("UInt64", "uInt64"),
}

_UNSUPPORTED_HINTS = {
    "float16": "make the model take/return float32 at its boundary (e.g. `.float()` on inputs and outputs; the Obj-C API has no float16 tensors)",
    "bfloat16": "make the model take/return float32 at its boundary (the Obj-C API has no bfloat16 tensors)",
    "float64": "use float32 (`.float()`); the Obj-C API has no double tensors",
    "bool": "return/accept uint8 instead (`x.to(torch.uint8)`); the Obj-C API has no bool tensors",
    "int16": "use int32 (`x.to(torch.int32)`); the Obj-C API has no int16 tensors",
    "uint16": "use int32; the Obj-C API has no uint16 tensors",
    "string": "mobilegen's Swift wrapper handles numeric tensors only; move string handling out of the model",
}

# Members of the generated class and structs: tensor identifiers must not take these names.
GENERATED_MEMBERS = frozenset(
    """
    modelName inputNames outputNames modelURL modelResourceName load prediction warmUp configuration
    activeExecutionProviders session environment queue makeTensor readTensor
    makeSession sessionOptions zeroInput Configuration
    ExecutionProvider SharedEnvironment TaskError RGBImage ImageInput
    skippedProviders openSession appendProvider
    Classification Labels Scores classify classifications pcmInput run init deinit description debugDescription hash hashValue self Type
    ResizeFilter AudioInput Stream graphInput runPCM16 runFloat classifyPCM16 classifyFloat
    Protocol libraryVersion inputContracts InputContract
    outputsLock reusedOutputs ReusedOutputs copyOut
    Runtime runtime coreAI coreAIUnavailableReason preferCoreAI waitFor ResultBox
    """.split()
)


def generated_members() -> frozenset[str]:
    """:data:`GENERATED_MEMBERS` and the members the registry's iOS providers add to the wrapper: each planned
    provider's ``<case>UnavailableReason`` and the ``swift_members`` of its template data."""
    from mobilegen import providers

    planned = {e["unavailable"] for e in fragments.entries("plan.swift.jinja")}
    declared = {m for p in providers.on_platform(PLATFORM) for m in p.template_data(PLATFORM).get("swift_members", ())}
    return GENERATED_MEMBERS | planned | declared


# Derived names of one tensor: the data property and its shape (Input/Output property, declared-shape constant).
_TENSOR_SUFFIXES = ("", "Shape")


_MODEL_RESOURCE_EXT = "ort"
_GOLDEN_RESOURCE = "golden.mgv"


def validate_ios_options(opts: IosOptions) -> IosOptions:
    """Refuse bad flag values (UsageError, exit 2), listing every problem at once."""
    problems, hints = provider_setup.problems(PLATFORM, opts)
    if opts.lib_version is not None and (vp := lib.swiftpm_version_problem(opts.lib_version)) is not None:
        problems.append(vp)
        hints.append(lib.SWIFTPM_VERSION_HINT)
    if opts.class_name is not None:
        problem = swift.type_name_problem(opts.class_name)
        if problem is not None:
            problems.append(f"--name {opts.class_name!r} cannot name the generated Swift type: {problem}")
            hints.append(f"use a PascalCase name such as {swift.swift_type_name(opts.class_name)!r}")
    if problems:
        raise UsageError("; ".join(problems), hint="; ".join(hints), details=problems)
    return opts


def ios_runtime(opts: IosOptions) -> RuntimeRelease:
    """The ORT release pinned in Package.swift (from the shared runtime table, SwiftPM channel)."""
    return find_release(opts.ort_version, CHANNEL)


def check_ios_io(io: IOSpec) -> None:
    """Refuse inputs/outputs the Objective-C API cannot hold; name every offending tensor at once."""
    details: list[str] = []
    hints: list[str] = []
    for role, tensors in (("input", io.inputs), ("output", io.outputs)):
        for t in tensors:
            if t.dtype in SWIFT_ELEMENT_TYPES:
                continue
            details.append(f"{role} {t.name!r} is {t.dtype}")
            hint = _UNSUPPORTED_HINTS.get(t.dtype, "use float32, int32, int64, uint8 or int8")
            if hint not in hints:
                hints.append(hint)
    if details:
        raise UsageError(
            "; ".join(details)
            + ": ONNX Runtime's Objective-C API (used from Swift) has no such element type"
            + " (it has float32, int8, uint8, int32, uint32, int64, uint64)",
            hint="; ".join(hints),
            details=details,
        )


def accelerated_tolerances(spec: ProjectSpec, opts: IosOptions) -> tuple[float, float]:
    """(atol, rtol) asserted for the accelerated configuration (the wrapper's headline provider switched on).

    ``spec.accel_atol`` / ``spec.accel_rtol`` win when set. Otherwise, when a provider's options let the
    device compute in float16 (its ``fp16_reason``: a GPU or Neural Engine computing in float16, ~3
    significant digits), the build-time tolerances are widened to at least
    :data:`~mobilegen.artifacts.FP16_TOLERANCE`. Pure.
    """
    return spec.accelerated_tolerances(fp16=bool(provider_setup.fp16_reason(PLATFORM, opts)))


def _tolerance_reason(spec: ProjectSpec, opts: IosOptions) -> str:
    """Why the accelerated configuration asserts the tolerance it does (one README sentence)."""
    if spec.accel_atol is not None or spec.accel_rtol is not None:
        return "set explicitly for the accelerated configuration when the package was generated"
    if reason := provider_setup.fp16_reason(PLATFORM, opts):
        return reason
    if spec.quantization:  # a quantized model computes in integers (or float16), not in float32

        return tolerance_reason(spec.quantization)
    return provider_setup.float32_reason(PLATFORM, opts, "the accelerated configuration computes in float32, like the CPU provider")


def class_name_for(spec: ProjectSpec, opts: IosOptions) -> str:
    if opts.class_name is not None:
        return swift.check_type_name(opts.class_name)
    return swift.swift_type_name(spec.model_name)


# --- context -------------------------------------------------------------------------------------


def _tensor_context(t: TensorSpec, ident: str, shape_ident: str, index: int, role: str) -> dict[str, Any]:
    swift_type, ort_case = SWIFT_ELEMENT_TYPES[t.dtype]
    dims = [d if isinstance(d, int) else -1 for d in t.shape]
    warm_dims = [d if isinstance(d, int) else 1 for d in t.shape]
    dynamic = [str(d) for d in t.shape if isinstance(d, str)]
    shape_text = t.shape_str()
    doc = f"`{t.name}`: {t.dtype}, shape [{', '.join(str(d) for d in t.shape)}]"
    if dynamic:
        doc += " (named dims are dynamic: -1 in the shape constant)"
    return {
        "index": index,
        "role": role,
        "name": t.name,
        "literal": swift.swift_string(t.name),
        "ident": ident,
        "shape_ident": shape_ident,
        "swift_type": swift_type,
        "ort_case": ort_case,
        "onnx_code": DTYPES[t.dtype],
        "dtype": t.dtype,
        "is_static": t.is_static,
        "dims": swift.swift_int_array(dims),
        "warm_dims": swift.swift_int_array(warm_dims),
        "warm_count": math.prod(warm_dims),
        "element_count": math.prod(dims) if t.is_static else None,
        "doc": swift.swift_comment(doc),
        "md_name": md_code(t.name),
        "md_shape": md_escape(shape_text),
    }


def _swift_versions_literal(versions: tuple[str, ...]) -> str:
    """``("6", "5")`` -> ``[.version("6"), .v5]`` (PackageDescription's SwiftVersion spellings in a 5.9 manifest)."""
    named = {"4": ".v4", "4.2": ".v4_2", "5": ".v5"}
    return "[" + ", ".join(named.get(v, f'.version("{v}")') for v in versions) + "]"


def ios_context(spec: ProjectSpec, opts: IosOptions, *, model_sha256: str, coreai: CoreAIModel | None = None) -> dict[str, Any]:
    """The render context of ``templates/ios`` (pure; exposed for tests). ``coreai``: the Core AI model shipped
    beside the ORT one (``--runtime coreai``), or None (the ORT build alone, rendered exactly as before)."""
    validate_ios_options(opts)
    check_ios_io(spec.io)
    # The pipeline pins spec.ort_version from ios_runtime(opts); either way it must be a SwiftPM release.
    ort_version = find_release(spec.ort_version or opts.ort_version, CHANNEL).version
    class_name = class_name_for(spec, opts)

    namer = swift.SwiftNamer(reserved=generated_members() | {class_name})
    tensors = [("input", i, t) for i, t in enumerate(spec.io.inputs)] + [
        ("output", i, t) for i, t in enumerate(spec.io.outputs)
    ]
    # One family per tensor: data property S and shape S + "Shape" (Input/Output property and declared
    # shape constant), claimed together so a shape name is never another tensor's data name.
    idents = [namer.name_group(t.name, _TENSOR_SUFFIXES, fallback=f"{role}{i}") for role, i, t in tensors]
    ctx_tensors = [
        _tensor_context(t, ident, ident + "Shape", i, role) for (role, i, t), ident in zip(tensors, idents, strict=True)
    ]
    inputs = [c for c in ctx_tensors if c["role"] == "input"]
    contracts = ic.infer_contracts(spec.task, spec.io)
    for ctx, c in zip(inputs, contracts, strict=True):
        ctx["contract"] = {
            "layout": swift.swift_string(c.layout),
            "layout_guessed": "true" if c.layout_guessed else "false",
            "dtype": swift.swift_string(c.dtype),
            "value_range": swift.swift_string(c.value_range),
            "normalization": swift.swift_string(c.normalization),
            "channel_order": swift.swift_string(c.channel_order),
            "resize": swift.swift_string(c.resize),
        }
    outputs = [c for c in ctx_tensors if c["role"] == "output"]
    accel_atol, accel_rtol = accelerated_tolerances(spec, opts)
    task = tw.task_context(tw.mobile_task(spec.task, spec.io), inputs, outputs)

    return {
        **_coreai_context(coreai, class_name, inputs, outputs, spec.accelerated_tolerances(fp16=True)),
        "class_name": class_name,
        "target": class_name,
        "module": class_name,
        "test_target": f"{class_name}Tests",
        "app_name": f"{class_name}Demo",
        "bundle_id": f"ai.mobilegen.demo.{class_name.lower()}",
        "model_name": spec.model_name,
        "model_name_literal": swift.swift_string(spec.model_name),
        "model_name_comment": swift.swift_comment(spec.model_name),
        "model_name_md": md_escape(spec.model_name),
        "contract_rows": ic.contract_rows(contracts),
        "library_version": opts.lib_version or lib.DEFAULT_VERSION,
        "model_resource": class_name,
        "model_resource_ext": _MODEL_RESOURCE_EXT,
        "model_file": f"{class_name}.{_MODEL_RESOURCE_EXT}",
        "model_sha256": model_sha256,
        # mobilegen package: the model stays in the package's model/ folder; scripts/fetch-model.sh copies it
        # into Sources/<target>/Resources, checking size and sha256 (None: the model is there already)
        "model_link": model_link_context(spec.model_link),
        "fetch_model_script": FETCH_MODEL_SCRIPT.rpartition("/")[2] if spec.model_link is not None else "",
        "golden_resource": _GOLDEN_RESOURCE,
        "model_cache_id": f"{class_name}-{model_sha256[:12]}",  # a provider's compiled-model cache folder (the model's hash)
        "inputs": inputs,
        "outputs": outputs,
        "is_static": spec.io.is_static,
        # Every output has a fixed shape with at least one element: the wrapper runs into its reused output
        # buffers (ORTSession's run(withInputs:outputs:runOptions:) takes a value for each output it returns).
        "outputs_reused": all(t["element_count"] for t in outputs),
        "atol": swift.swift_float(spec.atol),
        "rtol": swift.swift_float(spec.rtol),
        "accel_atol": swift.swift_float(accel_atol),
        "accel_rtol": swift.swift_float(accel_rtol),
        "accel_tolerance_reason": _tolerance_reason(spec, opts),
        **provider_setup.context(PLATFORM, opts),  # each provider's variables (mobilegen.providers.<name>.ios)
        **fragments.context(opts, coreai=coreai is not None),  # the providers' pieces (templates/providers/<name>/ios/)
        # the benchmark's "default" configuration: init() with the default Configuration (mobilegen.targets.defaults)
        "bench_default": [p.name for p in default_chain("ios", option_flags(opts))],
        "bench_default_ort_names": [p.ort_name for p in default_chain("ios", option_flags(opts))],
        "bench_image_sizes": [list(s) for s in BENCH_IMAGE_SIZES],
        "bench_preprocess_max_runs": BENCH_PREPROCESS_MAX_RUNS,
        "bench_preprocess_max_warmup": BENCH_PREPROCESS_MAX_WARMUP,
        # --task (mobilegen.render.task_wrappers): the task-level API renders only with a task.
        "task": task,
        "task_swift_file": f"{class_name}+Task.swift" if task else "",
        # Camera input (issue 31): the sample app's AVCaptureVideoDataOutput delegate, for image tasks only.
        "camera_swift_file": "CameraFrames.swift" if task and task["is_image"] else "",
        # Text tasks (mobilegen.tasks.text): TextTokenizer.swift renders only for them.
        "tokenizer_swift_file": "TextTokenizer.swift" if task and task["is_text"] else "",
        "labels_resource": tw.LABELS_FILE.rsplit(".", 1)[0],
        "labels_resource_ext": tw.LABELS_FILE.rsplit(".", 1)[1],
        "labels_file": tw.LABELS_FILE if task and task["is_classification"] else "",
        "task_test_swift_file": f"{class_name}TaskTests.swift" if task and tw.task_golden_dir(spec) else "",
        "require_static": "true" if spec.io.is_static else "false",
        "ort_version": ort_version,
        "spm_url": SPM_URL,
        "spm_package": SPM_PACKAGE,
        "spm_product": SPM_PRODUCT,
        "spm_module": SPM_MODULE,
        "cocoapods_pod": COCOAPODS_POD,
        "cocoapods_module": COCOAPODS_MODULE,
        "cocoapods_ios_min": COCOAPODS_IOS_MIN,
        "swift_tools_version": SWIFT_TOOLS_VERSION,
        "swift_language_versions": _swift_versions_literal(SWIFT_LANGUAGE_VERSIONS),
        "swift_language_modes_md": " and ".join(SWIFT_LANGUAGE_VERSIONS),
        "xcodegen_min": toolchains.IOS["xcodegen_min"].value,
        "xcodegen_project_format": toolchains.IOS["xcodegen_project_format"].value,
        "app_swift_version": toolchains.IOS["app_swift_version"].value,
        "ios_min": IOS_MIN,
        "macos_min": MACOS_MIN,
        "mobilegen_version": swift.swift_comment(spec.mobilegen_version or "dev"),
        "coverage": coverage_rows(spec.coverage),
        "notes": [md_escape(n) for n in spec.notes],
    }


@dataclass(frozen=True)
class CoreAIModel:
    """The Core AI model rendered beside the ORT one: its ``.aimodel`` folder and the inputs it takes as
    int32 where the ORT model takes int64 (``mobilegen.backends.coreai.convert.CoreAIArtifact.narrowed``)."""

    folder: Path
    narrowed: tuple[str, ...] = ()


CORE_AI_FUNCTION = "main"  # the converted program's entry point (mobilegen.backends.coreai.facts.FUNCTION)
_CORE_AI_INT = {"Int64": "Int32", "UInt64": "UInt32"}
_CORE_AI_NARROWED = ("int64", "uint64")  # the dtypes Core AI takes as 32-bit (mobilegen.backends.coreai.facts.NARROWED)


def _coreai_context(
    coreai: CoreAIModel | None, class_name: str, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]], tolerances: tuple[float, float] = (0.0, 0.0)
) -> dict[str, Any]:
    """The Core AI part of the context: empty names (nothing rendered) without it. ``tolerances``: the (atol,
    rtol) its golden-vector test asserts (Core AI may run the model in float16 on the GPU / Neural Engine)."""
    if coreai is None:
        return {"coreai": False, "coreai_swift_file": "", "coreai_tests_file": "", "coreai_inputs": [], "coreai_outputs": []}
    core_in = [t | {"narrowed": t["name"] in coreai.narrowed, "core_swift_type": _CORE_AI_INT.get(t["swift_type"], t["swift_type"])} for t in inputs]
    core_out = [t | {"core_swift_type": _CORE_AI_INT.get(t["swift_type"], t["swift_type"])} for t in outputs]
    return {
        "coreai": True,
        "coreai_swift_file": f"{class_name}+CoreAI.swift",
        "coreai_tests_file": f"{class_name}CoreAITests.swift",  # the golden-vector and benchmark XCTests on Core AI
        "coreai_atol": repr(float(tolerances[0])),
        "coreai_rtol": repr(float(tolerances[1])),
        "coreai_resource": class_name,
        "coreai_resource_ext": "aimodel",
        "coreai_model_file": f"{class_name}.aimodel",
        "coreai_function": CORE_AI_FUNCTION,
        "coreai_inputs": core_in,
        "coreai_outputs": core_out,
    }


# mobilegen package: the script that copies the package's model into the Swift package (relative to ios/)
FETCH_MODEL_SCRIPT = "scripts/fetch-model.sh"


def render_ios(spec: ProjectSpec, opts: IosOptions, dest: Path, *, coreai: CoreAIModel | None = None) -> list[PurePosixPath]:
    """Render the Swift package into ``dest`` (must not exist); returns the written paths, sorted. With
    ``coreai``, the package also holds the Core AI model and the Swift that runs it on iOS / macOS 27+.

    On any failure nothing is left behind: ``dest`` is removed again.
    """
    if dest.exists():
        raise UsageError(f"{dest} already exists", hint="choose another output folder or pass --force")
    for label, path in (("model", spec.model_file), ("golden vectors", spec.golden_mgv)):
        if not path.is_file():
            raise InternalError(f"the {label} file {path} does not exist", hint="this is a bug in the pipeline; please report it")
    sha = spec.model_link.sha256 if spec.model_link is not None else sha256_file(spec.model_file)  # hashed once
    if coreai is None and spec.runtime == "coreai" and spec.runtime_model is not None:  # --runtime coreai (the build)
        coreai = CoreAIModel(spec.runtime_model, tuple(t.name for t in spec.io.inputs if t.dtype in _CORE_AI_NARROWED))
    if coreai is not None and not coreai.folder.is_dir():
        raise InternalError(f"the Core AI model {coreai.folder} is not a folder", hint="this is a bug in the pipeline; please report it")
    context = ios_context(spec, opts, model_sha256=sha, coreai=coreai)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", context["target"]) or not re.fullmatch(r"[A-Za-z0-9_.]+", context["model_file"]):
        raise InternalError("the Swift target or model resource name is not a plain identifier", hint="this is a bug in mobilegen's Swift sanitizer")
    try:
        written = render_tree(templates_root() / "ios", context, dest, filters=swift.FILTERS)
        extra = {PurePosixPath("Tests", context["test_target"], "Resources", _GOLDEN_RESOURCE): spec.golden_mgv}
        if spec.model_link is None:  # a standalone project holds its model; a package's fetches it (scripts/fetch-model.sh)
            extra[PurePosixPath("Sources", context["target"], "Resources", context["model_file"])] = spec.model_file
        for rel, src in extra.items():
            target = dest.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            copy_file(src, target)  # a model's recorded digest goes with it
            written.append(rel)
        if coreai is not None:  # the .aimodel is a folder: every file in it, byte for byte
            folder = PurePosixPath("Sources", context["target"], "Resources", context["coreai_model_file"])
            for src in sorted(p for p in coreai.folder.rglob("*") if p.is_file()):
                rel = folder / src.relative_to(coreai.folder).as_posix()
                target = dest.joinpath(*rel.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, target)
                written.append(rel)
        written += tw.write_labels(dest, PurePosixPath("Sources", context["target"], "Resources", tw.LABELS_FILE), spec.task)
        written += tw.copy_tokenizer(dest, PurePosixPath("Sources", context["target"], "Resources", tw.TOKENIZER_FILE), spec)
        golden_task = tw.task_golden_dir(spec)
        written += tw.copy_task_golden(dest, PurePosixPath("Tests", context["test_target"], "Resources", "task"), golden_task)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return sorted(written)
