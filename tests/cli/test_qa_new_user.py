"""A new user's QA pass (session 5): the output-name hint with a task's named outputs, the bench table's
skip reasons, bench/report flag and file errors, `-o X.zip` without --zip, check's ORT release, merged
results told apart, the task reference's wording and the golden cases in the package tree of docs/package.md."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import assert_fails, invoke
from rich.console import Console

from mobilegen.artifacts import LoadedModel, OnnxModel
from mobilegen.bench import BenchResult, Configuration, Device, Placement, WarmStats
from mobilegen.options import BuildOptions
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.tasks.spec import TaskSpec

PACKAGE_DOC = Path(__file__).resolve().parents[2] / "docs" / "package.md"


def image_classifier(path: Path, classes: int = 3) -> Path:
    """x [1,3,8,8] → mean over pixels → MatMul → y [1,classes]."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((3, classes)).astype(np.float32), "w")
    nodes = [helper.make_node("ReduceMean", ["x"], ["p"], axes=[2, 3], keepdims=0), helper.make_node("MatMul", ["p", "w"], ["y"])]
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, classes])], [w]
    )
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


# --- 1. the output-name hint, and --output-name with --top-k -----------------------------------------

_IO = IOSpec(inputs=(TensorSpec("x", "float32", (1, 3, 8, 8)),), outputs=(TensorSpec("linear", "float32", (1, 5)),))


def test_no_output_name_hint_when_the_task_names_the_outputs() -> None:
    from mobilegen.notices import from_export as export_notices

    loaded = LoadedModel(source=Path("m.pt"), kind="pickle", sha256="0" * 64)
    exported = OnnxModel(path=Path("m.onnx"), io=_IO, opset=17, exporter="dynamo")
    base = BuildOptions(model=Path("m.pt"), out=Path("out"))
    codes = lambda opts: [n.code for n in export_notices(loaded, exported, opts)]  # noqa: E731
    top_k = replace(base, task=TaskSpec(kind="image", top_k=3))
    assert codes(top_k) == []  # the shipped outputs are scores/indices: the exporter's name is nowhere
    # Without --top-k the model's output keeps the exporter's name, which --output-name would set: hinted.
    assert codes(replace(base, task=TaskSpec(kind="image", softmax=True))) == ["output-names"]
    assert codes(base) == ["output-names"]


@pytest.mark.parametrize("command", ["android", "ios"])
def test_output_name_with_top_k_is_refused(tmp_path: Path, command: str) -> None:
    model = image_classifier(tmp_path / "cls.onnx")
    out = tmp_path / "out"
    result = invoke(command, model, "-o", out, "--task", "image", "--softmax", "--top-k", "2", "--output-name", "logits")
    line = assert_fails(result, 2, "--output-name has no effect with --top-k: the task names its outputs scores and indices")
    assert " — drop --output-name" in line
    assert listing(tmp_path) == ["cls.onnx"]


def test_output_name_without_top_k_is_honoured(tmp_path: Path) -> None:
    model = image_classifier(tmp_path / "cls.onnx")
    out = tmp_path / "out"
    result = invoke("android", model, "-o", out, "--task", "image", "--scale", "1/255", "--softmax", "--output-name", "probs", "--json")
    assert result.exit_code == 0, result.stderr
    outputs = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["io"]["outputs"]
    assert [o["name"] for o in outputs] == ["probs"]


# --- 2. bench: skip reasons under the table -----------------------------------------------------------

_REASON = "onnxruntime 1.31.1 on this host was built without XnnpackExecutionProvider (a reason long enough to widen any column it lands in)"


def _result(*configs: Configuration, model_file: str = "model/model.ort") -> BenchResult:
    device = Device(kind="host", model="x86_64", soc="AMD EPYC", os="Linux 6", api_level=None)
    return BenchResult(model_sha256="a" * 64, model_file=model_file, mobilegen_version="0", ort_version="1.31.1", device=device, runs=3, warmup=1, configurations=configs)


