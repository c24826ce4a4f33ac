"""Coverage analysis: which nodes an execution provider takes, and why not.

    from mobilegen.coverage import analyze, EPTarget
    report = analyze(model_proto, EPTarget(ep, **settings))  # ep: a name in mobilegen.providers.names()

The providers (the built-ins and any registered plug-in) come from the registry in
:mod:`mobilegen.providers`; this package holds the provider-independent machinery.
"""

from mobilegen.coverage.analyze import analyze, analyze_all, verdict
from mobilegen.coverage.model import CoverageReport, NodeVerdict
from mobilegen.coverage.target import EPTarget
from mobilegen.providers.base import Reason

__all__ = [
    "CoverageReport",
    "EPTarget",
    "NodeVerdict",
    "Reason",
    "analyze",
    "analyze_all",
    "verdict",
]
