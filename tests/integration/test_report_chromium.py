"""report.html in headless Chromium (Debian's `chromium`, installed by `make tools` in CI).

Console messages are read from Chromium's own log (``--enable-logging=stderr --v=0`` prints every
page console message, errors included, as ``INFO:CONSOLE``); the report has no script, so any such
line is a problem (e.g. a blocked external asset). A canary page proves the detection works.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from ci import missing_tool
from package_fixtures import COREML_REFUSED, NNAPI_REFUSED, build_package

pytestmark = pytest.mark.slow

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-extensions",
    "--enable-logging=stderr",
    "--v=0",
)
CONSOLE = re.compile(r":CONSOLE[:(]")


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    missing_tool("chromium is not installed (apt-get install chromium, or make tools)")
    raise AssertionError("unreachable")


def run_chromium(tmp: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    return subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", *extra, url],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def console_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if CONSOLE.search(ln) or "Page load failed" in ln]


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def report_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("chromium") / "TinyOut"
    build_package(root)
    return root / "report" / "report.html"


def test_console_detection_works(tmp_path: Path) -> None:
    canary = tmp_path / "canary.html"
    canary.write_text('<!DOCTYPE html><html><body><script>console.error("mobilegen-canary")</script></body></html>')
    r = run_chromium(tmp_path, canary.as_uri(), "--dump-dom")
    assert any("mobilegen-canary" in ln for ln in console_lines(r.stderr)), r.stderr[-3000:]


def test_report_loads_without_console_errors(report_html: Path, tmp_path: Path) -> None:
    r = run_chromium(tmp_path, report_html.as_uri(), "--dump-dom")
    assert r.returncode == 0, r.stderr[-3000:]
    assert console_lines(r.stderr) == [], console_lines(r.stderr)
    dom = r.stdout
    assert "Execution provider coverage" in dom and "<svg" in dom
    assert dom.count('class="partitions"') == 3


def test_report_screenshot_is_not_empty(report_html: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    r = run_chromium(tmp_path, report_html.as_uri(), f"--screenshot={shot}", "--window-size=1200,2400", "--hide-scrollbars")
    assert r.returncode == 0 and shot.is_file(), r.stderr[-3000:]
    assert console_lines(r.stderr) == []
    width, height = png_size(shot)
    assert (width, height) == (1200, 2400)
    assert shot.stat().st_size > 20_000  # a blank page compresses to a few KB


def test_report_html_parses_and_names_every_refused_reason(report_html: Path) -> None:
    class Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.chunks: list[str] = []

        def handle_data(self, data: str) -> None:
            self.chunks.append(data)

    p = Text()
    p.feed(report_html.read_text(encoding="utf-8"))
    p.close()
    text = "".join(p.chunks)
    for reasons in (*NNAPI_REFUSED.values(), *COREML_REFUSED.values()):
        for reason in reasons:
            assert reason in text, reason


def large_coverage(n: int = 3000):
    from mobilegen.coverage.model import CoverageReport, NodeVerdict

    refused = set(range(40, n, 113)) | set(range(1500, 1530))
    nodes = tuple(
        NodeVerdict(f"/blocks.{i // 30}/conv_{i}", "Conv", "", i not in refused, ("needs a static <shape>",) if i in refused else ())
        for i in range(n)
    )
    parts: list[tuple[str, ...]] = []
    cur: list[str] = []
    for i, v in enumerate(nodes):
        if i in refused:
            if cur:
                parts.append(tuple(cur))
            cur = []
        else:
            cur.append(v.name)
    if cur:
        parts.append(tuple(cur))
    return CoverageReport("nnapi", None, n, n - len(refused), tuple(parts), "maybe", nodes)


def test_large_graph_report_renders(report_html: Path, tmp_path: Path) -> None:
    from dataclasses import replace

    from package_fixtures import make_build

    from mobilegen.report import render_html

    result = make_build(tmp_path / "big")
    page = tmp_path / "big.html"
    page.write_text(render_html(replace(result, coverage=(large_coverage(),))), encoding="utf-8")
    shot = tmp_path / "big.png"
    r = run_chromium(tmp_path, page.as_uri(), f"--screenshot={shot}", "--window-size=1200,2600", "--hide-scrollbars")
    assert r.returncode == 0 and shot.is_file(), r.stderr[-3000:]
    assert console_lines(r.stderr) == []
    assert png_size(shot) == (1200, 2600)
