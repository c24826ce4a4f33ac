"""The two fixed models of the golden tests (a CNN and a two-input text model), shared by the Android
and iOS fixtures: their IO, golden cases and ProjectSpecs differ only in coverage and notes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mobilegen.artifacts import ProjectSpec
from mobilegen.coverage.model import CoverageReport, NodeVerdict
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.verify.golden import GoldenCase, encode_mgv

FAKE_ORT = b"ORTM-fake-model-for-golden-tests\x00\x01\x02"


def cnn_case() -> GoldenCase:
    rng = np.random.default_rng(0)
    return GoldenCase(
        {"input": rng.standard_normal((1, 3, 32, 32), dtype=np.float32)},
        {"logits": rng.standard_normal((1, 10), dtype=np.float32)},
    )


def two_input_case() -> GoldenCase:
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


def coverage(ep: str, fmt: str | None, refused: NodeVerdict, suggestion: str) -> CoverageReport:
    """A 4-node coverage report with one refused node in the middle (two partitions)."""
    return CoverageReport(
        ep=ep,
        format=fmt,
        total_nodes=4,
        supported_nodes=3,
        partitions=(("conv", "relu"), ("gemm",)),
        verdict="maybe",
        nodes=(
            NodeVerdict("conv", "Conv", "", True),
            NodeVerdict("relu", "Relu", "", True),
            refused,
            NodeVerdict("gemm", "Gemm", "", True),
        ),
        suggestions=(suggestion,),
    )


def base_specs(tmp: Path) -> tuple[ProjectSpec, ProjectSpec]:
    """(cnn, two_input) specs; writes the fake .ort and the two .mgv files into ``tmp``."""
    tmp.mkdir(parents=True, exist_ok=True)
    model = tmp / "model.ort"
    model.write_bytes(FAKE_ORT)
    cnn_mgv = tmp / "cnn.mgv"
    cnn_mgv.write_bytes(encode_mgv(cnn_case()))
    text_mgv = tmp / "text.mgv"
    text_mgv.write_bytes(encode_mgv(two_input_case()))
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
        ort_version="1.24.2",
        mobilegen_version="0.1.0",
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
    return cnn, text


__all__ = ["FAKE_ORT", "base_specs", "cnn_case", "coverage", "two_input_case"]
