"""The Web target end to end: generated npm packages (demo model, a multi-input model with int64/bool
inputs and hostile names, an int8 model) install offline from the pinned lock, type-check, and reproduce
their golden vectors through the generated wrapper on onnxruntime-web's WASM, in Node and in headless
Chromium (one browser for every package)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from js_packages import HOSTILE_INPUTS, built, chromium, in_chromium, npm, npm_ci, run, share_node_modules

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


def test_golden_vectors_in_headless_chromium_wasm(web_packages: dict[str, Path]) -> None:
    root = next(iter(web_packages.values())).parent
    results = in_chromium(root, list(web_packages), "wasm")
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
    chromium()
    done = run(["node", "test/browser.mjs", "webgpu"], web_packages["demo"], timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    res = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"demo (chromium, {res['provider']} on SwiftShader): {res['passed']}/{res['checks']} checks, max abs {res['maxAbs']}, max rel {res['maxRel']}")
    assert res["provider"] == "webgpu" and res["fallbacks"] == []
    assert res["checks"] >= 3 and res["passed"] == res["checks"]
