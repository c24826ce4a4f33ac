"""The task spec (issue 14): flags and labels are refused with one line before any heavy work; the spec
is checked against the model's IO after the export."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from mobilegen.errors import UsageError
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.tasks.dispatch import resolve, task_from_flags
from mobilegen.tasks.spec import (
    TaskFlags,
    TaskSpec,
    describe,
    labels_text,
    read_labels,
)


def flags(tmp_path: Path, **kw: object) -> TaskFlags:
    if kw.get("task") == "image-classification" and "labels" not in kw:
        labels = tmp_path / "labels.txt"
        labels.write_text("a\nb\nc\n", encoding="utf-8")
        kw["labels"] = labels
    return TaskFlags(**kw)  # type: ignore[arg-type]


def test_full_image_spec(tmp_path: Path) -> None:
    spec = task_from_flags(
        flags(tmp_path, task="image-classification", resize=256, crop="224x200", mean="0.485,0.456,0.406", std="0.229, 0.224, 0.225", scale="1/255",
              channels="bgr", layout="nhwc", softmax=True, top_k=2)
    )
    assert spec == TaskSpec("image-classification", ("a", "b", "c"), 256, (224, 200), (0.485, 0.456, 0.406), (0.229, 0.224, 0.225), 1 / 255, "bgr", "nhwc", None, True, 2)
    assert spec.record()["scale"] == pytest.approx(1 / 255)
    assert "top-2" in describe(spec.record()) and "BGR" in describe(spec.record())
    assert spec.record()["resize_filter"] == "antialias" and "antialiased bilinear, as Pillow" in describe(spec.record())


def test_audio_contract_in_the_spec(tmp_path: Path) -> None:
    """The window comes from the model's input length (None: any length); the record and the report line
    carry rate, channels, both sample formats and the window."""
    from mobilegen.spec import IOSpec, TensorSpec

    spec = task_from_flags(flags(tmp_path, task="audio", sample_rate=16000))
    assert spec is not None
    out = (TensorSpec("y", "float32", (1, 2)),)
    fixed = resolve(spec, IOSpec((TensorSpec("wave", "float32", (1, 512)),), out))
    assert fixed.window == 512
    assert resolve(spec, IOSpec((TensorSpec("wave", "float32", (1, "n")),), out)).window is None
    rec = fixed.record()
    assert (rec["sample_rate"], rec["audio_channels"], rec["sample_formats"], rec["window"]) == (16000, 1, ["int16", "float"], 512)
    line = describe(rec)
    assert "16000 Hz" in line and "512 samples per run" in line and "runPcm16" in line and "runFloat" in line


def test_audio_labels(tmp_path: Path) -> None:
    """--labels works for --task audio: an audio classifier, recorded with its label count."""
    labels = tmp_path / "kws.txt"
    labels.write_text("yes\nno\nup\n", encoding="utf-8")
    spec = task_from_flags(flags(tmp_path, task="audio", sample_rate=16000, labels=labels, top_k=2))
    assert spec is not None and spec.labels == ("yes", "no", "up") and spec.is_classifier
    from mobilegen.spec import IOSpec, TensorSpec

    resolved = resolve(spec, IOSpec((TensorSpec("wave", "float32", (1, 16000)),), (TensorSpec("y", "float32", (1, 3)),)))
    assert resolved.record()["labels"] == 3 and not TaskSpec("audio", sample_rate=8000).is_classifier


def test_resize_filter(tmp_path: Path) -> None:
    """--resize-filter: antialias by default, bilinear (the earlier 2x2 taps) on request; recorded and described."""
    old = task_from_flags(flags(tmp_path, task="image", crop="4x4", resize_filter="bilinear"))
    assert old is not None and old.resize_filter == "bilinear"
    assert old.record()["resize_filter"] == "bilinear" and "no antialias" in describe(old.record())
    rec = old.record()
    del rec["resize_filter"]  # a manifest from before the flag: its packages resized bilinearly
    assert "no antialias" in describe(rec)


def test_no_task_no_spec(tmp_path: Path) -> None:
    assert task_from_flags(TaskFlags()) is None


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"crop": "2x2"}, "--crop needs --task"),
        ({"softmax": True}, "--softmax needs --task"),
        ({"task": "detection"}, "unknown --task 'detection'"),
        ({"task": "image-classification", "labels": None}, "needs --labels"),
        ({"task": "image", "crop": "224"}, None),  # a square
        ({"task": "image", "crop": "224x"}, "--crop '224x' is not HxW"),
        ({"task": "image", "crop": "0x4"}, "--crop height 0 is out of range"),
        ({"task": "image", "crop": "1x2x3"}, "is not HxW"),
        ({"task": "image", "resize": 100, "crop": "224x224"}, "--resize 100 is smaller than --crop 224x224"),
        ({"task": "image", "resize": 0}, "--resize 0 is out of range"),
        ({"task": "image", "mean": "0.5,0.5"}, "--mean '0.5,0.5' needs one finite value or three"),
        ({"task": "image", "mean": "red"}, "--mean 'red' is not a list of numbers"),
        ({"task": "image", "mean": "nan"}, "--mean 'nan' is not a list of numbers"),
        ({"task": "image", "scale": "1e400"}, "--scale '1e400' is not a number"),
        ({"task": "image", "std": "1,1,1e-400"}, "--std '1,1,1e-400' has a zero"),
        ({"task": "image", "std": "1,0,1"}, "--std '1,0,1' has a zero"),
        ({"task": "image", "scale": "1/0"}, "--scale '1/0' is not a number"),
        ({"task": "image", "scale": "0"}, "--scale '0' must be finite and non-zero"),
        ({"task": "image", "channels": "rgba"}, "unknown --channels 'rgba'"),
        ({"task": "image", "layout": "chw"}, "unknown --layout 'chw'"),
        ({"task": "image", "resize_filter": "lanczos"}, "unknown --resize-filter 'lanczos'"),
        ({"resize_filter": "bilinear"}, "--resize-filter needs --task"),
        ({"task": "audio", "sample_rate": 16000, "resize_filter": "bilinear"}, "--resize-filter is for image tasks"),
        ({"task": "image", "sample_rate": 16000}, "--sample-rate is for --task audio"),
        ({"task": "image", "top_k": 0}, "--top-k 0 is out of range"),
        ({"task": "audio"}, "--task audio needs --sample-rate"),
        ({"task": "audio", "sample_rate": 0}, "--sample-rate 0 is out of range"),
        ({"task": "audio", "sample_rate": 16000, "crop": "2x2"}, "--crop is for image tasks"),
        ({"task": "audio", "sample_rate": 16000, "labels": Path("x.txt")}, "--labels x.txt does not exist"),  # audio takes labels
        ({"task": "image", "labels": Path("x.txt")}, "--labels is for --task image-classification or --task audio"),
    ],
)
def test_flag_errors(tmp_path: Path, kw: dict[str, object], needle: str | None) -> None:
    if needle is None:
        assert task_from_flags(flags(tmp_path, **kw)) is not None
        return
    with pytest.raises(UsageError) as e:
        task_from_flags(flags(tmp_path, **kw))
    assert needle in e.value.message and "\n" not in e.value.message and e.value.hint


def test_audio_image_flag_hint_lists_every_audio_flag(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as e:
        task_from_flags(flags(tmp_path, task="audio", sample_rate=16000, crop="2x2"))
    assert e.value.hint == "drop it: audio takes --sample-rate, --labels, --softmax, --top-k and --state"


def test_labels_are_data(tmp_path: Path) -> None:
    """Quotes, $, backslashes, template syntax, right-to-left text and emoji are kept byte for byte; a BOM,
    CRLF line ends and one final newline are not part of any label."""
    hostile = ['say "hi"', "it's", "$HOME ${x}", "\\(x) \\n", "{{ x }} {% y %}", "*/ /* <!-- -->", "שָׁלוֹם", "猫 🐱", "  padded  "]
    f = tmp_path / "labels.txt"
    f.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(hostile).encode("utf-8") + b"\r\n")
    assert read_labels(f) == tuple(hostile)
    assert labels_text(tuple(hostile)).encode("utf-8") == "".join(f"{h}\n" for h in hostile).encode("utf-8")


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"", "is empty"),
        (b"\n\n  \n", "is empty"),
        (b"cat\n\ndog\n", "line 2 is empty"),
        (b"cat\x00\ndog\n", "holds NUL bytes"),
        (b"cat\xff\n", "is not UTF-8 text"),
        ("cat\u2028dog\n".encode(), "line 1 holds the character U+2028"),
        ("cat\u0085dog\n".encode(), "U+0085"),
        (b"cat\x0bdog\n", "U+000B"),
        (b"cat\rdog\n", "U+000D"),
        (b"a\x1b[31mred\n", "U+001B"),
        (("x" * 257 + "\n").encode(), "line 1 is 257 characters long"),
    ],
)
def test_hostile_labels_refused(tmp_path: Path, data: bytes, needle: str) -> None:
    f = tmp_path / "labels.txt"
    f.write_bytes(data)
    with pytest.raises(UsageError) as e:
        read_labels(f)
    assert needle in e.value.message and "\n" not in e.value.message


def test_labels_file_problems(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        read_labels(tmp_path / "missing.txt")
    with pytest.raises(UsageError, match="is not a regular file"):
        read_labels(tmp_path)
    big = tmp_path / "big.txt"
    big.write_bytes(b"x\n" * (3 << 20))
    with pytest.raises(UsageError, match="over 4 MiB"):
        read_labels(big)
    many = tmp_path / "many.txt"
    many.write_text("x\n" * 100_001, encoding="utf-8")
    with pytest.raises(UsageError, match="over 100000"):
        read_labels(many)


def io(inp: tuple[int | str, ...], out: tuple[int | str, ...] = (1, 3), n_in: int = 1, dtype: str = "float32") -> IOSpec:
    inputs = tuple(TensorSpec(f"x{i}" if i else "x", dtype, inp) for i in range(n_in))
    return IOSpec(inputs=inputs, outputs=(TensorSpec("y", "float32", out),))


SPEC = TaskSpec("image-classification", ("a", "b", "c"), softmax=True, top_k=2)


def test_resolve_fills_the_crop_and_fixes_batch() -> None:
    assert resolve(SPEC, io(("batch", 3, 24, 32))).crop == (24, 32)
    assert resolve(replace(SPEC, layout="nhwc"), io((1, 24, 32, 3))).crop == (24, 32)
    assert resolve(replace(SPEC, crop=(8, 8)), io((1, 3, "h", "w"))).crop == (8, 8)
    assert resolve(TaskSpec("audio", sample_rate=16000), io((1, "samples"), out=(1, 5, 7))).kind == "audio"


@pytest.mark.parametrize(
    ("spec", "model_io", "needle"),
    [
        (SPEC, io((1, 3, 8, 8), out=(1, 4)), "--labels has 3 labels but the model has 4 classes"),
        (replace(SPEC, crop=(16, 16)), io((1, 3, 8, 8)), "--crop 16x16 does not match the model's input 'x' (1x3x8x8: 8x8)"),
        (SPEC, io((1, 3, "h", "w")), "has no fixed image size"),
        (SPEC, io((1, 8, 8, 3)), "with --layout nchw needs a 1x3xHxW input"),
        (SPEC, io((2, 3, 8, 8)), "needs a 1x3xHxW input"),
        (SPEC, io((1, 3, 8, 8), n_in=2), "needs a model with one input, this one has 2"),
        (SPEC, io((1, 3, 8, 8), dtype="uint8"), "needs a float32 model input"),
        (replace(SPEC, top_k=4), io((1, 3, 8, 8)), "--top-k 4 is more than the model's 3 classes"),
        (replace(SPEC, resize=4), io((1, 3, 8, 8)), "--resize 4 is smaller than the model's 8x8 input"),
        (SPEC, io((1, 3, 8, 8), out=(1, "classes")), "needs a 1xCLASSES output"),
        (TaskSpec("image", top_k=2), io((1, 3, 8, 8), out=(1, 3, 4)), "--top-k needs a 1xCLASSES output"),
        (TaskSpec("audio", sample_rate=8000), io((1, 1, 100)), "--task audio needs a 1xSAMPLES input"),
        # an audio classifier: one label per class, one [1, classes] output
        (TaskSpec("audio", ("yes", "no"), sample_rate=8000), io((1, 100), out=(1, 3)), "--labels has 2 labels but the model has 3 classes"),
        (TaskSpec("audio", ("yes", "no"), sample_rate=8000), io((1, 100), out=(1, 2, 5)), "--task audio with --labels needs a 1xCLASSES output"),
        # a softmax over one class is always 1; and one class is "1 class"
        (TaskSpec("image", softmax=True), io((1, 3, 8, 8), out=(1, 1)), "--softmax over one class: output 'y' is 1x1, and a softmax over one class is always 1"),
        (replace(SPEC, labels=("a",)), io((1, 3, 8, 8), out=(1, 4)), "--labels has 1 label but the model has 4 classes"),
        (TaskSpec("image", top_k=2), io((1, 3, 8, 8), out=(1, 1)), "--top-k 2 is more than the model's 1 class"),
    ],
)
def test_resolve_errors(spec: TaskSpec, model_io: IOSpec, needle: str) -> None:
    with pytest.raises(UsageError) as e:
        resolve(spec, model_io)
    assert needle in e.value.message and "\n" not in e.value.message
