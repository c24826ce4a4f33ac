"""The WebGPU provider: a Web-only registry entry whose rules are onnxruntime-web's pinned release's, its
kernel lookup (exact since-versions, dtypes) and GetCpuPreferredNodes as the coverage analysis applies them.
What the browser itself does with the same models: tests/integration/test_webgpu_oracle.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnx
from cli_helpers import invoke
from cov_helpers import I32, I64, F, K, T, node_model
from onnx import helper, numpy_helper

from mobilegen import providers
from mobilegen.coverage.analyze import analyze
from mobilegen.coverage.target import EPTarget
from mobilegen.providers.webgpu.table import KERNELS
from mobilegen.runtimes import default_release
from mobilegen.targets.web import provider_chain

ROOT = Path(__file__).resolve().parents[3]


def _verdicts(model: onnx.ModelProto) -> dict[str, tuple[bool, tuple[str, ...]]]:
    report = analyze(model, EPTarget("webgpu"), optimize=False)
    return {n.name: (n.supported, tuple(n.reasons)) for n in report.nodes}


def test_webgpu_is_a_web_provider_only() -> None:
    wg = providers.get("webgpu")
    assert wg.platforms == ("web",) and wg.target_flags == ()
    assert wg in providers.on_platform("web")
    assert wg not in providers.on_platform("android") and wg not in providers.on_platform("ios")
    for cmd in ("android", "ios", "package"):
        shown = invoke(cmd, "--help", env={"COLUMNS": "200"})
        assert shown.exit_code == 0, shown.output
        assert "webgpu" not in shown.output.lower(), cmd


def test_rules_release_is_the_onnxruntime_web_the_web_target_pins() -> None:
    lock = json.loads((ROOT / "templates" / "web" / "package-lock.json").read_text())
    pinned = lock["packages"]["node_modules/onnxruntime-web"]["version"]
    assert EPTarget("webgpu").str_value("ort_version") == pinned == default_release("npm").version


def test_the_web_chain_comes_from_the_registry_and_matches_the_wrapper(tmp_path: Path) -> None:
    """WebGPU (the registry's Web providers, by rank), then WASM: the order the rendered src/ort.ts tries."""
    from dataclasses import replace

    from project_specs import base_specs

    from mobilegen.targets.jsshared import JsOptions
    from mobilegen.targets.web.project import render_web

    assert provider_chain() == ("webgpu", "wasm")
    cnn, _ = base_specs(tmp_path / "in")
    render_web(replace(cnn, onnx_file=cnn.model_file, ort_version=None), JsOptions(), tmp_path / "web")
    ort_ts = (tmp_path / "web" / "src" / "ort.ts").read_text()
    body = ort_ts[ort_ts.index("export function defaultProviders"):]
    assert tuple(re.findall(r"name: '(\w+)'", body)) == provider_chain()


def test_a_newer_onnx_schema_has_no_kernel_until_one_is_registered() -> None:
    """An open-ended registration matches only its own since-version (kernel_registry.cc): Conv-11 is
    taken, the same Conv at opset 22 (schema Conv-22) is not."""
    w = K(np.ones((4, 3, 3, 3)))
    ok = _verdicts(node_model("Conv", [T((1, 3, 8, 8)), w], opset=21))
    refused = _verdicts(node_model("Conv", [T((1, 3, 8, 8)), w], opset=22))
    assert ok["target"][0] is True
    supported, reasons = refused["target"]
    assert not supported and "since_version 22" in reasons[0] and "1, 11 only" in reasons[0]


def test_int64_stays_on_the_cpu_and_int32_does_not() -> None:
    assert _verdicts(node_model("Add", [T((2, 3), I32), T((2, 3), I32)]))["target"][0] is True
    supported, reasons = _verdicts(node_model("Add", [T((2, 3), I64), T((2, 3), I64)]))["target"]
    assert not supported and "int64" in reasons[0]
    # Cast: both sides constrained (cast.cc T1 and T2)
    assert _verdicts(node_model("Cast", [T((2, 3))], {"to": I32}))["target"][0] is True
    supported, reasons = _verdicts(node_model("Cast", [T((2, 3))], {"to": I64}))["target"]
    assert not supported and "output" in reasons[0]


def test_shape_computation_stays_on_webgpu() -> None:
    """GetCpuPreferredNodes' picks do not last in onnxruntime-web 1.30.0 (measured: the second GetCapability
    pass takes them back), so float nodes computing on a shape are WebGPU's like any other."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["table", "s"], ["g"], name="gather", axis=0),
        helper.make_node("Relu", ["g"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", F, ["n", 3])], [helper.make_tensor_value_info("y", F, [2, 3])],
        [numpy_helper.from_array(np.ones((4, 3), np.float32), "table")],
    )
    v = _verdicts(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert v == {"shape": (True, ()), "gather": (True, ()), "relu": (True, ())}


def test_every_kernel_names_its_source_and_versions() -> None:
    for op, k in KERNELS.items():
        assert k.source.startswith("onnxruntime/core/providers/js/"), op
        assert k.since == tuple(sorted(set(k.since))) and k.inputs, op


def test_check_ep_webgpu_on_the_command_line(tmp_path: Path) -> None:
    """int64 arithmetic stays on the CPU, the float Relu goes to WebGPU: one node of two, one partition."""
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(
        [helper.make_node("Add", ["i", "i"], ["j"], name="int_add"), helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "m", [vi("i", I64, [2, 3]), vi("x", F, [2, 3])], [vi("j", I64, [2, 3]), vi("y", F, [2, 3])],
    )
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    done = invoke("check", "--ep", "webgpu", str(path), "--json")
    assert done.exit_code == 0, done.output
    out = json.loads(done.stdout)
    rep = next(r for r in out["reports"] if r["ep"] == "webgpu")
    assert (rep["supported_nodes"], rep["total_nodes"], rep["partitions"]) == (1, 2, [["relu"]])
    human = invoke("check", "--ep", "webgpu", str(path))
    assert human.exit_code == 0 and "webgpu: 1/2 nodes (50%), 1 partition(s)" in human.output, human.output
    assert "rules of onnxruntime 1.30.0" in human.output


def test_only_the_measured_onnxruntime_web_release_is_accepted(tmp_path: Path) -> None:
    """--ort-version names a release the table holds; another would be analysed with 1.30.0's kernels."""
    path = tmp_path / "m.onnx"
    vi = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "m", [vi("x", F, [2])], [vi("y", F, [2])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    done = invoke("check", "--ep", "webgpu", "--ort-version", "1.24.3", str(path))
    assert done.exit_code == 2 and "known for onnxruntime-web 1.30.0 only, not 1.24.3" in done.output, done.output
    assert invoke("check", "--ep", "webgpu", "--ort-version", "1.30.0", str(path)).exit_code == 0


def test_the_if_node_has_a_webgpu_kernel_and_its_bodies_are_judged() -> None:
    """operators/if.cc: If runs on WebGPU (no other provider takes a control-flow node), its branches' nodes too."""
    vi = helper.make_tensor_value_info
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="then_relu")], "then", [], [vi("t", F, [2, 3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="else_neg")], "else", [], [vi("e", F, [2, 3])])
    node = helper.make_node("If", ["c"], ["y"], name="the_if", then_branch=then_g, else_branch=else_g)
    graph = helper.make_graph([node], "m", [vi("c", onnx.TensorProto.BOOL, []), vi("x", F, [2, 3])], [vi("y", F, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    webgpu = analyze(model, EPTarget("webgpu"), optimize=False)
    assert (webgpu.supported_nodes, webgpu.total_nodes) == (3, 3)
    xnnpack = analyze(model, EPTarget("xnnpack"), optimize=False)
    assert [n.supported for n in xnnpack.nodes if n.op_type == "If"] == [False]
