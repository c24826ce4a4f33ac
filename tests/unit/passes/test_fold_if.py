"""``fold-if``: an If whose condition is constant becomes the nodes of the branch it takes (silero-vad's
``If(sr == 16000)`` around the whole model, and the shape tests nested inside it)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from transformer_checks import coreml, nnapi, ops, rewritten, run, unchanged_by

from mobilegen.passes.fold_if import PASS

RNG = np.random.default_rng(27)
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
W = RNG.standard_normal((8, 4, 3, 3)).astype(np.float32)
W8K = RNG.standard_normal((8, 4, 1, 1)).astype(np.float32)
BIAS = RNG.standard_normal(8).astype(np.float32)


def _graph(
    nodes: list[onnx.NodeProto], outputs: list[str], inits: list[onnx.TensorProto] | None = None
) -> onnx.GraphProto:
    return helper.make_graph(
        nodes, "branch", [], [helper.make_tensor_value_info(o, F, None) for o in outputs], inits or []
    )


def _model(graph: onnx.GraphProto, opset: int = 17) -> onnx.ModelProto:
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def vad_like(sr: int | None, *, nested: bool = False) -> onnx.ModelProto:
    """``If(sr == 16000)``: the 16 kHz branch is a Conv (weight from the main graph: an outer-scope read;
    bias an initializer of the branch) + Relu; the 8 kHz one another Conv. ``sr`` an initializer when
    bound (``--const``), else an input. ``nested``: inside the 16 kHz branch, a second If on a Constant
    of the branch chooses between Sigmoid and Tanh of the branch's own Relu output."""
    then_nodes = [
        helper.make_node("Conv", ["x", "w16", "b16"], ["conv16"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv16"], ["relu16"], name="relu"),
    ]
    then_out = "relu16"
    if nested:
        inner_then = _graph([helper.make_node("Sigmoid", ["relu16"], ["sig"], name="sig")], ["sig"])
        inner_else = _graph([helper.make_node("Tanh", ["relu16"], ["tanh"], name="tanh")], ["tanh"])
        then_nodes += [
            helper.make_node(
                "Constant", [], ["flag"], name="flag", value=numpy_helper.from_array(np.array(True), "flag")
            ),
            helper.make_node(
                "If", ["flag"], ["inner"], name="inner_if", then_branch=inner_then, else_branch=inner_else
            ),
        ]
        then_out = "inner"
    then_branch = _graph(then_nodes, [then_out], [numpy_helper.from_array(BIAS, "b16")])
    else_branch = _graph([helper.make_node("Conv", ["x", "w8"], ["conv8"], name="conv")], ["conv8"])
    nodes = [
        helper.make_node(
            "Constant",
            [],
            ["k16000"],
            name="k",
            value=numpy_helper.from_array(np.array(16000, np.int64), "k"),
        ),
        helper.make_node("Equal", ["sr", "k16000"], ["is16k"], name="eq"),
        helper.make_node(
            "If", ["is16k"], ["y"], name="If_0", then_branch=then_branch, else_branch=else_branch
        ),
    ]
    inputs = [helper.make_tensor_value_info("x", F, [1, 4, 8, 8])]
    inits = [numpy_helper.from_array(W, "w16"), numpy_helper.from_array(W8K, "w8")]
    if sr is None:
        inputs.append(helper.make_tensor_value_info("sr", I64, []))
    else:
        inits.append(numpy_helper.from_array(np.array(sr, np.int64), "sr"))
    graph = helper.make_graph(
        nodes, "vad", inputs, [helper.make_tensor_value_info("y", F, [1, 8, 8, 8])], inits
    )
    return _model(graph)


def x_feed() -> dict[str, np.ndarray]:
    return {"x": RNG.standard_normal((1, 4, 8, 8)).astype(np.float32)}


@pytest.mark.parametrize("sr", [16000, 8000])
def test_a_bound_condition_inlines_the_branch_it_takes(sr: int) -> None:
    before = vad_like(sr)
    # what shape inference says of an If whose branches differ: dropped with the If (the branch's is inferred)
    before.graph.value_info.extend([helper.make_tensor_value_info("is16k", B, []), helper.make_tensor_value_info("y", F, None)])
    after, count = rewritten(PASS, before)
    assert not after.graph.value_info
    assert count == 3  # the If, and the Equal and Constant that only computed its condition
    assert ops(after) == (["Conv", "Relu"] if sr == 16000 else ["Conv"])
    assert after.graph.node[-1].output[0] == "y"  # the branch's output is the If's output: readers unchanged
    x = x_feed()
    np.testing.assert_array_equal(run(after, x)[0], run(before, x)[0])
    if sr == 16000:  # the branch's bias is hoisted under a fresh name; the outer weight is read as it was
        conv = after.graph.node[0]
        assert conv.input[1] == "w16" and conv.input[2] != "b16"
        assert conv.input[2] in {t.name for t in after.graph.initializer}


def test_nnapi_and_coreml_take_the_body_once_it_is_folded() -> None:
    before = vad_like(16000)
    after, _ = rewritten(PASS, before)
    for analyse in (nnapi, coreml):
        report = analyse(after)
        assert report.supported_nodes == report.total_nodes == 2 and len(report.partitions) == 1
    # as given, onnxruntime folds this (outermost, constant-initializer) If itself when it optimizes:
    # the analysis sees the same two nodes either way
    assert nnapi(before).total_nodes == 2


def test_nested_ifs_fold_in_one_run_and_renamed_reads_follow_into_inner_bodies() -> None:
    before = vad_like(16000, nested=True)
    after, count = rewritten(PASS, before)
    assert ops(after) == ["Conv", "Relu", "Sigmoid"]
    assert count == 5  # two Ifs, Equal and Constant of the outer condition, the inner Constant
    x = x_feed()
    np.testing.assert_array_equal(run(after, x)[0], run(before, x)[0])


def test_an_unknown_condition_is_left_alone() -> None:
    assert unchanged_by(PASS, vad_like(None))


def test_an_inner_if_reading_a_renamed_tensor_of_the_folded_branch_stays_correct() -> None:
    """The outer condition is constant, the inner one an input: the inner If stays, its bodies read
    the (renamed) Relu output of the inlined branch."""
    inner_then = _graph([helper.make_node("Sigmoid", ["relu16"], ["sig"])], ["sig"])
    inner_else = _graph([helper.make_node("Neg", ["relu16"], ["neg"])], ["neg"])
    then_branch = _graph(
        [
            helper.make_node("Relu", ["x"], ["relu16"]),
            helper.make_node("If", ["c"], ["inner"], then_branch=inner_then, else_branch=inner_else),
        ],
        ["inner"],
    )
    else_branch = _graph([helper.make_node("Identity", ["x"], ["same"])], ["same"])
    graph = helper.make_graph(
        [
            helper.make_node(
                "If", ["k"], ["y"], name="outer", then_branch=then_branch, else_branch=else_branch
            )
        ],
        "g",
        [helper.make_tensor_value_info("x", F, [3]), helper.make_tensor_value_info("c", B, [])],
        [helper.make_tensor_value_info("y", F, [3])],
        [numpy_helper.from_array(np.array(True), "k")],
    )
    before = _model(graph)
    after, count = rewritten(PASS, before)
    assert count == 1 and ops(after) == ["Relu", "If"]
    relu_out = after.graph.node[0].output[0]
    assert relu_out != "relu16"
    inner = after.graph.node[1]
    assert [n.input[0] for a in inner.attribute for n in a.g.node] == [relu_out, relu_out]
    x = {"x": np.array([-1.0, 0.5, 2.0], np.float32)}
    for c in (True, False):
        feeds = {**x, "c": np.array(c)}
        np.testing.assert_array_equal(run(after, feeds)[0], run(before, feeds)[0])


def test_outputs_the_branch_does_not_compute_get_an_identity() -> None:
    """A branch returning one tensor twice, and its own initializer (onnxruntime refuses a body that
    returns an outer tensor directly)."""
    branch = _graph(
        [helper.make_node("Relu", ["x"], ["r"])],
        ["r", "r", "kb"],
        [numpy_helper.from_array(np.array([5.0, 6.0, 7.0], np.float32), "kb")],
    )
    other = _graph(
        [helper.make_node("Neg", ["x"], [n]) for n in ("a", "b", "c")],
        ["a", "b", "c"],
    )
    graph = helper.make_graph(
        [helper.make_node("If", ["k"], ["y0", "y1", "y2"], then_branch=branch, else_branch=other)],
        "g",
        [helper.make_tensor_value_info("x", F, [3])],
        [helper.make_tensor_value_info(n, F, [3]) for n in ("y0", "y1", "y2")],
        [numpy_helper.from_array(np.array([True]), "k")],  # a 1-element tensor, not only a scalar
    )
    before = _model(graph)
    after, count = rewritten(PASS, before)
    assert count == 1 and sorted(ops(after)) == ["Identity", "Identity", "Relu"]
    assert after.graph.node[0].output[0] == "y0"  # the first output is the Relu's own
    x = {"x": np.array([-1.0, 0.5, 2.0], np.float32)}
    # onnxruntime (1.32) returns zeros for the first of two outputs naming the same body tensor: onnx's
    # reference evaluator is the oracle for the If as given, onnxruntime runs the folded graph
    want = ReferenceEvaluator(before).run(None, x)
    for got, expected in zip(run(after, x), want, strict=True):
        np.testing.assert_array_equal(got, expected)


def test_a_shape_condition_is_computed_once_the_dims_are_fixed() -> None:
    """``If(Shape(x)[0] == 1)``: constant only through the shape (const_view), as silero-vad's inner Ifs."""
    squeeze = _graph(
        [helper.make_node("Squeeze", ["x", "axis0"], ["sq"])],
        ["sq"],
        [numpy_helper.from_array(np.array([0], np.int64), "axis0")],
    )
    keep = _graph([helper.make_node("Identity", ["x"], ["id"])], ["id"])
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
        helper.make_node("Equal", ["n", "one"], ["is1"]),
        helper.make_node("If", ["is1"], ["sq_or_x"], then_branch=squeeze, else_branch=keep),
        helper.make_node("Relu", ["sq_or_x"], ["y"]),
    ]
    inits = [
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
        numpy_helper.from_array(np.array(1, np.int64), "one"),
    ]

    def model(batch: int | str) -> onnx.ModelProto:
        graph = helper.make_graph(
            nodes,
            "g",
            [helper.make_tensor_value_info("x", F, [batch, 6])],
            [helper.make_tensor_value_info("y", F, [6])],
            inits,
        )
        return _model(graph)

    assert unchanged_by(PASS, model("batch"))  # a symbolic batch: the condition is not known
    before = model(1)
    after, count = rewritten(PASS, before)
    assert ops(after) == ["Squeeze", "Relu"] and count == 4  # If, Equal, Gather, Shape
    x = {"x": RNG.standard_normal((1, 6)).astype(np.float32)}
    np.testing.assert_array_equal(run(after, x)[0], run(before, x)[0])
    assert nnapi(after).supported_nodes == nnapi(after).total_nodes


def test_an_if_with_a_constant_condition_inside_a_loop_body_is_folded_there() -> None:
    then_b = _graph([helper.make_node("Add", ["acc_in", "x"], ["added"])], ["added"])
    else_b = _graph([helper.make_node("Sub", ["acc_in", "x"], ["subbed"])], ["subbed"])
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("If", ["go"], ["acc_out"], then_branch=then_b, else_branch=else_b),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", I64, []),
            helper.make_tensor_value_info("cond_in", B, []),
            helper.make_tensor_value_info("acc_in", F, [3]),
        ],
        [helper.make_tensor_value_info("cond_out", B, []), helper.make_tensor_value_info("acc_out", F, [3])],
        [numpy_helper.from_array(np.array(True), "go")],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "", "x"], ["y"], body=body)],
        "g",
        [helper.make_tensor_value_info("x", F, [3])],
        [helper.make_tensor_value_info("y", F, [3])],
        [numpy_helper.from_array(np.array(3, np.int64), "trips")],
    )
    before = _model(graph)
    after, count = rewritten(PASS, before)
    assert count == 1
    body_ops = [n.op_type for n in after.graph.node[0].attribute[0].g.node]
    assert body_ops == ["Identity", "Add"]
    x = {"x": np.array([1.0, 2.0, 3.0], np.float32)}
    np.testing.assert_array_equal(run(after, x)[0], run(before, x)[0])


