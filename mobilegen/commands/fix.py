"""``mobilegen fix``: the fix stage alone — the graph passes that help the given execution providers,
each kept only if the coverage analysis says it helps, the result verified and written as one ``.onnx``.

    load → export → fixed dims (when a provider declares them) → reference → passes → write → verify → -o

All the given providers are judged together: a pass is kept when it helps one of them and makes none
worse (a build does the same per target, with that target's providers).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen import providers
from mobilegen.artifacts import AppliedFix, CoverageCounts
from mobilegen.commands import check as checking
from mobilegen.coverage import EPTarget, analyze_all
from mobilegen.errors import InternalError, UsageError
from mobilegen.export.exporter import save_onnx
from mobilegen.export.stage import load_and_export
from mobilegen.infra.outputs import staged_files, temp_dir
from mobilegen.passes import fix_dynamic_dims, registry
from mobilegen.passes.stage import drop_unused_initializers, improve
from mobilegen.providers import SettingValue
from mobilegen.verify.gate import verify
from mobilegen.verify.stage import reference

if TYPE_CHECKING:
    from mobilegen.coverage import CoverageReport, EPTarget
    from mobilegen.options import ModelOptions
    from mobilegen.passes.stage import Tried
    from mobilegen.verify.gate import VerifyOptions


@dataclass(frozen=True)
class FixOptions:
    """The providers to fix the model for (registry names), their settings (None: not given; a variant
    setting left out takes its default), the ``--approximate`` words, and ``--keep-dynamic``."""

    eps: tuple[str, ...]
    settings: Mapping[str, SettingValue | None] = field(default_factory=dict)
    approximate: tuple[str, ...] = ()
    keep_dynamic: bool = False


@dataclass(frozen=True)
class FixResult:
    output: str
    fixed_dims: dict[str, int]  # named input dims fixed to their example sizes (a provider that needs static shapes)
    applied: tuple[AppliedFix, ...]  # the passes kept, in order
    tried: tuple[Tried, ...]  # every pass that rewrote something, kept or not, and why
    before: tuple[CoverageReport, ...]  # per provider, on the graph the passes started from
    reports: tuple[CoverageReport, ...]  # per provider, on the written model
    verification: dict[str, object]
    notes: tuple[str, ...] = ()

    def entries(self) -> list[tuple[CoverageCounts, CoverageReport]]:
        return [(CoverageCounts.of(b), a) for b, a in zip(self.before, self.reports, strict=True)]

    def to_dict(self) -> dict[str, object]:
        """The ``mobilegen check --json`` contract, each report with ``before`` and ``fixes``; the passes
        tried; the fixed dims; the verification."""
        fixes = [f.to_dict() for f in self.applied]
        return {
            "output": self.output,
            "fixed_dims": dict(self.fixed_dims),
            "reports": [r.to_dict() | {"before": b.to_dict(), "fixes": fixes} for b, r in self.entries()],
            "passes": [t.to_dict() for t in self.tried],
            "verification": self.verification,
            "notes": list(self.notes),
        }


def fix_model(model: Path, output: Path, opts: FixOptions, model_opts: ModelOptions, verify_opts: VerifyOptions, *, force: bool) -> FixResult:
    eps = tuple(e.strip().lower() for e in opts.eps)
    checking.validate(eps, checking.CheckOptions(eps=eps, settings=opts.settings))
    targets = _targets(eps, opts.settings)
    if output.suffix.lower() != ".onnx":
        raise UsageError(f"-o {output} does not name an .onnx file", hint=f"give the path of the model to write, e.g. -o {output.with_suffix('.onnx').name}")
    approximate = registry.check_approximate(opts.approximate)
    model_opts.export_options()  # flag errors before any heavy work
    with staged_files([output], force=force, protect=(model,)) as (staged,), temp_dir("fix") as tmp:
        loaded, base = load_and_export(model, model_opts, tmp / "model.onnx", write=False)
        fixed: dict[str, int] = {}
        if not opts.keep_dynamic and registry.wants_fixed_dims(t.ep for t in targets):
            base, fixed = fix_dynamic_dims(base)
        expected, loaded = reference(loaded, base, verify_opts)
        proto = base.proto
        if proto is None:
            raise InternalError("the export did not keep the model in memory")
        before = tuple(analyze_all(proto, targets))
        declared = [f for t in targets for f in providers.get(t.ep).fixes]
        outcome = improve(proto, targets, registry.candidates(declared, approximate), before=lambda: before)
        if outcome.applied:
            drop_unused_initializers(proto)  # the weights the passes left behind
        written = tmp / "fixed.onnx"
        save_onnx(proto, written)
        after = outcome.after if outcome.applied and outcome.after is not None else before
        report = verify(expected, {"onnx": written}, base, verify_opts, reference_label=expected.label)
        staged.copy_from(written)
    notes = tuple(n.text for n in outcome.notices) + tuple(base.notes)
    return FixResult(str(output), fixed, outcome.applied, outcome.tried, before, tuple(after), report.to_dict(), notes)


def _targets(eps: tuple[str, ...], given: Mapping[str, SettingValue | None]) -> list[EPTarget]:
    """One target per provider with the given settings it declares (a variant left out: its default)."""
    out = []
    for name in eps:
        provider = providers.get(name)
        out.append(EPTarget(name, **{s.name: given[s.name] for s in provider.settings if given.get(s.name) is not None}))
    return out
