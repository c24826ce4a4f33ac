"""`mobilegen bench` times what ships: each target's create()-with-default-options configuration first,
then the alternatives, and an image task's preprocessing alone per source size (result schema 2); results
of schema version 1 are still read and merged. Timings are never asserted."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from cli_helpers import assert_fails, invoke

from mobilegen.bench import merge_results, read_result, run_host_bench, schema_document
from mobilegen.bench.host import default_host_config, preprocessing_rows
from mobilegen.providers import get as provider
from mobilegen.targets.defaults import BENCH_IMAGE_SIZES, default_chain

pytestmark = pytest.mark.slow  # a task package build (~15 s) and 12 MP photos through the Python reference

REPO = Path(__file__).resolve().parents[2]
XNNPACK = "XnnpackExecutionProvider"
CPU = "CPUExecutionProvider"


def validate(doc: dict[str, object]) -> None:
    jsonschema.Draft202012Validator(schema_document()).validate(doc)


@pytest.fixture(scope="module")
def task_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shipped")
    labels = root / "labels.txt"
    labels.write_text("".join(f"class{i}\n" for i in range(10)), encoding="utf-8")
    out = root / "pkg"
    result = invoke(
        "package", REPO / "examples" / "mobilenet_tiny.pt", "--input", "image:1x3x64x64", "--android", "--ios", "--xnnpack",
        "--task", "image-classification", "--labels", labels, "-o", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    return out


def test_default_rows_first_then_cpu_and_preprocessing_rows(task_package: Path) -> None:
    result = run_host_bench(task_package, runs=1, warmup=0)
    names = [c.name for c in result.configurations]
    assert names == ["default-android", "default-ios", "cpu"]
    assert [c.shipped_default for c in result.configurations] == ["android", "ios", None]
    manifest = json.loads((task_package / "manifest.json").read_text(encoding="utf-8"))
    for c in result.configurations[:2]:
        flags = manifest["options"][c.shipped_default]
        assert flags["xnnpack"] is True
        chain = default_chain(str(c.shipped_default), flags)
        assert c.options["shipped_providers"] == ",".join([*(p.name for p in chain), "cpu"])
        if XNNPACK not in c.providers:  # PyPI's onnxruntime: XNNPACK left out as the wrapper leaves it out
            assert "xnnpack" in c.options["skipped_providers"]
            assert c.providers == (CPU,)
    # the preprocessing: one row per source size, the model's crop out of each
    assert [(r.name, r.source, r.output, r.status) for r in result.preprocessing] == [
        (f"image-{w}x{h}", (w, h), (64, 64), "ok") for w, h in BENCH_IMAGE_SIZES
    ]
    assert all(r.warm is not None and r.warm.n == 1 and r.entry_point.endswith("resize_crop") for r in result.preprocessing)
    doc = result.to_json()
    assert doc["schema_version"] == 2
    validate(doc)


def test_default_chain_follows_the_options_and_the_providers_host_setup() -> None:
    flags: dict[str, object] = {"nnapi": True, "xnnpack": True, "qnn": False}
    assert [p.name for p in default_chain("android", flags)] == ["nnapi", "xnnpack"]
    assert [p.name for p in default_chain("android", {**flags, "qnn": True})] == ["qnn", "nnapi", "xnnpack"]
    assert [p.name for p in default_chain("android", flags, in_runtime=("qnn",))] == []
    with_xnn = default_host_config("android", flags, [XNNPACK, CPU], "1.x")
    session = provider("xnnpack").host_session()
    assert session is not None
    assert with_xnn.providers == (XNNPACK, CPU)
    assert with_xnn.provider_options[0] == dict(session.provider_options)
    assert with_xnn.intra_op_threads == session.intra_op_threads == 1
    assert with_xnn.config_entries == dict(session.config_entries)
    assert "nnapi (runs on the device only)" in with_xnn.options()["skipped_providers"]
    without = default_host_config("android", flags, [CPU], "1.x")
    assert without.providers == (CPU,) and without.intra_op_threads == 0 and without.ep == "cpu"
    assert "xnnpack (onnxruntime 1.x on this host lacks it)" in without.options()["skipped_providers"]


def test_preprocessing_rows_only_for_image_tasks() -> None:
    assert preprocessing_rows(None, runs=1, warmup=0) == ()
    assert preprocessing_rows({"kind": "audio", "sample_rate": 16000}, runs=1, warmup=0) == ()
    rows = preprocessing_rows({"kind": "image", "crop": [24, 32], "resize": 40, "resize_filter": "bilinear"}, runs=2, warmup=0)
    from mobilegen.tasks import reference
    from mobilegen.tasks.spec import TaskSpec

    spec = TaskSpec(kind="image", crop=(24, 32), resize=40, resize_filter="bilinear")
    for (w, h), row in zip(BENCH_IMAGE_SIZES, rows, strict=True):
        ref = reference.resize_crop(np.zeros((h, w, 3), np.uint8), spec)  # the oracle's output size
        assert row.output == (ref.shape[1], ref.shape[0]) and row.warm is not None and row.warm.n == 2


def test_explicit_ep_and_default_on_a_bare_ort(task_package: Path) -> None:
    result = run_host_bench(task_package, ("cpu",), runs=1, warmup=0, target="android")
    assert [c.name for c in result.configurations] == ["cpu"]
    result = run_host_bench(task_package, ("default",), runs=1, warmup=0, target="ios")
    assert [c.name for c in result.configurations] == ["default-ios"]
    assert_fails(invoke("bench", task_package / "model" / "model.ort", "--ep", "default"), 2, "--ep default", "bare .ort")


def test_schema_1_results_are_still_read_and_merged(task_package: Path, tmp_path: Path) -> None:
    import shutil

    pkg = Path(shutil.copytree(task_package, tmp_path / "pkg"))
    doc = run_host_bench(pkg, ("cpu",), runs=1, warmup=0).to_json()
    doc["schema_version"] = 1
    del doc["preprocessing"]
    for c in doc["configurations"]:
        del c["shipped_default"]
    validate(doc)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc), encoding="utf-8")
    r = read_result(old)
    assert r.preprocessing == () and r.configurations[0].shipped_default is None
    merged = merge_results(pkg, [old])
    assert merged.changed and len(merged.results) == 1
    # a version 2 document without its preprocessing rows is refused by the schema and the reader
    doc["schema_version"] = 2
    with pytest.raises(jsonschema.ValidationError):
        validate(doc)
    old.write_text(json.dumps(doc), encoding="utf-8")
    assert_fails(invoke("report", pkg, "--results", old), 2, "preprocessing")


def test_report_shows_the_shipped_rows_and_the_preprocessing(task_package: Path, tmp_path: Path) -> None:
    import shutil

    pkg = Path(shutil.copytree(task_package, tmp_path / "pkg"))
    result = tmp_path / "r.json"
    assert invoke("bench", pkg, "--target", "android", "--runs", "1", "--warmup", "0", "-o", result).exit_code == 0
    assert invoke("report", pkg, "--results", result).exit_code == 0
    md = (pkg / "report" / "report.md").read_text(encoding="utf-8")
    html = (pkg / "report" / "report.html").read_text(encoding="utf-8")
    # the host leaves out what runs on the device only, and the merged report keeps saying so
    left_out = read_result(result).configurations[0].options.get("skipped_providers")
    shipped = f"default-android (what the android app ships{f', without {left_out}' if left_out else ''})"
    assert shipped in md and shipped in html
    for text in (md, html):
        assert "Preprocessing (input preparation alone, per source size)" in text
        assert all(f"{w}x{h}" in text for w, h in BENCH_IMAGE_SIZES)
    assert invoke("verify", pkg).exit_code == 0
