"""The task API files of the Web and React Native packages (issue 30), rendered from the task projects of
tests/task_specs.py (hostile labels, real task golden files; no model runs, no npm): which files each task
gets, labels shipped as data and never in code, and the --state stream helper. The packages
themselves are compiled and run in tests/integration/test_js_tasks.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from task_specs import HOSTILE_LABELS, task_specs

from mobilegen import targets
from mobilegen.render.task_wrappers import labels_text
from mobilegen.targets.jsshared import JsOptions

RENDERED = ("cls_topk", "cls_all", "image", "audio", "audio_window", "audio_stream")


@pytest.fixture(scope="module")
def specs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    return task_specs(tmp_path_factory.mktemp("task_specs"))  # type: ignore[return-value]


def _render(target: str, spec: object, dest: Path) -> Path:
    # the Web package ships the .onnx (any file here); the runtime pin comes from the target channel
    spec = replace(spec, onnx_file=spec.model_file, ort_version=None)  # type: ignore[type-var, attr-defined]
    targets.get(target).render(spec, JsOptions(class_name="Tiny"), dest)
    return dest


@pytest.mark.parametrize("target", ["web", "react-native"])
@pytest.mark.parametrize("name", RENDERED)
def test_task_files_and_labels_as_data(target: str, name: str, specs: dict[str, object], tmp_path: Path) -> None:
    spec = specs[name]
    pkg = _render(target, spec, tmp_path / "pkg")
    task = spec.task  # type: ignore[attr-defined]
    assets = "model" if target == "web" else "assets"
    src = pkg / "src"
    assert (src / "task.ts").is_file()
    assert (src / "pixels.ts").is_file() == task.is_image
    assert not (src / "tokenizer.ts").exists()
    assert (pkg / "test" / "task-replay.ts").is_file() and (pkg / "test" / "golden" / "task" / "cases.json").is_file()
    assert (pkg / "test" / "task.test.ts").is_file() == (target == "react-native")
    labels = pkg / assets / "labels.txt"
    assert labels.is_file() == task.is_classifier
    if task.is_classifier:
        assert labels.read_bytes() == labels_text(task.labels).encode("utf-8")
    code = "\n".join(p.read_text(encoding="utf-8") for p in pkg.rglob("*.ts"))
    for label in HOSTILE_LABELS:
        if len(label) > 3:
            assert label not in code, label  # labels are data, never code
    text = (src / "task.ts").read_text()
    assert "class TinyTask" in text
    if task.is_image:
        assert f"export const FILTER: ResizeFilter = '{task.resize_filter}';" in text
        assert f"export const CROP_HEIGHT: number = {task.crop[0]};" in text
    if task.kind == "audio":
        assert f"export const WINDOW_SAMPLES: number = {task.window or 0};" in text
    index = (src / "index.ts").read_text()
    assert "export * from './task.ts';" in index


def test_image_sources_per_target(specs: dict[str, object], tmp_path: Path) -> None:
    web = (_render("web", specs["cls_topk"], tmp_path / "web") / "src" / "pixels.ts").read_text()
    rn = (_render("react-native", specs["cls_topk"], tmp_path / "rn") / "src" / "pixels.ts").read_text()
    assert "HTMLImageElement | HTMLCanvasElement | ImageBitmap" in web and "ImageData" in web
    assert "export type ImageSource = RgbaImage;" in rn and "HTMLImageElement" not in rn


def test_every_task_is_accepted_and_state_gets_a_stream(specs: dict[str, object], tmp_path: Path) -> None:
    for name in ("web", "react-native"):
        for other in RENDERED:
            assert targets.get(name).task_refusal(specs[other].task) is None  # type: ignore[attr-defined]
    text = (_render("web", specs["audio_stream"], tmp_path / "web") / "src" / "task.ts").read_text()
    assert "export class TinyStream" in text and "export const STATE_SIZES: readonly number[] = [256];" in text
    assert '[\"state\"]: stateInput(state, 0)' in text or '["state"]: stateInput(state, 0)' in text
    assert 'outputOf(out, "stateN")' in text
    plain = (_render("web", specs["audio"], tmp_path / "plain") / "src" / "task.ts").read_text()
    assert "Stream" not in plain and "STATE_SIZES" not in plain
