"""Render the Android project (``templates/android``) for one model.

Everything the templates print is computed here: safe identifiers and escaped literals come from
:mod:`mobilegen.render.lang.kotlin`, versions from :mod:`mobilegen.runtimes` and :data:`TOOLCHAIN`. The
templates only place values.
"""

from __future__ import annotations

import math
import re
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from mobilegen import backends, providers
from mobilegen.artifacts import ProjectSpec
from mobilegen.errors import InternalError, UsageError
from mobilegen.infra.digest import copy_file
from mobilegen.render import input_contract as ic
from mobilegen.render import library as lib
from mobilegen.render import task_wrappers as tw
from mobilegen.render.lang import kotlin as kt
from mobilegen.render.markdown import coverage_rows, md_escape
from mobilegen.render.tree import model_link_context, render_tree, templates_root
from mobilegen.runtimes import RuntimeRelease, find_release
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.targets import provider_setup, toolchains
from mobilegen.targets.android import runtime
from mobilegen.targets.android.options import AndroidOptions as AndroidOptions
from mobilegen.targets.defaults import (
    BENCH_IMAGE_SIZES,
    BENCH_PREPROCESS_MAX_RUNS,
    BENCH_PREPROCESS_MAX_WARMUP,
)
from mobilegen.targets.provider_setup import template_providers
from mobilegen.targets.tolerances import tolerance_reason

CHANNEL = runtime.CHANNEL

# Android build toolchain and library versions pinned in the generated project: one sourced table,
# checked against the published compatibility tables, in mobilegen.targets.toolchains.
TOOLCHAIN: dict[str, str] = toolchains.android_versions()
COMPILE_SDK = int(TOOLCHAIN["compile_sdk"])
TARGET_SDK = int(TOOLCHAIN["target_sdk"])
MIN_SDK = int(TOOLCHAIN["min_sdk"])  # every official ORT Android sample; the full AAR itself is built for 21+
PLATFORM = runtime.PLATFORM

# Classes the generated package always defines (plus Android's generated R / BuildConfig).
FIXED_CLASS_NAMES = frozenset(
    {
        "Inputs",
        "Outputs",
        "Options",
        "R",
        "BuildConfig",
        "ModelSupport",
        "GoldenVectors",
        "GoldenTensor",
        "ExecutionProvider",
        "ProviderPlan",
        "MainActivity",
        "Companion",
        # the benchmark (androidTest: <package>.bench and <Class>BenchmarkTest)
        "BenchmarkTest",
        "BenchConfig",
        "BenchConfigs",
        "DeviceInfo",
        "ModelBenchmark",
        "Placement",
        "Json",
        "Obj",
        "Reader",
        # the wrapper's reused output tensors and input buffers (issue 31: direct, reused buffers)
        "PinnedOutputs",
        "ReusedInputs",
    }
) | frozenset(
    # java.* / android.* / JUnit types the benchmark names
    "Assume File HashSet Instrumentation LinkageError MessageDigest StringBuilder Triple".split()
) | frozenset(
    # Types the templates name without a package (Kotlin's built-ins, java.*, android.*, ONNX Runtime's):
    # a wrapper class of the same name would shadow them in its package (a model called "int" -> Int).
    # tests/unit/test_generated_names.py checks the templates name no other capitalised type.
    """Activity AndroidJUnit4 Any Array ArrayList Assert AutoCloseable Boolean BooleanArray
    BufferUnderflowException Build Bundle Byte ByteArray ByteArrayOutputStream ByteBuffer ByteOrder
    CancellationException Char Charsets ComponentActivity Context Dispatchers Double DoubleArray DoubleBuffer
    EnumSet Exception ExecutorService Executors Float
    FloatArray FloatBuffer GoldenTest GoldenVectorsTest IllegalArgumentException IllegalStateException Ignore
    InstrumentationRegistry Int IntArray IntBuffer JvmField JvmName JvmOverloads JvmStatic LinkedHashMap List
    Log Long LongArray LongBuffer Map Math ModelSupportTest MutableList MutableMap NoSuchElementException
    Nothing Number OnnxJavaType OnnxTensor OrtEnvironment OrtException OrtProvider OrtSession Pair Path
    ReentrantLock ReentrantReadWriteLock Result Buffer RunWith Runtime ScrollView SessionOptions Set Short ShortArray ShortBuffer
    StandardCharsets String System Test TextView Throwable Throws Type Unit ViewCompat WindowInsetsCompat
    Bitmap Classification CoroutineDispatcher FileChannel FileInputStream FileNotFoundException ImageInput Labels
    RgbImage Scores TaskTest JSONObject Android Config MapMode File Os CRC32 ResizeFilter AudioInput""".split()
) | frozenset(
    # LiteRT's types the --runtime litert wrapper names (templates/backends/litert/android)
    "Accelerator AssetManager CompiledModel LiteRtException ReentrantLock TensorBuffer".split()
) | frozenset(
    # the task-level API's and the tokenizer's types and the JDK/Android types they name (--task)
    """AddedToken BitmapSource CameraInput CharArray CharClass Character CropRect Encoding Form Found FrameSampler
    HashMap ImageAnalysis ImageFormat ImageProxy InputStream MiniJson Normalizer OutOfMemoryError Parser Piece
    PixelFormat Rect RuntimeException Seg Source Suppress Text Tokenizer TokenizerAssetException""".split()
)