def _cpu(p50: float = 0.05) -> Configuration:
    return Configuration(
        name="cpu", ep="cpu", format=None, providers=("CPUExecutionProvider",), options={}, status="ok", reason=None,
        session_create_ms=1.5, first_run_ms=0.8, warm=WarmStats.of([p50, p50, p50]), placement=Placement.unavailable("test"),
    )  # fmt: skip


def _skipped() -> Configuration:
    return Configuration(
        name="xnnpack", ep="xnnpack", format=None, providers=("XnnpackExecutionProvider", "CPUExecutionProvider"), options={},
        status="skipped", reason=_REASON, session_create_ms=None, first_run_ms=None, warm=None, placement=Placement.unavailable("skipped"),
    )  # fmt: skip


def test_bench_table_puts_skip_reasons_under_the_table() -> None:
    from mobilegen.cli.bench import _human_bench

    buf = io.StringIO()
    _human_bench(_result(_cpu(), _skipped()), Console(file=buf, width=240, color_system=None))
    lines = buf.getvalue().splitlines()
    rows = [ln for ln in lines if ln.startswith("│")]
    assert len(rows) == 2 and "skipped" in rows[1] and "built without" not in rows[1]
    assert max(len(ln) for ln in lines if ln[:1] in "┏│└") < 150  # the reason no longer widens the table
    assert lines[-1] == f"  xnnpack skipped: {_REASON}"


# --- 3. bench --runs / --warmup: one message per bad flag ---------------------------------------------


@pytest.mark.parametrize(
    ("flags", "needle", "hint"),
    [
        (["--runs", "0", "--warmup", "-1"], "--runs 0 is out of range", "e.g. --runs 50"),
        (["--runs", "100001"], "--runs 100001 is out of range", "1 to 100000"),
        (["--warmup", "-1"], "--warmup -1 is out of range", "e.g. --warmup 5"),
    ],
)
def test_bench_range_errors_name_one_flag_with_a_hint(tmp_path: Path, flags: list[str], needle: str, hint: str) -> None:
    model = tmp_path / "m.ort"
    model.write_bytes(b"not read")
    line = assert_fails(invoke("bench", model, *flags), 2, needle, " — ", hint)
    assert line.count("out of range") == 1 and ("--warmup" in line) == (needle.startswith("--warmup"))
    assert listing(tmp_path) == ["m.ort"]


# --- 4. report --results: not JSON, broken JSON -------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("calib.npz", None, "calib.npz is not a JSON file"),
        ("latin1.json", '{"kind": "mobilegen-bench", "model_file": "caf\xe9"}'.encode("latin-1"), "latin1.json is not a JSON file"),
        ("notes.json", b"kind: mobilegen-bench\n", "notes.json is not a JSON file"),
        ("cut.json", b'{\n  "kind": "mobilegen-bench",\n  "model_file": "model/mod', "cut.json is not valid JSON (line 3)"),
    ],
)
def test_report_says_what_is_wrong_with_a_results_file(tmp_path: Path, name: str, content: bytes | None, needle: str) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "manifest.json").write_text("{}", encoding="utf-8")  # the results are read before the package is verified
    bad = tmp_path / name
    if content is None:
        np.savez(bad, x=np.arange(300, dtype=np.float64))
        assert b"\x88" in bad.read_bytes() or b"\xff" in bad.read_bytes()  # bytes no UTF-8 decoder takes
    else:
        bad.write_bytes(content)
    before = listing(tmp_path)
    result = invoke("report", pkg, "--results", bad)
    line = assert_fails(result, 2, needle, " — ", "mobilegen bench MODEL -o FILE.json")
    assert "codec" not in line and "Unterminated" not in line and "Expecting" not in line
    assert listing(tmp_path) == before