def test_fixed_dims_sizes_unnamed_dims_and_folds_the_ifs_that_test_them(tmp_path: Path) -> None:
    """silero-vad's ``input`` has two dims with neither a size nor a name (mobilegen calls them
    ``input_dim0``/``input_dim1``): ``fixed-dims`` sizes them in the graph, and the Ifs testing the shape
    are folded with it (onnxruntime fails to inline nested ones itself)."""
    from mobilegen.artifacts import OnnxModel
    from mobilegen.passes.dims import fix_dynamic_dims, folded_nodes
    from mobilegen.spec import onnx_io_spec

    squeeze = _graph(
        [helper.make_node("Squeeze", ["x", "axis0"], ["sq"])],
        ["sq"],
        [numpy_helper.from_array(np.array([0], np.int64), "axis0")],
    )
    keep = _graph([helper.make_node("Identity", ["x"], ["id"])], ["id"])
    x = helper.make_tensor_value_info("x", F, None)
    x.type.tensor_type.shape.dim.add()  # no dim_value, no dim_param
    x.type.tensor_type.shape.dim.add().dim_value = 6
    graph = helper.make_graph(
        [
            helper.make_node("Shape", ["x"], ["shape"]),
            helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
            helper.make_node("Equal", ["n", "one"], ["is1"]),
            helper.make_node("If", ["is1"], ["y"], then_branch=squeeze, else_branch=keep),
        ],
        "g",
        [x],
        [helper.make_tensor_value_info("y", F, [6])],
        [
            numpy_helper.from_array(np.array(0, np.int64), "zero"),
            numpy_helper.from_array(np.array(1, np.int64), "one"),
        ],
    )
    proto = _model(graph)
    io = onnx_io_spec(proto)
    assert io.inputs[0].dynamic_dims == ("x_dim0",)
    model = OnnxModel(
        path=tmp_path / "m.onnx",
        io=io,
        opset=17,
        exporter="passthrough",
        example_sizes={"x_dim0": 1},
        proto=proto,
    )
    fixed_model, fixed = fix_dynamic_dims(model)
    assert fixed == {"x_dim0": 1}
    assert [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim] == [1, 6]
    assert fixed_model.io.is_static
    assert ops(proto) == ["Squeeze"]
    assert any(n.startswith("fold-if: 4 node(s)") for n in fixed_model.notes)
    assert folded_nodes(fixed_model) == 4 and folded_nodes(model) == 0  # what the fix stage lists as fold-if


