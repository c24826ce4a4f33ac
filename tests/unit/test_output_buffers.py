"""Reused output buffers (issue 31): which outputs the Android wrapper pins (OrtSession.run's pinnedOutputs)
and when the iOS wrapper runs into preallocated ORTValues (run(withInputs:outputs:runOptions:)), and that the
rendered code and docs say so. The wrappers' behaviour on a real ONNX Runtime is measured by
benchmarks/output_buffers.py (it needs ORT's Java API built from source, which CI does not have); here the
Kotlin compiles against the shim (tests/integration/test_android_kotlin.py) and the Swift parses."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from android_specs import make_specs as android_specs
from ios_specs import make_specs as ios_specs

from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.targets.android import project as android
from mobilegen.targets.ios import project as ios

MIXED = IOSpec(
    (TensorSpec("x", "float32", (1, 4)),),
    (
        TensorSpec("scores", "float32", (1, 10)),
        TensorSpec("best", "int64", (1,)),
        TensorSpec("mask", "bool", (1, 10)),
        TensorSpec("q", "int8", (2, 3)),
        TensorSpec("boxes", "float32", ("n", 4)),
        TensorSpec("empty", "float32", (0, 4)),
    ),
)


def test_element_bytes_are_numpys() -> None:
    assert set(android.ELEMENT_BYTES) == set(android.KOTLIN_TYPES)
    for dtype, size in android.ELEMENT_BYTES.items():
        assert size == np.dtype(dtype).itemsize, dtype


def test_android_pins_exactly_the_static_non_empty_outputs(tmp_path: Path) -> None:
    spec, opts = android_specs(tmp_path)["android_cnn"]
    big = TensorSpec("huge", "float32", (2**29, 2))  # 4 GiB: no direct buffer holds it
    io = replace(MIXED, outputs=(*MIXED.outputs, big))
    ctx = android.android_context(replace(spec, io=io), opts)
    assert [t["name"] for t in ctx["pinned_outputs"]] == ["scores", "best", "mask", "q"]
    assert [t["name"] for t in ctx["allocated_outputs"]] == ["boxes", "empty", "huge"]


def _render_android(tmp_path: Path, io: IOSpec) -> tuple[str, str, str]:
    spec, opts = android_specs(tmp_path / "in")["android_cnn"]
    out = tmp_path / "out"
    android.render_android(replace(spec, io=io), opts, out)
    wrapper = next(out.glob("*/src/main/kotlin/**/TinyCnn.kt")).read_text()
    return wrapper, (out / "README.md").read_text(), (out / "INPUTS.md").read_text()


def test_android_wrapper_runs_into_its_pinned_outputs(tmp_path: Path) -> None:
    kt, readme, inputs_md = _render_android(tmp_path, MIXED)
    assert "session.run(feeds, outs.requested, outs.tensors)" in kt
    assert "val requested: Set<String> = setOf(BOXES_NAME, EMPTY_NAME)" in kt
    assert "OnnxTensor.createTensor(env, buffers[0] as FloatBuffer, SCORES_SHAPE)" in kt
    assert "OnnxTensor.createTensor(env, buffers[2] as ByteBuffer, MASK_SHAPE, OnnxJavaType.BOOL)" in kt
    assert "OnnxTensor.createTensor(env, buffers[3] as ByteBuffer, Q_SHAPE, OnnxJavaType.INT8)" in kt
    assert "directBuffer(40).asFloatBuffer()" in kt and "directBuffer(8).asLongBuffer()" in kt
    # the pinned outputs report their declared shapes; the allocated ones what ONNX Runtime returned
    assert "scoresShape = SCORES_SHAPE," in kt and "boxesShape = o0.info.shape," in kt
    assert "outputsLock.tryLock()" in kt and "pinned?.close()" in kt
    # the allocated path stays for concurrent calls
    assert "session.run(feeds).use { result ->" in kt
    assert "### Threads and buffers" in readme and "(`boxes`, `empty`)" in readme
    assert "## Buffers and threads" in inputs_md


def test_android_wrapper_with_only_dynamic_outputs_allocates(tmp_path: Path) -> None:
    io = IOSpec(MIXED.inputs, (TensorSpec("boxes", "float32", ("n", 4)),))
    kt, readme, _ = _render_android(tmp_path, io)
    assert "PinnedOutputs" not in kt and "outputsLock" not in kt and "pinnedOutputs" not in kt.replace("`", "")
    assert "every output has a dynamic shape" in readme


@pytest.mark.parametrize(("dims", "reused"), [((1, 10), True), (("n", 10), False), ((0, 10), False)])
def test_ios_reuses_outputs_only_when_every_output_is_static(tmp_path: Path, dims: tuple[int | str, ...], reused: bool) -> None:
    spec, opts = ios_specs(tmp_path / "in")["ios_cnn"]
    io = IOSpec(spec.io.inputs, (TensorSpec("a", "float32", (1, 2)), TensorSpec("b", "int64", dims)))
    out = tmp_path / "out"
    ios.render_ios(replace(spec, io=io), opts, out)
    swift = "".join(p.read_text() for p in out.glob("Sources/*/*.swift"))
    assert ("try session.run(withInputs: feeds, outputs: reused.values, runOptions: nil)" in swift) == reused
    assert ("private final class ReusedOutputs" in swift) == reused
    # the allocated path is always there (concurrent predictions; dynamic outputs)
    assert "session.run(withInputs: feeds, outputNames: Set(Self.outputNames), runOptions: nil)" in swift
    # one copy out of ORT's memory: no bridging of tensorData() to Data
    assert "tensorData() as Data" not in swift
    readme = (out / "README.md").read_text()
    assert ("wrapped once in the `ORTValue`" in readme) == reused


def test_every_android_runtime_has_output_pinning() -> None:
    # OrtSession.run(inputs, requestedOutputs, pinnedOutputs): microsoft/onnxruntime PR #16835 (aed43f42), merged
    # when VERSION_NUMBER read 1.17.0. Every release the Android projects can pin must have it.
    from mobilegen import providers, runtimes

    own = {a.channel for p in providers.on_platform("android") for a in p.runtime_artifacts}
    android = [r for r in (*runtimes.RELEASES, *runtimes.provider_releases()) if ({"maven"} | own) & set(r.channels)]
    assert android
    assert all(runtimes.version_key(r.version) >= (1, 17, 0) for r in android)


def test_android_wrapper_fills_its_reused_inputs(tmp_path: Path) -> None:
    # x: fixed float32 → reused; flag: bool → old path; ids: dynamic → old path; q: fixed uint8 → reused
    io = IOSpec(
        (
            TensorSpec("x", "float32", (1, 3, 224, 224)),
            TensorSpec("flag", "bool", (1,)),
            TensorSpec("ids", "int64", (1, "n")),
            TensorSpec("q", "uint8", (2, 3)),
        ),
        MIXED.outputs,
    )
    spec, opts = android_specs(tmp_path / "in")["android_cnn"]
    ctx = android.android_context(replace(spec, io=io), opts)
    assert [t["name"] for t in ctx["reused_inputs"]] == ["x", "q"]
    kt, readme, inputs_md = _render_android(tmp_path, io)
    assert "directBuffer(602112).asFloatBuffer()" in kt and "directBuffer(6)\n" in kt
    assert "OnnxTensor.createTensor(env, b0, X_SHAPE)" in kt
    assert "OnnxTensor.createTensor(env, b1, Q_SHAPE, OnnxJavaType.UINT8)" in kt
    assert "feeds[X_NAME] = reused?.fill0(inputs.x)" in kt and "feeds[Q_NAME] = reused?.fill1(inputs.q)" in kt
    assert "inputsLock.tryLock()" in kt and "reusedInputs?.close()" in kt
    # concurrent calls and the other inputs keep tensors made (and closed) per call
    assert "?: OnnxTensor.createTensor(env, FloatBuffer.wrap(inputs.x), X_SHAPE).also { created.add(it) }" in kt
    assert "feeds[FLAG_NAME] = OnnxTensor.createTensor(env, ByteBuffer.wrap(boolBytes(inputs.flag))" in kt
    assert "feeds[IDS_NAME] = OnnxTensor.createTensor(env, LongBuffer.wrap(inputs.ids), inputs.idsShape)" in kt
    assert "for (tensor in created) tensor.close()" in kt
    assert "(`x`, `q`)" in readme and "reuses, one call at a time" in inputs_md


def test_android_wrapper_without_fixed_inputs_has_no_input_buffers(tmp_path: Path) -> None:
    io = IOSpec((TensorSpec("ids", "int64", (1, "n")), TensorSpec("flag", "bool", (1,))), MIXED.outputs)
    kt, readme, _ = _render_android(tmp_path, io)
    assert "ReusedInputs" not in kt and "inputsLock" not in kt
    assert "which copies each into a direct buffer for the call" in readme
