"""mobilegen.notices: one typed list of warnings, computed once; the CLI colours it by severity."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from package_fixtures import build_package, make_build
from rich.console import Console

from mobilegen.artifacts import BuildResult, LoadedModel, OnnxModel
from mobilegen.coverage.model import CoverageReport, NodeVerdict
from mobilegen.notices import (
    Notice,
    build_notices,
    collect,
    coverage_notices,
    dims_fixed,
    dims_fixed_text,
    export_notices,
    texts,
)
from mobilegen.providers.nnapi import DEPRECATED as NNAPI_DEPRECATED
from mobilegen.providers.nnapi import DEPRECATION as NNAPI_DEPRECATION
from mobilegen.spec import IOSpec, TensorSpec

IO = IOSpec(inputs=(TensorSpec("x", "float32", (1, 4)),), outputs=(TensorSpec("logits", "float32", (1, 4)),))


def onnx_model(**kw: object) -> OnnxModel:
    return replace(OnnxModel(path=Path("m.onnx"), io=IO, opset=17, exporter="dynamo"), **kw)  # type: ignore[arg-type]


def loaded(kind: str) -> LoadedModel:
    return LoadedModel(source=Path("m.pt"), kind=kind, sha256="0" * 64)


def report(ep: str, supported: int, partitions: tuple[tuple[str, ...], ...], total: int = 3) -> CoverageReport:
    nodes = tuple(NodeVerdict(f"n{i}", "Relu", "", i < supported) for i in range(total))
    return CoverageReport(ep, None, total, supported, partitions, "no", nodes)


def test_export_notices_in_order() -> None:
    m = onnx_model(notes=("2 initializers were also graph inputs",), exporter="torchscript", fallback_reason="dynamo <failed>")
    got = export_notices(loaded("pickle"), m, output_names_given=False)
    assert [n.code for n in got] == ["export-note", "output-names", "exporter-fallback"]
    assert got[1].text.startswith("output names come from the exporter (logits)")
    assert got[2].text == "ONNX export fell back to the torchscript exporter: dynamo <failed>"
    assert all(n.scope == "build" and n.severity == "warning" for n in got)
    # Names chosen, or generic names: no hint. A TorchScript input always takes that exporter: not said here.
    assert export_notices(loaded("torchscript"), m, output_names_given=True) == [got[0]]
    generic = onnx_model(io=replace(IO, outputs=(TensorSpec("output_0", "float32", (1,)),)))
    assert export_notices(loaded("pickle"), generic, output_names_given=False) == []


def test_torchscript_file_is_no_fallback_and_a_real_fallback_is_said_once() -> None:
    # A TorchScript file takes the TorchScript exporter by design: no fallback reason, no warning anywhere.
    ts = onnx_model(exporter="torchscript", fallback_reason=None)
    assert collect(export_notices(loaded("torchscript"), ts, output_names_given=True), ts, (), source_kind="torchscript") == ()
    m = onnx_model(exporter="torchscript", fallback_reason="Could not guard on data-dependent expression")
    said = collect(export_notices(loaded("pickle"), m, output_names_given=True), m, (), source_kind="pickle")
    assert [(n.code, n.scope) for n in said] == [("exporter-fallback", "build")]


def test_coverage_notices_and_severity() -> None:
    got = coverage_notices((report("nnapi", 0, ()), report("xnnpack", 2, (("n0", "n1"),)), report("coreml", 3, (("n0", "n1", "n2"),))))
    assert [(n.code, n.severity, n.subject) for n in got] == [("nnapi-no-nodes", "severe", "nnapi"), ("cpu-fallback", "warning", "xnnpack")]
    assert got[1].text == "xnnpack: 1 of 3 nodes fall back to the CPU EP; 1 partition (verdict no)"


def test_collect_dedups_by_code_not_by_text() -> None:
    # Text that merely looks like another warning suppresses nothing (the old substring matching did).
    lookalike = (Notice("export-note", "warning", "nnapi: NNAPI is deprecated, said a note"),)
    m = onnx_model(io=IOSpec(inputs=(TensorSpec("x", "float32", ("b", 4)),), outputs=IO.outputs))
    cov = (report("nnapi", 2, (("n0", "n1"),)),)
    got = collect(lookalike, m, cov, source_kind="pickle")
    assert texts(got) == [
        lookalike[0].text,
        NNAPI_DEPRECATION,
        "input x has dynamic dims (b): NNAPI and CoreML need static shapes and run such nodes on the CPU unless the dims are fixed",
        "nnapi: 1 of 3 nodes fall back to the CPU EP (1 partition on nnapi)",
    ]
    assert [n.scope for n in got] == ["build", "package", "package", "package"]
    # Said at build time already: not repeated.
    said = (NNAPI_DEPRECATED, *coverage_notices(cov))
    assert collect(said, onnx_model(), cov, source_kind="pickle") == said
    assert build_notices(got) == lookalike


def test_zero_nnapi_keeps_the_placement_line_for_the_package() -> None:
    cov = (report("nnapi", 0, ()),)
    got = collect((NNAPI_DEPRECATED, *coverage_notices(cov)), onnx_model(), cov, source_kind="onnx")
    assert [n.code for n in got] == ["nnapi-deprecated", "nnapi-no-nodes", "cpu-fallback"]
    assert got[-1].text == "nnapi: 3 of 3 nodes fall back to the CPU EP (0 partitions on nnapi)"


def test_dims_fixed_text() -> None:
    note = dims_fixed_text({"batch": 1, "seq": 16}, ["NNAPI"])
    assert note == (
        "dynamic dims fixed for NNAPI (which takes no symbolic dims): batch=1, seq=16; to choose the sizes (a text model's"
        " length in tokens), re-run mobilegen with --input NAME:DIMS for each input; to keep them, re-run mobilegen with --keep-dynamic"
    )
    both = dims_fixed_text({"seq": 16}, ["QNN", "NNAPI"])
    assert both.startswith("dynamic dims fixed for QNN and NNAPI (which take no symbolic dims): seq=16;")
    assert dims_fixed(note, shipped_by=("iOS",)).text.endswith("(the iOS package ships the same fixed-size model)")
    assert dims_fixed(note).text == note


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> BuildResult:
    return make_build(tmp_path_factory.mktemp("warnings") / "Out")


def test_cli_colours_by_severity_and_says_the_build_notices(build: BuildResult) -> None:
    from mobilegen.cli.build import _human_build, _json_build

    r = replace(
        build,
        warnings=(
            Notice("nnapi-no-nodes", "severe", "loud [one]"),
            Notice("cpu-fallback", "warning", "quiet one"),
            Notice("dynamic-input", "warning", "package only", "package"),
        ),
    )
    console = Console(record=True, force_terminal=True, color_system="standard", width=300, highlight=False)
    _human_build(r, console)
    out = console.export_text(styles=True)
    assert "\x1b[1;31mwarning:\x1b[0m loud [one]" in out  # markup in the text is escaped, not applied
    assert "\x1b[33mwarning:\x1b[0m quiet one" in out
    assert "package only" not in out
    assert _json_build(r)["warnings"] == ["loud [one]", "quiet one"]


def test_manifest_lists_every_notice(tmp_path: Path) -> None:
    result, _ = build_package(tmp_path / "Pkg")
    manifest = json.loads((tmp_path / "Pkg" / "manifest.json").read_text())
    assert manifest["warnings"] == texts(result.warnings)
    assert {n.scope for n in result.warnings} == {"build", "package"}
