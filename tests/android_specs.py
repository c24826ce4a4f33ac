"""The two fixed Android projects of the golden tests (a CNN and a two-input text model).

Imported by tests/golden/test_android_golden.py and tests/integration/test_android_kotlin.py, which compiles what they render.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from project_specs import FAKE_ORT, base_specs, coverage

from mobilegen.artifacts import ProjectSpec
from mobilegen.coverage.model import NodeVerdict
from mobilegen.targets.android.project import AndroidOptions

__all__ = ["FAKE_ORT", "make_specs"]

_NNAPI_COVERAGE = coverage(
    "nnapi", None, NodeVerdict("gap", "GlobalAveragePool", "", False, ("needs Android API 29",)), "raise the minimum Android API to 29"
)


def make_specs(tmp: Path) -> dict[str, tuple[ProjectSpec, AndroidOptions]]:
    """name → (spec, options); writes the fake .ort and the .mgv files into ``tmp``."""
    cnn, text = base_specs(tmp)
    cnn = replace(cnn, coverage=(_NNAPI_COVERAGE,), notes=("input dims fixed to 1x3x32x32 for NNAPI",))
    return {
        "android_cnn": (cnn, AndroidOptions(nnapi=True, nnapi_flags=("cpu-disabled",))),
        "android_two_input": (
            text,
            AndroidOptions(xnnpack=True, package="com.example.textmodel", class_name="TextModel"),
        ),
    }