# Every name the templates declare in the scopes tensor-derived names live in, so that no derived name
# can ever equal one of them (tests/unit/test_generated_names.py checks this list against the rendered
# wrapper). lowerCamel namespace: members of the wrapper class, its companion and its Inputs/Outputs
# (including Any's), the Android extension, and the file-private helpers of the wrapper file.
RESERVED_MEMBERS = frozenset(
    """
    equals hashCode toString copy close run create newInstance inputs outputs options session sessionOptions
    activeProviders lock closed outputTensor boolBytes floats doubles ints longs shorts bytes
    booleans env feeds result labels skippedProviders tryChain
    addProvider skippedText nativeLibraryMessage supportedAbis
    skipReason runSession pinned outputsLock directBuffer copyOut copyOutBooleans tensors requested buffers
    inputsLock reusedInputs holdsInputs reused
    """.split()
)
# SCREAMING_SNAKE namespace: the fixed companion constants and Options.CPU_ONLY.
FIXED_CONSTANTS = frozenset(
    """
    TAG MODEL_NAME MODEL_ASSET GOLDEN_ASSET INPUT_NAMES OUTPUT_NAMES ATOL RTOL ACCELERATED_ATOL
    ACCELERATED_RTOL CPU_ONLY LABELS_ASSET LIBRARY_VERSION
    """.split()
)


# The names the providers' fragments declare in the same scopes (each Android provider's template data,
# ``ExecutionProvider.template_data("android")``: ``kotlin_classes``, ``kotlin_members``, ``kotlin_constants``).
def _declared(key: str) -> frozenset[str]:
    return frozenset(n for p in providers.on_platform(PLATFORM) for n in p.template_data(PLATFORM).get(key, ()))


def class_names() -> frozenset[str]:
    """Every class name the generated package defines or names: :data:`FIXED_CLASS_NAMES` and the providers'."""
    return FIXED_CLASS_NAMES | _declared("kotlin_classes")


def reserved_members() -> frozenset[str]:
    """Every lowerCamel name the wrapper declares: :data:`RESERVED_MEMBERS` and the providers' fragments'."""
    return RESERVED_MEMBERS | _declared("kotlin_members")


def fixed_constants() -> frozenset[str]:
    """Every SCREAMING_SNAKE constant the wrapper declares: :data:`FIXED_CONSTANTS` and the providers'."""
    return FIXED_CONSTANTS | _declared("kotlin_constants")


# Derived names of one tensor: property + shape property, name constant + shape constant.
PROP_SUFFIXES = ("", "Shape")
CONST_SUFFIXES = ("_NAME", "_SHAPE", *ic.KOTLIN_SUFFIXES)  # the input contract's constants too



@dataclass(frozen=True)
class KotlinType:
    array: str  # Kotlin array type of a tensor's data
    buffer: str | None  # java.nio buffer class used to build the input tensor (None: byte-based)
    java_type: str | None  # OnnxJavaType constant for ByteBuffer-based tensors
    reader: str  # ModelSupport function reading an OnnxTensor's copy into ``array``
    golden: str  # GoldenTensor accessor giving ``array``
    to_doubles: str  # ModelSupport function widening ``array`` to DoubleArray
    to_longs: str | None = None  # integer and bool types: ModelSupport function widening ``array`` to LongArray, exactly


