"""The report's Runtimes section (--runtime ort,litert,coreai side by side), from a BuildResult fixture
carrying the manifest's runtime records and their verification rows: no litert-torch or coreai needed."""

from __future__ import annotations

from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from package_fixtures import make_build

from mobilegen import backends
from mobilegen.artifacts import BuildResult, VerifyRow
from mobilegen.report import render_html, render_markdown, report_context

SIZES = {"model/model.ort": 3000, "model/model.tflite": 4000, "model/model.aimodel": 5000}


def _row(artifact: str, max_abs: float, cosine: float, passed: bool = True) -> VerifyRow:
    return VerifyRow(artifact, "1x3x8x8", "logits", max_abs, max_abs, cosine, 1.0, passed)


def _with_runtimes(build: BuildResult, *, litert_passed: bool = True, file: str = "model/model.tflite") -> BuildResult:
    recs = [
        {"runtime": "litert", "file": file, "bytes": 4096, "platforms": ["android"], "convert_seconds": 1.0, "quantization": None},
        {"runtime": "coreai", "file": "model/model.aimodel", "bytes": 5120, "platforms": ["ios"], "convert_seconds": 2.0, "quantization": None},
    ]
    rows = (*build.verification.rows, _row("litert", 2.5e-6, 0.9999991, litert_passed), _row("litert", 1e-6, 0.99999999),
            _row("coreai", 3e-4, 0.99998))
    return replace(build, options={**build.options, "runtimes": recs}, verification=replace(build.verification, rows=rows))


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> BuildResult:
    return make_build(tmp_path_factory.mktemp("rt") / "TinyOut")


def test_one_row_per_runtime_from_the_records(build: BuildResult) -> None:
    ctx = report_context(_with_runtimes(build), sizes=SIZES)
    ort, litert, coreai = ctx.runtimes
    assert [r.runtime for r in ctx.runtimes] == ["ONNX Runtime (ort)", "LiteRT (litert)", "Core AI (coreai)"]
    # litert runs the android project, ORT keeps ios (Core AI keeps the ORT build beside it)
    assert ort.platforms == "ios" and litert.platforms == "android" and coreai.platforms == "ios"
    assert (litert.model, litert.size_bytes, litert.size) == ("model/model.tflite", "4000", "3.9 KiB")
    # worst max abs, lowest cosine over the runtime's own rows; the host runtime from the registry
    assert (litert.max_abs, litert.cosine, litert.result, litert.checked_by) == ("2.5e-06", "1", "pass", "ai-edge-litert")
    assert (coreai.max_abs, coreai.cosine, coreai.checked_by) == ("0.0003", "1", "coreai-core")
    assert litert.accelerates == backends.get("litert").accelerates and coreai.accelerates == backends.get("coreai").accelerates
    assert ort.checked_by == "onnxruntime" and ort.model == "model/model.ort" and ort.size_bytes == "3000"
    # ORT: its execution providers' coverage, from the coverage analysis
    expected = "; ".join(f"{c.shown} {c.supported_nodes}/{c.total_nodes}, {len(c.partitions)} partition" + ("s" if len(c.partitions) != 1 else "") for c in build.coverage)
    assert ort.accelerates == expected and "nnapi 4/6, 1 partition" in expected


def test_size_falls_back_to_the_recorded_bytes_and_failures_show(build: BuildResult) -> None:
    ctx = report_context(_with_runtimes(build, litert_passed=False), sizes={})
    _ort, litert, coreai = ctx.runtimes
    assert (litert.size_bytes, litert.result) == ("4096", "FAIL") and coreai.size_bytes == "5120"
    assert _ort.size_bytes == "–"


def test_ort_only_build_has_one_row(build: BuildResult) -> None:
    (ort,) = report_context(build, sizes=SIZES).runtimes
    assert ort.platforms == ", ".join(build.targets) and ort.result == "pass"
    bare = replace(build, coverage=())
    (ort,) = report_context(bare, sizes=SIZES).runtimes
    assert ort.accelerates == backends.get("ort").accelerates


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.section: list[list[str]] = []
        self._in = False
        self._row: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "section":
            self._in = ("id", "runtimes") in attrs
        elif tag == "tr" and self._in:
            self._row = []
        elif tag == "td" and self._row is not None:
            self._row.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr" and self._row is not None:
            if self._row:
                self.section.append(self._row)
            self._row = None
        elif tag == "section":
            self._in = False

    def handle_data(self, data: str) -> None:
        if self._row:
            self._row[-1] += data


def test_both_pages_show_the_rows_escaped(build: BuildResult) -> None:
    odd = _with_runtimes(build, file="model/<b>|odd&.tflite")
    page = render_html(odd, sizes=SIZES)
    assert "<b>|odd" not in page and "&lt;b&gt;|odd&amp;.tflite" in page
    p = _Cells()
    p.feed(page)
    assert [r[0] for r in p.section] == ["ONNX Runtime (ort)", "LiteRT (litert)", "Core AI (coreai)"]
    assert p.section[1][2] == "model/<b>|odd&.tflite" and p.section[2][-1] == "Neural Engine/GPU on iOS 27+, not analysed here"
    md = render_markdown(odd, sizes=SIZES)
    section = md.split("## Runtimes", 1)[1].split("\n## ", 1)[0]
    assert "<b>|odd" not in section and "\\|odd" in section
    assert "| Core AI (coreai) | ios | model/model.aimodel | 5000 | 4.9 KiB | 0.0003 | 1 | pass | coreai-core |" in section
    assert section.count("\n| ") == 4  # header + three runtimes


def test_report_module_names_no_runtime() -> None:
    src = (Path(__file__).parents[2] / "mobilegen" / "report" / "runtimes.py").read_text(encoding="utf-8")
    code = src.split('"""', 2)[2]
    for b in backends.BUILTIN:
        assert f'"{b.name}"' not in code and b.accelerates not in code


def test_a_folder_model_records_the_size_of_its_files(tmp_path: Path) -> None:
    from mobilegen.backends.stage import BackendModel

    model = tmp_path / "model" / "model.aimodel"
    (model / "weights").mkdir(parents=True)
    (model / "weights" / "w.bin").write_bytes(b"\0" * 70000)
    (model / "main.mlir").write_bytes(b"x" * 123)
    single = tmp_path / "model" / "model.tflite"
    single.write_bytes(b"t" * 77)
    assert BackendModel("coreai", model, ("ios",), 1.0).record(tmp_path)["bytes"] == 70123
    assert BackendModel("litert", single, ("android",), 1.0).record(tmp_path)["bytes"] == 77
