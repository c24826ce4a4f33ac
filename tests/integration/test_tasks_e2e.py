"""Issue 14 end to end: a classifier trained in the fixture, wrapped in its task's pre/post-processing.

Parity: the native step (mobilegen.tasks.reference.resize_crop) + the wrapped graph against the Python
reference (the same native step, numpy normalisation, the PyTorch model, numpy softmax/top-k) on images
of different sizes and aspect ratios: normalised tensors within 1/255 per element, the same top-k, scores
within 1e-4. The build ships labels as data and task golden files that reproduce.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from cli_helpers import invoke
from task_fixtures import LABELS, SIZE, SPEC, synthetic_images, write_classifier

from mobilegen.options import ModelOptions
from mobilegen.pipeline import load_and_export
from mobilegen.tasks.reference import classifications, postprocess_outputs, preprocess, resize_crop
from mobilegen.tasks.stage import wrap_exported
from mobilegen.verify.golden import decode_mgv

pytestmark = pytest.mark.slow

SIZES = [(32, 32), (48, 64), (91, 37), (200, 120), (33, 250), (17, 19)]


@pytest.fixture(scope="module")
def classifier(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, float]:
    return write_classifier(tmp_path_factory.mktemp("classifier"))


def test_classifier_is_trained(classifier: tuple[Path, Path, float]) -> None:
    assert classifier[2] > 0.8  # chance is 0.25


def test_in_graph_pipeline_matches_the_python_reference(classifier: tuple[Path, Path, float], tmp_path: Path) -> None:
    model, _labels, _acc = classifier
    _loaded, exported = load_and_export(model, ModelOptions(inputs=(f"x:1x3x{SIZE}x{SIZE}",)), tmp_path / "m.onnx", write=False)
    wrapped, spec = wrap_exported(exported, SPEC)
    assert [i.name for i in wrapped.io.inputs] == ["image"] and wrapped.io.inputs[0].shape == (1, SIZE, SIZE, 3)
    assert [(o.name, o.dtype, o.shape) for o in wrapped.io.outputs] == [("scores", "float32", (1, 3)), ("indices", "int64", (1, 3))]
    proto = wrapped.proto
    assert proto is not None
    inner = exported.io.inputs[0].name  # the model's own input: the normalised tensor, exposed for the check
    proto.graph.output.append(onnx.helper.make_tensor_value_info(inner, onnx.TensorProto.FLOAT, None))
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    net = torch.jit.load(str(model))
    rng = np.random.default_rng(7)
    correct = 0
    for h, w in SIZES:
        for k in range(4):
            img, cls = synthetic_images(1, rng, h, w)
            scores, indices, normalised = session.run(None, {"image": resize_crop(img[0], spec)[None]})
            want = preprocess(img[0], spec)
            assert np.abs(normalised - want).max() <= 1 / 255, (h, w)
            with torch.no_grad():
                ref_scores, ref_indices = postprocess_outputs([net(torch.from_numpy(want)).numpy()], spec)
            assert indices.tolist() == ref_indices.tolist(), (h, w, k)
            assert np.abs(scores - ref_scores).max() <= 1e-4, (h, w, k)
            correct += int(indices[0, 0] == cls[0])
    assert correct / (4 * len(SIZES)) > 0.7  # through the whole chain, on every size and aspect ratio


def test_package_with_a_task(classifier: tuple[Path, Path, float], tmp_path: Path) -> None:
    model, labels, _acc = classifier
    out = tmp_path / "pkg"
    r = invoke(
        "package", model, "--android", "--ios", "--nnapi", "--coreml", "-i", f"x:1x3x{SIZE}x{SIZE}", "-o", out,
        "--task", "image-classification", "--labels", labels, "--resize", "40", "--mean", "0.485,0.456,0.406",
        "--std", "0.229,0.224,0.225", "--scale", "1/255", "--softmax", "--top-k", "3", "--json",
    )
    assert r.exit_code == 0, r.stderr
    cases = {row["case"] for row in json.loads(r.stdout)["verification"]["rows"]}
    assert {"image:gradient_64x48", "image:rings_37x91"} <= cases  # the gate ran on the golden images too
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    task = manifest["options"]["task"]
    assert task["kind"] == "image-classification" and task["crop"] == [SIZE, SIZE] and task["top_k"] == 3 and task["labels"] == len(LABELS)
    assert task["labels_file"] == "model/labels.txt" and task["golden"] == {"android": "golden/task", "ios": "golden/task"}
    assert (out / "model/labels.txt").read_bytes() == "".join(f"{x}\n" for x in LABELS).encode("utf-8")
    assert "| Task | image-classification;" in (out / "report/report.md").read_text(encoding="utf-8")
    # one model, or one per target (the flatten-reshape pass helps CoreML only): the task golden files hold for each
    for onnx_path in [out / "model/model.onnx"] if (out / "model/model.onnx").is_file() else sorted(out.glob("model/*/model.onnx")):
        _golden_files_reproduce(out / "golden/task", onnx_path)
    _task_nodes_stay_on_the_accelerators(json.loads((out / "report/coverage.json").read_text(encoding="utf-8"))["reports"])
    # labels are data: no label text reaches generated code
    code = [p for p in out.rglob("*") if p.suffix in (".kt", ".kts", ".swift", ".java", ".gradle")]
    assert code
    for p in code:
        text = p.read_text(encoding="utf-8")
        for label in LABELS:
            assert label not in text, (p, label)
        for fragment in ('"mg-warm"', "MG_HOME", "\\(mgX)", "灰色"):
            assert fragment not in text, (p, fragment)


def _golden_files_reproduce(folder: Path, onnx_path: Path) -> None:
    doc = json.loads((folder / "cases.json").read_text(encoding="utf-8"))
    assert doc["format"] == 1 and doc["input"] == "image" and len(doc["cases"]) >= 3
    shapes = {(c["height"], c["width"]) for c in doc["cases"]}
    assert len({h / w for h, w in shapes}) >= 3  # different aspect ratios
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    for case in doc["cases"]:
        rgba = np.frombuffer((folder / case["pixels"]).read_bytes(), dtype=np.uint8).reshape(case["height"], case["width"], 4)
        vectors = decode_mgv((folder / case["vectors"]).read_bytes())
        crop = resize_crop(rgba, SPEC)
        assert np.array_equal(vectors.inputs["image"], crop[None])  # the native step, value for value
        got = session.run(None, {"image": crop[None]})
        assert [(label, i) for label, i, _s in classifications(got, SPEC)] == [(t["label"], t["index"]) for t in case["top_k"]]
        assert max(abs(s - t["score"]) for (_l, _i, s), t in zip(classifications(got, SPEC), case["top_k"], strict=True)) <= 1e-4


TASK_NODES = {f"mobilegen_task/{n}_node" for n in ("scaled", "centred", "normalized", "nchw", "softmax")}


def _task_nodes_stay_on_the_accelerators(reports: list[dict[str, object]]) -> None:
    """Mul/Sub/Div/Transpose/Softmax run in the model's partition; only the uint8 Cast at the input and
    TopK at the output (no NNAPI/CoreML builder takes them) stay on the CPU, at the graph's edges."""
    by_ep = {(r["ep"], r["format"]): r for r in reports}
    nnapi = by_ep[("nnapi", None)]
    assert len(nnapi["partitions"]) == 1 and TASK_NODES <= set(nnapi["partitions"][0])  # type: ignore[arg-type,index]
    assert {n["op_type"] for n in nnapi["nodes"] if not n["supported"]} == {"Cast", "TopK"}  # type: ignore[attr-defined,index]
    coreml = by_ep[("coreml", "mlprogram")]
    assert TASK_NODES <= {name for part in coreml["partitions"] for name in part}  # type: ignore[attr-defined]
    refused = {n["op_type"] for n in coreml["nodes"] if not n["supported"]}  # type: ignore[attr-defined,index]
    assert refused - {"Flatten"} == {"Cast", "TopK"}  # Flatten is the model's own (no MLProgram builder)
