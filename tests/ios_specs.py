"""The two fixed iOS packages of the golden tests (a CNN and a two-input text model).

Imported by tests/golden/test_ios_golden.py, tests/unit/test_ios_ort_symbols.py and tests/integration/test_ios_swift.py.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from project_specs import FAKE_ORT, base_specs, coverage

from mobilegen.artifacts import ProjectSpec
from mobilegen.coverage.model import NodeVerdict
from mobilegen.targets.ios.project import IosOptions

__all__ = ["COREML_COVERAGE", "FAKE_ORT", "NAMES", "make_specs"]

NAMES = ("ios_cnn", "ios_two_input")

COREML_COVERAGE = coverage(
    "coreml", "mlprogram", NodeVerdict("topk", "TopK", "", False, ("k must be a constant input",)), "make k a constant"
)


def make_specs(tmp: Path) -> dict[str, tuple[ProjectSpec, IosOptions]]:
    """name → (spec, options); writes the fake .ort and the .mgv files into ``tmp``."""
    cnn, text = base_specs(tmp)
    cnn = replace(cnn, coverage=(COREML_COVERAGE,), notes=("TopK runs on the CPU provider",))
    return {
        "ios_cnn": (cnn, IosOptions(coreml=True)),
        "ios_two_input": (
            text,
            IosOptions(coreml=False, compute_units="cpu-and-gpu", coreml_format="neuralnetwork", class_name="TextModel"),
        ),
    }
