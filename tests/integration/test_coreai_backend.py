"""The Core AI backend against PyTorch on this host: coreai-torch converts, coreai-core's Linux CPU runtime runs
the ``.aimodel``, mobilegen's verification gate judges it on the same cases (and golden vectors) as the ORT
build; int8 through coreai-opt and the int8 accuracy gate.

Needs the [coreai] extra: marked ``coreai``, run by ``make test-coreai`` in a venv of its own and left out of
``make test``; without the extra every test here skips. (The refusal without it: tests/unit/test_coreai_refusal.py.)
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mobilegen.errors import VerificationError
from mobilegen.options import ModelOptions

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HAVE_COREAI = all(importlib.util.find_spec(m) is not None for m in ("coreai_torch", "coreai", "coreai_opt"))
needs_coreai = pytest.mark.skipif(not HAVE_COREAI, reason="the [coreai] extra is not installed (make test-coreai)")
pytestmark = [pytest.mark.coreai, pytest.mark.slow]


def _build(model: str, inputs: tuple[str, ...], tmp: Path, **kw: Any) -> Any:
    from mobilegen.backends.coreai import build_coreai
    from mobilegen.export.stage import load_and_export
    from mobilegen.verify.gate import VerifyOptions, reference_outputs, torch_reference

    loaded, onnx_model = load_and_export(EXAMPLES / model, ModelOptions(inputs=inputs), tmp / "model.onnx")
    options = VerifyOptions()
    expected = reference_outputs(torch_reference(loaded), onnx_model, options)
    return build_coreai(loaded, onnx_model, expected, tmp, options, **kw), loaded, onnx_model, expected


@pytest.fixture(scope="module")
def cnn(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if not HAVE_COREAI:
        pytest.skip("the [coreai] extra is not installed (make test-coreai)")
    return _build("mobilenet_tiny.pt", ("image:1x3x64x64",), tmp_path_factory.mktemp("coreai_cnn"))


@needs_coreai
def test_torchscript_cnn_matches_pytorch(cnn: Any) -> None:
    build, _, _, expected = cnn
    rows = build.verification.rows
    assert len(rows) == len(expected.cases) == 2 and all(r.artifact == "coreai" for r in rows)
    assert all(r.passed for r in rows)
    assert max(r.max_abs for r in rows) < 1e-5 and min(r.cosine for r in rows) > 0.999999
    files = dict((name, size) for name, size, _ in build.fp32.files)
    assert set(files) == {"main.mlirb", "main.hash", "metadata.json"} and build.fp32.size == sum(files.values())
    assert build.fp32.narrowed == ()


@needs_coreai
def test_gate_fails_a_model_that_computes_something_else(cnn: Any, tmp_path: Path) -> None:
    """The same .aimodel against a reference whose outputs were changed by 1e-3: the gate must refuse it."""
    from mobilegen.backends.coreai import verify_coreai
    from mobilegen.verify.gate import VerifyOptions

    build, _, onnx_model, expected = cnn
    shifted = replace(expected, outputs=tuple([o + np.float32(1e-3) for o in out] for out in expected.outputs))
    with pytest.raises(VerificationError) as err:
        verify_coreai(build.fp32, shifted, onnx_model, VerifyOptions())
    assert err.value.message.startswith("2 of 2 output checks differ from PyTorch")


@needs_coreai
def test_dynamic_int64_tokens_narrowed_and_verified(tmp_path: Path) -> None:
    """encoder_tiny.pt2: int64 tokens with a dynamic sequence length. Core AI takes int32; the gate runs
    the example length and the length + 1 case."""
    build, _, onnx_model, expected = _build("encoder_tiny.pt2", (), tmp_path)
    assert build.fp32.narrowed == ("tokens",)
    assert [s.dtype for s in build.fp32.inputs] == ["int32"]
    lengths = {c["tokens"].shape[1] for c in expected.cases}
    assert len(lengths) == 2
    assert all(r.passed for r in build.verification.rows) and max(r.max_abs for r in build.verification.rows) < 1e-4


@needs_coreai
def test_int64_value_outside_int32_fails_the_case() -> None:
    from mobilegen.backends.coreai.host import narrow

    assert narrow("t", np.array([1, 2], dtype=np.int64), "int32").dtype == np.int32
    with pytest.raises(ValueError, match="input 't' holds 2147483648, outside int32"):
        narrow("t", np.array([1, 2**31], dtype=np.int64), "int32")


@needs_coreai
def test_int8_weights_through_the_accuracy_gate(tmp_path: Path) -> None:
    """coreai-opt W8 on the transformer encoder (no BatchNorm: seconds, not minutes), judged against the fp32
    .aimodel; the same int8 model fails a gate that asks for an exact match."""
    from mobilegen.backends.coreai import int8_accuracy
    from mobilegen.quantize.options import QuantizeOptions

    build, _, onnx_model, expected = _build("encoder_tiny.pt2", (), tmp_path, int8="w8")
    assert build.int8 is not None and build.accuracy is not None and build.accuracy.passed
    assert build.int8.size < 0.8 * build.fp32.size
    assert 0.999 < build.accuracy.outputs[0].cosine < 1.0
    strict = int8_accuracy(build.fp32, build.int8, list(expected.cases), onnx_model.io, QuantizeOptions(min_cosine=1.0))
    assert not strict.passed and strict.failures[0].startswith(f"{onnx_model.io.outputs[0].name}: cosine")


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``mobilegen package --ios --android --runtime ort,coreai`` of mobilenet_tiny.pt."""
    import subprocess
    import sys

    if not HAVE_COREAI:
        pytest.skip("the [coreai] extra is not installed (make test-coreai)")
    out = tmp_path_factory.mktemp("coreai_pkg") / "pkg"
    proc = subprocess.run(
        [sys.executable, "-m", "mobilegen", "package", str(EXAMPLES / "mobilenet_tiny.pt"), "--input", "image:1x3x64x64",
         "--ios", "--android", "--runtime", "ort,coreai", "-o", str(out)],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


@needs_coreai
def test_package_with_runtime_ort_and_coreai(package: Path) -> None:
    """``mobilegen package --ios --android --runtime ort,coreai``: one verification table with the coreai rows,
    the .aimodel in model/ and in the iOS package beside the .ort with the Core AI Swift, Android unchanged."""
    import json

    out = package
    manifest = json.loads((out / "manifest.json").read_text())
    rows = [r for r in manifest["verification"]["rows"] if r["artifact"] == "coreai"]
    assert len(rows) == 2 and all(r["passed"] and r["max_abs"] < 1e-5 for r in rows)
    files = {f["path"] for f in manifest["files"]}
    assert {"model/model.aimodel/main.mlirb", "ios/Sources/MobilenetTiny/Resources/MobilenetTiny.aimodel/main.mlirb",
            "ios/Sources/MobilenetTiny/MobilenetTiny+CoreAI.swift", "ios/Sources/MobilenetTiny/Resources/MobilenetTiny.ort"} <= files
    assert not any("CoreAI" in f or "aimodel" in f for f in files if f.startswith("android/"))
    # mobilegen verify re-runs the golden vectors on the .aimodel folder with coreai-core, beside the .ort
    from cli_helpers import invoke

    r = invoke("verify", out, "--json")
    assert r.exit_code == 0, r.stderr
    rows = [g for g in json.loads(r.stdout)["golden"] if g["model"] == "model/model.aimodel"]
    assert rows and all(g["passed"] and g["max_abs"] < 1e-4 for g in rows), rows


@needs_coreai
def test_bench_times_the_aimodel_beside_the_ort_rows(package: Path) -> None:
    """``mobilegen bench`` on the package: the ORT rows, then the .aimodel on coreai-core's CPU runtime in the same
    schema; the session it times reproduces PyTorch's golden outputs from the golden inputs; a bare .aimodel
    folder is one row, hashed over its files."""
    import hashlib
    import json

    from bench_helpers import assert_runtime_row_timed
    from cli_helpers import invoke

    from mobilegen.backends.coreai import open_session
    from mobilegen.bench import run_host_bench

    result = run_host_bench(package, runs=3, warmup=1, target="ios")
    row = assert_runtime_row_timed(result, package, "coreai", "coreai-core", "model/model.aimodel", open_session, runs=3)

    # a result of the .aimodel folder (as the generated Core AI benchmark hashes its resource copy) merges into the
    # package's report; the iOS resource folder hashes as model/model.aimodel does
    from dataclasses import replace as dc_replace

    from mobilegen.bench.runtimes import model_digest

    (resource,) = (package / "ios").rglob("*.aimodel")
    digest = model_digest(package / "model" / "model.aimodel")
    assert model_digest(resource) == digest
    import shutil

    copy = Path(shutil.copytree(package, package.parent / "merged"))
    device = copy.parent / "coreai-result.json"
    device.write_text(dc_replace(result, model_sha256=digest, configurations=(row,)).text(), encoding="utf-8")
    r = invoke("report", copy, "--results", device)
    assert r.exit_code == 0, r.stderr
    assert invoke("verify", copy).exit_code == 0

    # a bare .aimodel: inputs come from its function's descriptors; the TorchScript CNN's leave C, H, W to run time
    r = invoke("bench", package / "model" / "model.aimodel")
    assert r.exit_code == 2 and "input 'image' has dims known only at run time (1x?x?x?)" in r.stderr and "golden inputs" in r.stderr, r.stderr
    import torch

    from mobilegen.backends.coreai import convert
    from mobilegen.spec import IOSpec, TensorSpec

    torch.manual_seed(0)
    linear = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).eval()
    io = IOSpec((TensorSpec("x", "float32", (2, 8)),), (TensorSpec("y", "float32", (2, 4)),))
    folder = convert(linear, [np.zeros((2, 8), np.float32)], package.parent / "linear.aimodel", io=io)
    r = invoke("bench", folder, "--runs", "2", "--warmup", "0", "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    lines = sorted(f"{p.relative_to(folder).as_posix()} {hashlib.sha256(p.read_bytes()).hexdigest()}\n" for p in folder.rglob("*") if p.is_file())
    assert doc["ort_version"] == "none" and doc["model_sha256"] == hashlib.sha256("".join(lines).encode()).hexdigest()
    assert [(c["name"], c["status"], c["warm"]["n"]) for c in doc["configurations"]] == [("coreai", "ok", 2)]
