"""The analyse stage of a build: coverage of every provider the targets chose, each on its target's model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from mobilegen.artifacts import ShippedModel
from mobilegen.coverage import analyze_all
from mobilegen.targets.chosen import build_context

if TYPE_CHECKING:
    from mobilegen.coverage.model import CoverageReport
    from mobilegen.coverage.target import EPTarget
    from mobilegen.targets.chosen import Chosen


def analyse(models: Sequence[ShippedModel], chosen: Sequence[Chosen]) -> list[CoverageReport]:
    """Coverage of every provider the targets chose, each on its target's model (ORT reads the written
    file), in target order."""
    ctx = build_context(models[0].onnx, chosen)
    per_target: dict[str, list[CoverageReport]] = {}
    for m in models:
        eps_of = [(c.target.name, c.target.reported_providers(c.opts, ctx)) for c in chosen if c.target.name in m.targets]
        eps: list[EPTarget] = [ep for _name, target_eps in eps_of for ep in target_eps]
        reports = iter(analyze_all(m.onnx.proto, eps, source=m.onnx.path) if eps else ())
        for name, target_eps in eps_of:
            per_target[name] = [replace(next(reports), target=name) for _ep in target_eps]
    out = [r for c in chosen for r in per_target.get(c.target.name, [])]
    shared = {r.label for r in out if sum(o.label == r.label for o in out) > 1}
    return [replace(r, title=f"{r.label} ({r.target})") if r.label in shared else r for r in out]