# ONNX dtype → how the ORT Java API carries it (OnnxJavaType: FLOAT DOUBLE INT8 INT16 INT32 INT64
# BOOL STRING UINT8 FLOAT16 BFLOAT16; OnnxTensor.createTensor overloads for Float/Double/Int/Long/
# Short/ByteBuffer).
KOTLIN_TYPES: dict[str, KotlinType] = {
    "float32": KotlinType("FloatArray", "FloatBuffer", None, "floats", "asFloatArray", "toDoubles"),
    "float64": KotlinType("DoubleArray", "DoubleBuffer", None, "doubles", "asDoubleArray", "toDoubles"),
    "int32": KotlinType("IntArray", "IntBuffer", None, "ints", "asIntArray", "toDoubles", "toLongs"),
    "int64": KotlinType("LongArray", "LongBuffer", None, "longs", "asLongArray", "toDoubles", "toLongs"),
    "int16": KotlinType("ShortArray", "ShortBuffer", None, "shorts", "asShortArray", "toDoubles", "toLongs"),
    "int8": KotlinType("ByteArray", None, "INT8", "bytes", "asByteArray", "toDoubles", "toLongs"),
    "uint8": KotlinType("ByteArray", None, "UINT8", "bytes", "asByteArray", "unsignedToDoubles", "unsignedToLongs"),
    "bool": KotlinType("BooleanArray", None, "BOOL", "booleans", "asBooleanArray", "toDoubles", "toLongs"),
}
# Bytes per element in a direct buffer (java.nio: Float 4, Double 8, Int 4, Long 8, Short 2; bytes and ORT's
# one-byte bool 1).
ELEMENT_BYTES: dict[str, int] = {"float32": 4, "float64": 8, "int32": 4, "int64": 8, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}
# ByteBuffer.allocateDirect takes an Int; ORT's OrtUtil.prepareBuffer refuses sizes above Integer.MAX_VALUE - 8 elements.
_MAX_DIRECT_BYTES = 2**31 - 1 - 64
_UNSUPPORTED_DTYPES = {
    "uint16": "the ORT Java API has no unsigned 16-bit type (OnnxJavaType)",
    "uint32": "the ORT Java API has no unsigned 32-bit type (OnnxJavaType)",
    "uint64": "the ORT Java API has no unsigned 64-bit type (OnnxJavaType)",
    "float16": "the generated wrapper does not carry float16 (the Java API only offers raw 16-bit shorts)",
    "bfloat16": "the generated wrapper does not carry bfloat16 (the Java API only offers raw 16-bit shorts)",
    "string": "the generated wrapper and golden vectors do not carry string tensors",
}


def validate_android_options(opts: AndroidOptions) -> None:
    """Refuse bad ``--package`` / ``--name`` / provider options (UsageError, exit 2), listing every problem."""
    details: list[str] = []
    if opts.package is not None:
        for p in kt.package_problems(opts.package):
            details.append(f"--package {opts.package!r} {p}")
    if opts.class_name is not None:
        for p in kt.class_name_problems(opts.class_name, reserved=class_names()):
            details.append(f"--name {opts.class_name!r} {p}")
    provider_details, provider_hints = provider_setup.problems(PLATFORM, opts)
    details += provider_details
    details += lib.coordinate_problems(opts.maven_group, opts.maven_artifact, opts.lib_version)
    if not details:
        return
    hints = []
    if any(d.startswith("--package") for d in details):
        hints.append("use a Java package such as com.example.mymodel (two or more segments, letters first, no keywords)")
    if any(d.startswith("--name") for d in details):
        hints.append("use a PascalCase class name such as MyModel")
    hints += provider_hints
    if any(d.startswith(("--maven-", "--lib-version")) for d in details):
        hints.append(lib.COORDINATE_HINT)
    raise UsageError(
        "invalid Android options: " + "; ".join(details),
        hint="; ".join(hints),
        details=details,
    )


