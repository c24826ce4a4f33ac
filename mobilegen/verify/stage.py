"""The verify stage of a build: the reference's outputs (PyTorch, or the source ONNX model), then the gate
on every shipped model's .onnx and .ort; the notices the verification gives."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mobilegen import artifacts
from mobilegen.artifacts import LoadedModel, OnnxModel, ShippedModel, VerificationReport
from mobilegen.errors import InternalError, LoadError, MobilegenError, VerificationError, first_line
from mobilegen.export.const_inputs import with_const_feeds
from mobilegen.export.exporter import save_onnx
from mobilegen.infra.memory import release_memory
from mobilegen.infra.outputs import temp_dir
from mobilegen.notices import Notice
from mobilegen.verify.gate import (
    Expected,
    Run,
    VerifyOptions,
    artifact_runs,
    case_runs,
    ort_runner,
    reference_outputs,
    session_runner,
    torch_reference,
    verify_runs,
)

if TYPE_CHECKING:
    from mobilegen.passes.stage import FixPlan


Runner = Callable[[dict[str, np.ndarray]], list[np.ndarray]]


def reference_for(loaded: LoadedModel, exported: OnnxModel) -> tuple[Runner, str]:
    """PyTorch; for an ONNX input, the source model under onnxruntime with optimizations off — or, when
    this onnxruntime cannot load the source as written (a newer IR version), mobilegen's normalized copy
    (from ``exported.path``, or from memory when it is not written yet)."""
    if loaded.kind != "onnx":
        return torch_reference(loaded), "PyTorch"
    if loaded.onnx_path is None:
        raise InternalError("an ONNX source without its path")

    label = "the normalized source ONNX model (no PyTorch model given)"
    try:
        # fed the --const values the shipped model has baked in
        return with_const_feeds(ort_runner(loaded.onnx_path, basic_only=True), loaded), "the source ONNX model (no PyTorch model given)"
    except Exception as err:  # noqa: BLE001 — onnxruntime raises its own Fail/InvalidGraph types
        first_err: BaseException = err
    try:
        if exported.path.is_file() or exported.proto is None:
            return ort_runner(exported.path, basic_only=True), label
        with temp_dir("reference") as tmp:  # onnxruntime reads the file when the session is made
            save_onnx(exported.proto, tmp / "model.onnx")
            return ort_runner(tmp / "model.onnx", basic_only=True), label
    except MobilegenError:
        raise
    except Exception as err:  # noqa: BLE001 — neither the source nor the normalized copy runs
        raise LoadError(
            f"onnxruntime cannot run {loaded.source.name}: {first_line(first_err)}",
            hint="mobilegen verifies every model on onnxruntime's CPU provider: replace custom or unsupported ops "
            "(a custom-domain op needs its own kernel in the app too)",
        ) from err


def reference(loaded: LoadedModel, onnx_model: OnnxModel, opts: VerifyOptions) -> tuple[Expected, LoadedModel]:
    """The reference's outputs on every verification case, computed now; returns them and the loaded
    model without its PyTorch module, so the module's memory can be freed before the conversion."""
    runner, label = reference_for(loaded, onnx_model)
    expected = reference_outputs(runner, onnx_model, opts, reference_label=label)
    del runner  # an ONNX reference's session (its weights, its arena) goes now
    release_memory()
    return expected, replace(loaded, module=None)  # the caller lets go of the module; convert frees it


def artifact_label(model: ShippedModel, kind: str, models: Sequence[ShippedModel]) -> str:
    """How the verification table names an artifact: ``onnx``/``ort``, or ``android/ort`` per target."""
    return kind if len(models) == 1 else f"{'+'.join(model.targets)}/{kind}"


ModelRuns = dict[str, list[Run]]  # a shipped model's outputs on every case: "onnx" and "ort" → runs


