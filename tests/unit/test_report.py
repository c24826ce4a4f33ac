"""mobilegen.report: Markdown / HTML (templates/report/) / JSON renderings of a BuildResult (no torch)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from package_fixtures import (
    COREML_REFUSED,
    NNAPI_REFUSED,
    SOURCE,
    assert_golden,
    golden_result,
    make_build,
    pin_versions,
)

from mobilegen.artifacts import BuildResult
from mobilegen.coverage.model import CoverageReport, NodeVerdict
from mobilegen.notices import Notice, collect
from mobilegen.providers.nnapi import DEPRECATION as NNAPI_DEPRECATION
from mobilegen.render.markdown import md_code, md_escape
from mobilegen.report import (
    coverage_json,
    jsonable,
    partition_picture,
    placement,
    render_html,
    render_markdown,
    report_context,
    runs,
    warning_texts,
)


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> BuildResult:
    return make_build(tmp_path_factory.mktemp("report") / "TinyOut")


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tags: list[str] = []
        self.titles: list[str] = []
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self._in_title = tag == "title"

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_title:
            self.titles.append(data)


def parse(html_text: str) -> _Collect:
    p = _Collect()
    p.feed(html_text)
    p.close()
    return p


def test_markdown_golden(build: BuildResult, monkeypatch: pytest.MonkeyPatch, update_goldens: bool) -> None:
    pin_versions(monkeypatch)
    result = golden_result(build)
    sizes = {"model/model.onnx": 336, "model/model.ort": 3392, "golden/golden.npz": 992}
    assert_golden("report.md", render_markdown(result, sizes=sizes), update_goldens)


def test_outputs_are_deterministic(build: BuildResult) -> None:
    assert render_markdown(build) == render_markdown(build)
    assert render_html(build) == render_html(build)
    assert coverage_json(build) == coverage_json(build)


def test_no_dates_or_absolute_paths(build: BuildResult) -> None:
    root = str(build.out_dir)
    for text in (render_markdown(build), render_html(build), coverage_json(build)):
        assert root not in text
        assert str(SOURCE.parent) not in text
        assert not re.search(r"\b(19|20)\d\d-\d\d-\d\d\b", text)
        assert not re.search(r"\b\d\d:\d\d:\d\d\b", text)


def test_html_is_self_contained(build: BuildResult) -> None:
    page = render_html(build)
    lowered = page.lower()
    for needle in ("http://", "https://", "<script", "<link", " src=", "url(", "@import"):
        assert needle not in lowered, needle
    assert "content-security-policy" in lowered
    p = parse(page)
    assert p.tags[0] == "html" and "svg" in p.tags and "style" in p.tags


def test_html_escapes_model_text(build: BuildResult) -> None:
    page = render_html(build)
    assert "relu<act>&1" not in page and "Tiny <Net>" not in page
    assert "relu&lt;act&gt;&amp;1" in page and "Tiny &lt;Net&gt; &amp; friends" in page
    text = "".join(parse(page).text)
    assert "relu<act>&1" in text and "Tiny <Net> & friends" in text


def test_html_has_every_section_and_refused_reason(build: BuildResult) -> None:
    p = parse(render_html(build))
    text = "".join(p.text)
    for heading in ("Summary", "Versions", "Inputs and outputs", "Verification", "Sizes", "Warnings", "Execution provider coverage"):
        assert heading in text
    for reasons in (*NNAPI_REFUSED.values(), *COREML_REFUSED.values()):
        for reason in reasons:
            assert reason in text
    for label in ("nnapi", "coreml/mlprogram", "xnnpack"):
        assert label in text
    # One tooltip per node and EP in the grid, naming where it runs.
    node_titles = [t for t in p.titles if t.startswith("#")]
    assert len(node_titles) == 3 * 6
    assert "#4 reduce_max (ReduceMax): CPU — ReduceMax needs Android API 33 on NNAPI (android_api=29)" in node_titles
    assert "#0 mul_scale (Mul): partition 1" in node_titles


def test_markdown_carries_the_same_facts(build: BuildResult) -> None:
    md = render_markdown(build)
    for reasons in (*NNAPI_REFUSED.values(), *COREML_REFUSED.values()):
        for reason in reasons:
            assert md_escape(reason) in md
    assert "P1×4 · CPU×2" in md and "P1×3 · CPU×1 · P2×2" in md and "P1×6" in md
    assert "66.7% of nodes supported (4/6)" in md
    assert "neg\\*out" in md and "Tiny \\<Net\\> \\& friends" in md  # escaped, not raw HTML


def test_coverage_json_contract(build: BuildResult) -> None:
    doc = json.loads(coverage_json(build))
    before = [{"supported_nodes": r.supported_nodes, "total_nodes": r.total_nodes, "partitions": len(r.partitions)} for r in build.coverage]
    assert doc == {"reports": [jsonable(r.to_dict()) | {"before": b, "fixes": []} for r, b in zip(build.coverage, before, strict=True)]}
    assert coverage_json(build).endswith("}\n")


def test_placement_and_runs(build: BuildResult) -> None:
    nnapi, coreml, xnn = build.coverage
    assert [p for *_x, p in placement(nnapi)] == [1, 1, 1, 1, 0, 0]
    assert runs(coreml) == [(1, 0, 3), (0, 3, 1), (2, 4, 2)]
    assert runs(xnn) == [(1, 0, 6)]


def test_supported_node_outside_every_partition_runs_on_cpu() -> None:
    nodes = tuple(NodeVerdict(f"n{i}", "Relu", "", True) for i in range(3))
    rep = CoverageReport("xnnpack", None, 3, 3, (("n0", "n1"),), "yes", nodes)
    assert runs(rep) == [(1, 0, 2), (0, 2, 1)]


def test_report_lists_the_builds_warnings(build: BuildResult) -> None:
    w = warning_texts(build)
    assert w[0] == build.warnings[0].text
    assert NNAPI_DEPRECATION in w
    assert any(x.startswith("nnapi: 2 of 6 nodes fall back to the CPU EP") for x in w)
    assert any(x.startswith("input x has dynamic dims (batch)") for x in w)
    assert not any(x.startswith("xnnpack:") for x in w)
    assert len(w) == len(set(w))
    onnx = replace(build.onnx, exporter="torchscript", fallback_reason="dynamo failed: <boom>")
    fallback = replace(build, onnx=onnx, warnings=collect(build.warnings[:1], onnx, build.coverage, source_kind="pickle"))
    assert "ONNX export fell back to the torchscript exporter: dynamo failed: <boom>" in warning_texts(fallback)
    assert "dynamo failed: &lt;boom&gt;" in render_html(fallback)
    assert "dynamo failed: \\<boom\\>" in render_markdown(fallback)


def test_report_reads_the_list_and_derives_nothing(build: BuildResult) -> None:
    # The report shows exactly BuildResult.warnings, in order, whatever the coverage says.
    only = replace(build, warnings=(Notice("x", "severe", "only <this> one"),))
    md, page = render_markdown(only), render_html(only)
    assert "- only \\<this\\> one\n\n## Execution provider coverage" in md
    assert '<ul class="warnings"><li>only &lt;this&gt; one</li></ul>' in page
    assert NNAPI_DEPRECATION not in md and NNAPI_DEPRECATION not in page


def test_html_escapes_quotes_like_html_escape(build: BuildResult) -> None:
    # Byte-stable with the hand-written renderer: quotes as &quot; / &#x27;, never markupsafe's &#34; / &#39;.
    page = render_html(build)
    assert "&quot;&lt;dynamic&gt;&quot;" in page
    assert "&#34;" not in page and "&#39;" not in page
    q = replace(build, model_name="it's \"q\"")
    assert "<title>mobilegen report: it&#x27;s &quot;q&quot;</title>" in render_html(q)


def test_context_is_typed_and_shared_by_both_pages(build: BuildResult) -> None:
    ctx = report_context(build, sizes={"model/model.ort": 2048, "extra.bin": 1})
    assert [s.file for s in ctx.sizes] == ["model/model.ort", "extra.bin"]
    assert ctx.sizes[0].size == "2.0 KiB"
    nnapi = ctx.coverage[0]
    assert nnapi.placement == "P1×4 · CPU×2" and nnapi.refused_title == "All 2 refused nodes"
    assert nnapi.picture is not None and len(nnapi.picture.cells) == 6
    assert ctx.warnings == build.warnings
    md = render_markdown(build, sizes={"model/model.ort": 2048, "extra.bin": 1})
    assert "| extra.bin | 1 | 1 B |" in md
    assert "<td>extra.bin</td><td>1</td><td>1 B</td>" in render_html(build, sizes={"model/model.ort": 2048, "extra.bin": 1})


def test_no_coverage_no_rows(build: BuildResult) -> None:
    bare = replace(build, coverage=(), verification=replace(build.verification, rows=()), warnings=())
    md = render_markdown(bare, sizes={})
    assert "No execution provider was analysed." in md and "No verification rows." in md
    assert "No execution provider was analysed." in render_html(bare, sizes={})


def test_large_graph_picture_stays_compact(build: BuildResult) -> None:
    n = 3000
    names = [f"node_{i}" for i in range(n)]
    refused = set(range(50, n, 97))
    nodes = tuple(NodeVerdict(nm, "Conv", "", i not in refused, () if i not in refused else ("needs <static> shape",)) for i, nm in enumerate(names))
    parts: list[tuple[str, ...]] = []
    cur: list[str] = []
    for i, nm in enumerate(names):
        if i in refused:
            if cur:
                parts.append(tuple(cur))
            cur = []
        else:
            cur.append(nm)
    parts.append(tuple(cur))
    rep = CoverageReport("nnapi", None, n, n - len(refused), tuple(parts), "maybe", nodes)
    picture = partition_picture(rep)
    assert picture is not None and picture.more_partitions == len(parts) - 20
    page = render_html(replace(build, coverage=(rep,), warnings=()), sizes={})
    svg = page[page.index('<div class="partitions">') : page.index("</svg></div>")]
    assert svg.count("<rect") == n + len(runs(rep))
    assert f"… {len(parts) - 20} more partitions" in svg
    assert 'width="944"' in svg  # 100 columns of 9 px + row labels
    assert "needs &lt;static&gt; shape" in svg
    assert len(svg) < 200 * n  # a few hundred KB at most for thousands of nodes


def test_markdown_escaping_helpers() -> None:
    assert md_escape("a|b <c> *d* _e_ `f`\nnext") == "a\\|b \\<c\\> \\*d\\* \\_e\\_ \\`f\\` next"
    assert md_code("plain") == "`plain`"
    assert md_code("a`b") == "``a`b``"
    assert md_code("`x") == "`` `x ``"


def test_jsonable() -> None:
    assert jsonable({"a": float("nan"), "b": float("inf"), "c": (1, Path("/abs/x.pt")), 2: None}) == {
        "a": "nan",
        "b": "inf",
        "c": [1, "x.pt"],
        "2": None,
    }
