"""The whole product on the bundled examples: `mobilegen package` → a folder + zip that `mobilegen verify`
accepts, byte-identical across runs, whose golden vectors reproduce on the host within the tolerance the
generated device tests assert."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import invoke

from mobilegen.verify.golden import decode_mgv

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
CNN = ROOT / "examples" / "mobilenet_tiny.pt"
ENCODER = ROOT / "examples" / "encoder_tiny.pt2"


def build(out: Path, *extra: object) -> dict:
    args = ["package", str(CNN), "--input", "image:1x3x64x64", "--android", "--ios", "--nnapi", "--coreml", "--zip", "-o", str(out), "--json", *map(str, extra)]
    r = invoke(*args)
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("pkg") / "cnn"
    return out, build(out)


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_layout(package) -> None:
    out, data = package
    # one model per target: the flatten-reshape pass helps CoreML (no Flatten builder), not NNAPI
    models = [f"model/{t}/{f}" for t in ("android", "ios") for f in ("model.onnx", "model.ort", "required_operators.config")]
    for rel in ["manifest.json", "README.md", *models,
                "golden/golden.npz", "golden/golden.mgv", "golden/tolerances.json", "report/coverage.json",
                "report/report.md", "report/report.html", "android/settings.gradle.kts", "ios/Package.swift"]:
        assert (out / rel).is_file(), rel
    assert Path(data["zip"]).is_file()
    assert {c["ep"] for c in data["coverage"]} == {"nnapi", "coreml"}
    coreml = next(c for c in data["coverage"] if c["ep"] == "coreml")
    assert (coreml["supported_nodes"], len(coreml["partitions"])) == (coreml["total_nodes"], 1)


def test_verify_accepts_folder_and_zip(package) -> None:
    out, data = package
    for target in (out, Path(data["zip"])):
        r = invoke("verify", target)
        assert r.exit_code == 0, r.stderr


def test_byte_identical_across_runs(package, tmp_path: Path) -> None:
    out, data = package
    again = tmp_path / "elsewhere" / "cnn"
    data2 = build(again)
    assert files_of(out) == files_of(again)
    assert Path(data["zip"]).read_bytes() == Path(data2["zip"]).read_bytes()


def _tolerance(text: str, name: str) -> float:
    m = re.search(rf"\b{name}\b\s*:\s*Double\s*=\s*([0-9.eE+-]+)", text)
    assert m, f"{name} not found"
    return float(m.group(1))


def _replay(ort_path: Path, mgv_path: Path, atol: float, rtol: float) -> None:
    import onnxruntime as ort

    case = decode_mgv(mgv_path.read_bytes())
    sess = ort.InferenceSession(str(ort_path), providers=["CPUExecutionProvider"])
    got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, case.inputs), strict=True))
    for name, expected in case.outputs.items():
        np.testing.assert_allclose(got[name], expected, atol=atol, rtol=rtol)


def test_android_golden_vectors_reproduce_on_host(package) -> None:
    out, _ = package
    android = out / "android"
    kotlin = "\n".join(p.read_text() for p in android.rglob("*.kt") if "/src/main/" in p.as_posix())
    atol, rtol = _tolerance(kotlin, "ATOL"), _tolerance(kotlin, "RTOL")
    assert (atol, rtol) == (1e-4, 1e-3)
    assert not list(android.rglob("*.ort"))  # the project copies its model from the package at build time
    [mgv] = [p for p in android.rglob("*.mgv") if "/src/androidTest/assets/" in p.as_posix()]
    _replay(_linked_model(out, "android"), mgv, atol, rtol)


def test_ios_golden_vectors_reproduce_on_host(package) -> None:
    out, _ = package
    ios = out / "ios"
    swift = "\n".join(p.read_text() for p in ios.rglob("*.swift"))
    atol, rtol = _tolerance(swift, "atol"), _tolerance(swift, "rtol")
    assert not list((ios / "Sources").rglob("*.ort"))  # scripts/fetch-model.sh copies it from the package
    [mgv] = list((ios / "Tests").rglob("*.mgv"))
    _replay(_linked_model(out, "ios"), mgv, atol, rtol)


def _linked_model(out: Path, target: str) -> Path:
    """The package's model that ``target``'s project copies at build time, checked against the pin in the
    project's file (the Gradle script, the fetch script)."""
    import hashlib

    [link] = [link for link in json.loads((out / "manifest.json").read_text())["model_links"] if link["target"] == target]
    model = out / link["model"]
    assert link["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest() and link["sha256"] in (out / link["file"]).read_text()
    return model


def test_nnapi_fixes_dynamic_dims(tmp_path: Path) -> None:
    r = invoke("android", ENCODER, "--nnapi", "-o", tmp_path / "enc", "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["io"]["inputs"][0]["shape"] == [1, 16]
    assert any("dynamic dims fixed" in w for w in data["warnings"])
    assert any("deprecated" in w for w in data["warnings"])
    kept = invoke("android", ENCODER, "--nnapi", "--keep-dynamic", "-o", tmp_path / "enc2", "--json")
    assert kept.exit_code == 0, kept.stderr
    assert json.loads(kept.stdout)["io"]["inputs"][0]["shape"] == [1, "tokens_dim1"]


def test_demo_command_from_readme(tmp_path: Path) -> None:
    """The README's first command runs `make demo`; run its mobilegen line the same way (as a process)."""
    makefile = (ROOT / "Makefile").read_text()
    line = next(ln.strip() for ln in makefile.splitlines() if "-m mobilegen package" in ln)
    args = line.split("-m mobilegen", 1)[1].replace("$(DEMO_OUT)", str(tmp_path / "demo")).split()
    proc = subprocess.run([sys.executable, "-m", "mobilegen", *args], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "demo" / "manifest.json").is_file()


def test_coreml_cache_key_in_shipped_model(package) -> None:
    import onnxruntime as ort

    out, _ = package
    meta = ort.InferenceSession(str(out / "model" / "ios" / "model.ort"), providers=["CPUExecutionProvider"]).get_modelmeta()
    key = meta.custom_metadata_map.get("COREML_CACHE_KEY", "")
    assert re.fullmatch(r"[0-9a-f]{32}", key), meta.custom_metadata_map
