"""``mobilegen fix`` and the fix stage of ``package``: per-target models when Android and iOS need
different graphs, ``--no-fix``, ``--approximate``, coverage before/after in the JSON, the report and the
manifest (schema 2), and ``verify`` on such packages — exit codes, one-line errors, nothing left behind.

NNAPI is made to declare the small real passes of tests/fix_helpers.py (and CoreML none), so these tests
do not depend on which passes the library has."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from cli_helpers import assert_fails, build_threads_left, invoke, private_tmpdir
from fix_helpers import ERF_TANH, RELU_MAX, SUM2_ADD, example_input, model, registered, run

from mobilegen import providers
from mobilegen.package.manifest import canonical_json, self_hash
from mobilegen.passes.base import GraphPass


def _sum2_sub(m: onnx.ModelProto) -> int:
    """Wrong on purpose (Sum -> Sub): NNAPI takes Sub, the numbers differ — the gate must catch it."""
    nodes = [n for n in m.graph.node if n.op_type == "Sum"]
    for n in nodes:
        n.op_type = "Sub"
    return len(nodes)


WRONG = GraphPass("test-sum2-sub", "Sum -> Sub (wrong)", _sum2_sub)


@pytest.fixture(autouse=True)
def tmpdir_left_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from private_tmpdir(tmp_path, monkeypatch)


def _patch(monkeypatch: pytest.MonkeyPatch, nnapi: tuple[str, ...], coreml: tuple[str, ...] = ()) -> None:
    for ep, names in (("nnapi", nnapi), ("coreml", coreml)):
        monkeypatch.setitem(providers._loaded, ep, replace(providers.get(ep), fixes=names))  # noqa: SLF001


@pytest.fixture
def nnapi_fixes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """NNAPI declares fixed dims, Sum -> Add, Relu -> Max and the approximate Erf; CoreML declares nothing."""
    with registered(SUM2_ADD, RELU_MAX, ERF_TANH, WRONG):
        _patch(monkeypatch, ("fixed-dims", SUM2_ADD.name, RELU_MAX.name, ERF_TANH.name))
        yield


@pytest.fixture
def onnx_model(tmp_path: Path) -> Path:
    path = tmp_path / "net.onnx"
    onnx.save(model(erf=True), str(path))
    return path


def _ops(path: Path) -> list[str]:
    return [n.op_type for n in onnx.load(str(path)).graph.node]


# --- mobilegen fix ---------------------------------------------------------------------------------------


def test_fix_writes_the_fixed_model_and_shows_before_and_after(nnapi_fixes: None, onnx_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "fixed.onnx"
    r = invoke("fix", onnx_model, "--ep", "nnapi", "--ep", "coreml", "-o", out, "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    nnapi, coreml = doc["reports"]
    assert nnapi["ep"] == "nnapi" and coreml["format"] == "mlprogram"
    assert nnapi["before"] == {"supported_nodes": 2, "total_nodes": 4, "partitions": 1}
    assert (nnapi["supported_nodes"], nnapi["total_nodes"], len(nnapi["partitions"])) == (3, 4, 1)
    assert nnapi["fixes"] == coreml["fixes"] == [{"pass": "test-sum2-add", "nodes": 1}]
    assert [(p["pass"], p["kept"]) for p in doc["passes"]] == [("test-sum2-add", True), ("test-relu-max", False)]
    assert doc["verification"]["passed"] is True
    assert _ops(out) == ["Mul", "Relu", "Add", "Erf"]  # Erf: approximate, not asked for
    np.testing.assert_array_equal(run(onnx.load(str(out)), example_input()), run(model(erf=True), example_input()))
    human = invoke("fix", onnx_model, "--ep", "nnapi", "-o", out, "--force")
    assert human.exit_code == 0, human.stderr
    assert "nnapi: 2/4 nodes, 1 partition (50.0%) → 3/4 nodes, 1 partition (75.0%)" in human.stderr
    assert "graph passes applied: test-sum2-add (1 node)" in human.stderr
    assert "not kept: test-relu-max (1 nodes): no provider gained" in human.stderr


def test_fix_approximate_by_name(nnapi_fixes: None, onnx_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "fixed.onnx"
    r = invoke("fix", onnx_model, "--ep", "nnapi", "-o", out, "--approximate", "erf-test", "--atol", "0.1", "--rtol", "0.1", "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["reports"][0]["fixes"] == [{"pass": "test-sum2-add", "nodes": 1}, {"pass": "test-erf-tanh", "nodes": 1}]
    assert doc["reports"][0]["supported_nodes"] == doc["reports"][0]["total_nodes"] == 5
    assert "Erf" not in _ops(out)


@pytest.mark.parametrize(
    ("args", "code", "needles"),
    [
        (["--ep", "nnapi", "-o", "{out}.ort"], 2, ("does not name an .onnx file",)),
        (["--ep", "npu", "-o", "{out}.onnx"], 2, ("unknown --ep 'npu'", "nnapi")),
        (["--ep", "nnapi", "-o", "{out}.onnx", "--approximate", "gelu-ish"], 2, ("unknown --approximate 'gelu-ish'", "erf-test")),
        (["--ep", "nnapi", "-o", "{out}.onnx", "--android-api", "20"], 2, ("--android-api",)),
    ],
)
def test_fix_bad_usage(nnapi_fixes: None, onnx_model: Path, tmp_path: Path, args: list[str], code: int, needles: tuple[str, ...]) -> None:
    out = tmp_path / "out"
    assert_fails(invoke("fix", onnx_model, *(a.format(out=out) for a in args)), code, *needles)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["TMPDIR", "net.onnx"]


def test_fix_never_overwrites_without_force(nnapi_fixes: None, onnx_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "fixed.onnx"
    out.write_bytes(b"mine")
    assert_fails(invoke("fix", onnx_model, "--ep", "nnapi", "-o", out), 2, "already exists", "--force")
    assert out.read_bytes() == b"mine"
    assert invoke("fix", onnx_model, "--ep", "nnapi", "-o", out, "--force").exit_code == 0
    assert _ops(out)[2] == "Add"


def test_fix_a_wrong_rewrite_fails_the_gate_and_writes_nothing(monkeypatch: pytest.MonkeyPatch, onnx_model: Path, tmp_path: Path) -> None:
    with registered(WRONG):
        _patch(monkeypatch, (WRONG.name,))
        out = tmp_path / "fixed.onnx"
        assert_fails(invoke("fix", onnx_model, "--ep", "nnapi", "-o", out), 5, "differ from the source ONNX model")
        assert not out.exists()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["TMPDIR", "net.onnx"]


# --- package: per-target models ----------------------------------------------------------------------------


@pytest.fixture
def package(nnapi_fixes: None, onnx_model: Path, tmp_path: Path) -> tuple[Path, dict[str, object]]:
    out = tmp_path / "pkg"
    r = invoke("package", onnx_model, "--android", "--ios", "--nnapi", "--coreml", "-o", out, "--json")
    assert r.exit_code == 0, r.stderr
    return out, json.loads(r.stdout)


@pytest.mark.parametrize("target", ["android", "ios"])
@pytest.mark.parametrize("stage", ["write", "convert"])
def test_a_failure_in_either_models_write_or_conversion_leaves_nothing(
    nnapi_fixes: None, onnx_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, stage: str
) -> None:
    """Each model's write runs in a thread beside the next model's serialization, and each conversion beside
    the previous model's verification (convert.stage): a failure of either model, first or last, is
    reported in one line with its own exit code, and nothing is left (no output, no TMPDIR files, no thread)."""
    import errno

    from mobilegen.convert import stage as convert_stage
    from mobilegen.errors import ConversionError
    from mobilegen.infra.outputs import write_error

    if stage == "write":
        real_write = convert_stage._write  # noqa: SLF001

        def write(path: Path, chunks: object, sha256: str) -> None:
            if path.parent.name == target:
                raise write_error(path, OSError(errno.ENOSPC, "No space left on device"))
            real_write(path, chunks, sha256)  # type: ignore[arg-type]

        monkeypatch.setattr(convert_stage, "_write", write)
        code, said = 2, f"cannot write {tmp_path}"
    else:
        real_convert = convert_stage.convert_to_ort

        def convert(model: object, out_ort: Path, out_config: Path, **kw: Any) -> object:
            if out_ort.parent.name == target:
                raise ConversionError("onnxruntime could not convert the model to ORT format: test")
            return real_convert(model, out_ort, out_config, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(convert_stage, "convert_to_ort", convert)
        code, said = 6, "could not convert the model to ORT format: test"
    out = tmp_path / "pkg"
    line = assert_fails(invoke("package", onnx_model, "--android", "--ios", "--nnapi", "--coreml", "-o", out), code, said)
    assert target in line or stage == "convert"
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["TMPDIR", "net.onnx"]
    assert build_threads_left() == []


def test_models_are_verified_one_at_a_time_in_order(nnapi_fixes: None, onnx_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each model's .onnx runs the verification cases in its converting session, its .ort in a thread once
    the model is converted and the next model's converting session exists: one model at a time (one
    verifying session's copy of the weights), in model order, and the table lists every artifact of both
    in order."""
    import threading

    from mobilegen.convert import stage as convert_stage
    from mobilegen.verify import stage as verify_stage

    events: list[str] = []
    running = []
    lock = threading.Lock()
    real_runs, real_convert = verify_stage.artifact_runs, convert_stage.convert_to_ort

    def runs(expected: object, artifacts: dict[str, Path]) -> object:
        if not artifacts:
            return {}
        folder = next(iter(artifacts.values())).parent.name
        with lock:
            running.append(folder)
            events.append(f"verify {folder} {'+'.join(artifacts)} ({len(running)} running)")
        try:
            return real_runs(expected, artifacts)  # type: ignore[arg-type]
        finally:
            with lock:
                running.remove(folder)

    def convert(model: object, out_ort: Path, out_config: Path, *, style: str, use: Any) -> object:
        folder = out_ort.parent.name

        def spy(session: object) -> None:
            with lock:
                events.append(f"verify {folder} onnx in its converting session")
            use(session)

        with lock:
            events.append(f"convert {folder}")
        result = real_convert(model, out_ort, out_config, style=style, use=spy)  # type: ignore[arg-type]
        with lock:
            events.append(f"converted {folder}")
        return result

    monkeypatch.setattr(verify_stage, "artifact_runs", runs)
    monkeypatch.setattr(convert_stage, "convert_to_ort", convert)
    r = invoke("package", onnx_model, "--android", "--ios", "--nnapi", "--coreml", "-o", tmp_path / "pkg", "--json")
    assert r.exit_code == 0, r.stderr
    for folder in ("android", "ios"):  # the .onnx inside its conversion, the .ort after it
        assert events.index(f"convert {folder}") < events.index(f"verify {folder} onnx in its converting session") < events.index(f"converted {folder}")
        assert events.index(f"converted {folder}") < events.index(f"verify {folder} ort (1 running)")
    assert [e for e in events if e.endswith("ort (1 running)")] == ["verify android ort (1 running)", "verify ios ort (1 running)"]
    # android's .ort session loads once ios's converting session exists (the conversion's peak is over)
    assert events.index("verify ios onnx in its converting session") < events.index("verify android ort (1 running)")
    rows = json.loads(r.stdout)["verification"]["rows"]
    assert list(dict.fromkeys(row["artifact"] for row in rows)) == ["android/onnx", "android/ort", "ios/onnx", "ios/ort"]
    assert build_threads_left() == []