def check_android_io(io: IOSpec) -> None:
    """Refuse model inputs/outputs the generated Kotlin cannot carry, naming every such tensor."""
    details = []
    for role, tensors in (("input", io.inputs), ("output", io.outputs)):
        for t in tensors:
            if t.dtype not in KOTLIN_TYPES:
                reason = _UNSUPPORTED_DTYPES.get(t.dtype, "no Java API mapping")
                details.append(f"{role} {t.name!r} has dtype {t.dtype}: {reason}")
    if details:
        raise UsageError(
            "the Android wrapper cannot express these tensors: " + "; ".join(details),
            hint="cast them to float32 / int64 / int32 / uint8 / bool in the model before export",
            details=details,
        )


def android_runtime(opts: AndroidOptions, spec: ProjectSpec | None = None) -> RuntimeRelease:
    """The onnxruntime-android release pinned in the project: ``--ort-version``, else the version the
    pipeline already chose (``spec.ort_version``), else the newest release published on Maven."""
    version = opts.ort_version or (spec.ort_version if spec is not None and spec.ort_version else None)
    return find_release(version, runtime.channel(opts))  # a provider's own build's releases, if it needs one


def accelerated_tolerances(spec: ProjectSpec, opts: AndroidOptions) -> tuple[float, float]:
    """(atol, rtol) the device test asserts for the accelerated configuration (``Options()``).

    ``spec.accel_atol`` / ``spec.accel_rtol`` win when set. Otherwise, when a chosen provider computes fp32
    models in fp16 on the device (its ``fp16_reason``: ~3 significant digits), the build-time tolerances
    are widened to at least :data:`~mobilegen.artifacts.FP16_TOLERANCE`; every other configuration computes in fp32 and keeps
    the build-time ones. Pure.
    """
    return spec.accelerated_tolerances(fp16=bool(provider_setup.fp16_reason(PLATFORM, opts)))


def _tolerance_reason(spec: ProjectSpec, opts: AndroidOptions) -> str:
    """Why the accelerated configuration asserts the tolerance it does (one README sentence)."""
    if spec.accel_atol is not None or spec.accel_rtol is not None:
        return "set explicitly for the accelerated configuration when the project was generated"
    if reason := provider_setup.fp16_reason(PLATFORM, opts):
        return reason
    if spec.quantization:  # a quantized model computes in integers (or float16), not in float32

        return tolerance_reason(spec.quantization)
    return provider_setup.float32_reason(PLATFORM, opts, "the accelerated configuration computes in float32, like the CPU provider")


def _check_tolerances(*pairs: tuple[str, float]) -> None:
    bad = [f"{name}={value}" for name, value in pairs if not math.isfinite(value) or value < 0]
    if bad:
        raise InternalError("tolerances must be finite and >= 0, got " + ", ".join(bad))


# --- render context ----------------------------------------------------------------------------------


def _names(spec: ProjectSpec, opts: AndroidOptions) -> tuple[str, str]:
    class_name = opts.class_name or kt.derive_class_name(spec.model_name, reserved=class_names())
    package = opts.package or kt.derive_package(spec.model_name)
    return class_name, package


