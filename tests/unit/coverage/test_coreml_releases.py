"""CoreML changes of ONNX Runtime 1.27.0 that act beyond one node's builder (mobilegen/providers/coreml/releases.py):
PR #28293 drops a partition made only of trivial ops; PR #28289 adds a builder for com.microsoft:FusedConv."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from cov_helpers import K, T, node_model
from onnx import TensorProto, helper, numpy_helper

from mobilegen.coverage import EPTarget
from mobilegen.coverage.analyze import analyze
from mobilegen.coverage.model import CoverageReport
from mobilegen.providers.coreml.releases import TRIVIAL_OPS, trivial_partition

F = TensorProto.FLOAT
OLD, NEW = "1.24.2", "1.27.0"  # iOS's pinned release, the first release with both changes


def _coreml(version: str, fmt: str = "mlprogram") -> EPTarget:
    return EPTarget("coreml", coreml_format=fmt, ort_version=version)


def _graph(nodes: list[onnx.NodeProto], out: str, inits: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", F, (1, 3, 8, 8))], [helper.make_tensor_value_info(out, F, None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in (inits or {}).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def _node(report: CoverageReport, name: str) -> tuple[bool, tuple[str, ...]]:
    node = next(n for n in report.nodes if n.name == name)
    return node.supported, node.reasons


def _shape_chain() -> onnx.ModelProto:
    """x -> Transpose -> Reshape -> Squeeze: three nodes every modelled release has a builder for."""
    return _graph(
        [
            helper.make_node("Transpose", ["x"], ["t"], name="transpose", perm=[0, 2, 3, 1]),
            helper.make_node("Reshape", ["t", "shape"], ["r"], name="reshape"),
            helper.make_node("Squeeze", ["r", "axes"], ["y"], name="squeeze"),
        ],
        "y",
        {"shape": np.array([1, 64, 3], np.int64), "axes": np.array([0], np.int64)},
    )


@pytest.mark.parametrize("fmt", ["mlprogram", "neuralnetwork"])
def test_trivial_only_partition_taken_before_1_27_dropped_from_it(fmt: str) -> None:
    model = _shape_chain()
    old = analyze(model, _coreml(OLD, fmt), optimize=False)
    assert len(old.partitions) == 1 and all(n.supported for n in old.nodes), [n.reasons for n in old.nodes]
    new = analyze(model, _coreml(NEW, fmt), optimize=False)
    assert new.partitions == ()
    for n in new.nodes:
        assert not n.supported
        assert any("only of trivial ops" in r and "#28293" in r for r in n.reasons), n.reasons


def test_trivial_ops_next_to_a_compute_op_are_kept() -> None:
    model = _graph(
        [
            helper.make_node("Relu", ["x"], ["a"], name="relu"),
            helper.make_node("Transpose", ["a"], ["t"], name="transpose", perm=[0, 2, 3, 1]),
            helper.make_node("Reshape", ["t", "shape"], ["y"], name="reshape"),
        ],
        "y",
        {"shape": np.array([1, 64, 3], np.int64)},
    )
    report = analyze(model, _coreml(NEW), optimize=False)
    assert report.partitions == (("relu", "transpose", "reshape"),)


def test_only_the_trivial_partition_is_dropped() -> None:
    # Hardmax has no CoreML builder: two partitions, [Relu] and [Transpose, Reshape]; from 1.27.0 the
    # second is trivial-only and stays on the CPU.
    model = _graph(
        [
            helper.make_node("Relu", ["x"], ["a"], name="relu"),
            helper.make_node("Hardmax", ["a"], ["h"], name="hardmax"),
            helper.make_node("Transpose", ["h"], ["t"], name="transpose", perm=[0, 2, 3, 1]),
            helper.make_node("Reshape", ["t", "shape"], ["y"], name="reshape"),
        ],
        "y",
        {"shape": np.array([1, 64, 3], np.int64)},
    )
    old = analyze(model, _coreml(OLD), optimize=False)
    assert old.partitions == (("relu",), ("transpose", "reshape"))
    new = analyze(model, _coreml(NEW), optimize=False)
    assert new.partitions == (("relu",),)
    ok, reasons = _node(new, "transpose")
    assert not ok and any("(Reshape, Transpose)" in r for r in reasons), reasons
    assert _node(new, "relu")[0]


@pytest.mark.parametrize(
    ("op", "inputs", "attrs"),
    [
        ("Identity", [T((1, 3, 8, 8))], {}),
        ("Ceil", [T((1, 3, 8, 8))], {}),
        ("Tile", [T((1, 3, 8, 8)), K([1, 2, 1, 1], np.int64)], {}),
        ("Unsqueeze", [T((3, 8, 8)), K([0], np.int64)], {}),
    ],
)
def test_lone_trivial_op_on_1_27_is_left_to_the_cpu(op: str, inputs: list, attrs: dict) -> None:
    report = analyze(node_model(op, inputs, attrs), _coreml(NEW), optimize=False)
    ok, reasons = _node(report, "target")
    expected = trivial_partition([op], NEW)
    assert expected is not None and not ok and reasons == (expected.text,)


def test_lone_compute_op_on_1_27_is_kept() -> None:
    report = analyze(node_model("Sqrt", [T((1, 3, 8, 8))]), _coreml(NEW), optimize=False)
    assert report.partitions == (("target",),)


def test_trivial_partition_by_release_and_op_set() -> None:
    assert TRIVIAL_OPS == {"Identity", "Cast", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Transpose", "Tile", "Ceil"}
    assert trivial_partition(["Cast", "Flatten"], "1.26.0") is None
    assert trivial_partition(["Cast", "Flatten"], "1.27.0") is not None
    assert trivial_partition(["Cast", "Flatten"], "") is not None  # "" = the newest release
    assert trivial_partition(["Cast", "Sqrt"], "1.27.0") is None
    assert trivial_partition([], "1.27.0") is None


# --- FusedConv (#28289) -------------------------------------------------------------------------------


def _fused_conv(activation: str = "Relu", z: bool = False) -> onnx.ModelProto:
    inputs = [T((1, 3, 8, 8)), K(np.ones((4, 3, 3, 3))), K(np.zeros(4))] + ([T((1, 4, 6, 6))] if z else [])
    return node_model("FusedConv", inputs, {"activation": activation}, domain="com.microsoft")


def test_fusedconv_has_a_builder_from_1_27() -> None:
    ok, reasons = _node(analyze(_fused_conv(), _coreml(OLD), optimize=False), "target")
    assert not ok and any("no CoreML builder" in r and "releases from 1.27.0" in r for r in reasons), reasons
    ok, reasons = _node(analyze(_fused_conv(), _coreml(NEW), optimize=False), "target")
    assert ok, reasons


@pytest.mark.parametrize("activation", ["Sigmoid", "HardSigmoid", "Clip"])
def test_fusedconv_takes_the_listed_activations(activation: str) -> None:
    assert _node(analyze(_fused_conv(activation), _coreml(NEW), optimize=False), "target")[0]


def test_fusedconv_refusals() -> None:
    ok, reasons = _node(analyze(_fused_conv("Elu"), _coreml(NEW), optimize=False), "target")
    assert not ok and any("activation 'Elu'" in r for r in reasons), reasons
    ok, reasons = _node(analyze(_fused_conv(z=True), _coreml(NEW), optimize=False), "target")
    assert not ok and any("sum input Z" in r for r in reasons), reasons
    ok, reasons = _node(analyze(_fused_conv(), _coreml(NEW, "neuralnetwork"), optimize=False), "target")
    assert not ok and any("neuralnetwork" in r for r in reasons), reasons
    # Conv's own limits hold: a 3-D convolution is refused
    model = node_model("FusedConv", [T((1, 3, 4, 4, 4)), K(np.ones((2, 3, 1, 1, 1)))], {"activation": "Relu"},
                       domain="com.microsoft")
    ok, reasons = _node(analyze(model, _coreml(NEW), optimize=False), "target")
    assert not ok and any("1-D/2-D" in r for r in reasons), reasons