# --- 5. -o X.zip without --zip ------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["android", "ios", "package"])
def test_o_zip_without_zip_is_refused(tmp_path: Path, command: str) -> None:
    model = image_classifier(tmp_path / "cls.onnx")
    extra = ["--android"] if command == "package" else []
    result = invoke(command, model, *extra, "-o", tmp_path / "new.zip")
    assert_fails(result, 2, "-o", "new.zip names the output folder, not a zip", f"use -o {tmp_path / 'new'} --zip")
    assert listing(tmp_path) == ["cls.onnx"]


# --- 6. check names the ORT release whose rules applied -----------------------------------------------


def test_check_names_the_ort_release_per_provider(tmp_path: Path) -> None:
    model = image_classifier(tmp_path / "cls.onnx")
    result = invoke("check", model, "--ep", "nnapi", "--ep", "xnnpack", "--ort-version", "1.24.2")
    assert result.exit_code == 0, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ", verdict " in ln and not ln.startswith(" ")]  # human output: stderr
    assert len(lines) == 2 and all(ln.endswith("(rules of onnxruntime 1.24.2)") for ln in lines), lines


# --- 7. merged results told apart in the latency table ------------------------------------------------


def test_latency_rows_name_the_model_and_the_result_file() -> None:
    from mobilegen.bench.compare import LATENCY_HEAD, latency_rows, measured_html, measured_markdown

    a, b = _result(_cpu()), _result(_cpu())  # the same host, the same timings: nothing else tells them apart
    files = ["results/host-x86-64-111111111111.json", "results/host-x86-64-222222222222.json"]
    rows = latency_rows([a, b], files)
    assert rows[0] != rows[1]
    assert [r[LATENCY_HEAD.index("result")] for r in rows] == files
    assert [r[LATENCY_HEAD.index("model")] for r in rows] == ["model/model.ort"] * 2
    md, page = measured_markdown([a, b], (), files), measured_html([a, b], (), files)
    assert all(f in md and f in page for f in files)


# --- 8. the task reference's name; golden cases in docs/package.md ------------------------------------


@pytest.mark.parametrize(
    ("inner", "want"),
    [
        ("PyTorch", "the PyTorch model wrapped in mobilegen.tasks' reference pre/post-processing"),
        (
            "the source ONNX model (no PyTorch model given)",
            "the source ONNX model wrapped in mobilegen.tasks' reference pre/post-processing (no PyTorch model given)",
        ),
    ],
)
def test_task_reference_reads_as_one_noun_phrase(inner: str, want: str) -> None:
    from mobilegen.tasks.stage import task_reference_label
    from mobilegen.verify.gate import reference_subject

    label = task_reference_label(inner)
    assert label == want
    assert reference_subject(label) == want  # "output 'scores' of <this> is degenerate"


def test_documented_package_tree_lists_the_golden_cases() -> None:
    text = PACKAGE_DOC.read_text(encoding="utf-8")
    tree = text[text.index("├── golden/") : text.index("├── report/")]
    assert "golden_case1.npz" in tree and "golden_caseN.npz" in tree


def test_two_merged_host_results_are_told_apart_in_the_report(tmp_path: Path) -> None:
    from package_fixtures import build_package

    from mobilegen.bench import run_host_bench

    pkg = tmp_path / "pkg"
    build_package(pkg)
    results = []
    for i in (1, 2):
        f = tmp_path / f"r{i}.json"
        f.write_text(run_host_bench(pkg, ("cpu",), runs=2, warmup=0).text(), encoding="utf-8")
        results += ["--results", f]
    result = invoke("report", pkg, *results)
    assert result.exit_code == 0, result.stderr
    stored = sorted(p.name for p in (pkg / "report/results").iterdir())
    assert len(stored) == 2
    md = (pkg / "report/report.md").read_text(encoding="utf-8")
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and " | cpu | " in ln]
    assert len(rows) == 2 and rows[0] != rows[1]
    assert [n for row, n in zip(rows, stored, strict=True) if f"results/{n}" in row and "model/model.ort" in row] == stored
    assert all(f"results/{n}" in (pkg / "report/report.html").read_text(encoding="utf-8") for n in stored)
    assert invoke("verify", pkg).exit_code == 0
