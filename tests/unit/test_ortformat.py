"""The .ort canonicalizer: same logical content, same bytes whatever order ORT wrote the resolver in."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from mobilegen.artifacts import OnnxModel
from mobilegen.convert.ortformat import canonicalize, resolver_entries
from mobilegen.convert.to_ort import convert_to_ort
from mobilegen.spec import IOSpec


def small_model(path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3], np.random.default_rng(0).standard_normal(108).astype(np.float32))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Softmax", ["f"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def test_conversions_are_byte_identical_and_equivalent(tmp_path: Path) -> None:
    src = small_model(tmp_path / "m.onnx")
    model = OnnxModel(path=src, io=IOSpec(()), opset=17, exporter="passthrough")
    blobs = []
    for i in range(4):
        out = tmp_path / f"m{i}.ort"
        convert_to_ort(model, out, tmp_path / f"c{i}.config")
        blobs.append(out.read_bytes())
    assert all(b == blobs[0] for b in blobs)
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    ref = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = ort.InferenceSession(str(tmp_path / "m0.ort"), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_canonicalize_is_idempotent_and_keeps_content(tmp_path: Path) -> None:
    src = small_model(tmp_path / "m.onnx")
    out = tmp_path / "m.ort"
    convert_to_ort(OnnxModel(path=src, io=IOSpec(()), opset=17, exporter="passthrough"), out, tmp_path / "c.config")
    data = out.read_bytes()
    assert canonicalize(data) == data
    assert resolver_entries(canonicalize(data)) == resolver_entries(data)
    assert canonicalize(b"not an ort file") == b"not an ort file"


def _onnxruntime_converter(src: Path, out: Path, style: str) -> tuple[bytes, str]:
    """The .ort and config onnxruntime's own converter writes (the .ort as written, not canonical)."""
    import contextlib
    import io
    import os

    from onnxruntime.tools.convert_onnx_models_to_ort import OptimizationStyle, convert_onnx_models_to_ort

    os.environ["ORT_CONVERT_ONNX_MODELS_TO_ORT_OPTIMIZATION_LEVEL"] = "all"
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            convert_onnx_models_to_ort(src, output_dir=out, optimization_styles=[OptimizationStyle.Runtime if style == "runtime" else OptimizationStyle.Fixed])
    finally:
        os.environ.pop("ORT_CONVERT_ONNX_MODELS_TO_ORT_OPTIMIZATION_LEVEL", None)
    (ort_file,) = out.glob("*.ort")
    (config,) = out.glob("*.config")
    return ort_file.read_bytes(), config.read_text(encoding="utf-8")


def if_model(path: Path) -> Path:
    """A model with a subgraph (its ops must be in the config too)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 3])])
    else_g = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["e"])], "else", [], [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 3])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)
    onnx.save(helper.make_model(helper.make_graph([node], "g", [x, c], [y]), opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def attention_model(path: Path) -> Path:
    """A float transformer block's ops (MatMul, Softmax, LayerNormalization, Gelu's Erf): nothing the
    Runtime style's "apply" conversion would change."""
    rng = np.random.default_rng(2)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])
    w = helper.make_tensor("w", TensorProto.FLOAT, [8, 8], rng.standard_normal(64).astype(np.float32))
    scale = helper.make_tensor("s", TensorProto.FLOAT, [8], np.ones(8, np.float32))
    bias = helper.make_tensor("b", TensorProto.FLOAT, [8], np.zeros(8, np.float32))
    half = helper.make_tensor("h", TensorProto.FLOAT, [], [0.5])
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["q"]),
        helper.make_node("Transpose", ["q"], ["k"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "k"], ["a"]),
        helper.make_node("Softmax", ["a"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "q"], ["c"]),
        helper.make_node("Erf", ["c"], ["e"]),
        helper.make_node("Mul", ["e", "h"], ["g"]),
        helper.make_node("LayerNormalization", ["g", "s", "b"], ["y"], axis=-1),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y], [w, scale, bias, half])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def qdq_model(path: Path) -> Path:
    """A QDQ Conv (what ``--quantize int8`` ships): the "apply" conversion fuses it into QLinearConv."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    w = helper.make_tensor("w", TensorProto.INT8, [4, 3, 3, 3], np.random.default_rng(3).integers(-100, 100, 108).astype(np.int8))
    inits = [
        w,
        helper.make_tensor("ws", TensorProto.FLOAT, [], [0.02]),
        helper.make_tensor("wz", TensorProto.INT8, [], [0]),
        helper.make_tensor("xs", TensorProto.FLOAT, [], [0.05]),
        helper.make_tensor("xz", TensorProto.UINT8, [], [128]),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"]),
        helper.make_node("Conv", ["xd", "wd"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["c", "xs", "xz"], ["cq"]),
        helper.make_node("DequantizeLinear", ["cq", "xs", "xz"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def test_runtime_style_converts_twice_only_when_apply_differs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Runtime style's second ("apply") conversion runs only when it can give another graph: for a
    float transformer block it would repeat the first (its operators, checked against onnxruntime's own
    converter in the test below, are the same), so one converting session; a Conv that fuses with its
    activation (a runtime-optimization record) or a QDQ model gets both."""
    from mobilegen.convert import to_ort

    sessions: list[str] = []
    real = to_ort._save_ort

    def counted(src: Path, out: Path, *, minimal_build: str, **kw: Any) -> None:
        sessions.append(minimal_build)
        real(src, out, minimal_build=minimal_build, **kw)

    monkeypatch.setattr(to_ort, "_save_ort", counted)
    for make, expected in ((attention_model, ["save"]), (small_model, ["save", "apply"]), (qdq_model, ["save", "apply"])):
        sessions.clear()
        src = make(tmp_path / f"{make.__name__}.onnx")
        convert_to_ort(OnnxModel(path=src, io=IOSpec(()), opset=17, exporter="passthrough"), tmp_path / "m.ort", tmp_path / "c.config")
        assert sessions == expected, make.__name__
        sessions.clear()
        convert_to_ort(OnnxModel(path=src, io=IOSpec(()), opset=17, exporter="passthrough"), tmp_path / "m.ort", tmp_path / "c.config", style="fixed")
        assert sessions == [""]