def _tensor_contexts(
    io: IOSpec, class_name: str, contracts: tuple[ic.InputContract, ...] = ()
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    tensors: list[tuple[str, TensorSpec]] = [("input", t) for t in io.inputs] + [("output", t) for t in io.outputs]
    reserved, constants = reserved_members(), fixed_constants()
    bases = [
        kt.identifier(t.name, style="camel", fallback=f"{role}{i}", avoid=reserved)
        for i, (role, t) in enumerate(tensors)
    ]
    # Each tensor gets a stem P with P and P + "Shape" both free (so a shape property is always its
    # tensor's property + "Shape", and never another tensor's data), then a constant stem C with
    # C_NAME and C_SHAPE both free of each other and of every fixed constant (``model`` → MODEL_2_NAME).
    props = kt.disambiguate_groups(bases, PROP_SUFFIXES, taken=reserved | {class_name})
    const_bases = kt.disambiguate_groups(
        [kt.identifier(p, style="constant", fallback="TENSOR") for p in props], CONST_SUFFIXES, taken=constants
    )
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for i, (role, t) in enumerate(tensors):
        ktype = KOTLIN_TYPES[t.dtype]
        static = t.is_static
        dims = [d if isinstance(d, int) else -1 for d in t.shape]
        ctx: dict[str, Any] = {
            "name": t.name,
            "name_literal": kt.string_literal(t.name),
            "name_md": md_escape(t.name),
            "comment": kt.line_comment(f"{t.name} · {t.dtype} · {t.shape_str()}"),
            "prop": props[i],
            "shape_prop": props[i] + "Shape",
            "name_const": const_bases[i] + "_NAME",
            "shape_const": const_bases[i] + "_SHAPE",
            "dtype": t.dtype,
            "array": ktype.array,
            "buffer": ktype.buffer,
            "java_type": ktype.java_type,
            "reader": ktype.reader,
            "golden": ktype.golden,
            "to_doubles": ktype.to_doubles,
            "to_longs": ktype.to_longs,  # set: an integer or bool output, compared exactly by the device tests
            "static": static,
            "dims": ", ".join(f"{d}L" for d in dims),
            "element_count": _product(dims) if static else None,
            "element_bytes": ELEMENT_BYTES[t.dtype],
            # An output ONNX Runtime writes into this instance's reused direct buffer (OrtSession.run's
            # pinnedOutputs): a fixed shape with at least one element, in one direct buffer (< 2 GiB).
            "pinned": role == "output" and static and 0 < _product(dims) * ELEMENT_BYTES[t.dtype] <= _MAX_DIRECT_BYTES,
            # An input copied into this instance's reused direct buffer, wrapped once in an OnnxTensor (ORT
            # Java's createTensor keeps a direct buffer as is): a fixed shape, not bool (BooleanArray → bytes).
            "reused": role == "input" and static and t.dtype != "bool"
            and 0 < _product(dims) * ELEMENT_BYTES[t.dtype] <= _MAX_DIRECT_BYTES,
            "dims_md": "[" + ", ".join(str(d) for d in dims) + "]",
            # A deliberately wrong-sized input for the generated JVM test (dynamic dims probed at 1).
            "probe_dims": ", ".join(f"{d if d > 0 else 1}L" for d in dims),
            "bad_size": _product([d if d > 0 else 1 for d in dims]) + 1,
        }
        if role == "input" and i < len(contracts):
            c = contracts[i]
            ctx["contract"] = {
                "const": const_bases[i],
                "layout": kt.string_literal(c.layout),
                "layout_guessed": "true" if c.layout_guessed else "false",
                "dtype": kt.string_literal(c.dtype),
                "value_range": kt.string_literal(c.value_range),
                "normalization": kt.string_literal(c.normalization),
                "channel_order": kt.string_literal(c.channel_order),
                "resize": kt.string_literal(c.resize),
            }
        (inputs if role == "input" else outputs).append(ctx)
    consts = [c for t in inputs + outputs for c in (t["name_const"], t["shape_const"])]
    members = [m for t in inputs + outputs for m in (t["prop"], t["shape_prop"])]
    if (
        len(set(consts)) != len(consts)
        or len(set(members)) != len(members)
        or set(consts) & constants
        or set(members) & (reserved | {class_name})
    ):
        raise InternalError("generated Kotlin member names collide after disambiguation")
    return inputs, outputs


def _product(dims: list[int]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def android_context(spec: ProjectSpec, opts: AndroidOptions) -> dict[str, Any]:
    """The complete render context (pure; no file system access)."""
    validate_android_options(opts)
    check_android_io(spec.io)
    release = android_runtime(opts, spec)
    if not re.fullmatch(r"\d+\.\d+\.\d+", release.version):
        raise InternalError(f"runtime version {release.version!r} is not a plain x.y.z")
    accel_atol, accel_rtol = accelerated_tolerances(spec, opts)
    _check_tolerances(("atol", spec.atol), ("rtol", spec.rtol), ("accel_atol", accel_atol), ("accel_rtol", accel_rtol))
    class_name, package = _names(spec, opts)
    contracts = ic.infer_contracts(spec.task, spec.io)
    inputs, outputs = _tensor_contexts(spec.io, class_name, contracts)
    module = kt.kebab(class_name)
    asset_dir = kt.snake(class_name)
    task = tw.task_context(tw.mobile_task(spec.task, spec.io), inputs, outputs)
    return {
        "class_name": class_name,
        "exception_name": class_name + "Exception",
        "package": package,
        "package_path": package.replace(".", "/"),
        "app_package": package + ".sample",
        "app_package_path": (package + ".sample").replace(".", "/"),
        "module": module,
        "root_project": f"{module}-android",
        "asset_dir": asset_dir,
        "model_asset": f"{asset_dir}/model.ort",
        # mobilegen package: the model stays in the package's model/ folder; the module's build copies it
        # into its generated assets, checking size and sha256 (None: the model is in src/main/assets)
        "model_link": model_link_context(spec.model_link),
        "golden_asset": f"{asset_dir}/golden.mgv",
        # --task (mobilegen.render.task_wrappers): the task-level API's files render only with a task.
        "task": task,
        "task_support_file": "TaskSupport.kt" if task else "",
        "task_file": f"{class_name}Task.kt" if task else "",
        # Camera input (issue 31): the sample app's CameraX analyzer, for image tasks only.
        "camera_analyzer_file": "FrameAnalyzer.kt" if task and task["is_image"] else "",
        # Text tasks (mobilegen.tasks.text): the tokenizer's subpackage, "text", renders only for them.
        "tokenizer_dir": "text" if task and task["is_text"] else "",
        "tokenizer_asset": f"{asset_dir}/{tw.TOKENIZER_FILE}",
        "labels_asset": f"{asset_dir}/{tw.LABELS_FILE}",
        "task_test_file": f"{class_name}TaskTest.kt" if task and tw.task_golden_dir(spec) else "",
        "task_golden_asset": f"{asset_dir}/task",
        "model_name": spec.model_name,  # raw: templates print it only through kt_str
        "model_name_literal": kt.string_literal(spec.model_name),
        "contract_rows": ic.contract_rows(contracts),
        # The AAR's Maven publication (maven-publish): coordinates checked by validate_android_options.
        "maven_group": opts.maven_group or package,
        "maven_artifact": opts.maven_artifact or module,
        "library_version": opts.lib_version or lib.DEFAULT_VERSION,
        "model_name_comment": kt.line_comment(spec.model_name),
        "model_name_md": md_escape(spec.model_name),
        "inputs": inputs,
        "outputs": outputs,
        "all_inputs_static": all(t["static"] for t in inputs),
        "pinned_outputs": [t for t in outputs if t["pinned"]],
        "reused_inputs": [t for t in inputs if t["reused"]],
        "allocated_outputs": [t for t in outputs if not t["pinned"]],
        "atol": repr(float(spec.atol)),
        "rtol": repr(float(spec.rtol)),
        "accel_atol": repr(accel_atol),
        "accel_rtol": repr(accel_rtol),
        "accel_tolerance_reason": _tolerance_reason(spec, opts),
        "accelerated_label": provider_setup.accelerated_label(PLATFORM, opts),
        "ort_version": release.version,
        **provider_setup.context(PLATFORM, opts),  # each provider's variables (mobilegen.providers.<name>.android)
        "ort_artifact": runtime.artifact(opts),
        "aar_providers": list(runtime.aar_providers(opts)),
        "aar_lacks": _identifiers(runtime.lacks(opts)),  # in Kotlin comments and the README
        "bench_configs": runtime.bench_configs(opts),
        # the benchmark's "default" configuration: create() with default Options (mobilegen.targets.defaults)
        "bench_default": list(runtime.shipped_default(opts)),
        # the same chain with each provider's Kotlin enum entry; its pieces are templates/providers/<name>/android/bench_*
        "bench_default_chain": [_bench_entry(providers.get(n)) for n in runtime.shipped_default(opts)],
        "bench_providers": [_bench_entry(p) for p in runtime.bench_providers(opts)],  # the runtime's, registry order
        "bench_alternatives": [_bench_entry(p) for p in runtime.bench_alternatives(opts)],  # BenchConfigs.ALL's order
        "bench_image_sizes": [list(s) for s in BENCH_IMAGE_SIZES],
        "bench_preprocess_max_runs": BENCH_PREPROCESS_MAX_RUNS,
        "bench_preprocess_max_warmup": BENCH_PREPROCESS_MAX_WARMUP,
        "android_providers": template_providers("android", "add_provider.kt.jinja"),  # templates/providers/<name>/android/
        # those create() plans into its chain (Options.use<Name>): with a plan fragment too (mobilegen.targets.defaults)
        "android_planned": template_providers("android", "plan.kt.jinja"),
        # every Android provider, in registry order: ModelSupport's per-provider constants and helpers
        "android_registry": [{"name": p.name} for p in providers.on_platform("android")],
        # every Android provider's fragments by piece (templates/providers/<name>/android/<piece>.jinja): the
        # generic templates include a piece for each provider that has it, in registry or chain order
        "pieces": provider_setup.pieces(PLATFORM),
        "chain_pieces": provider_setup.pieces(PLATFORM, chain=True),
        "chain_example": _chain_example(),
        "chain_example_names": _chain_example_names(),
        "ort_released": md_escape(release.released or "date unknown"),
        "toolchain": dict(TOOLCHAIN),
        "gradle_wrapper_command": toolchains.gradle_wrapper_command(),
        "compile_sdk": COMPILE_SDK,
        "target_sdk": TARGET_SDK,
        "min_sdk": MIN_SDK,
        "mobilegen_version": kt.line_comment(spec.mobilegen_version or "dev"),  # Kotlin/Gradle comments
        "mobilegen_version_md": md_escape(spec.mobilegen_version or "dev"),
        "coverage": coverage_rows(spec.coverage),
        "notes": [md_escape(n) for n in spec.notes],
    }


def _identifiers(names: list[str]) -> list[str]:
    """The display names that are plain identifiers (a plug-in's could be any text): what the generated
    comments and README may print unescaped."""
    return [n for n in names if re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", n)]


def _chain_example_names() -> list[str]:
    """The providers the docs' example chain is made of: the first two the default runtime has (registry order)."""
    return _identifiers([p.display_name for p in providers.on_platform(PLATFORM) if PLATFORM in p.in_default_runtime])[:2] or ["P1"]


def _chain_example() -> str:
    """The wrapper's example of a provider given up when session creation fails: the first of the example
    chain, tried with the next one."""
    names = _chain_example_names()
    return f"{names[0]} (session creation with {', '.join(names)} failed: …)"


def _bench_entry(p: providers.ExecutionProvider) -> dict[str, str]:
    """A provider as bench/ModelBenchmark.kt names it: its Kotlin constant (``enum``) of ORT's name."""
    return {"name": p.name, "enum": p.display_name.upper(), "ort_name": p.ort_name}


def model_pin(spec: ProjectSpec, opts: AndroidOptions) -> str:
    """The project file that pins a linked model's size and sha256: the library module's build script."""
    return f"{kt.kebab(_names(spec, opts)[0])}/build.gradle.kts"


def render_android(spec: ProjectSpec, opts: AndroidOptions, dest: Path) -> list[PurePosixPath]:
    """Render ``templates/android`` into ``dest`` (must not exist) and copy the model and golden vectors.

    Returns every written path relative to ``dest``, sorted. On failure nothing is left at ``dest``.
    """
    if dest.exists():
        raise UsageError(f"{dest} already exists", hint="pick another output folder or pass --force")
    context = android_context(spec, opts)
    for src, what in ((spec.model_file, "model"), (spec.golden_mgv, "golden vectors")):
        if not Path(src).is_file():
            raise InternalError(f"the {what} file {src} does not exist", hint="this is a bug in the pipeline")
    try:
        written = render_tree(templates_root() / "android", context, dest, filters=kt.FILTERS)
        copies = {
            PurePosixPath(context["module"], "src/androidTest/assets", context["golden_asset"]): spec.golden_mgv,
            PurePosixPath("app/src/main/assets", context["golden_asset"]): spec.golden_mgv,
        }
        if spec.model_link is None:  # a standalone project holds its model; a package's copies it in at build time
            copies[PurePosixPath(context["module"], "src/main/assets", context["model_asset"])] = spec.model_file
        for rel, src in copies.items():
            target = dest.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            copy_file(src, target)  # a model's recorded digest goes with it
            written.append(rel)
        written += tw.write_labels(dest, PurePosixPath(context["module"], "src/main/assets", context["labels_asset"]), spec.task)
        written += tw.copy_tokenizer(dest, PurePosixPath(context["module"], "src/main/assets", context["tokenizer_asset"]), spec)
        golden_task = tw.task_golden_dir(spec)
        written += tw.copy_task_golden(dest, PurePosixPath(context["module"], "src/androidTest/assets", context["task_golden_asset"]), golden_task)
        if spec.runtime != "ort":  # --runtime litert: the runtime's own template fragment replaces the ORT module
            written = backends.render_fragment(spec.runtime, "android", spec, context, dest, written)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return sorted(written)
