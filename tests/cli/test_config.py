"""``mobilegen.toml`` / ``--config FILE``: flags from a file, layered under the command line.

``check`` on a three-node ONNX model shows what was applied (its JSON echoes the settings) in well under
a second; one test builds a package both ways and compares the manifests.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import onnx
import pytest
from cli_helpers import assert_fails, invoke, private_tmpdir
from onnx import TensorProto, helper


@pytest.fixture(autouse=True)
def _tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from private_tmpdir(tmp_path, monkeypatch)


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current folder for the test, holding ``m.onnx`` (Relu → Relu, [1, 4])."""
    folder = tmp_path / "work"
    folder.mkdir()
    _onnx(folder / "m.onnx")
    monkeypatch.chdir(folder)
    return folder


def _onnx(path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r1"), helper.make_node("Relu", ["a"], ["y"], name="r2")]
    graph = helper.make_graph(nodes, "g", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def _check_json(*args: object) -> dict[str, Any]:
    result = invoke("check", *args, "--json")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _nnapi_api(data: dict[str, Any]) -> int:
    (nnapi,) = [r for r in data["reports"] if r["ep"] == "nnapi"]
    api: int = nnapi["settings"]["android_api"]
    return api


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_file_in_current_folder_applies_with_no_arguments(work: Path) -> None:
    (work / "mobilegen.toml").write_text('model = "m.onnx"\nep = "nnapi"\nandroid-api = 29\n')
    data = _check_json()  # MODEL and --ep (required) both come from the file
    assert [r["ep"] for r in data["reports"]] == ["nnapi"]
    assert _nnapi_api(data) == 29
    assert data["config"] == "mobilegen.toml"


def test_no_file_no_config(work: Path) -> None:
    data = _check_json("m.onnx", "--ep", "nnapi")
    assert _nnapi_api(data) == 31 and "config" not in data


def test_config_option_and_paths_relative_to_its_folder(work: Path, tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    _onnx(models / "sub.onnx")
    (models / "ci.toml").write_text('model = "sub.onnx"\n[check]\nep = ["nnapi"]\nandroid_api = 30\n')
    (work / "mobilegen.toml").write_text("android-api = 27\n")  # not read: --config names another file
    data = _check_json("--config", "../models/ci.toml")
    assert _nnapi_api(data) == 30 and data["config"] == "../models/ci.toml"
    relative = invoke("inspect", "--config", "../models/ci.toml", "--json")  # MODEL resolved beside ci.toml
    assert relative.exit_code == 0, relative.stderr
    assert json.loads(relative.stdout)["path"].endswith("models/sub.onnx")


def test_command_table_overrides_top_level(work: Path) -> None:
    (work / "mobilegen.toml").write_text(
        'ep = ["nnapi"]\nandroid-api = 28\n[check]\nandroid-api = 33\n[android]\nandroid-api = 27\nnnapi = true\n'
    )
    assert _nnapi_api(_check_json("m.onnx")) == 33


def test_command_line_overrides_file(work: Path) -> None:
    (work / "mobilegen.toml").write_text('[check]\nep = ["nnapi"]\nandroid-api = 29\nmodel = "missing.onnx"\n')
    data = _check_json("m.onnx", "--android-api", "34", "--ep", "coreml", "--ep", "nnapi")
    assert [r["ep"] for r in data["reports"]] == ["coreml", "coreml", "nnapi"]
    assert _nnapi_api(data) == 34


def test_top_level_key_of_other_commands_is_not_applied(work: Path) -> None:
    # nnapi/coreml/zip belong to android/ios/package, not to check: no error, no effect
    (work / "mobilegen.toml").write_text('nnapi = true\ncoreml = true\nzip = true\nep = ["nnapi"]\n')
    assert _nnapi_api(_check_json("m.onnx")) == 31


def test_help_never_reads_the_file(work: Path) -> None:
    (work / "mobilegen.toml").write_text("this is = = not toml\n")
    for args in (["check", "--help"], ["package", "--config", "mobilegen.toml", "--help"]):
        result = invoke(*args)
        assert result.exit_code == 0, result.stderr
        assert "--config FILE" in result.stdout
    version = invoke("--version")
    assert version.exit_code == 0 and version.stdout.startswith("mobilegen ")


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("nnapy = true\n", ["mobilegen.toml", "unknown key nnapy", "not an option of any command", "did you mean 'nnapi'"]),
        ("[ios]\nnnapi = true\n", ["mobilegen.toml", "unknown key [ios] nnapi", "not an option of mobilegen ios"]),
        ("[andriod]\nnnapi = true\n", ["mobilegen.toml", "unknown table [andriod]", "did you mean 'android'"]),
        ("config = 'other.toml'\n", ["mobilegen.toml", "unknown key config"]),
        ("output-name = ['a']\noutput_name = ['b']\n", ["mobilegen.toml", "output_name is given twice"]),
    ],
)
def test_unknown_key_names_it_and_the_file(work: Path, text: str, needles: list[str]) -> None:
    (work / "mobilegen.toml").write_text(text)
    before = _listing(work)
    assert_fails(invoke("check", "m.onnx", "--ep", "nnapi"), 2, *needles)
    assert _listing(work) == before


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ('[package]\nnnapi = "yes"\n', ["[package] nnapi must be true or false, not a string", "write nnapi = true"]),
        ('android-api = "29"\n', ["android-api must be an integer, not a string", "write android-api = 29"]),
        ("android-api = true\n", ["android-api must be an integer, not a boolean"]),
        ("input = 3\n", ["input must be a string (or a list of them), not an integer"]),
        ("opset = [17]\n", ["opset takes one value, not a list"]),
        ("atol = 'small'\n", ["atol must be a number, not a string"]),
        ("model = 1\n", ["model must be a path (a string), not an integer"]),
    ],
)
def test_wrong_type_names_the_key_and_the_file(work: Path, text: str, needles: list[str]) -> None:
    (work / "mobilegen.toml").write_text(text)
    before = _listing(work)
    line = assert_fails(invoke("android", "m.onnx", "-o", "out"), 2, "mobilegen.toml", *needles)
    assert line.startswith("error: mobilegen.toml: ")
    assert _listing(work) == before


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('[check]\nfail_under = "80"\n', "write fail_under = 80"),  # not the generic `fail_under = 0.001`
        ('[check]\nfail-under = "99.5"\n', "write fail-under = 99.5"),
        ("[check]\nfail_under = [80]\n", "write fail_under = 80"),
        ('[check]\nmax_partitions = "3"\n', "write max_partitions = 3"),
        ('[check]\nfail_under = "most"\n', "write fail_under = 0.001"),  # nothing to convert: the generic example
        ("[check]\ncoreml_format = 1\n", 'write coreml_format = "1"'),
    ],
)
def test_wrong_type_hint_shows_the_value_converted(work: Path, text: str, needle: str) -> None:
    (work / "mobilegen.toml").write_text(text)
    r = invoke("check", "m.onnx", "--ep", "nnapi")
    assert_fails(r, 2, "mobilegen.toml")
    assert needle in r.stderr.splitlines()[0], r.stderr


