"""Coverage analysis: which nodes NNAPI, CoreML (NeuralNetwork / MLProgram) and XNNPACK take, and why not.

    from mobilegen.coverage import analyze, EPTarget
    report = analyze(model_proto, EPTarget("nnapi", android_api=29))
"""

from mobilegen.coverage.analyze import analyze, analyze_all, verdict
from mobilegen.coverage.model import COREML_FORMATS, EPS, CoverageReport, NodeVerdict
from mobilegen.coverage.target import EPTarget

__all__ = [
    "COREML_FORMATS",
    "EPS",
    "CoverageReport",
    "EPTarget",
    "NodeVerdict",
    "analyze",
    "analyze_all",
    "verdict",
]
