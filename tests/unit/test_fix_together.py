"""The fix stage's second chance: passes each undone for making a provider worse are tried together, and
kept together when that helps (wav2vec2's feature extractor: Conv1d and GELU alternate, NNAPI refuses
both; rewriting one kind alone splits the chain into more partitions, both put it in one)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from mobilegen.coverage import EPTarget
from mobilegen.passes import registry
from mobilegen.passes.bodies import apply_everywhere
from mobilegen.passes.stage import improve

F = TensorProto.FLOAT
RNG = np.random.default_rng(5)
C, L = 4, 24


def chain(*, grouped_dilated: bool = False) -> onnx.ModelProto:
    """x -> Relu -> (Conv1d -> Gelu) x 3 -> Relu: Relus NNAPI takes, around Conv1ds and Gelus it does not.
    ``grouped_dilated``: the Convs are grouped and dilated, which NNAPI refuses in 2-D too."""
    attrs: dict[str, Any] = {"pads": [1, 1]}
    if grouped_dilated:
        attrs = {"pads": [2, 2], "dilations": [2], "group": 2}
    group = int(attrs.get("group", 1))
    inits = [numpy_helper.from_array((RNG.standard_normal((C, C // group, 3)) / 2).astype(np.float32), f"w{i}") for i in range(3)]
    nodes = [helper.make_node("Relu", ["x"], ["h0"])]
    for i in range(3):
        nodes += [
            helper.make_node("Conv", [f"h{i}", f"w{i}"], [f"c{i}"], **attrs),
            helper.make_node("Gelu", [f"c{i}"], [f"h{i + 1}"]),
        ]
    nodes.append(helper.make_node("Relu", ["h3"], ["y"]))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", F, [1, C, L])], [helper.make_tensor_value_info("y", F, [1, C, L])], inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)  # Gelu: opset 20
    return onnx.shape_inference.infer_shapes(model)


def run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return np.asarray(ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0])


def test_passes_that_only_help_together_are_kept_together() -> None:
    model = chain()
    original = onnx.ModelProto.FromString(model.SerializeToString())
    candidates = registry.candidates(["gelu", "conv1d-2d"])
    outcome = improve(model, [EPTarget("nnapi")], candidates, in_order=True)
    assert outcome.before is not None and outcome.after is not None
    before, after = outcome.before[0], outcome.after[0]
    assert len(before.partitions) == 2  # the Relus; the chain between them on the CPU
    # alone, each kind turns every other node of the chain into a partition of its own
    alone = [(t.name, t.kept) for t in outcome.tried[:2]]
    assert alone == [("gelu", False), ("conv1d-2d", False)]
    assert all(t.why.startswith("worse for nnapi") for t in outcome.tried[:2])
    assert [(t.name, t.kept) for t in outcome.tried[2:]] == [("gelu", True), ("conv1d-2d", True)]
    assert "kept together" in outcome.tried[2].why
    assert [f.name for f in outcome.applied] == ["gelu", "conv1d-2d"]
    assert after.supported_nodes == after.total_nodes and len(after.partitions) == 1
    x = RNG.standard_normal((1, C, L)).astype(np.float32)
    np.testing.assert_allclose(run(model, x), run(original, x), rtol=1e-5, atol=1e-6)
    # the build writes its models by applying the kept passes in order to the base again: same counts
    for fix in outcome.applied:
        assert apply_everywhere(registry.get(fix.name), original) == fix.nodes
    assert original.SerializeToString(deterministic=True) == model.SerializeToString(deterministic=True)


def test_together_no_better_is_undone() -> None:
    model = chain(grouped_dilated=True)  # the 2-D Convs are still refused: the chain stays split
    original = model.SerializeToString(deterministic=True)
    outcome = improve(model, [EPTarget("nnapi")], registry.candidates(["gelu", "conv1d-2d"]), in_order=True)
    assert [(t.name, t.kept) for t in outcome.tried] == [("gelu", False), ("conv1d-2d", False)]
    assert all(t.why.startswith("worse for nnapi") for t in outcome.tried)  # so both were tried together
    assert outcome.applied == ()
    assert model.SerializeToString(deterministic=True) == original