def onnx_runs(expected: Expected) -> Callable[[Any], list[Run]]:
    """What the convert stage does with each model's converting session, the ``.onnx`` as onnxruntime
    loads it (:func:`mobilegen.convert.stage.convert`): run every verification case on it."""
    return lambda session: case_runs(expected, session_runner(session))


def model_runs(expected: Expected) -> Callable[[ShippedModel, list[Run]], ModelRuns]:
    """What the convert stage does once a model's ``.ort`` exists (in a thread of its own, beside the next
    model's conversion): run every verification case on the ``.ort``, beside the ``.onnx``'s runs
    (:func:`onnx_runs`). :func:`verify` judges them."""

    def run(model: ShippedModel, onnx: list[Run]) -> ModelRuns:
        return {"onnx": onnx, **artifact_runs(expected, {"ort": model.converted().path})}

    return run


def verify(
    expected: Expected,
    models: Sequence[ShippedModel],
    runs: Sequence[ModelRuns],
    opts: VerifyOptions,
    root: Path,
    sorted_outputs: Sequence[str] = (),
    runtimes: Mapping[str, Path] | None = None,
) -> VerificationReport:
    """The gate: the reference's outputs against every model's .onnx and .ort (``runs``: each model's, from
    :func:`model_runs`) and the other runtimes' models (``runtimes``: label → file, e.g. ``litert`` →
    model.tflite, run here by their own host runtime), in one table, every failure listed; golden vectors
    and tolerances. ``sorted_outputs`` (``--top-k``'s scores) get no top-1 figure."""
    table: dict[str, list[Run]] = {}
    for m, by_kind in zip(models, runs, strict=True):
        for kind in ("onnx", "ort"):
            table[artifact_label(m, kind, models)] = by_kind[kind]
    table.update(artifact_runs(expected, runtimes or {}))
    try:
        report = verify_runs(expected, table, models[0].onnx, opts, root / "golden", sorted_outputs=sorted_outputs)
    except VerificationError as err:
        if any(m.fixes for m in models):
            err.hint = (err.hint or "") + "; or pass --no-fix to ship the exported graph as it is (see the report's graph passes)"
        raise
    # atol/rtol, and the --range value ranges the seeded golden inputs were drawn from
    (root / artifacts.GOLDEN_TOLERANCES).write_text(json.dumps(opts.record(), indent=2) + "\n", encoding="utf-8")
    return report


def fix_notices(fix_plan: FixPlan, models: Sequence[ShippedModel], verification: VerificationReport) -> list[Notice]:
    """An approximate pass applied (``--approximate``): which, where, and its measured effect on the outputs."""
    out: list[Notice] = []
    for m in models:
        approx = [f for f in m.fixes if not f.exact]
        if not approx:
            continue
        labels = {artifact_label(m, kind, models) for kind in ("onnx", "ort")}
        worst = max((r.max_abs for r in verification.rows if r.artifact in labels), default=0.0)
        names = ", ".join(f"{f.name} ({f.nodes} node{'s' if f.nodes != 1 else ''}, --approximate {f.approximate_as})" for f in approx)
        where = " and ".join(m.targets)
        text = f"approximate graph pass{'es' if len(approx) > 1 else ''} {names} applied to the {where} model: its outputs differ from the reference by up to {worst:.2e} (max abs, see the verification table)"
        out.append(Notice("fix-approximate", "warning", text, subject=where))
    return out


def verification_notices(verification: VerificationReport) -> list[Notice]:
    """Outputs the gate could not verify and ``--allow-degenerate`` accepted (the report, READMEs, JSON)."""
    return [Notice("degenerate-reference", "warning", text) for text in verification.notices]


def notices(fix_plan: FixPlan, models: Sequence[ShippedModel], verification: VerificationReport) -> list[Notice]:
    """What the verification says about the build: approximate passes' effect, then outputs not verified."""
    return [*fix_notices(fix_plan, models, verification), *verification_notices(verification)]