def test_android_and_ios_ship_their_own_models(package: tuple[Path, dict[str, object]]) -> None:
    out, doc = package
    assert not (out / "model" / "model.ort").exists()
    android, ios = out / "model" / "android", out / "model" / "ios"
    assert sorted(p.name for p in android.iterdir()) == sorted(p.name for p in ios.iterdir()) == ["model.onnx", "model.ort", "required_operators.config"]
    assert _ops(android / "model.onnx") == ["Mul", "Relu", "Add", "Erf"]
    assert _ops(ios / "model.onnx") == ["Mul", "Relu", "Sum", "Erf"]  # never a rewrite only NNAPI needed
    # each project copies its own target's .ort from the package at build time (one copy of each model file)
    assert not list((out / "android").rglob("*.ort")) and not list((out / "ios").rglob("*.ort"))
    links = {link["target"]: link for link in json.loads((out / "manifest.json").read_text())["model_links"]}
    assert (links["android"]["model"], links["ios"]["model"]) == ("model/android/model.ort", "model/ios/model.ort")
    for target, link in links.items():
        assert link["sha256"] == hashlib.sha256((out / link["model"]).read_bytes()).hexdigest() in (out / link["file"]).read_text(), target
    assert (android / "model.ort").read_bytes() != (ios / "model.ort").read_bytes()
    # the JSON: models and coverage with before/fixes
    assert [(m["targets"], m["fixes"]) for m in doc["models"]] == [(["android"], [{"pass": "test-sum2-add", "nodes": 1}]), (["ios"], [])]
    nnapi, coreml = doc["coverage"]
    assert nnapi["before"] == {"supported_nodes": 2, "total_nodes": 4, "partitions": 1}
    assert (nnapi["supported_nodes"], len(nnapi["partitions"])) == (3, 1)
    assert nnapi["fixes"] == [{"pass": "test-sum2-add", "nodes": 1}]
    assert coreml["fixes"] == [] and coreml["before"]["supported_nodes"] == coreml["supported_nodes"]
    # verification: every artifact of both models
    assert sorted({row["artifact"] for row in doc["verification"]["rows"]}) == ["android/onnx", "android/ort", "ios/onnx", "ios/ort"]


