"""``mobilegen bench`` and the other runtimes (mobilegen.bench.runtimes) where their extras are NOT installed:
a bare .tflite / .aimodel is refused in one line naming the extra; a package that ships one gets a skipped row
saying the same, its ORT rows still run, and the result still validates against the published schema.

With the extras installed the same commands time the models: tests/integration/test_litert.py (make
test-litert) and tests/integration/test_coreai_backend.py (make test-coreai).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from cli_helpers import assert_fails, invoke
from package_fixtures import build_package

from mobilegen.bench import run_host_bench, schema_document

HAVE_LITERT = importlib.util.find_spec("ai_edge_litert") is not None
HAVE_COREAI = importlib.util.find_spec("coreai") is not None


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bench_rt") / "pkg"
    build_package(root)
    return root


def with_litert_model(package: Path, tmp_path: Path) -> Path:
    """The package as a --runtime ort,litert build records it (manifest options.runtimes); the file's bytes
    do not matter here: without ai-edge-litert nothing reads them."""
    pkg = Path(shutil.copytree(package, tmp_path / "pkg"))
    (pkg / "model" / "model.tflite").write_bytes(b"TFL3 not read")
    doc = json.loads((pkg / "manifest.json").read_text())
    doc.setdefault("options", {})["runtimes"] = [{"runtime": "litert", "file": "model/model.tflite", "bytes": 13, "platforms": ["android"]}]
    (pkg / "manifest.json").write_text(json.dumps(doc), encoding="utf-8")
    return pkg


@pytest.mark.skipif(HAVE_LITERT, reason="ai-edge-litert is installed here: tests/integration/test_litert.py times the model")
def test_a_tflite_without_the_extra_is_refused_naming_it(tmp_path: Path) -> None:
    model = tmp_path / "m.tflite"
    model.write_bytes(b"TFL3")
    out = tmp_path / "r.json"
    line = assert_fails(invoke("bench", model, "-o", out), 2, "timing m.tflite (LiteRT) needs ai-edge-litert", "pip install 'mobilegen[litert]'")
    assert line.count("\n") == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.tflite"]  # no result written


@pytest.mark.skipif(HAVE_COREAI, reason="coreai-core is installed here: tests/integration/test_coreai_backend.py times the model")
def test_an_aimodel_without_the_extra_is_refused_naming_it(tmp_path: Path) -> None:
    model = tmp_path / "m.aimodel"
    model.mkdir()
    (model / "main.mlirb").write_bytes(b"\0")
    assert_fails(invoke("bench", model), 2, "timing m.aimodel (Core AI) needs coreai-core", "pip install 'mobilegen[coreai]'")


@pytest.mark.skipif(HAVE_LITERT, reason="ai-edge-litert is installed here: the row runs")
def test_a_package_row_for_a_missing_runtime_is_skipped_and_the_ort_rows_run(package: Path, tmp_path: Path) -> None:
    pkg = with_litert_model(package, tmp_path)
    result = run_host_bench(pkg, runs=2, warmup=0)
    rows = {c.name: c for c in result.configurations}
    assert rows["cpu"].status == "ok" and rows["cpu"].warm is not None and rows["cpu"].warm.n == 2
    lite = rows["litert"]
    assert list(rows)[-1] == "litert"  # after the ORT rows
    assert lite.status == "skipped" and lite.warm is None and lite.ep == "cpu" and lite.providers == ("LiteRT CPU",)
    assert "needs ai-edge-litert" in (lite.reason or "") and "mobilegen[litert]" in (lite.reason or "")
    assert lite.options["model_file"] == "model/model.tflite"
    jsonschema.Draft202012Validator(schema_document()).validate(result.to_json())
    only = run_host_bench(pkg, ("litert",), runs=1, warmup=0)
    assert [c.name for c in only.configurations] == ["litert"]
    ios = run_host_bench(pkg, ("cpu",), runs=1, warmup=0, target="ios")  # LiteRT runs on Android: not an iOS row
    assert [c.name for c in ios.configurations] == ["cpu"]
    assert_fails(invoke("bench", pkg, "--ep", "litert", "--target", "ios"), 2, "--ep litert", "ships no LiteRT model")


def test_ep_of_a_runtime_the_package_does_not_ship_is_refused(package: Path, tmp_path: Path) -> None:
    assert_fails(invoke("bench", package, "--ep", "litert"), 2, "--ep litert", "ships no LiteRT model", "--runtime ort,litert")
    r = invoke("bench", package, "--ep", "gpu")
    assert_fails(r, 2, "--ep gpu", "--ep litert or --ep coreai")


def test_ep_of_another_runtime_on_a_bare_model_is_refused(tmp_path: Path) -> None:
    model = tmp_path / "m.tflite"
    model.write_bytes(b"TFL3")
    assert_fails(invoke("bench", model, "--ep", "cpu"), 2, "--ep cpu", "m.tflite runs on LiteRT only", "--ep litert")
    assert_fails(invoke("bench", model, "--target", "android"), 2, "--target android", "is a model file")
