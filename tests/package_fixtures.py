"""A small, real BuildResult without torch, for package / report / verify tests (reusable by pipeline tests).

``make_build(root)`` lays out a staging folder exactly as the pipeline does (``mobilegen.artifacts``
layout constants) with:

* a tiny ONNX model made with ``onnx.helper`` (dynamic batch; Mul, Relu, Add, Transpose, ReduceMax, Neg;
  node names with characters that need escaping in Markdown and HTML);
* its ``.ort`` conversion (``onnxruntime.tools.convert_onnx_models_to_ort``, in-process) and
  ``required_operators.config`` (absolute path in its comment header replaced by the file name);
* golden vectors computed with onnxruntime, written with ``mobilegen.verify.golden``;
* small fake ``android/`` and ``ios/`` projects (``android/gradlew`` executable);

and returns a BuildResult with a hand-built VerificationReport and hand-built CoverageReports
(nnapi with refused ops, coreml/mlprogram with two partitions, xnnpack fully supported).

Every op is exact in float32 (inputs are multiples of 1/4), so outputs and files are the same on every
machine. Conversion results are cached per process; ``fresh=True`` converts again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from mobilegen.artifacts import (
    ANDROID_DIR,
    GOLDEN_MGV,
    GOLDEN_NPZ,
    GOLDEN_TOLERANCES,
    IOS_DIR,
    MODEL_ONNX,
    MODEL_OPS_CONFIG,
    MODEL_ORT,
    BuildResult,
    LoadedModel,
    OnnxModel,
    OrtModel,
    VerificationReport,
    VerifyRow,
)
from mobilegen.convert.ortformat import canonicalize
from mobilegen.coverage.model import CoverageReport, NodeVerdict
from mobilegen.notices import Notice, collect
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.verify.golden import GoldenCase, encode_mgv, write_npz

MODEL_NAME = "Tiny <Net> & friends"
OPSET = 17
ATOL = 1e-4
RTOL = 1e-3
SOURCE = Path("/home/someone/models/tiny_net.pt")  # absolute on purpose: must never leak into a package
SOURCE_SHA256 = hashlib.sha256(b"tiny net weights").hexdigest()
RUNTIMES = {"maven": "1.24.2", "swiftpm": "1.24.2"}

# (node name, op type); names carry Markdown/HTML special characters on purpose.
NODES = (
    ("mul_scale", "Mul"),
    ("relu<act>&1", "Relu"),
    ("add|residual", "Add"),
    ("transpose_0", "Transpose"),
    ("reduce_max", "ReduceMax"),
    ("neg*out", "Neg"),
)
NNAPI_REFUSED = {
    "reduce_max": ("ReduceMax needs Android API 33 on NNAPI (android_api=29)",),
    "neg*out": ("Neg is not in the NNAPI EP's op table", "output z has a dynamic dim (batch)"),
}
COREML_REFUSED = {"transpose_0": ('Transpose with perm [0, 2, 1] on a rank-3 "<dynamic>" input is not supported',)}

# Fake generated projects: path -> (text, executable).
PROJECT_FILES: dict[str, tuple[str, bool]] = {
    f"{ANDROID_DIR}/gradlew": ("#!/bin/sh\nexec java -jar gradle/wrapper/gradle-wrapper.jar \"$@\"\n", True),
    f"{ANDROID_DIR}/settings.gradle.kts": ('rootProject.name = "TinyNet"\ninclude(":app")\n', False),
    f"{ANDROID_DIR}/app/build.gradle.kts": (
        'dependencies { implementation("com.microsoft.onnxruntime:onnxruntime-android:1.24.2") }\n',
        False,
    ),
    f"{ANDROID_DIR}/app/src/main/java/com/example/tinynet/MainActivity.kt": (
        "package com.example.tinynet\n\nclass MainActivity\n",
        False,
    ),
    f"{ANDROID_DIR}/README.md": ("# TinyNet (Android)\n\nOpen this folder in Android Studio.\n", False),
    f"{IOS_DIR}/TinyNet/ContentView.swift": ("import SwiftUI\n\nstruct ContentView: View {}\n", False),
    f"{IOS_DIR}/project.yml": ("name: TinyNet\n", False),
}


def make_onnx_model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 4, 8])
    two = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
    (mul, _), (relu, _), (add, _), (tr, _), (rmax, _), (neg, _) = NODES
    nodes = [
        helper.make_node("Mul", ["x", "two"], ["m"], name=mul),
        helper.make_node("Relu", ["m"], ["r"], name=relu),
        helper.make_node("Add", ["r", "x"], ["a"], name=add),
        helper.make_node("Transpose", ["a"], ["t"], name=tr, perm=[0, 2, 1]),
        helper.make_node("ReduceMax", ["t"], ["y"], name=rmax, axes=[2], keepdims=0),
        helper.make_node("Neg", ["a"], ["z"], name=neg),
    ]
    graph = helper.make_graph(nodes, "tiny", [x], [y, z], [two])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 9
    onnx.checker.check_model(model, full_check=True)
    return model


def golden_inputs() -> dict[str, np.ndarray]:
    return {"x": ((np.arange(32, dtype=np.float32) - 16.0) / 4.0).reshape(1, 4, 8)}


@dataclass(frozen=True)
class _Converted:
    onnx_bytes: bytes
    ort_bytes: bytes
    config_text: str
    ort_format_version: int
    max_opset: int
    converter_version: str


def _convert() -> _Converted:
    import onnxruntime
    from onnxruntime.tools.convert_onnx_models_to_ort import OptimizationStyle, convert_onnx_models_to_ort
    from onnxruntime.tools.ort_format_model.ort_flatbuffers_py.fbs.InferenceSession import InferenceSession

    model = make_onnx_model()
    onnx_bytes = model.SerializeToString()
    with tempfile.TemporaryDirectory(prefix="mg-fixture-") as tmp:
        src = Path(tmp) / "model.onnx"
        src.write_bytes(onnx_bytes)
        out = Path(tmp) / "out"
        with contextlib.redirect_stdout(io.StringIO()):
            convert_onnx_models_to_ort(src, output_dir=out, optimization_styles=[OptimizationStyle.Fixed])
        # onnxruntime's ORT writer is not byte-deterministic; the pipeline canonicalizes the same way.
        ort_bytes = canonicalize((out / "model.ort").read_bytes())
        config = (out / "model.required_operators.config").read_text()
    # The converter's header names the .ort by its absolute path: keep the file name only.
    config = "".join(
        "# - model.ort\n" if line.startswith("# - ") else line for line in config.splitlines(keepends=True)
    )
    fmt = int(InferenceSession.GetRootAsInferenceSession(ort_bytes, 0).OrtVersion().decode())
    max_opset = max(onnx.defs.get_schema(op, OPSET, "").since_version for _n, op in NODES)
    return _Converted(onnx_bytes, ort_bytes, config, fmt, max_opset, onnxruntime.__version__)


_convert_cached = functools.lru_cache(maxsize=1)(_convert)


def _golden_outputs(onnx_bytes: bytes, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime

    sess = onnxruntime.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, inputs), strict=True))


def _row(artifact: str, output: str, got: np.ndarray, ref: np.ndarray) -> VerifyRow:
    diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    max_abs = float(diff.max())
    max_rel = float((diff / np.maximum(np.abs(ref.astype(np.float64)), 1e-12)).max())
    top1 = float(np.mean(got.argmax(-1) == ref.argmax(-1))) if ref.ndim == 2 else None
    cosine = 1.0 if max_abs == 0.0 else float(
        np.dot(got.ravel(), ref.ravel()) / (np.linalg.norm(got) * np.linalg.norm(ref))
    )
    passed = bool(np.allclose(got, ref, atol=ATOL, rtol=RTOL))
    return VerifyRow(artifact, "1x4x8", output, max_abs, max_rel, cosine, top1, passed)


def coverage_reports() -> tuple[CoverageReport, ...]:
    names = [n for n, _ in NODES]

    def verdicts(refused: dict[str, tuple[str, ...]]) -> tuple[NodeVerdict, ...]:
        return tuple(NodeVerdict(n, op, "", n not in refused, refused.get(n, ())) for n, op in NODES)

    nnapi = CoverageReport(
        ep="nnapi",
        format=None,
        total_nodes=len(NODES),
        supported_nodes=len(NODES) - len(NNAPI_REFUSED),
        partitions=(tuple(names[:4]),),
        verdict="maybe",
        nodes=verdicts(NNAPI_REFUSED),
        suggestions=("pass --android-api 33 to run ReduceMax on NNAPI",),
        settings={"android_api": 29, "require_static_shapes": True},
    )
    coreml = CoverageReport(
        ep="coreml",
        format="mlprogram",
        total_nodes=len(NODES),
        supported_nodes=len(NODES) - len(COREML_REFUSED),
        partitions=(tuple(names[:3]), tuple(names[4:])),
        verdict="maybe",
        nodes=verdicts(COREML_REFUSED),
        suggestions=(),
        settings={"minimum_deployment_target": "iOS15"},
    )
    xnnpack = CoverageReport(
        ep="xnnpack",
        format=None,
        total_nodes=len(NODES),
        supported_nodes=len(NODES),
        partitions=(tuple(names),),
        verdict="yes",
        nodes=verdicts({}),
    )
    return (nnapi, coreml, xnnpack)


def make_build(
    root: Path,
    *,
    fresh: bool = False,
    targets: tuple[str, ...] = (ANDROID_DIR, IOS_DIR),
    out_dir: Path | None = None,
) -> BuildResult:
    """Write the staging layout into ``root`` (created) and return the BuildResult describing it."""
    conv = _convert() if fresh else _convert_cached()
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)

    def put(rel: str, data: bytes, executable: bool = False) -> Path:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        os.chmod(p, 0o755 if executable else 0o644)
        return p

    onnx_path = put(MODEL_ONNX, conv.onnx_bytes)
    ort_path = put(MODEL_ORT, conv.ort_bytes)
    config_path = put(MODEL_OPS_CONFIG, conv.config_text.encode())

    inputs = golden_inputs()
    ref = _golden_outputs(conv.onnx_bytes, inputs)
    case = GoldenCase(inputs, ref)
    npz_path = root / GOLDEN_NPZ
    npz_path.parent.mkdir(parents=True, exist_ok=True)
    write_npz(npz_path, case)
    os.chmod(npz_path, 0o644)
    mgv_path = put(GOLDEN_MGV, encode_mgv(case))
    put(GOLDEN_TOLERANCES, (json.dumps({"atol": ATOL, "rtol": RTOL}, indent=2) + "\n").encode())

    for rel, (text, executable) in PROJECT_FILES.items():
        if rel.split("/", 1)[0] in targets:
            put(rel, text.encode(), executable)

    ort_out = _golden_outputs(conv.ort_bytes, inputs)
    rows = tuple(_row(artifact, name, outs[name], ref[name]) for artifact, outs in (("onnx", ref), ("ort", ort_out)) for name in ref)
    io_spec = IOSpec(
        inputs=(TensorSpec("x", "float32", ("batch", 4, 8)),),
        outputs=(TensorSpec("y", "float32", ("batch", 8)), TensorSpec("z", "float32", ("batch", 4, 8))),
    )
    result = BuildResult(
        out_dir=out_dir if out_dir is not None else root,
        model_name=MODEL_NAME,
        loaded=LoadedModel(source=SOURCE, kind="torchscript", sha256=SOURCE_SHA256),
        onnx=OnnxModel(path=onnx_path, io=io_spec, opset=OPSET, exporter="dynamo", example_sizes={"batch": 1}),
        verification=VerificationReport(rows=rows, atol=ATOL, rtol=RTOL, golden_npz=npz_path, golden_mgv=mgv_path),
        ort=OrtModel(
            path=ort_path,
            config_path=config_path,
            optimization_style="Fixed",
            optimization_level="all",
            ort_format_version=conv.ort_format_version,
            converter_version=conv.converter_version,
            max_opset=conv.max_opset,
        ),
        coverage=coverage_reports(),
        targets=targets,
        options={
            "eps": ["nnapi", "coreml", "xnnpack"],
            "opset": OPSET,
            "optimization_style": "Fixed",
            "atol": ATOL,
            "rtol": RTOL,
            "android_api": 29,
            "coreml_format": "mlprogram",
            "output": str(SOURCE.parent / "out"),  # absolute on purpose: the manifest keeps the name only
            "zip": True,
        },
        runtimes=dict(RUNTIMES),
        warnings=(Notice("dims-fixed", "warning", "dynamic dim batch of input x fixed to 1 for NNAPI"),),
    )
    # The rest of the list as the pipeline finishes it (NNAPI deprecation, dynamic input, CPU fallbacks).
    return replace(result, warnings=collect(result.warnings, result.onnx, result.coverage, source_kind=result.loaded.kind))


def build_package(root: Path, *, fresh: bool = False) -> tuple[BuildResult, dict]:
    """``make_build`` then ``finalize_package``: a complete package folder at ``root``."""
    from mobilegen.package import finalize_package

    result = make_build(root, fresh=fresh)
    return result, finalize_package(root, result)


def copy_package(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def build_pristine(root: Path) -> Path:
    """``build_package`` at ``root`` with SOURCE_DATE_EPOCH unset (restored after), plus its zip
    ``root.zip``: the untouched package the ``pristine`` fixture (conftest.py) gives."""
    from mobilegen.package import write_zip

    old = os.environ.pop("SOURCE_DATE_EPOCH", None)
    try:
        build_package(root)
        write_zip(root, root.with_suffix(".zip"))
    finally:
        if old is not None:
            os.environ["SOURCE_DATE_EPOCH"] = old
    return root


# ---------------------------------------------------------------------------------------------------
# Golden-file helpers (tests/golden/expected/package/, rewritten by `pytest --update-goldens`)

GOLDEN_DIR = Path(__file__).resolve().parent / "golden" / "expected" / "package"
GOLDEN_EPOCH = "1700000000"  # SOURCE_DATE_EPOCH injected into golden builds


def pin_versions(monkeypatch) -> None:  # noqa: ANN001 — pytest.MonkeyPatch
    """Fixed tool versions, so goldens do not change with every installed torch/onnx/mobilegen."""
    import mobilegen.package
    import mobilegen.report

    monkeypatch.setattr(mobilegen.report, "_dist_version", lambda dist: f"<{dist} version>")
    monkeypatch.setattr(mobilegen.report, "__version__", "<mobilegen version>")
    monkeypatch.setattr(mobilegen.package, "__version__", "<mobilegen version>")


def golden_result(result: BuildResult) -> BuildResult:
    """The fixture's result with the converter version fixed (the .ort bytes still come from the real one)."""
    from dataclasses import replace

    return replace(result, ort=replace(result.ort, converter_version="<onnxruntime version>"))


def assert_golden(name: str, text: str, update: bool) -> None:
    path = GOLDEN_DIR / name
    if update:
        from golden_trees import report_rewrite

        before = {name: path.read_bytes()} if path.is_file() else {}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
        report_rewrite("tests/golden/expected/package", before, {name: path.read_bytes()})
        return
    assert path.is_file(), f"{path} is missing: run pytest --update-goldens and review the new file"
    expected = path.read_bytes().decode("utf-8")
    if text != expected:
        import difflib

        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True), text.splitlines(keepends=True), f"expected/{name}", f"actual/{name}", n=2
            )
        )
        raise AssertionError(f"{name} differs from its golden (pytest --update-goldens rewrites it):\n{diff[:6000]}")
