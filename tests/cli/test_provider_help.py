"""The help of the generic flags that depends on the providers comes from the provider registry: a provider
registered from this file appears in the help of ``--keep-dynamic``, ``--no-fix``, ``convert
--optimization-style``, ``check``/``fix --ep`` and gets its target flags on its platform's build commands,
while no file of ``mobilegen/cli`` names a provider."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import invoke

from mobilegen import providers
from mobilegen.providers import ExecutionProvider, Setting, TargetFlag

NAME = "toyaccel"
ROOT = Path(__file__).resolve().parents[2]

TOY = ExecutionProvider(
    name=NAME,
    display_name="ToyAccel",
    platform="android",
    settings=(Setting("toy_level", 3, "ToyAccel level", flag="--toy-level", minimum=1, maximum=5),),
    target_flags=(
        TargetFlag(NAME, "--toyaccel", False, "Set up the ToyAccel EP with CPU fallback."),
        TargetFlag("toy_level", "--toy-level", None, "short help", kind=int, metavar="N", help_from_setting=True),
    ),
    keep_dynamic_cost="ToyAccel then runs nothing dynamic",
    fixed_style=False,
)


@pytest.fixture
def toy() -> Iterator[ExecutionProvider]:
    providers.register(TOY)
    try:
        yield TOY
    finally:
        providers.unregister(NAME)


def _help(*command: str) -> str:
    """The help without its whitespace: Click wraps it at 120 columns, hyphens included."""
    return "".join(invoke(*command, "--help").stdout.split())


def _text(sentence: str) -> str:
    return "".join(sentence.split())


def test_generic_flags_name_a_registered_provider(toy: ExecutionProvider) -> None:
    android = _help("android")
    assert _text("With --nnapi or --toyaccel, keep dynamic dims (NNAPI then takes no node with a symbolic dim; ToyAccel then runs nothing dynamic).") in android
    assert _text("(fixed dims for NNAPI and ToyAccel still follow --keep-dynamic)") in android
    assert _text("--toyaccel Set up the ToyAccel EP with CPU fallback.") in android
    assert _text("--toy-level N ToyAccel level (1..5; default 3).") in android  # the setting's help, not "short help"
    assert _text("--toyaccel") not in _help("ios")  # an Android provider
    assert _text("Keep dynamic dims (NNAPI then takes no node with a symbolic dim; ToyAccel then runs nothing dynamic).") in _help("fix")
    assert _text("runtime (default: what NNAPI/CoreML/ToyAccel can take)") in _help("convert")
    assert _text(f"Execution provider: nnapi, coreml, xnnpack, qnn, webgpu, {NAME}. Repeatable.") in _help("check")


def test_without_it_the_help_is_as_before() -> None:
    android = _help("android")
    assert _text("With --nnapi, keep dynamic dims (NNAPI then takes no node with a symbolic dim).") in android
    assert NAME not in android and _text("short help") not in android


def test_no_cli_module_names_a_provider() -> None:
    names = [p for p in providers.BUILTIN]
    found = subprocess.run(
        ["git", "grep", "-liE", "|".join(names), "--", "mobilegen/cli"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert found.returncode in (0, 1), found.stderr
    assert found.stdout.split() == []
