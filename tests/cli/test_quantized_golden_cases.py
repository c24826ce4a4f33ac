"""Every golden case a package ships is reproduced by the model that ships it (issue 26 items 1 and 2).

The replay here is independent of mobilegen's own check: onnxruntime in Python, on each shipped ``.ort``
and every ``golden*.npz`` found in its golden folder on disk (not the manifest's list), compared with
numpy at the manifest's tolerances (integer and bool outputs exactly).

Before the fix a quantized package shipped ``golden_case1.npz`` with the fp32 reference's outputs while
``golden.npz`` held the quantized model's: the repro of the issue (mobilenet_tiny, XNNPACK int8, random
calibration) missed case 1 by 4.8e-4 against atol 1.06e-4 on 9 of 10 values, and ``verify`` passed as it
replayed case 0 only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from cli_helpers import invoke, private_tmpdir
from model_files import mean_matmul_classifier

from mobilegen.errors import PackageVerifyError
from mobilegen.package.manifest import canonical_json, self_hash
from mobilegen.package.verify import verify_package

ROOT = Path(__file__).resolve().parents[2]
CNN = ROOT / "examples" / "mobilenet_tiny.pt"


@pytest.fixture(autouse=True)
def _private_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from private_tmpdir(tmp_path, monkeypatch)


@dataclass(frozen=True)
class Replayed:
    model: str
    case: str
    output: str
    max_abs: float
    atol: float
    max_golden: float
    passed: bool


def _manifest(out: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    return doc


def replay_every_case(out: Path) -> list[Replayed]:
    rows = []
    for m in _manifest(out)["models"]:
        golden = m["golden"]
        folder = out / Path(golden["npz"]).parent
        files = sorted(folder.glob("golden*.npz"))
        assert files and files[0].name == "golden.npz"
        sess = ort.InferenceSession(str(out / m["ort"]["file"]), providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        for f in files:
            with np.load(f) as z:
                feeds = {k[len("input:") :]: z[k] for k in z.files if k.startswith("input:")}
                expected = {k[len("output:") :]: z[k] for k in z.files if k.startswith("output:")}
            got = dict(zip(names, sess.run(None, feeds), strict=True))
            for name, e in expected.items():
                g = got[name]
                if np.issubdtype(e.dtype, np.floating):
                    err = np.abs(g.astype(np.float64) - e.astype(np.float64))
                    passed = bool(np.all(err <= golden["atol"] + golden["rtol"] * np.abs(e)))
                    worst = float(err.max())
                else:
                    passed, worst = bool(np.array_equal(g, e)), float(np.abs(g.astype(np.float64) - e).max())
                rows.append(Replayed(m["ort"]["file"], f.name, name, worst, golden["atol"], float(np.abs(e).max()), passed))
    return rows


def assert_manifest_names_every_case(out: Path) -> None:
    for m in _manifest(out)["models"]:
        folder = out / Path(m["golden"]["npz"]).parent
        further = sorted(f.relative_to(out).as_posix() for f in folder.glob("golden_case*.npz"))
        assert m["golden"].get("cases", []) == further


def test_the_issue_repro_ships_golden_cases_its_int8_model_reproduces(tmp_path: Path) -> None:
    out = tmp_path / "X"
    r = invoke("android", CNN, "--input", "image:1x3x64x64", "--xnnpack", "--quantize", "int8", "--calibration", "random", "-o", out)
    assert r.exit_code == 0, r.stderr
    assert _manifest(out)["models"][0]["quantization"]["shipped"] == "int8"
    rows = replay_every_case(out)
    assert {row.case for row in rows} == {"golden.npz", "golden_case1.npz"}
    assert all(row.passed for row in rows), rows
    assert_manifest_names_every_case(out)
    # mobilegen's own check replays every case too
    checked = verify_package(out)
    assert {(g.case, g.passed) for g in checked.golden} == {("golden/golden.npz", True), ("golden/golden_case1.npz", True)}
    # and the device tolerance covers kernel differences, not the quantization error: no all-zero output passes
    for row in rows:
        assert row.atol < row.max_golden / 4
    # ... and the package says how it was derived: tolerances.json, the manifest, the report
    derivation = json.loads((out / "golden/tolerances.json").read_text(encoding="utf-8"))["derivation"]
    assert derivation == _manifest(out)["models"][0]["quantization"]["golden_tolerance"]
    assert derivation["atol"] == rows[0].atol and "not quantization error" in derivation["how"]
    assert f"| golden tolerance | atol {rows[0].atol:.3g}, rtol 0.001: atol = the largest" in (out / "report/report.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("mode", "flags"),
    [
        ("int8", ("--android", "--nnapi", "--ios", "--coreml", "--calibration", "random")),  # android int8, iOS fp32
        ("dynamic", ("--android", "--ios")),
        ("fp16", ("--android", "--ios", "--coreml")),
    ],
)
def test_every_model_of_every_mode_reproduces_every_golden_case(tmp_path: Path, mode: str, flags: tuple[str, ...]) -> None:
    model = mean_matmul_classifier(tmp_path / "cls.onnx")
    out = tmp_path / "pkg"
    r = invoke("package", model, *flags, "--quantize", mode, "-o", out, "--zip")
    assert r.exit_code == 0, r.stderr
    shipped = {m["quantization"]["shipped"] for m in _manifest(out)["models"]}
    assert mode in shipped, shipped
    rows = replay_every_case(out)
    cases = {(row.model, row.case) for row in rows}
    assert len(cases) >= 2 * len(_manifest(out)["models"])  # every model has a further case
    assert all(row.passed for row in rows), rows
    assert_manifest_names_every_case(out)
    checked = verify_package(tmp_path / "pkg.zip")  # the zip: the further cases are unpacked and replayed
    assert {(g.model, g.case.rpartition("/")[2]) for g in checked.golden} == cases


def _rehash(out: Path, rel: str) -> None:
    """Record a changed file in the manifest as the writer would (sha256, size, the manifest's own hash)."""
    doc = _manifest(out)
    data = (out / rel).read_bytes()
    (entry,) = [e for e in doc["files"] if e["path"] == rel]
    entry["sha256"], entry["size"] = hashlib.sha256(data).hexdigest(), len(data)
    doc["manifest_sha256"] = self_hash(doc)
    (out / "manifest.json").write_text(canonical_json(doc), encoding="utf-8")


def test_verify_fails_a_package_whose_further_case_the_model_does_not_reproduce(tmp_path: Path) -> None:
    """What the old build shipped: case 1 holding outputs its model does not give. Only a replay of every
    case can see it (golden.npz and golden.mgv are untouched)."""
    model = mean_matmul_classifier(tmp_path / "cls.onnx")
    out = tmp_path / "pkg"
    assert invoke("android", model, "--nnapi", "--quantize", "int8", "--calibration", "random", "-o", out).exit_code == 0
    verify_package(out)
    case1 = out / "golden/golden_case1.npz"
    with np.load(case1) as z:
        arrays = {k: z[k] for k in z.files}
    y = arrays["output:y"]
    arrays["output:y"] = y + np.float32(0.5) * np.abs(y).max()  # twice the most a tolerance may be (a quarter of it)
    np.savez(case1, **arrays)
    _rehash(out, "golden/golden_case1.npz")
    with pytest.raises(PackageVerifyError) as info:
        verify_package(out)
    problems = info.value.details or [info.value.message]
    assert any("golden output y" in p and "golden/golden_case1.npz" in p for p in problems), problems
    assert not any("golden/golden.npz)" in p for p in problems), problems
    # a package written before the manifest named its cases: the golden_case*.npz it lists are replayed
    doc = _manifest(out)
    assert doc["models"][0]["golden"].pop("cases") == ["golden/golden_case1.npz"]
    doc["manifest_sha256"] = self_hash(doc)
    (out / "manifest.json").write_text(canonical_json(doc), encoding="utf-8")
    with pytest.raises(PackageVerifyError) as info:
        verify_package(out)
    problems = info.value.details or [info.value.message]
    assert any("golden output y" in p and "golden/golden_case1.npz" in p for p in problems), problems