def test_report_and_manifest_say_what_each_model_got(package: tuple[Path, dict[str, object]]) -> None:
    out, _doc = package
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["schema_version"] == 4 and "ort" not in manifest
    assert [(m["targets"], m["channels"], m["ort"]["file"], m["fixes"]) for m in manifest["models"]] == [
        (["android"], ["maven"], "model/android/model.ort", [{"pass": "test-sum2-add", "nodes": 1}]),
        (["ios"], ["swiftpm"], "model/ios/model.ort", []),
    ]
    nnapi = manifest["coverage"][0]
    assert (nnapi["label"], nnapi["before"]["supported_nodes"], nnapi["supported_nodes"]) == ("nnapi", 2, 3)
    report = (out / "report" / "report.md").read_text()
    assert "| Model for Android | model/android/model.ort (highest ai.onnx opset needed 17); graph passes: test-sum2-add (1 node) |" in report
    assert "Graph passes applied: test-sum2-add (1 node); before them 50.0% of nodes supported (2/4), 1 partition." in report
    assert "Graph passes applied" in (out / "report" / "report.html").read_text()
    readme = (out / "README.md").read_text()
    assert "`model/android/model.ort` and `model/ios/model.ort`" in readme
    assert "graph passes applied: test-sum2-add (1 node)" in readme
    coverage = json.loads((out / "report" / "coverage.json").read_text())
    assert coverage["reports"][0]["before"]["supported_nodes"] == 2


