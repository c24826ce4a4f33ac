"""mobilegen.bench: the result schema, the profiling parser, `mobilegen bench` and `mobilegen report --results`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jsonschema
import onnxruntime as ort
import pytest
from bench_helpers import NODE_NAMES, record_profile, with_providers
from cli_helpers import assert_fails, invoke
from package_fixtures import build_package

from mobilegen.bench import (
    BenchResult,
    Configuration,
    Device,
    PlacedNode,
    Placement,
    WarmStats,
    read_profile,
    result_from_json,
    run_host_bench,
    schema_document,
)
from mobilegen.bench.compare import MD_BEGIN, compare, predictions

XNNPACK = "XnnpackExecutionProvider"
NNAPI = "NnapiExecutionProvider"
CPU = "CPUExecutionProvider"


def validator() -> jsonschema.Draft202012Validator:
    schema = schema_document()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bench") / "pkg"
    build_package(root)
    return root


def fresh_package(package: Path, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(package, tmp_path / "pkg"))


def device_result(sha: str) -> BenchResult:
    """What a phone would send: NNAPI compiled two partitions (one fused node each), XNNPACK left
    reduce_max on the CPU, and a configuration the device could not run."""

    def placed(*nodes: tuple[str, str, str]) -> Placement:
        from mobilegen.bench import observed_partitions

        ps = tuple(PlacedNode(*n) for n in nodes)
        return Placement(True, None, ps, observed_partitions(ps))

    warm = WarmStats.of([2.0, 1.0, 3.0])
    nnapi = placed(
        ("NnapiExecutionProvider_NNAPI_0_0", "NnapiExecutionProvider_NNAPI_0_0", NNAPI),
        ("transpose_0", "Transpose", CPU),
        ("reduce_max", "ReduceMax", CPU),
        ("neg*out", "Neg", NNAPI),
    )
    xnn = placed(
        ("mul_scale", "Mul", XNNPACK),
        ("relu<act>&1", "Relu", XNNPACK),
        ("add|residual", "Add", XNNPACK),
        ("transpose_0", "Transpose", XNNPACK),
        ("reduce_max", "ReduceMax", CPU),
        ("neg*out", "Neg", XNNPACK),
    )
    configs = (
        Configuration("cpu", "cpu", None, (CPU,), {}, "ok", None, 10.0, 2.0, warm, placed(("mul_scale", "Mul", CPU))),
        Configuration("nnapi", "nnapi", None, (NNAPI, CPU), {}, "ok", None, 30.0, 9.0, warm, nnapi),
        Configuration("xnnpack", "xnnpack", None, (XNNPACK, CPU), {"session.intra_op.allow_spinning": "0"}, "ok", None, 12.0, 3.0, warm, xnn),
        Configuration(
            "nnapi-fp16", "nnapi", None, (NNAPI, CPU), {"nnapi_flags": "USE_FP16"}, "skipped", "needs Android API 27, the device has 26",
            placement=Placement.unavailable("needs Android API 27, the device has 26"),
        ),
    )
    return BenchResult(sha, "model.ort", "0.0.0", "1.24.2", Device("device", "Pixel 8", "Tensor G3", "Android 15", 35), 3, 1, configs)


def model_sha(package: Path) -> str:
    return hashlib.sha256((package / "model/model.ort").read_bytes()).hexdigest()


# --- schema --------------------------------------------------------------------------------------


def test_results_validate_against_the_shipped_schema(package: Path) -> None:
    v = validator()
    host = run_host_bench(package, ("cpu", "xnnpack"), runs=3, warmup=1)
    device = device_result(host.model_sha256)
    for result in (host, device):
        doc = json.loads(result.text())
        v.validate(doc)
        assert result_from_json(doc).to_json() == doc  # the reader gives back what the writer wrote
    assert host.configurations[0].warm is not None and host.configurations[0].warm.n == 3


@pytest.mark.parametrize(
    ("path", "value", "needle"),
    [
        (("model_sha256",), "ABC", "model_sha256"),
        (("configurations", 0, "status"), "fine", "status"),
        (("configurations", 0, "session_create_ms"), -1.0, "session_create_ms"),
        (("device", "kind"), "phone", "device.kind"),
        (("schema_version",), 3, "schema_version"),
        (("surprise",), 1, "surprise"),
    ],
)
def test_bad_results_fail_the_schema_and_the_reader(package: Path, path: tuple[object, ...], value: object, needle: str) -> None:
    doc = json.loads(device_result(model_sha(package)).text())
    target = doc
    for key in path[:-1]:
        target = target[key]  # type: ignore[index]
    target[path[-1]] = value  # type: ignore[index]
    assert list(validator().iter_errors(doc)), "the schema must refuse it"
    with pytest.raises(ValueError, match=needle.split(".")[-1]):
        result_from_json(doc)


def test_nearest_rank_percentiles() -> None:
    w = WarmStats.of([float(x) for x in range(10, 0, -1)])
    assert (w.n, w.min, w.p50, w.p90, w.mean) == (10, 1.0, 5.0, 9.0, 5.5)


# --- profiling parser ----------------------------------------------------------------------------


def test_placement_from_a_profile_desktop_onnxruntime_recorded(tmp_path: Path) -> None:
    placement = read_profile(record_profile(tmp_path, [CPU]))
    assert placement.available and placement.partitions == 0
    assert [n.node for n in placement.nodes] == list(NODE_NAMES)  # execution order
    assert [n.op for n in placement.nodes] == ["Conv", "Relu", "Erf", "Sigmoid", "Add"]
    assert {n.provider for n in placement.nodes} == {CPU}


def test_placement_with_xnnpack_from_desktop_onnxruntime(tmp_path: Path) -> None:
    if XNNPACK not in ort.get_available_providers():
        pytest.skip(f"onnxruntime {ort.__version__} here has no {XNNPACK} (the Linux x64 wheels ship without it)")
    placement = read_profile(record_profile(tmp_path, [XNNPACK, CPU]))
    by_node = {n.node: n.provider for n in placement.nodes}
    assert by_node["conv0"] == XNNPACK and by_node["erf0"] == CPU
    assert placement.partitions == 2


def test_placement_of_a_recorded_profile_with_provider_nodes(tmp_path: Path) -> None:
    recorded = record_profile(tmp_path, [CPU])
    mixed = with_providers(recorded, tmp_path / "mixed.json", {"conv0": XNNPACK, "relu0": XNNPACK, "sig0": XNNPACK, "add0": NNAPI})
    placement = read_profile(mixed)
    assert [(n.node, n.provider) for n in placement.nodes] == [
        ("conv0", XNNPACK), ("relu0", XNNPACK), ("erf0", CPU), ("sig0", XNNPACK), ("add0", NNAPI)
    ]
    assert placement.partitions == 3  # XNNPACK, then XNNPACK again after the CPU's Erf, then NNAPI


def test_an_unreadable_profile_is_an_unavailable_placement(tmp_path: Path) -> None:
    bad = tmp_path / "p.json"
    bad.write_text("{not json", encoding="utf-8")
    assert not read_profile(bad).available
    bad.write_text("[]", encoding="utf-8")
    assert read_profile(bad).reason and "no node events" in read_profile(bad).reason  # type: ignore[operator]


# --- prediction vs observation ---------------------------------------------------------------------


def test_observed_placement_against_the_static_prediction(package: Path) -> None:
    preds = predictions(json.loads((package / "report/coverage.json").read_text()))
    found = {c.config: c for c in compare(device_result(model_sha(package)), preds)}
    assert set(found) == {"nnapi", "xnnpack"}  # accelerated and ran
    nnapi = found["nnapi"]
    assert nnapi.prediction == "nnapi" and not nnapi.agrees
    assert nnapi.predicted_on_ep_ran_cpu == ("transpose_0",)  # predicted in NNAPI's partition, ran on the CPU
    assert nnapi.predicted_cpu_ran_on_ep == ("neg*out",)  # predicted on the CPU, ran on NNAPI
    assert (nnapi.predicted_partitions, nnapi.observed_partitions) == (1, 2)
    assert nnapi.ort_made == 1  # the fused node
    xnn = found["xnnpack"]
    assert xnn.predicted_on_ep_ran_cpu == ("reduce_max",) and xnn.predicted_cpu_ran_on_ep == ()
    assert (xnn.predicted_partitions, xnn.observed_partitions) == (1, 2)


# --- CLI: bench, report, verify --------------------------------------------------------------------


def test_host_bench_merges_into_the_package_and_verify_passes(package: Path, tmp_path: Path) -> None:
    pkg = fresh_package(package, tmp_path)
    out = tmp_path / "host.json"
    r = invoke("bench", pkg, "--ep", "cpu", "--runs", "5", "--warmup", "1", "-o", out, "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == json.loads(out.read_text())
    validator().validate(json.loads(out.read_text()))
    device = tmp_path / "device.json"
    device.write_text(device_result(model_sha(pkg)).text(), encoding="utf-8")

    r = invoke("report", pkg, "--results", out, "--results", device, "--json")
    assert r.exit_code == 0, r.stderr
    merged = json.loads(r.stdout)
    assert len(merged["added"]) == 2 and merged["added"] == merged["results"]
    assert {p["configuration"] for p in merged["placement"]} == {"nnapi", "xnnpack"}
    md = (pkg / "report/report.md").read_text()
    assert md.count(MD_BEGIN) == 1 and "Pixel 8" in md and "transpose\\_0" in md
    html = (pkg / "report/report.html").read_text()
    assert html.count("<section id=\"measured\">") == 1 and html.rstrip().endswith("</html>")
    assert invoke("verify", pkg).exit_code == 0

    before = tree(pkg)
    r = invoke("report", pkg, "--results", device)  # the same result again: nothing new
    assert r.exit_code == 0 and tree(pkg) == before, r.stderr
    assert invoke("verify", pkg).exit_code == 0


def test_a_result_of_another_model_is_refused_and_nothing_changes(package: Path, tmp_path: Path) -> None:
    pkg = fresh_package(package, tmp_path)
    other = tmp_path / "other.json"
    other.write_text(device_result("0" * 64).text(), encoding="utf-8")
    before = tree(pkg)
    r = invoke("report", pkg, "--results", other)
    assert_fails(r, 2, "other.json", "sha256 000000000000", "not this package's")
    assert tree(pkg) == before


def test_a_package_changed_after_packaging_is_not_re_hashed(package: Path, tmp_path: Path) -> None:
    pkg = fresh_package(package, tmp_path)
    good = tmp_path / "good.json"
    good.write_text(device_result(model_sha(pkg)).text(), encoding="utf-8")
    (pkg / "README.md").write_text("tampered\n", encoding="utf-8")
    before = tree(pkg)
    assert_fails(invoke("report", pkg, "--results", good), 9, "package verification failed")
    assert tree(pkg) == before


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{", "bad.json is not valid JSON (line 1)"),
        ('{"kind": "something-else"}', "no \"kind\": \"mobilegen-bench\""),
        (None, "no such file"),
    ],
)
def test_unreadable_results_are_usage_errors(package: Path, tmp_path: Path, content: str | None, needle: str) -> None:
    pkg = fresh_package(package, tmp_path)
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content, encoding="utf-8")
    before = tree(pkg)
    assert_fails(invoke("report", pkg, "--results", bad), 2, "bad.json", needle)
    assert tree(pkg) == before


def test_bench_refuses_what_the_host_cannot_run(package: Path, tmp_path: Path) -> None:
    assert_fails(invoke("bench", package, "--ep", "nnapi"), 2, "--ep nnapi")
    assert_fails(invoke("bench", tmp_path / "missing.ort"), 2, "no such file")
    assert_fails(invoke("bench", package, "--runs", "0"), 2, "--runs")
    existing = tmp_path / "r.json"
    existing.write_text("{}", encoding="utf-8")
    assert_fails(invoke("bench", package, "-o", existing), 2, "already exists")
    assert existing.read_text() == "{}"


@pytest.mark.parametrize("data", [b"garbage", b""])
def test_an_unloadable_ort_is_a_load_error(tmp_path: Path, data: bytes) -> None:
    bad = tmp_path / "bad.ort"
    bad.write_bytes(data)
    out = tmp_path / "r.json"
    line = assert_fails(invoke("bench", bad, "-o", out), 3, "bad.ort", "onnxruntime cannot load")
    assert "--debug" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.ort"]  # no result, no temporaries


def test_a_skipped_configuration_says_why(package: Path) -> None:
    result = run_host_bench(package, ("xnnpack",), runs=1, warmup=0)
    (c,) = result.configurations
    if XNNPACK in ort.get_available_providers():
        assert c.status == "ok" and c.placement.available
    else:
        assert c.status == "skipped" and XNNPACK in (c.reason or "") and c.warm is None


def test_bench_refuses_a_manifest_pointing_outside_the_package(package: Path, tmp_path: Path) -> None:
    pkg = fresh_package(package, tmp_path)
    doc = json.loads((pkg / "manifest.json").read_text())
    doc["models"][0]["ort"]["file"] = "../outside.ort"
    (pkg / "manifest.json").write_text(json.dumps(doc), encoding="utf-8")
    (tmp_path / "outside.ort").write_bytes((pkg / "model/model.ort").read_bytes())
    out = tmp_path / "r.json"
    assert_fails(invoke("bench", pkg, "-o", out), 2, "'../outside.ort'", "escapes the folder")
    assert not out.exists()


# --- QA: per-target models, -o, zips, --ep, messages ------------------------------------------------


def per_target_package(package: Path, tmp_path: Path) -> Path:
    """The package with one model per target (model/android/model.ort, model/ios/model.ort), as a build
    whose fix stage changed one target's graph lays it out."""
    pkg = fresh_package(package, tmp_path)
    doc = json.loads((pkg / "manifest.json").read_text())
    (m,) = doc["models"]
    doc["models"] = []
    for t in ("android", "ios"):
        (pkg / "model" / t).mkdir()
        (pkg / "model" / t / "model.ort").write_bytes((pkg / "model/model.ort").read_bytes())
        doc["models"].append({**m, "targets": [t], "ort": {**m["ort"], "file": f"model/{t}/model.ort"}})
    (pkg / "manifest.json").write_text(json.dumps(doc), encoding="utf-8")
    return pkg


