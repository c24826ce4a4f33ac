"""``mobilegen bench`` times the file each target ships (the Web package ships the ``.onnx``), says how to
ask for several configurations, and names only the targets a package has."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
from cli_helpers import assert_fails, invoke
from onnx import TensorProto, helper

from mobilegen.bench import run_host_bench


def _tiny(path: Path) -> Path:
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "x"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


@pytest.fixture(scope="module")
def web_android_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("bench_files")
    pkg = tmp / "pkg"
    r = invoke("package", _tiny(tmp / "tiny.onnx"), "--android", "--web", "-o", pkg)
    assert r.exit_code == 0, r.stderr
    return pkg


def test_the_web_row_times_the_onnx_the_web_package_ships(web_android_package: Path) -> None:
    result = run_host_bench(web_android_package, runs=1, warmup=0)
    rows = {c.name: c for c in result.configurations}
    assert set(rows) == {"default-android", "default-web", "cpu"}
    manifest = json.loads((web_android_package / "manifest.json").read_text(encoding="utf-8"))
    (model,) = manifest["models"]
    assert rows["default-web"].options["model_file"] == model["onnx"] != model["ort"]["file"]
    assert "model_file" not in rows["default-android"].options and "model_file" not in rows["cpu"].options
    assert all(c.status == "ok" for c in result.configurations)


def test_the_human_table_says_which_file_a_row_timed(web_android_package: Path) -> None:
    r = invoke("bench", web_android_package, "--runs", "1", "--warmup", "0")
    assert r.exit_code == 0, r.stderr
    assert "default-web: times model/model.onnx" in r.stdout + r.stderr


def test_comma_separated_eps_get_the_repeated_option_back(web_android_package: Path) -> None:
    assert_fails(invoke("bench", web_android_package, "--ep", "cpu,default"), 2, "repeat the option: --ep cpu --ep default")


def test_an_unknown_ep_lists_default_too(web_android_package: Path) -> None:
    assert_fails(invoke("bench", web_android_package, "--ep", "gpu"), 2, "--ep default or --ep cpu")