def _silero_onnx() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("silero_vad")  # finds the package without importing it (torch)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "silero_vad.onnx"
    return path if path.is_file() else None


@pytest.mark.skipif(_silero_onnx() is None, reason="the silero-vad package (MIT, ships silero_vad.onnx) is not installed")
def test_silero_vad_with_sr_bound_and_dims_fixed_loses_every_if_and_keeps_its_numbers(tmp_path: Path) -> None:
    from mobilegen.artifacts import OnnxModel
    from mobilegen.passes.dims import fix_dynamic_dims
    from mobilegen.spec import onnx_io_spec

    path = _silero_onnx()
    assert path is not None
    original = onnx.load(str(path))
    proto = onnx.load(str(path))
    sr = next(i for i in proto.graph.input if i.name == "sr")
    proto.graph.input.remove(sr)
    proto.graph.initializer.append(numpy_helper.from_array(np.array(16000, np.int64), "sr"))  # --const sr=16000
    sizes = {"input_dim0": 1, "input_dim1": 512, "state_dim1": 1}
    unfolded = onnx.ModelProto.FromString(proto.SerializeToString())
    for vi in unfolded.graph.input:  # the dims fixed by hand, the Ifs left: onnxruntime cannot inline them
        for dim, size in zip(vi.type.tensor_type.shape.dim, {"input": (1, 512), "state": (2, 1, 128)}[vi.name], strict=True):
            dim.dim_value = size
    as_given = nnapi(unfolded)  # no crash (onnxruntime's, when it saves the optimized model): a note instead
    assert as_given.settings["optimized"] is False
    # onnxruntime 1.32 raises ("... is not If node's input") or crashes (SIGSEGV) on it: the probe runs in a child
    assert "onnxruntime could not load the model on CPU" in " ".join(str(n) for n in as_given.settings["notes"])  # type: ignore[attr-defined]
    model = OnnxModel(path=tmp_path / "m.onnx", io=onnx_io_spec(proto), opset=16, exporter="passthrough", example_sizes=sizes, proto=proto)
    fix_dynamic_dims(model)
    assert not [g for g in graphs_of(proto) if any(n.op_type == "If" for n in g.node)]
    audio = {"input": RNG.uniform(-1, 1, (1, 512)).astype(np.float32), "state": RNG.standard_normal((2, 1, 128)).astype(np.float32)}
    want = run(original, {**audio, "sr": np.array(16000, np.int64)})
    got = run(proto, audio)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    report = nnapi(proto)  # onnxruntime optimizes it (it fails to inline the nested Ifs itself)
    assert report.settings["optimized"] is True
    # what is left for the other passes (1-D Conv: conv1d-2d; the reflect Pad: pad) and the LSTM, nothing else
    assert refused_ops_of(report) == {"Conv", "LSTM", "Pad"}


