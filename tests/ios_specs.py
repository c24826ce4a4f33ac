"""The two fixed iOS packages of the golden tests (a CNN and a two-input text model).

Imported by tests/golden/test_ios_golden.py, tests/unit/test_ios_ort_symbols.py and tests/integration/test_ios_swift.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mobilegen.artifacts import ProjectSpec
from mobilegen.coverage.model import CoverageReport, NodeVerdict
from mobilegen.golden import GoldenCase, encode_mgv
from mobilegen.ios import IosOptions
from mobilegen.spec import IOSpec, TensorSpec

FAKE_ORT = b"ORTM-fake-model-for-golden-tests\x00\x01\x02"
NAMES = ("ios_cnn", "ios_two_input")


def _cnn_case() -> GoldenCase:
    rng = np.random.default_rng(0)
    return GoldenCase(
        {"input": rng.standard_normal((1, 3, 32, 32), dtype=np.float32)},
        {"logits": rng.standard_normal((1, 10), dtype=np.float32)},
    )


def _two_input_case() -> GoldenCase:
    rng = np.random.default_rng(1)
    return GoldenCase(
        {
            "input_ids": rng.integers(0, 1000, (1, 8), dtype=np.int64),
            "attention_mask": np.ones((1, 8), dtype=np.float32),
        },
        {
            "logits": rng.standard_normal((1, 2), dtype=np.float32),
            "pooled.output": rng.standard_normal((1, 16), dtype=np.float32),
        },
    )


COREML_COVERAGE = CoverageReport(
    ep="coreml",
    format="mlprogram",
    total_nodes=4,
    supported_nodes=3,
    partitions=(("conv", "relu"), ("gemm",)),
    verdict="maybe",
    nodes=(
        NodeVerdict("conv", "Conv", "", True),
        NodeVerdict("relu", "Relu", "", True),
        NodeVerdict("topk", "TopK", "", False, ("k must be a constant input",)),
        NodeVerdict("gemm", "Gemm", "", True),
    ),
    suggestions=("make k a constant",),
)


def write_inputs(tmp: Path) -> tuple[Path, Path, Path]:
    """The fake .ort and the two .mgv files, written into ``tmp``."""
    tmp.mkdir(parents=True, exist_ok=True)
    model = tmp / "model.ort"
    model.write_bytes(FAKE_ORT)
    cnn_mgv = tmp / "cnn.mgv"
    cnn_mgv.write_bytes(encode_mgv(_cnn_case()))
    text_mgv = tmp / "text.mgv"
    text_mgv.write_bytes(encode_mgv(_two_input_case()))
    return model, cnn_mgv, text_mgv


def make_specs(tmp: Path) -> dict[str, tuple[ProjectSpec, IosOptions]]:
    """name → (spec, options); writes the fake .ort and the .mgv files into ``tmp``."""
    model, cnn_mgv, text_mgv = write_inputs(tmp)
    cnn = ProjectSpec(
        model_name="tiny_cnn",
        io=IOSpec(
            (TensorSpec("input", "float32", (1, 3, 32, 32)),),
            (TensorSpec("logits", "float32", (1, 10)),),
        ),
        model_file=model,
        golden_mgv=cnn_mgv,
        atol=1e-4,
        rtol=1e-3,
        coverage=(COREML_COVERAGE,),
        ort_version="1.24.2",
        mobilegen_version="0.1.0",
        notes=("TopK runs on the CPU provider",),
    )
    text = ProjectSpec(
        model_name="Text Classifier",
        io=IOSpec(
            (TensorSpec("input_ids", "int64", (1, 8)), TensorSpec("attention_mask", "float32", (1, 8))),
            (TensorSpec("logits", "float32", (1, 2)), TensorSpec("pooled.output", "float32", (1, 16))),
        ),
        model_file=model,
        golden_mgv=text_mgv,
        atol=1e-5,
        rtol=1e-4,
        ort_version="1.24.2",
        mobilegen_version="0.1.0",
    )
    return {
        "ios_cnn": (cnn, IosOptions(coreml=True)),
        "ios_two_input": (
            text,
            IosOptions(coreml=False, compute_units="cpu-and-gpu", coreml_format="neuralnetwork", class_name="TextModel"),
        ),
    }