def test_verify_checks_every_model(package: tuple[Path, dict[str, object]], tmp_path: Path) -> None:
    out, _doc = package
    r = invoke("verify", out, "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["models"] == ["model/android/model.ort", "model/ios/model.ort"]
    assert sorted({g["model"] for g in doc["golden"]}) == doc["models"]
    assert sorted(c["channel"] for c in doc["runtimes"]) == ["maven", "swiftpm"]
    zipped = Path(shutil.make_archive(str(tmp_path / "pkgzip"), "zip", tmp_path, "pkg"))
    assert invoke("verify", zipped).exit_code == 0  # the per-target .ort files are unpacked from a zip too
    ios_ort = out / "model" / "ios" / "model.ort"
    ios_ort.write_bytes((out / "model" / "android" / "model.ort").read_bytes())
    assert_fails(invoke("verify", out), 9, "package verification failed, 1 problem: model/ios/model.ort: changed")


def test_verify_still_reads_schema_1(package: tuple[Path, dict[str, object]]) -> None:
    """A package from before per-target models: one model, ``ort`` instead of ``models``."""
    out, _doc = package
    doc = json.loads((out / "manifest.json").read_text())
    android = doc["models"][0]
    for rel in ("model.onnx", "model.ort", "required_operators.config"):
        (out / "model" / "android" / rel).rename(out / "model" / rel)
    shutil.rmtree(out / "model" / "ios")
    (out / "model" / "android").rmdir()
    moved = {f"model/android/{n}": f"model/{n}" for n in ("model.onnx", "model.ort", "required_operators.config")}
    doc["files"] = sorted(
        ({**f, "path": moved.get(f["path"], f["path"])} for f in doc["files"] if not f["path"].startswith("model/ios/")), key=lambda f: f["path"]
    )
    body = {k: v for k, v in doc.items() if k not in ("models", "manifest_sha256")}
    old = {"schema_version": 1, **{k: v for k, v in body.items() if k != "schema_version"}}
    old = {**{k: old[k] for k in list(old)[: list(old).index("options")]}, "ort": {**android["ort"], "file": "model/model.ort"}, **{k: old[k] for k in list(old)[list(old).index("options") :]}}
    old["manifest_sha256"] = self_hash(old)
    (out / "manifest.json").write_text(canonical_json(old))
    r = invoke("verify", out, "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["models"] == ["model/model.ort"]


def test_no_fix_ships_the_exported_graph(nnapi_fixes: None, onnx_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    r = invoke("package", onnx_model, "--android", "--ios", "--nnapi", "--coreml", "--no-fix", "-o", out, "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [m["targets"] for m in doc["models"]] == [["android", "ios"]]
    assert _ops(out / "model" / "model.onnx") == ["Mul", "Relu", "Sum", "Erf"]
    assert all(c["fixes"] == [] and c["before"]["supported_nodes"] == c["supported_nodes"] for c in doc["coverage"])
    options = json.loads((out / "manifest.json").read_text())["options"]
    assert (options["fix"], options["approximate"]) == (False, [])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--no-fix", "--approximate", "erf-test"], "--approximate has no effect with --no-fix"),
        (["--approximate", "gelu-ish"], "unknown --approximate 'gelu-ish'"),
    ],
)
def test_package_refuses_bad_fix_flags(nnapi_fixes: None, onnx_model: Path, tmp_path: Path, args: list[str], needle: str) -> None:
    out = tmp_path / "pkg"
    assert_fails(invoke("package", onnx_model, "--android", "--nnapi", "-o", out, *args), 2, needle)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["TMPDIR", "net.onnx"]


def test_package_approximate_is_reported_with_its_effect(nnapi_fixes: None, onnx_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    r = invoke("android", onnx_model, "--nnapi", "--approximate", "erf-test", "--atol", "0.1", "--rtol", "0.1", "-o", out, "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [f["pass"] for f in doc["models"][0]["fixes"]] == ["test-sum2-add", "test-erf-tanh"]
    (warning,) = [w for w in doc["warnings"] if "approximate" in w]
    assert warning.startswith("approximate graph pass test-erf-tanh (1 node, --approximate erf-test) applied to the android model: its outputs differ from the reference by up to ")


def test_package_a_wrong_rewrite_fails_the_gate(monkeypatch: pytest.MonkeyPatch, onnx_model: Path, tmp_path: Path) -> None:
    with registered(WRONG):
        _patch(monkeypatch, (WRONG.name,))
        out = tmp_path / "pkg"
        line = assert_fails(invoke("package", onnx_model, "--android", "--ios", "--nnapi", "--coreml", "-o", out), 5, "differ from")
        assert "--no-fix" in line
        assert not out.exists()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["TMPDIR", "net.onnx"]


# --- what the written model carries, and export's model flags -------------------------------------------


def test_fix_does_not_ship_the_weights_a_pass_left_behind(tmp_path: Path) -> None:
    """conv1d-2d (the library's own pass) adds a 4-D kernel next to the 3-D one, which nothing reads then."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(8)
    weight = numpy_helper.from_array(rng.standard_normal((8, 4, 3)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1]), helper.make_node("Relu", ["c"], ["y"])],
        "conv1d",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16])],
        [weight],
    )
    src = tmp_path / "conv1d.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), str(src))
    out = tmp_path / "fixed.onnx"
    r = invoke("fix", src, "--ep", "nnapi", "-o", out, "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["reports"][0]["fixes"] == [{"pass": "conv1d-2d", "nodes": 1}]
    fixed = onnx.load(str(out))
    assert [list(i.dims) for i in fixed.graph.initializer if len(i.dims) > 1] == [[8, 4, 1, 3]]
    assert "w" not in {i.name for i in fixed.graph.initializer}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["TMPDIR", "conv1d.onnx", "fixed.onnx"]


def test_fix_takes_exports_model_and_gate_flags(nnapi_fixes: None, tmp_path: Path) -> None:
    """--const binds an ONNX input (gone from the written model); --sample/--sample-only are the cases verified."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "k"], ["m"]), helper.make_node("Sum", ["m", "x"], ["y"])],
        "scaled",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8]), helper.make_tensor_value_info("k", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])],
    )
    src = tmp_path / "scaled.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), str(src))
    sample = tmp_path / "cases.npz"
    np.savez(sample, x=np.stack([example_input(), -example_input(), 2 * example_input()]))
    out = tmp_path / "fixed.onnx"
    r = invoke("fix", src, "--ep", "nnapi", "-o", out, "--const", "k=3", "--sample", sample, "--sample-only", "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [row["case"] for row in doc["verification"]["rows"]] == ["cases.npz[0]", "cases.npz[1]", "cases.npz[2]"]
    assert doc["reports"][0]["fixes"] == [{"pass": "test-sum2-add", "nodes": 1}]
    fixed = onnx.load(str(out))
    assert [i.name for i in fixed.graph.input] == ["x"] and _ops(out) == ["Mul", "Add"]
    x = example_input()
    np.testing.assert_array_equal(run(fixed, x), 4 * x)
    assert_fails(invoke("fix", src, "--ep", "nnapi", "-o", tmp_path / "again.onnx", "--const", "k=true"), 2, "--const k=true: input 'k' holds float32")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["TMPDIR", "cases.npz", "fixed.onnx", "scaled.onnx"]


def test_fix_approximate_gelu_replaces_the_exact_pass(tmp_path: Path) -> None:
    """With --approximate gelu the tanh GELU runs where the exact gelu would (which then finds nothing)."""
    from onnx import TensorProto, helper, numpy_helper

    consts = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("s2", 2**0.5), ("one", 1.0), ("half", 0.5))]
    graph = helper.make_graph(
        [
            helper.make_node("Div", ["x", "s2"], ["d"]),
            helper.make_node("Erf", ["d"], ["e"]),
            helper.make_node("Add", ["e", "one"], ["a"]),
            helper.make_node("Mul", ["x", "a"], ["m"]),
            helper.make_node("Mul", ["m", "half"], ["y"]),
        ],
        "gelu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])],
        consts,
    )
    src = tmp_path / "gelu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), str(src))
    r = invoke("fix", src, "--ep", "nnapi", "-o", tmp_path / "approx.onnx", "--approximate", "gelu", "--atol", "1e-3", "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["reports"][0]["fixes"] == [{"pass": "gelu-tanh", "nodes": 5}]
    assert [p["pass"] for p in doc["passes"]] == ["gelu-tanh"]
    r = invoke("fix", src, "--ep", "nnapi", "-o", tmp_path / "exact.onnx", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["reports"][0]["fixes"] == [{"pass": "gelu", "nodes": 5}]


@pytest.mark.parametrize("beside", ["reference-beside-write", "coverage-beside-verification"])
def test_a_failure_beside_a_running_thread_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, beside: str) -> None:
    """A PyTorch model's reference runs while the model's write goes on, and the coverage analysis while the
    last .ort is verified: either failing is reported in one line with its own exit code once the thread
    has ended, and nothing is left (no output, no TMPDIR files, no thread)."""
    import time

    import torch

    from mobilegen import pipeline
    from mobilegen.convert import stage as convert_stage
    from mobilegen.coverage import stage as coverage_stage
    from mobilegen.errors import ReferenceFailedError, UsageError
    from mobilegen.verify import stage as verify_stage

    torch.manual_seed(0)
    src = tmp_path / "net.pt"
    torch.jit.trace(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh()).eval(), (torch.randn(1, 4),)).save(str(src))
    running: list[str] = []
    if beside == "reference-beside-write":
        real_write = convert_stage._write  # noqa: SLF001

        def slow_write(path: Path, chunks: Any, sha256: str) -> None:
            running.append("write")
            time.sleep(0.5)  # still writing when the reference fails
            real_write(path, chunks, sha256)

        def reference(*a: Any, **k: Any) -> Any:
            assert running == ["write"]
            raise ReferenceFailedError("the PyTorch model raised on the verification input: test")

        monkeypatch.setattr(convert_stage, "_write", slow_write)
        monkeypatch.setattr(pipeline, "_reference", reference)
        code, said = 10, "the PyTorch model raised on the verification input: test"
    else:
        real_runs = verify_stage.artifact_runs

        def slow_runs(expected: Any, artifacts: Any) -> Any:
            running.append("verify")
            time.sleep(0.5)  # still verifying when the analysis fails
            return real_runs(expected, artifacts)

        def analyse(*a: Any) -> Any:
            assert running == ["verify"]
            raise UsageError("coverage: test")

        monkeypatch.setattr(verify_stage, "artifact_runs", slow_runs)
        monkeypatch.setattr(coverage_stage, "analyse", analyse)
        code, said = 2, "coverage: test"
    out = tmp_path / "app"
    assert_fails(invoke("android", src, "--nnapi", "--input", "input:1x4", "-o", out), code, said)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["TMPDIR", "net.pt"]
    assert build_threads_left() == []
