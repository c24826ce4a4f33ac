"""The build commands come from the target registry: a target added with ``targets.register`` gets
``mobilegen <name>`` with the common build flags and ``package --<name>``, and loses both when it is
unregistered. The built-in targets' commands are made the same way (their help is checked byte for byte
by the docs tests: docs/cli.md is generated from it)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import onnx
import pytest
from bench_helpers import small_model
from cli_helpers import assert_fails, invoke

from mobilegen import targets
from mobilegen.targets import BuildContext, Target, TargetCommand

if TYPE_CHECKING:
    from mobilegen.artifacts import JSONValue, ProjectSpec
    from mobilegen.coverage.target import EPTarget
    from mobilegen.runtimes import RuntimeRelease
    from mobilegen.spec import IOSpec

NAME = "toy-box"  # a dash, as react-native: the flag is --toy-box, the keyword include_toy_box


@dataclass(frozen=True)
class ToyOptions:
    class_name: str | None = None
    ort_version: str | None = None


class ToyTarget(Target[ToyOptions]):
    """A throwaway platform: its project is one file naming the wrapper class and the model."""

    name = NAME
    display_name = "Toy"
    folder = f"{NAME}-project"  # not the name: the package finds each target's folder by Target.folder
    channel = "npm"  # any pinned channel: it borrows the Web package's runtime
    tolerance_key = "toy"
    task_api = False
    command = TargetCommand(
        summary="Build a toy folder (one file naming the wrapper class and the model).",
        include="Include the toy folder.",
        options=ToyOptions,
    )

    def validate(self, opts: ToyOptions) -> None:
        pass

    def runtime(self, opts: ToyOptions) -> RuntimeRelease:
        from mobilegen.runtimes import find_release

        return find_release(opts.ort_version, self.channel)

    def check_io(self, io: IOSpec) -> None:
        pass

    def providers(self, opts: ToyOptions, ctx: BuildContext) -> list[EPTarget]:
        return []

    def render(self, spec: ProjectSpec, opts: ToyOptions, dest: Path) -> None:
        dest.mkdir(parents=True)
        (dest / "toy.json").write_text(json.dumps({"class": opts.class_name, "model": Path(spec.model_file).name}), encoding="utf-8")

    def model_pin(self, spec: ProjectSpec, opts: ToyOptions) -> str:
        return ""

    def device_tolerances(self, spec: ProjectSpec, opts: ToyOptions) -> tuple[float, float]:
        return spec.atol, spec.rtol

    def options_record(self, opts: ToyOptions) -> Mapping[str, JSONValue]:
        return {"name": opts.class_name}


@pytest.fixture
def toy() -> Iterator[ToyTarget]:
    target = ToyTarget()
    targets.register(target)
    try:
        yield target
    finally:
        targets.unregister(NAME)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "small.onnx"
    onnx.save(small_model(), path)
    return path


def _flags(help_text: str) -> set[str]:
    return {word.rstrip(",") for line in help_text.split("Options:", 1)[1].splitlines() for word in line.split()[:2] if word.startswith("-")}


def test_a_registered_target_is_listed_with_the_common_build_flags(toy: ToyTarget) -> None:
    listing = " ".join(invoke("--help").stdout.split())
    assert f"{NAME} " in listing and "Build a toy folder (one file naming the wrapper class and the model)" in listing
    own = _flags(invoke(NAME, "--help").stdout)
    android = _flags(invoke("android", "--help").stdout)
    # every flag the Android command shares with a target taking no options of its own, and no Android one
    common = {"--input", "--opset", "--output-name", "--quantize", "--calibration", "--atol", "--sample", "--task", "--labels",
              "--optimization-style", "--trust-pickle", "--zip", "--force", "--json", "--debug", "--name", "--ort-version", "-o"}  # fmt: skip
    assert common <= own and common <= android
    assert not own & {"--package", "--maven-group", "--keep-dynamic", "--runtime", "--tokenizer", "--nnapi"}
    assert "--toy-box" in _flags(invoke("package", "--help").stdout)


def test_a_registered_target_builds_through_its_command(toy: ToyTarget, model: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = invoke(NAME, model, "-o", out, "--name", "Boxed", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["targets"] == [NAME]
    assert json.loads((out / ToyTarget.folder / "toy.json").read_text(encoding="utf-8"))["class"] == "Boxed"
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["options"][NAME]["name"] == "Boxed"


def test_package_takes_a_registered_target_as_a_flag(toy: ToyTarget, model: Path, tmp_path: Path) -> None:
    assert_fails(invoke("package", model), 2, "package needs a target", "--react-native and/or --toy-box")
    # Android-only flags still need --android
    assert_fails(invoke("package", model, f"--{NAME}", "--maven-group", "com.x", "-o", tmp_path / "p"), 2, "--maven-group")
    result = invoke("package", model, f"--{NAME}", "--name", "Packed", "-o", tmp_path / "p")
    assert result.exit_code == 0, result.stderr
    assert json.loads((tmp_path / "p" / ToyTarget.folder / "toy.json").read_text(encoding="utf-8"))["class"] == "Packed"


def test_an_unregistered_target_has_no_command(model: Path) -> None:
    target = targets.register(ToyTarget())
    assert NAME in invoke("--help").stdout
    targets.unregister(target.name)
    assert NAME not in invoke("--help").stdout
    assert_fails(invoke(NAME, model), 2, "no such command")
    assert "--toy-box" not in invoke("package", "--help").stdout


def test_a_target_without_a_command_gets_none(model: Path) -> None:
    class Silent(ToyTarget):
        name = "silent"
        command = None

    targets.register(Silent())
    try:
        assert "silent" not in invoke("--help").stdout
        assert "--silent" not in invoke("package", "--help").stdout
    finally:
        targets.unregister("silent")