def graphs_of(model: onnx.ModelProto) -> list[onnx.GraphProto]:
    from mobilegen.passes.graph_util import graphs

    return list(graphs(model.graph))


def refused_ops_of(report: object) -> set[str]:
    return {n.op_type for n in report.nodes if not n.supported}  # type: ignore[attr-defined]


def test_a_failing_fold_after_fixing_the_dims_keeps_the_ifs_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mobilegen.artifacts import OnnxModel
    from mobilegen.passes import fold_if
    from mobilegen.passes.dims import fix_dynamic_dims
    from mobilegen.spec import onnx_io_spec

    def broken(model: onnx.ModelProto) -> int:
        del model.graph.node[:]  # half done, then a bug
        raise ValueError("boom")

    monkeypatch.setattr(fold_if, "apply", broken)
    proto = vad_like(16000)
    proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    model = OnnxModel(path=tmp_path / "m.onnx", io=onnx_io_spec(proto), opset=17, exporter="passthrough", example_sizes={"batch": 1}, proto=proto)
    fixed_model, fixed = fix_dynamic_dims(model)
    assert fixed == {"batch": 1} and ops(proto) == ["Constant", "Equal", "If"]
    assert "fold-if failed and was skipped: boom" in fixed_model.notes


def test_a_build_folds_a_static_models_constant_ifs_for_every_target_before_judging(tmp_path: Path) -> None:
    """A model already static gets no fixed-dims: the fix stage folds its constant Ifs first (onnxruntime
    would inline them at load, and crashes on nested ones, silero-vad saved with static shapes)."""
    from mobilegen.artifacts import OnnxModel
    from mobilegen.coverage import EPTarget
    from mobilegen.passes.stage import PassOptions, materialize, plan
    from mobilegen.spec import onnx_io_spec

    proto = vad_like(16000, nested=True)
    base = OnnxModel(path=tmp_path / "m.onnx", io=onnx_io_spec(proto), opset=17, exporter="passthrough", proto=proto)
    fix_plan = plan(base, [("android", [EPTarget("nnapi")]), ("ios", [EPTarget("coreml")])], PassOptions())
    assert ops(proto) == ["Conv", "Relu", "Sigmoid"]
    for target in fix_plan.targets:
        assert target.tried[0].name == "fold-if" and target.tried[0].kept and target.tried[0].nodes == 5
        assert target.applied[0].name == "fold-if"  # shown with the passes each provider's model got
    assert [f.name for f in fix_plan.pre] == ["fold-if"]
    written: list[OnnxModel] = []
    shipped = materialize(base, fix_plan, tmp_path, lambda m: written.append(m) or replace(m, proto=None))
    assert len(shipped) == 1 and ops(written[0].proto) == ["Conv", "Relu", "Sigmoid"]  # not folded twice
    off = vad_like(16000, nested=True)
    base_off = OnnxModel(path=tmp_path / "n.onnx", io=onnx_io_spec(off), opset=17, exporter="passthrough", proto=off)
    plan(base_off, [("android", [EPTarget("nnapi")])], PassOptions(enabled=False))  # --no-fix: as exported
    assert "If" in ops(off)


@pytest.mark.skipif(_silero_onnx() is None, reason="the silero-vad package (MIT, ships silero_vad.onnx) is not installed")
def test_silero_without_its_const_is_told_to_bind_it(tmp_path: Path) -> None:
    """silero-vad built for NNAPI with ``sr`` left an input: its dims are fixed and onnxruntime cannot load
    the If branches any more. The one line says what to do about the fixed dims (--const, --keep-dynamic),
    not to re-export with another opset (a review found that advice)."""
    from cli_helpers import assert_fails, invoke

    path = _silero_onnx()
    assert path is not None
    out = tmp_path / "vad"
    line = assert_fails(
        invoke("android", path, "--input", "input:1x512", "--input", "state:2x1x128", "--input", "sr:scalar:int64", "--range", "sr=16000:16001", "--nnapi", "-o", out),
        6, "could not convert", "--const NAME=VALUE", "--keep-dynamic",
    )  # fmt: skip
    assert "another opset" not in line
    assert not out.exists()
