"""Side by side with ORT's usability checker on the onnx package's light_* models (slow).

Our supported-node count must be >= ORT's checker wherever ORT's count is right. Where ours is lower,
every node ORT counts and we refuse must carry one of the expected reasons below (ORT's checker only
matches op names and ignores rank, constness, attributes and API levels).
"""

from __future__ import annotations

import logging
from pathlib import Path

import onnx
import pytest

from mobilegen.coverage import EPTarget, analyze_all
from mobilegen.coverage.analyze import prepare

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODELS = sorted(p.name for p in LIGHT.glob("light_*.onnx"))

# (model, label) -> reason fragments that explain why we take fewer nodes than ORT's checker.
EXPECTED_LOWER: dict[tuple[str, str], tuple[str, ...]] = {
    # NNAPI builders take rank <= 4; ShuffleNet's channel shuffle reshapes to rank 5.
    ("light_shufflenet.onnx", "nnapi"): ("NNAPI Reshape needs rank 1..4", "NNAPI Transpose needs rank 1..4",
                                         "lone Reshape", "only by constants"),
}
# (model, label) -> reason fragments for nodes we take and ORT's checker does not (ours higher).
EXPECTED_HIGHER_NOTE = "ORT's md tables miss ops the builders register (ReduceSum/ArgMax/BatchNormalization/Gather...)"


def _ort_counts(model: onnx.ModelProto) -> dict[str, tuple[int, set[str]]]:
    from onnxruntime.tools.mobile_helpers import usability_checker as uc

    out: dict[str, tuple[int, set[str]]] = {}
    infos = {
        "nnapi": uc.check_nnapi_partitions(model, require_fixed_input_sizes=True),
        "coreml/neuralnetwork": uc.check_coreml_partitions(model, True, "coreml_supported_neuralnetwork_ops.md"),
        "coreml/mlprogram": uc.check_coreml_partitions(model, True, "coreml_supported_mlprogram_ops.md"),
    }
    for label, info in infos.items():
        names = {n.name for group in info.supported_groups for n in group}
        out[label] = (info.num_supported_nodes, names)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_side_by_side_with_ort_checker(name: str) -> None:
    logging.getLogger("onnxruntime").setLevel(logging.ERROR)
    model = onnx.load(str(LIGHT / name))
    prepared = prepare(model)
    # ORT's checker reads the same basic-optimized, shape-inferred graph we analyse.
    shaped = onnx.shape_inference.infer_shapes(_as_proto(prepared, model), strict_mode=False)
    ort = _ort_counts(shaped)
    targets = [EPTarget("nnapi"), EPTarget("coreml", coreml_format="neuralnetwork"), EPTarget("coreml")]
    for report in analyze_all(model, targets):
        ort_count, ort_names = ort[report.label]
        if report.supported_nodes >= ort_count:
            continue
        allowed = EXPECTED_LOWER.get((name, report.label))
        assert allowed, f"{name} {report.label}: ours {report.supported_nodes} < ORT {ort_count} with no expected reason"
        for node in report.nodes:
            if node.name in ort_names and not node.supported:
                assert any(a in r for r in node.reasons for a in allowed), (name, report.label, node)


def _as_proto(prepared, original: onnx.ModelProto) -> onnx.ModelProto:
    """Re-run ORT's basic optimization to hand the checker the same graph (it needs a ModelProto)."""
    from mobilegen.coverage.analyze import _infer_shapes, _optimize

    opt, _ = _optimize(original)
    return _infer_shapes(opt if opt is not None else original)[0]