def test_bench_names_the_model_it_timed_and_asks_which_target(package: Path, tmp_path: Path) -> None:
    pkg = per_target_package(package, tmp_path)
    out = tmp_path / "r.json"
    line = assert_fails(invoke("bench", pkg, "-o", out), 2, "one model per target", "model/android/model.ort", "model/ios/model.ort")
    assert "--target android" in line and "--target ios" in line
    assert not out.exists()
    r = invoke("bench", pkg, "--target", "ios", "--runs", "1", "--warmup", "0", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["model_file"] == "model/ios/model.ort"
    r = invoke("bench", pkg, "--target", "android", "--runs", "1", "--warmup", "0")
    assert r.exit_code == 0 and "model/android/model.ort on " in r.stdout + r.stderr, r.stderr
    assert_fails(invoke("bench", pkg, "--target", "windows"), 2, "--target windows", "android or ios")
    assert_fails(invoke("bench", pkg / "model/ios/model.ort", "--target", "ios"), 2, "--target ios", "a .ort file")
    single = run_host_bench(package, ("cpu",), runs=1, warmup=0)
    assert single.model_file == "model/model.ort"  # its path inside the package, not just "model.ort"


def test_bench_refuses_an_output_inside_the_package(package: Path, tmp_path: Path) -> None:
    pkg = fresh_package(package, tmp_path)
    before = tree(pkg)
    assert_fails(invoke("bench", pkg, "-o", pkg / "r.json"), 2, "inside the package folder", "r.json")
    assert_fails(invoke("bench", pkg / "model/model.ort", "-o", pkg / "report/r.json"), 2, "inside the package folder")
    assert tree(pkg) == before
    assert invoke("verify", pkg).exit_code == 0


def test_bench_creates_the_output_folders(package: Path, tmp_path: Path) -> None:
    out = tmp_path / "new" / "deeper" / "b.json"
    r = invoke("bench", package, "--runs", "1", "--warmup", "0", "-o", out)
    assert r.exit_code == 0, r.stderr
    validator().validate(json.loads(out.read_text()))
    assert sorted(p.name for p in out.parent.iterdir()) == ["b.json"]  # no temporaries left
    blocker = tmp_path / "afile"
    blocker.write_text("x", encoding="utf-8")
    assert_fails(invoke("bench", package, "--runs", "1", "--warmup", "0", "-o", blocker / "sub" / "b.json"), 2, "cannot write")
    assert blocker.read_text() == "x" and sorted(p.name for p in tmp_path.iterdir()) == ["afile", "new"]


def test_zips_and_files_get_a_hint_about_folders(package: Path, tmp_path: Path) -> None:
    zipped = tmp_path / "pkg.zip"
    zipped.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    assert_fails(invoke("bench", zipped), 2, "pkg.zip", "unzip it first")
    ort_file = tmp_path / "cnn.ort"
    ort_file.write_bytes((package / "model/model.ort").read_bytes())
    result = tmp_path / "r.json"
    result.write_text(device_result(model_sha(package)).text(), encoding="utf-8")
    line = assert_fails(invoke("report", ort_file, "--results", result), 2, "cnn.ort", "not a package folder")
    assert "not a zip" not in line
    assert_fails(invoke("report", zipped, "--results", result), 2, "not a zip")


def test_bench_ep_names_what_this_host_takes(package: Path) -> None:
    r = invoke("bench", package, "--ep", "gpu")
    line = assert_fails(r, 2, "--ep gpu", "--ep cpu or --ep xnnpack")
    assert "NNAPI" not in r.stderr and "CoreML" not in r.stderr, r.stderr
    assert "xnnpack is recorded as skipped" in line or XNNPACK in ort.get_available_providers()
    assert_fails(invoke("bench", package, "--ep", "coreml"), 2, "--ep coreml", "runs on the device", "--ep cpu")


def test_not_a_result_is_said_once_and_a_repeated_merge_says_already_merged(package: Path, tmp_path: Path) -> None:
    pkg = fresh_package(package, tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "other"}', encoding="utf-8")
    line = assert_fails(invoke("report", pkg, "--results", bad), 2, "bad.json")
    assert line.count("not a mobilegen benchmark result") == 1 and "it is not" not in line, line
    good = tmp_path / "good.json"
    good.write_text(device_result(model_sha(pkg)).text(), encoding="utf-8")
    r = invoke("report", pkg, "--results", good)
    assert r.exit_code == 0 and "manifest.json updated" in r.stdout + r.stderr, r.stderr
    before = tree(pkg)
    r = invoke("report", pkg, "--results", good)
    said = r.stdout + r.stderr
    assert r.exit_code == 0 and "already merged" in said and "nothing changed" in said and "updated" not in said, said
    assert tree(pkg) == before
    r = invoke("report", pkg, "--results", good, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["changed"] is False and json.loads(r.stdout)["added"] == []
