"""--task on the build commands (issue 14): flag and labels errors are one line, exit 2, before any heavy
work; model mismatches are found right after the export; nothing is left behind. mobilegen.toml keys."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from cli_helpers import assert_fails, invoke
from onnx import TensorProto, helper, numpy_helper


def image_classifier(path: Path, classes: int = 3) -> Path:
    """x [1,3,8,8] → mean over pixels → MatMul → y [1,classes]."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((3, classes)).astype(np.float32), "w")
    nodes = [helper.make_node("ReduceMean", ["x"], ["p"], axes=[2, 3], keepdims=0), helper.make_node("MatMul", ["p", "w"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, classes])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def audio_classifier(path: Path) -> Path:
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((160, 3)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["wave", "w"], ["y"])], "g", [helper.make_tensor_value_info("wave", TensorProto.FLOAT, [1, 160])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return image_classifier(tmp_path / "cls.onnx")


@pytest.fixture
def labels(tmp_path: Path) -> Path:
    f = tmp_path / "labels.txt"
    f.write_text('cat "tabby"\ndog $(rm -rf)\nbird \\(x) ✓\n', encoding="utf-8")
    return f


def nothing_left(tmp_path: Path, out: Path) -> None:
    assert not out.exists()
    assert not [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name]


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--crop", "8x8"], "--crop needs --task"),
        (["--task", "image-classification"], "--task image-classification needs --labels"),
        (["--task", "image", "--scale", "1/0"], "--scale '1/0' is not a number"),
        (["--task", "image", "--channels", "RGB"], "unknown --channels 'RGB'"),
        (["--task", "image", "--crop", "16x16"], "--crop 16x16 does not match the model's input 'x' (1x3x8x8: 8x8)"),
        (["--task", "image", "--layout", "nhwc"], "with --layout nhwc needs a 1xHxWx3 input"),
        (["--task", "image", "--top-k", "4"], "--top-k 4 is more than the model's 3 classes"),
        (["--task", "audio", "--sample-rate", "16000"], "--task audio needs a 1xSAMPLES input"),
        (["--task", "image", "--resize-filter", "lanczos"], "unknown --resize-filter 'lanczos'"),
        (["--task", "image", "--state", "a=b"], "--state is for --task audio"),
    ],
)
def test_flag_errors(model: Path, tmp_path: Path, extra: list[str], needle: str) -> None:
    out = tmp_path / "out"
    assert_fails(invoke("android", model, "-o", out, *extra), 2, needle)
    nothing_left(tmp_path, out)


def test_label_count_must_match_the_model(tmp_path: Path, labels: Path) -> None:
    out = tmp_path / "out"
    model = image_classifier(tmp_path / "four.onnx", classes=4)
    assert_fails(invoke("package", "--android", model, "-o", out, "--task", "image-classification", "--labels", labels), 2, "--labels has 3 labels but the model has 4 classes")
    nothing_left(tmp_path, out)


@pytest.mark.parametrize(
    ("data", "needle"),
    [(b"cat\x00\ndog\ncow\n", "holds NUL bytes"), (b"", "is empty"), ("cat\ndog\u2029x\ncow\n".encode(), "line 2 holds the character U+2029"), (b"cat\n\ncow\n", "line 2 is empty")],
)
def test_hostile_labels_files(model: Path, tmp_path: Path, data: bytes, needle: str) -> None:
    out = tmp_path / "out"
    f = tmp_path / "labels.txt"
    f.write_bytes(data)
    assert_fails(invoke("ios", model, "-o", out, "--task", "image-classification", "--labels", f), 2, needle)
    nothing_left(tmp_path, out)


def test_config_file_and_labels_as_data(model: Path, labels: Path, tmp_path: Path) -> None:
    """Task keys in mobilegen.toml (--scale as a fraction, --labels relative to the file); the labels ship
    byte for byte as model/labels.txt and never reach generated code."""
    cfg = tmp_path / "mobilegen.toml"
    cfg.write_text('task = "image-classification"\nlabels = "labels.txt"\nscale = "1/255"\nmean = "0.5"\nstd = "0.25"\n\n[package]\nsoftmax = true\ntop_k = 2\n', encoding="utf-8")
    out = tmp_path / "out"
    r = invoke("package", "--config", cfg, "--android", "--ios", model, "-o", out, "--json")
    assert r.exit_code == 0, r.stderr
    task = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["options"]["task"]
    assert json.loads(r.stdout)["task"] == task
    assert (task["kind"], task["scale"], task["mean"], task["std"], task["softmax"], task["top_k"], task["crop"]) == ("image-classification", 1 / 255, [0.5], [0.25], True, 2, [8, 8])
    assert (out / "model/labels.txt").read_bytes() == labels.read_bytes()
    assert json.loads((out / "golden/task/cases.json").read_text(encoding="utf-8"))["cases"][0]["top_k"][0]["label"] in labels.read_text(encoding="utf-8").splitlines()
    for p in out.rglob("*"):
        if p.suffix in (".kt", ".kts", ".swift", ".gradle", ".java"):
            text = p.read_text(encoding="utf-8")
            assert "tabby" not in text and "rm -rf" not in text and "\\(x)" not in text and "✓" not in text, p


def test_audio_task(tmp_path: Path) -> None:
    model = audio_classifier(tmp_path / "kws.onnx")
    out = tmp_path / "out"
    r = invoke("ios", model, "-o", out, "--task", "audio", "--sample-rate", "16000", "--softmax", "--top-k", "2")
    assert r.exit_code == 0, r.stderr
    doc = json.loads((out / "golden/task/cases.json").read_text(encoding="utf-8"))
    assert doc["input"] == "pcm" and {c["samples"] for c in doc["cases"]} == {160}
    from mobilegen.verify.golden import decode_mgv

    for c in doc["cases"]:
        pcm = np.frombuffer((out / "golden/task" / c["pcm"]).read_bytes(), dtype="<i2")
        case = decode_mgv((out / "golden/task" / c["vectors"]).read_bytes())
        assert np.array_equal(case.inputs["pcm"], pcm.astype(np.float32)[None]) and set(case.outputs) == {"scores", "indices"}


def test_audio_classifier_labels_and_state_errors(tmp_path: Path, labels: Path) -> None:
    """Issue 26 item 8: --labels works for audio (one per class; the package ships them and the task
    golden cases carry the top classes); --state naming an output the model lacks is one line, exit 2."""
    model = audio_classifier(tmp_path / "kws.onnx")
    out = tmp_path / "out"
    r = invoke("android", model, "-o", out, "--task", "audio", "--sample-rate", "16000", "--labels", labels)
    assert r.exit_code == 0, r.stderr
    assert (out / "model/labels.txt").read_text(encoding="utf-8").splitlines()[0] == 'cat "tabby"'
    doc = json.loads((out / "golden/task/cases.json").read_text(encoding="utf-8"))
    assert all(len(c["top_k"]) == 3 for c in doc["cases"])
    task = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["options"]["task"]
    assert (task["labels"], task["sample_rate"], task["window"], task["audio_channels"]) == (3, 16000, 160, 1)
    bad = tmp_path / "bad"
    assert_fails(invoke("android", model, "-o", bad, "--task", "audio", "--sample-rate", "16000", "--state", "h=hN"), 2, "--state h=hN: the model has no input 'h'")
    nothing_left(tmp_path, bad)
