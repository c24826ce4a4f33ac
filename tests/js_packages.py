"""Shared by the Web and React Native target tests: the models they generate packages for, and the
offline npm install from the cache ``make tools`` warms (.tools/npm-cache)."""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from ci import missing_tool

ROOT = Path(__file__).resolve().parents[1]
NPM_CACHE = ROOT / ".tools" / "npm-cache"
HOSTILE_INPUTS = ("</script>", 'a"b')


def write_multi_input(path: Path) -> Path:
    """An ONNX file: float32 x [1,4], int64 ``</script>`` [1,3], bool ``a"b`` [1,3] → float32 ``y``, int64
    ``z"<`` and bool ``m`` (names a TorchScript module cannot have)."""
    import torch
    from torch import nn

    class Multi(nn.Module):
        def forward(self, x: torch.Tensor, ids: torch.Tensor, flags: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            scaled = x * 2.0 + ids.sum().to(torch.float32)
            return scaled, ids * 3 + 1, torch.logical_not(flags)

    args = (torch.tensor([[0.5, -1.0, 2.0, 3.25]]), torch.tensor([[1, 2, 40000000000]], dtype=torch.int64), torch.tensor([[True, False, True]]))
    torch.onnx.export(Multi().eval(), args, str(path), input_names=["x", *HOSTILE_INPUTS], output_names=["y", 'z"<', "m"], dynamo=False, opset_version=17)
    return path


def build(out: Path, model: Path, targets: tuple[str, ...], *args: str) -> Path:
    """``mobilegen package MODEL --<target>... ARGS -o OUT`` in a subprocess; returns OUT."""
    cmd = [sys.executable, "-m", "mobilegen", "package", str(model), *(f"--{t}" for t in targets), *args, "-o", str(out), "--force"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def models(tmp: Path) -> dict[str, tuple[Path, tuple[str, ...]]]:
    """name -> (model file, extra CLI args): the demo model, a multi-input model, and an int8 one."""
    multi = write_multi_input(tmp / "multi.onnx")
    demo = ROOT / "examples" / "mobilenet_tiny.pt"
    return {
        "demo": (demo, ("--input", "image:1x3x64x64")),
        "multi": (multi, ()),
        "int8": (demo, ("--input", "image:1x3x64x64", "--quantize", "int8", "--calibration", "random")),
    }


def built(factory: pytest.TempPathFactory, target: str) -> dict[str, Path]:
    """Each model of :func:`models` built once per test process with both JS targets (the Web and React
    Native test files share the builds); returns name -> a fresh copy of ``target``'s package folder."""
    base = factory.getbasetemp() / "js-builds"
    base.mkdir(exist_ok=True)
    out: dict[str, Path] = {}
    copies = factory.mktemp(target)
    for name, (model, args) in models(base).items():
        done = base / f"{name}-out"
        if not (done / "manifest.json").is_file():
            build(done, model, ("web", "react-native"), *args)
        out[name] = Path(shutil.copytree(done / target, copies / name, symlinks=True))
    return out


def npm() -> str:
    found = shutil.which("npm")
    if found is None:
        missing_tool("npm is not installed (Node.js 20 with npm, or make tools)")
        raise AssertionError("unreachable")
    if not NPM_CACHE.is_dir():
        missing_tool(f"no npm cache at {NPM_CACHE} (run make tools)")
    return found


def npm_ci(pkg: Path) -> None:
    """``npm ci --offline`` from the warm cache: the generated lock file must install without network."""
    env = dict(os.environ, ONNXRUNTIME_NODE_INSTALL="skip", npm_config_update_notifier="false")
    done = subprocess.run(
        [npm(), "ci", "--offline", "--ignore-scripts", "--no-audit", "--no-fund", "--cache", str(NPM_CACHE)],
        cwd=pkg, capture_output=True, text=True, timeout=600, env=env, stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        pytest.fail(f"npm ci --offline failed in {pkg} (is the cache warm? make tools):\n{done.stderr[-3000:]}")


def share_node_modules(src: Path, dst: Path) -> None:
    """Same lock file: the other packages use the first one's install."""
    (dst / "node_modules").symlink_to(src / "node_modules", target_is_directory=True)


def run(cmd: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


# --- headless Chromium (Debian's chromium, make tools) ------------------------------------------------


def chromium() -> str:
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


def page_in_chromium(root: Path, page: str, *flags: str, timeout: int = 300) -> Any:
    """``root/page`` served over HTTP and loaded in headless Chromium until its title leaves RUNNING; the
    JSON in its ``<pre id="result">`` (the title must be DONE)."""
    browser = chromium()
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{page}"
        done = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--no-first-run", f"--user-data-dir={root / '.profile'}", *flags,
             "--virtual-time-budget=600000", "--dump-dom", url],
            capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        )
    finally:
        server.shutdown()
    m = re.search(r"<title>([^<]*)</title>.*?<pre id=\"result\">(.*?)</pre>", done.stdout, re.S)
    assert m and m.group(1) == "DONE", f"no result from chromium: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return json.loads(html.unescape(m.group(2)))


def in_chromium(root: Path, names: list[str], ep: str, *flags: str, timeout: int = 300) -> list[dict[str, Any]]:
    """Every package ``root/<name>``'s golden replay page (test/harness.html) in one browser, one iframe each."""
    (root / "index.html").write_text(_PAGE % (json.dumps(names), ep, "all" if ep == "webgpu" else "wasm"))
    result: list[dict[str, Any]] = page_in_chromium(root, "index.html", *flags, timeout=timeout)
    return result