def test_conversion_matches_onnxruntimes_converter(tmp_path: Path) -> None:
    """mobilegen's conversion (no prepacking, operators read through a map, canonicalized file to file,
    the second conversion skipped when it would repeat the first) writes what onnxruntime's converter
    writes, canonicalized, and the same operator config."""
    from mobilegen.convert.to_ort import _clean_config

    for make in (small_model, if_model, attention_model, qdq_model):
        src = make(tmp_path / f"{make.__name__}.onnx")
        for style in ("runtime", "fixed"):
            raw, config = _onnxruntime_converter(src, tmp_path / f"ort-{make.__name__}-{style}", style)
            ours = tmp_path / f"{make.__name__}-{style}.ort"
            convert_to_ort(OnnxModel(path=src, io=IOSpec(()), opset=17, exporter="passthrough"), ours, tmp_path / "c.config", style=style)
            assert ours.read_bytes() == canonicalize(raw)
            assert (tmp_path / "c.config").read_text(encoding="utf-8") == _clean_config(config, ours.name)
            assert ("Sigmoid" in config) == (make is if_model)  # a subgraph's op


def test_canonicalize_file_is_canonicalize(tmp_path: Path) -> None:
    from mobilegen.convert.ortformat import canonicalize_file

    raw, _ = _onnxruntime_converter(small_model(tmp_path / "m.onnx"), tmp_path / "out", "runtime")
    for data in (raw, canonicalize(raw), b"not an ort file", b""):
        (tmp_path / "in.ort").write_bytes(data)
        digest = canonicalize_file(tmp_path / "in.ort", tmp_path / "out.ort")
        assert (tmp_path / "out.ort").read_bytes() == canonicalize(data)
        assert digest == hashlib.sha256(canonicalize(data)).hexdigest()  # what it wrote, hashed on the way


@pytest.mark.parametrize("refusal", ["no-call", "exdev", "partial-exdev"])
def test_canonicalize_file_without_kernel_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refusal: str) -> None:
    """Where the kernel does not copy between the two files (another file system, no copy_file_range: the
    TMPDIR and -o of many machines), the subtree is copied through Python: the same bytes and digest. A
    refusal after part of it was copied is an error, not a silent second copy."""
    import errno
    import os

    from mobilegen.convert import ortformat

    raw, _ = _onnxruntime_converter(small_model(tmp_path / "m.onnx"), tmp_path / "out", "runtime")
    (tmp_path / "in.ort").write_bytes(raw)
    real = os.copy_file_range
    calls = []

    def refuse(src: int, dest: int, count: int, offset_src: int, offset_dst: int) -> int:
        calls.append(count)
        if refusal == "partial-exdev" and len(calls) == 1:
            return real(src, dest, min(count, 100), offset_src, offset_dst)
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(ortformat, "_COPY_CHUNK", 64)  # many chunks
    if refusal == "no-call":
        monkeypatch.delattr(os, "copy_file_range")
    else:
        monkeypatch.setattr(os, "copy_file_range", refuse)
    if refusal == "partial-exdev":
        with pytest.raises(OSError, match="cross-device"):
            ortformat.canonicalize_file(tmp_path / "in.ort", tmp_path / "o.ort")
        return
    digest = ortformat.canonicalize_file(tmp_path / "in.ort", tmp_path / "o.ort")
    assert (tmp_path / "o.ort").read_bytes() == canonicalize(raw)
    assert digest == hashlib.sha256(canonicalize(raw)).hexdigest()
    assert len(calls) == (refusal == "exdev")


@pytest.mark.parametrize("style", ["runtime", "fixed"])
def test_use_gets_the_converting_session_and_the_file_is_the_same(tmp_path: Path, style: str) -> None:
    """``use`` runs the .onnx in the converting session (once, whatever the style's number of conversions):
    its outputs are onnxruntime's own session's on the .onnx, and the .ort and config are byte for byte
    those of a conversion without it."""
    src = small_model(tmp_path / "m.onnx")
    model = OnnxModel(path=src, io=IOSpec(()), opset=17, exporter="passthrough")
    x = np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype(np.float32)
    got: list[np.ndarray] = []
    convert_to_ort(model, tmp_path / "a.ort", tmp_path / "a.config", style=style, use=lambda session: got.append(session.run(None, {"x": x})[0]))
    convert_to_ort(model, tmp_path / "b.ort", tmp_path / "b.config", style=style)
    assert len(got) == 1
    ref = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got[0], ref, rtol=1e-5, atol=1e-6)
    assert (tmp_path / "a.ort").read_bytes() == (tmp_path / "b.ort").read_bytes()
    assert (tmp_path / "a.config").read_text() == (tmp_path / "b.config").read_text().replace("b.ort", "a.ort")


def test_what_use_raises_is_raised_as_it_is(tmp_path: Path) -> None:
    """An error of the caller's ``use`` is not reported as the model's conversion failing, and no .ort is left."""
    src = small_model(tmp_path / "m.onnx")

    def use(session: object) -> None:
        raise KeyError("the caller's own")

    with pytest.raises(KeyError, match="the caller's own"):
        convert_to_ort(OnnxModel(path=src, io=IOSpec(()), opset=17, exporter="passthrough"), tmp_path / "m.ort", tmp_path / "c.config", use=use)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]
