"""The Web target end to end: generated npm packages (demo model, a multi-input model with int64/bool
inputs and hostile names, an int8 model) install offline from the pinned lock, type-check, and reproduce
their golden vectors through the generated wrapper on onnxruntime-web's WASM, in Node and in headless
Chromium (one browser for every package)."""

from __future__ import annotations

import functools
import html
import http.server
import json
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from ci import missing_tool
from js_packages import HOSTILE_INPUTS, built, npm, npm_ci, run, share_node_modules

pytestmark = pytest.mark.slow  # three builds, an npm install and a browser: ~1 min


@pytest.fixture(scope="module")
def web_packages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    npm()
    pkgs = built(tmp_path_factory, "web")  # one folder: one server, one browser for all
    first = next(iter(pkgs.values()))
    npm_ci(Path(first))
    for p in list(pkgs.values())[1:]:
        share_node_modules(Path(first), Path(p))
    for p in pkgs.values():
        tsc = run(["node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.json"], Path(p))
        assert tsc.returncode == 0, f"tsc failed in {p}:\n{tsc.stdout}{tsc.stderr}"
    return {k: Path(v) for k, v in pkgs.items()}


def test_hostile_names_stay_string_literals(web_packages: dict[str, Path]) -> None:
    src = (web_packages["multi"] / "src" / "model.ts").read_text()
    assert "</script>" not in src and '"\\u003c/script\\u003e"' in src
    assert '"a\\"b"' in src and '"z\\"\\u003c"' in src
    assert src.isascii()


def test_golden_vectors_in_node(web_packages: dict[str, Path]) -> None:
    for name, pkg in web_packages.items():
        done = run(["node", "test/node-golden.mjs"], pkg)
        print(f"{name} (node, wasm):\n{done.stdout}")
        assert done.returncode == 0, done.stdout + done.stderr
        summary = json.loads(done.stdout.strip().splitlines()[-1])
        assert summary["checks"] >= 3 and summary["passed"] == summary["checks"]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return name
    missing_tool("chromium is not installed (apt-get install chromium, or make tools)")
    raise AssertionError("unreachable")


_PAGE = """<!doctype html><title>RUNNING</title><body><pre id="result"></pre><script>
const names = %s;
const frames = names.map((n) => { const f = document.createElement('iframe'); f.src = n + '/test/harness.html?ep=%s&build=%s'; document.body.appendChild(f); return f; });
const poll = () => {
  const titles = frames.map((f) => f.contentDocument && f.contentDocument.title);
  if (titles.every((t) => t && t !== 'RUNNING')) {
    document.getElementById('result').textContent = JSON.stringify(frames.map((f, i) => ({ name: names[i], title: titles[i], result: JSON.parse(f.contentDocument.getElementById('result').textContent || '{}') })));
    document.title = 'DONE';
  } else setTimeout(poll, 50);
};
poll();
</script>"""


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def _in_chromium(root: Path, names: list[str], ep: str, *flags: str, timeout: int = 300) -> list[dict]:
    chromium = _chromium()
    (root / "index.html").write_text(_PAGE % (json.dumps(names), ep, "all" if ep == "webgpu" else "wasm"))
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
        done = subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--no-first-run", f"--user-data-dir={root / '.profile'}", *flags,
             "--virtual-time-budget=600000", "--dump-dom", url],
            capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        )
    finally:
        server.shutdown()
    m = re.search(r"<title>([^<]*)</title>.*?<pre id=\"result\">(.*?)</pre>", done.stdout, re.S)
    assert m and m.group(1) == "DONE", f"no result from chromium: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return json.loads(html.unescape(m.group(2)))


def test_golden_vectors_in_headless_chromium_wasm(web_packages: dict[str, Path]) -> None:
    root = next(iter(web_packages.values())).parent
    results = _in_chromium(root, list(web_packages), "wasm")
    assert [r["name"] for r in results] == list(web_packages)
    for r in results:
        res = r["result"]
        print(f"{r['name']} (chromium, {res.get('provider')}): {res.get('passed')}/{res.get('checks')} checks, "
              f"max abs {res.get('maxAbs')}, max rel {res.get('maxRel')}")
        assert r["title"] == "DONE", res
        assert res["provider"] == "wasm" and res["checks"] >= 3 and res["passed"] == res["checks"]
    multi = next(r["result"] for r in results if r["name"] == "multi")
    outputs = {c["output"] for case in multi["cases"] for c in case["comparisons"]}
    assert outputs == {"y", 'z"<', "m"}
    assert all(c["exact"] for case in multi["cases"] for c in case["comparisons"] if c["output"] != "y")
    assert HOSTILE_INPUTS  # the inputs named </script> and a"b went through run() above


def test_golden_vectors_on_webgpu_in_chromium_swiftshader(web_packages: dict[str, Path]) -> None:
    """The package's own browser runner with onnxruntime-web's default build on WebGPU; without a GPU,
    Chromium's SwiftShader Vulkan runs the WebGPU kernels (slow: ~15 s for the demo model)."""
    _chromium()
    done = run(["node", "test/browser.mjs", "webgpu"], web_packages["demo"], timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    res = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"demo (chromium, {res['provider']} on SwiftShader): {res['passed']}/{res['checks']} checks, max abs {res['maxAbs']}, max rel {res['maxRel']}")
    assert res["provider"] == "webgpu" and res["fallbacks"] == []
    assert res["checks"] >= 3 and res["passed"] == res["checks"]
