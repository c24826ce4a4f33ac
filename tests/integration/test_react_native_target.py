"""The React Native target: generated packages (demo, multi-input int64/bool with hostile names, int8)
install offline from the pinned lock, type-check against onnxruntime-react-native's types, and pass
their Jest golden tests on onnxruntime-node (the stand-in for the device runtime; same JS API version)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from js_packages import built, npm, npm_ci, run, share_node_modules

pytestmark = pytest.mark.slow  # three builds, an npm install (onnxruntime-node is 200 MB) and Jest: ~1.5 min


@pytest.fixture(scope="module")
def rn_packages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    npm()
    pkgs = built(tmp_path_factory, "react-native")
    first = next(iter(pkgs.values()))
    npm_ci(first)
    for p in list(pkgs.values())[1:]:
        share_node_modules(first, p)
    return pkgs


def test_pins_the_runtime_everywhere(rn_packages: dict[str, Path]) -> None:
    pkg = rn_packages["demo"]
    manifest = json.loads((pkg / "package.json").read_text())
    version = manifest["peerDependencies"]["onnxruntime-react-native"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    assert {manifest["devDependencies"][k] for k in ("onnxruntime-common", "onnxruntime-node", "onnxruntime-react-native")} == {version}
    lock = json.loads((pkg / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/onnxruntime-common"]["version"] == version  # one copy: no "no available backend"
    readme = (pkg / "README.md").read_text()
    plugin = (pkg / "app.plugin.js").read_text()
    assert f'resolutionStrategy.force "com.microsoft.onnxruntime:onnxruntime-android:{version}"' in readme
    assert f"pod 'onnxruntime-c', '{version}'" in readme
    assert json.dumps(version) in plugin and "resolutionStrategy.force" in plugin and "onnxruntime-c" in plugin


def test_typechecks_against_onnxruntime_react_native(rn_packages: dict[str, Path]) -> None:
    for name, pkg in rn_packages.items():
        done = run(["node", "node_modules/typescript/bin/tsc", "--noEmit", "-p", "tsconfig.json"], pkg)
        assert done.returncode == 0, f"{name}: {done.stdout}{done.stderr}"


def test_jest_golden_vectors_on_onnxruntime_node(rn_packages: dict[str, Path]) -> None:
    for name, pkg in rn_packages.items():
        done = run(["node", "node_modules/jest/bin/jest.js", "--ci", "--silent=false"], pkg)
        summary = [ln for ln in (done.stdout + done.stderr).splitlines() if '"checks"' in ln or ln.startswith("Tests:")]
        print(f"{name} (jest, onnxruntime-node cpu): {' | '.join(s.strip() for s in summary)}")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert re.search(r"Tests:\s+3 passed, 3 total", done.stderr), done.stderr[-2000:]
