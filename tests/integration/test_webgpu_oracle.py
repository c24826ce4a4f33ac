"""``check --ep webgpu`` against onnxruntime-web itself: the pinned onnxruntime-web (templates/web's lock
file, installed offline) creates a WebGPU session per model in headless Chromium on SwiftShader, and the
provider each node lands on, read from its verbose "Node placements" log, must be what mobilegen's
WebGPU rules predict, node for node.

The models: ~50 ops × dtypes × ONNX versions (tests/webgpu_oracle.py), a shape computation
(GetCpuPreferredNodes), and the models the Web target ships for the demo, a multi-input int64/bool model
and an int8 one."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from ci import missing_tool
from js_packages import built, npm, npm_ci
from webgpu_oracle import CPU, WEBGPU, placements, probe_models

from mobilegen.coverage.analyze import analyze
from mobilegen.coverage.target import EPTarget

pytestmark = pytest.mark.slow  # an offline npm install, ~450 sessions in one browser, three package builds

ROOT = Path(__file__).resolve().parents[2]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        if found := shutil.which(name):
            return found
    missing_tool("chromium is not installed (apt-get install chromium, or make tools)")
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def ort_web(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """onnxruntime-web's dist folder, installed offline from the lock file the Web target pins."""
    npm()
    pkg = tmp_path_factory.mktemp("ort-web")
    lock = json.loads((ROOT / "templates" / "web" / "package-lock.json").read_text())
    root = lock["packages"][""]
    (pkg / "package.json").write_text(json.dumps({k: root[k] for k in ("name", "version", "dependencies", "devDependencies") if k in root}))
    shutil.copy(ROOT / "templates" / "web" / "package-lock.json", pkg / "package-lock.json")
    npm_ci(pkg)
    dist = pkg / "node_modules" / "onnxruntime-web" / "dist"
    version = json.loads((dist.parent / "package.json").read_text())["version"]
    assert version == EPTarget("webgpu").str_value("ort_version"), "the WebGPU rules' release is not the one the Web target pins"
    return dist


def _compare(name: str, path: Path, seen: dict[str, object]) -> tuple[int, list[str]]:
    """(nodes compared, disagreements) for one model."""
    report = analyze(onnx.load(str(path)), EPTarget("webgpu"))
    if name.startswith("package:"):
        placed = seen["nodes"]
        assert isinstance(placed, dict)
        counts = {ep: sum(1 for v in placed.values() if v == ep) for ep in (WEBGPU, CPU)}
        browser = f"all on {seen['all']}" if seen["all"] else counts
        print(f"{name}: mobilegen {report.supported_nodes}/{report.total_nodes} nodes on WebGPU, {len(report.partitions)} "
              f"partition(s); browser: {browser} (counting its own Transpose/Memcpy nodes)")
    placed = seen["nodes"]
    assert isinstance(placed, dict)
    everything = seen["all"]
    compared, wrong = 0, []
    for n in report.nodes:
        ep = everything or placed.get(n.name)
        if ep is None:  # renamed or removed by onnxruntime-web's own transforms: not observable by name
            continue
        compared += 1
        if (ep == WEBGPU) != n.supported:
            said = "WebGPU" if n.supported else f"CPU ({'; '.join(n.reasons)})"
            wrong.append(f"{name}: {n.op_type} '{n.name}': browser {ep}, mobilegen {said}")
    return compared, wrong


def test_webgpu_rules_match_onnxruntime_web_in_chromium(ort_web: Path, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    chromium = _chromium()
    models = probe_models(tmp_path / "probes")
    packages = built(tmp_path_factory, "web")
    for pkg_name, pkg in packages.items():
        models[f"package:{pkg_name}"] = pkg / "model" / "model.onnx"
    # a small transformer encoder (torch.export): int64 token ids, mixed placement
    encoder = tmp_path / "encoder.onnx"
    done = subprocess.run([sys.executable, "-m", "mobilegen", "export", str(ROOT / "examples" / "encoder_tiny.pt2"), "-o", str(encoder)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    models["package:encoder"] = encoder
    seen = placements(chromium, ort_web, models)
    compared = nodes = 0
    wrong: list[str] = []
    errors: list[str] = []
    on_gpu = 0
    for name, path in models.items():
        s = seen[name]
        if s["error"]:  # a model no provider of the browser can run (Relu on int64): nothing to compare
            errors.append(name)
            continue
        n, w = _compare(name, path, s)
        nodes += n
        compared += 1
        wrong.extend(w)
        placed = s["nodes"]
        assert isinstance(placed, dict)
        on_gpu += sum(1 for ep in placed.values() if ep == WEBGPU) if not s["all"] else (s["all"] == WEBGPU)
    print(f"browser oracle: {compared} models ({len(errors)} refused by onnxruntime-web itself), {nodes} nodes compared, "
          f"{nodes - len(wrong)} agree, {len(wrong)} disagree")
    for line in wrong:
        print("  " + line)
    assert compared > 300 and nodes > 400
    # the oracle itself sees both outcomes, and the real models' placement
    assert on_gpu > 100
    chain = seen["ShapeChain"]["nodes"]
    assert isinstance(chain, dict)
    # GetCpuPreferredNodes' picks do not last (mobilegen.providers.webgpu): every node of the chain on WebGPU
    assert seen["ShapeChain"]["all"] == WEBGPU or set(chain.values()) == {WEBGPU}
    # int64 shape arithmetic and int8 quantization stay on the CPU: the browser places on both providers
    assert any(CPU in s["nodes"].values() for s in seen.values() if isinstance(s["nodes"], dict))
    assert not wrong, f"{len(wrong)} of {nodes} nodes placed otherwise than mobilegen predicts:\n" + "\n".join(wrong)