def test_bad_file_json_error_is_one_document(work: Path) -> None:
    (work / "mobilegen.toml").write_text("[check]\nandroid-api = 'x'\n")
    result = invoke("check", "m.onnx", "--ep", "nnapi", "--json")
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert data["error"] == "usage" and "android-api must be an integer" in data["message"]


def test_missing_config_file_is_an_error(work: Path) -> None:
    assert_fails(invoke("check", "m.onnx", "--ep", "nnapi", "--config", "nope.toml"), 2, "config file nope.toml does not exist")


def test_invalid_toml_names_the_file(work: Path) -> None:
    (work / "ci.toml").write_text("nnapi = \n")
    assert_fails(invoke("check", "m.onnx", "--ep", "nnapi", "--config", "ci.toml"), 2, "config file ci.toml is not valid TOML", "line 1")


def test_config_that_is_not_a_file(work: Path) -> None:
    (work / "mobilegen.toml").mkdir()
    assert_fails(invoke("check", "m.onnx", "--ep", "nnapi"), 2, "config file mobilegen.toml is not a regular file")


def test_model_class_file_is_relative_to_the_config(work: Path, tmp_path: Path) -> None:
    import torch

    nets = tmp_path / "nets"
    nets.mkdir()
    (nets / "net.py").write_text("import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = torch.nn.Linear(4, 2)\n")
    torch.save({"fc.weight": torch.zeros(2, 4), "fc.bias": torch.zeros(2)}, nets / "w.pt")
    (nets / "mobilegen.toml").write_text('model = "w.pt"\nmodel-class = "net.py:Net"\n')
    result = invoke("inspect", "--config", nets / "mobilegen.toml", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["parameters"] == 10


def test_package_from_file_equals_package_from_flags(work: Path) -> None:
    (work / "mobilegen.toml").write_text(
        'model = "m.onnx"\natol = 0.001\n'
        '[package]\nandroid = true\nios = true\nnnapi = true\nnnapi-flags = "fp16"\nxnnpack = true\n'
        'package = "com.example.cfg"\ncoreml = true\ncoreml-format = "neuralnetwork"\ncompute_units = "cpu-only"\n'
        'name = "Tiny"\nzip = true\noutput = "from-file"\n'
    )
    from_file = invoke("package", "--json")
    assert from_file.exit_code == 0, from_file.stderr
    assert json.loads(from_file.stdout)["config"] == "mobilegen.toml"
    (work / "mobilegen.toml").unlink()
    flags = [
        "m.onnx", "--atol", "0.001", "--android", "--ios", "--nnapi", "--nnapi-flags", "fp16", "--xnnpack", "--package", "com.example.cfg",
        "--coreml", "--coreml-format", "neuralnetwork", "--compute-units", "cpu-only", "--name", "Tiny", "--zip", "-o", "from-flags",
    ]
    from_flags = invoke("package", *flags)
    assert from_flags.exit_code == 0, from_flags.stderr
    a, b = (json.loads((work / d / "manifest.json").read_text()) for d in ("from-file", "from-flags"))
    assert a["options"] == b["options"]
    assert a["options"]["android"]["package"] == "com.example.cfg" and a["options"]["ios"]["coreml_format"] == "neuralnetwork"
    assert a["files"] == b["files"]
    assert (work / "from-file.zip").is_file()


def test_documented_example_is_a_valid_config(work: Path) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "config.md").read_text()
    example = page.split("# Config file (`mobilegen.toml`)", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    (work / "mobilegen.toml").write_text(example)
    # the whole file is checked on every run; verify takes none of its keys and then fails on its own
    assert_fails(invoke("verify", "missing.zip"), 2, "missing.zip")
    assert "mobilegen.toml" not in invoke("verify", "missing.zip").stderr
    (work / "mobilegen.toml").write_text(example.replace("android-api = 29", "android-api = 29.5"))
    assert_fails(invoke("verify", "missing.zip"), 2, "mobilegen.toml: [package] android-api must be an integer, not a float")


def test_entry_point_prints_one_line(work: Path) -> None:
    import subprocess
    import sys

    (work / "mobilegen.toml").write_text("[android]\nnnapi = 1\n")
    p = subprocess.run([sys.executable, "-m", "mobilegen", "android", "m.onnx"], capture_output=True, text=True, cwd=work)
    assert p.returncode == 2
    assert p.stderr.splitlines() == ["error: mobilegen.toml: [android] nnapi must be true or false, not an integer — write nnapi = true"]
    assert _listing(work) == ["m.onnx", "mobilegen.toml"]
