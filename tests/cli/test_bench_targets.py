"""``mobilegen report --results`` in a package with one model per target: a result is compared with the
coverage of the targets shipping the model it measured (its sha256 → the manifest's ``models[]``), not
with the first report of the same provider."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from cli_helpers import invoke
from onnx import TensorProto, helper, numpy_helper

from mobilegen.bench import (
    BenchResult,
    Configuration,
    Device,
    PlacedNode,
    Placement,
    WarmStats,
    observed_partitions,
)
from mobilegen.bench.compare import Prediction, compare, predictions

XNNPACK = "XnnpackExecutionProvider"
CPU = "CPUExecutionProvider"


def _flatten_model(path: Path) -> Path:
    """Conv → Relu → Flatten → MatMul: CoreML's flatten-reshape pass rewrites the iOS model only."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"), numpy_helper.from_array(rng.standard_normal((64, 5)).astype(np.float32), "w2")]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Flatten", ["r"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "w2"], ["y"], name="fc"),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits), opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


@pytest.fixture(scope="module")
def two_target_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("bench_targets")
    pkg = tmp / "pkg"
    r = invoke("package", _flatten_model(tmp / "flat.onnx"), "--android", "--ios", "--xnnpack", "--coreml", "-o", pkg)
    assert r.exit_code == 0, r.stderr
    return pkg


def _xnnpack_result(pkg: Path, target: str, os_name: str) -> BenchResult:
    """What the device sends for its target's model: XNNPACK ran exactly the nodes its report predicted."""
    rel = f"model/{target}/model.ort"
    cov = json.loads((pkg / "report/coverage.json").read_text(encoding="utf-8"))
    (report,) = (r for r in cov["reports"] if r["ep"] == "xnnpack" and r["target"] == target)
    on = {n for p in report["partitions"] for n in p}
    placed = tuple(PlacedNode(n["name"], n["op_type"], XNNPACK if n["name"] in on else CPU) for n in report["nodes"])
    config = Configuration("xnnpack", "xnnpack", None, (XNNPACK, CPU), {}, "ok", None, 5.0, 1.0, WarmStats.of([1.0, 2.0]), Placement(True, None, placed, observed_partitions(placed)))
    sha = hashlib.sha256((pkg / rel).read_bytes()).hexdigest()
    return BenchResult(sha, rel, "0.0.0", "1.24.2", Device("device", f"{target} phone", None, os_name, None), 2, 1, (config,))


@pytest.mark.slow  # builds a two-target package
def test_each_result_is_compared_with_its_own_targets_coverage(two_target_package: Path, tmp_path: Path) -> None:
    import shutil

    pkg = Path(shutil.copytree(two_target_package, tmp_path / "pkg"))
    files = []
    for target, os_name in (("ios", "iOS 18.1"), ("android", "Android 15")):
        f = tmp_path / f"{target}.json"
        f.write_text(_xnnpack_result(pkg, target, os_name).text(), encoding="utf-8")
        files += ["--results", f]
    r = invoke("report", pkg, *files, "--json")
    assert r.exit_code == 0, r.stderr
    placement = {p["device"]: p for p in json.loads(r.stdout)["placement"]}
    ios, android = placement["ios phone · iOS 18.1"], placement["android phone · Android 15"]
    assert ios["prediction"] == "xnnpack (ios)" and android["prediction"] == "xnnpack (android)"
    for p in (ios, android):  # each ran exactly what its own model's report predicted
        assert p["agrees"] and p["predicted_on_cpu_not_seen"] == [] and p["nodes_made_by_ort"] == 0, p
    assert invoke("verify", pkg).exit_code == 0


def _pred(target: str) -> Prediction:
    return Prediction(f"xnnpack ({target})", "xnnpack", None, 1, frozenset({"conv"}), ("conv",), target)


def test_a_model_shipped_by_two_targets_uses_either_targets_coverage_the_devices_first() -> None:
    placed = (PlacedNode("conv", "Conv", XNNPACK),)
    config = Configuration("xnnpack", "xnnpack", None, (XNNPACK, CPU), {}, "ok", None, 5.0, 1.0, WarmStats.of([1.0]), Placement(True, None, placed, 1))
    preds = (_pred("android"), _pred("ios"), _pred("windows"))
    for os_name, expected in (("iOS 18", "xnnpack (ios)"), ("Android 15", "xnnpack (android)"), ("Linux", "xnnpack (android)")):
        result = BenchResult("sha", "model/model.ort", "0.0.0", "1.24.2", Device("device", "phone", None, os_name, None), 1, 0, (config,))
        (c,) = compare(result, preds, frozenset({"android", "ios"}))
        assert c.prediction == expected and c.agrees
    (c,) = compare(result, preds, frozenset({"windows"}))
    assert c.prediction == "xnnpack (windows)"
    (c,) = compare(result, (_pred("ios"),), frozenset({"android"}))  # no report of the model's targets
    assert c.prediction is None and not c.available


def test_reports_without_a_target_are_labelled_and_used_as_before() -> None:
    cov = {"reports": [{"ep": "xnnpack", "format": None, "partitions": [["conv"]], "nodes": [{"name": "conv"}]}]}
    (p,) = predictions(cov)
    assert (p.label, p.target) == ("xnnpack", None)
    cov["reports"][0]["target"] = "android"  # one target: the label needs no target
    (p,) = predictions(cov)
    assert (p.label, p.target) == ("xnnpack", "android")
