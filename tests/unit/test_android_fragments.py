"""The Android target names no execution provider: each provider's part of the generated project is its
own template fragments (templates/providers/<name>/android/<piece>.kt.jinja, included for every provider
that has the piece) and its template data (the Kotlin names its fragments declare).

A throwaway provider registered with a fragment folder of its own shows what adding one takes: its
Options field, its helper and its README example land in the generated project in registry or chain
order, and the names its fragments declare are reserved, with no file of the Android target edited."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from android_specs import make_specs

from mobilegen import providers
from mobilegen.providers import ExecutionProvider, TargetFlag
from mobilegen.render.tree import templates_root
from mobilegen.targets import provider_setup
from mobilegen.targets.android import project as android
from mobilegen.targets.android.options import AndroidOptions

REPO = Path(__file__).resolve().parents[2]


def _provider_words() -> set[str]:
    return {w.lower() for p in providers.all_providers() for w in (p.name, p.display_name)}


def test_the_android_target_names_no_provider() -> None:
    words = _provider_words()
    assert {"nnapi", "qnn", "xnnpack"} <= words
    pattern = re.compile("|".join(sorted(words, key=len, reverse=True)), re.IGNORECASE)
    files = [
        *(p for p in (templates_root() / "android").rglob("*") if p.is_file()),
        *(REPO / "mobilegen" / "targets" / "android").glob("*.py"),
        REPO / "mobilegen" / "targets" / "provider_setup.py",
    ]
    assert len(files) > 30
    named = {str(f.relative_to(REPO)): sorted({m.lower() for m in pattern.findall(f.read_text(encoding="utf-8", errors="replace"))}) for f in files}
    assert {f: n for f, n in named.items() if n} == {}


def test_pieces_list_each_providers_fragment_in_registry_and_chain_order() -> None:
    pieces = provider_setup.pieces("android")
    chain = provider_setup.pieces("android", chain=True)
    # NNAPI and QNN both add Options fields and helpers: registry order puts NNAPI first, chain order QNN (rank 10)
    assert [p.split("/")[1] for p in pieces["wrapper_options.kt"]] == ["nnapi", "xnnpack", "qnn"]
    assert [p.split("/")[1] for p in chain["wrapper_helpers.kt"]] == ["qnn", "nnapi"]
    assert pieces["no_such_piece.kt"] == []
    for paths in pieces.values():
        for p in paths:
            _, name, platform, file = p.split("/")
            assert platform == "android" and (templates_root() / "providers" / name / platform / file).is_file()


class _Toy(ExecutionProvider):
    def template_data(self, target: str) -> Mapping[str, Any]:
        return {"kotlin_members": ("toyHelper",), "kotlin_constants": ("TOY_LEVEL",)} if target == "android" else {}


@pytest.fixture
def toy(tmp_path: Path) -> Iterator[ExecutionProvider]:
    frag = tmp_path / "toy_fragments" / "android"
    frag.mkdir(parents=True)
    (frag / "wrapper_options.kt.jinja").write_text(
        '        /** ToyAccel first (the toy runtime). */\n        val useToyaccel: Boolean = {{ "true" if toyaccel else "false" }},\n'
    )
    (frag / "wrapper_helpers.kt.jinja").write_text('        private fun toyHelper(): String = "toy"\n\n')
    (frag / "readme_doc_failure.md.jinja").write_text("a ToyAccel hiccup")
    provider = _Toy(
        name="toyaccel",
        display_name="ToyAccel",
        platform="android",
        rank=15,  # after QNN (10), before NNAPI (20)
        fragments=str(tmp_path / "toy_fragments"),
        target_flags=(TargetFlag("toyaccel", "--toyaccel", False, "Set up ToyAccel."),),
    )
    providers.register(provider)
    try:
        yield provider
    finally:
        providers.unregister("toyaccel")


def test_a_new_providers_fragments_and_names_reach_the_project(toy: ExecutionProvider, tmp_path: Path) -> None:
    spec, opts = make_specs(tmp_path / "in")["android_cnn"]
    out = tmp_path / "out"
    android.render_android(spec, AndroidOptions(package=opts.package, toyaccel=True), out)
    wrapper = next(p for p in out.rglob("*.kt") if p.read_text().count("data class Options(") == 1).read_text()
    options = wrapper[wrapper.index("data class Options(") : wrapper.index("val disableCpuFallback")]
    # registry order: after the built-ins' fields; on, as the options asked
    assert options.index("val useQnn") < options.index("val useToyaccel: Boolean = true,")
    # chain order: QNN's helpers, then the toy's, then NNAPI's
    assert wrapper.index("private fun qnnProviderOptions") < wrapper.index('private fun toyHelper(): String = "toy"') < wrapper.index("private fun nnapiFlags")
    readme = (out / "README.md").read_text()
    assert "(a broken NNAPI driver, a QNN graph that does not finalise, a ToyAccel hiccup)" in readme
    assert "accelerated: ToyAccel" in wrapper
    assert "toyHelper" in android.reserved_members() and "TOY_LEVEL" in android.fixed_constants()
    # off by default: the flag's default, read through the options
    assert AndroidOptions().toyaccel is False and AndroidOptions(toyaccel=True).provider_options == {"toyaccel": True}


def test_a_tensor_named_like_a_providers_member_is_renamed(toy: ExecutionProvider, tmp_path: Path) -> None:
    from dataclasses import replace

    from mobilegen.spec import IOSpec, TensorSpec

    spec, opts = make_specs(tmp_path / "in")["android_cnn"]
    io = IOSpec((TensorSpec("toyHelper", "float32", (1, 4)),), (TensorSpec("qnnContextFile", "float32", (1, 2)),))
    ctx = android.android_context(replace(spec, io=io), opts)
    assert ctx["inputs"][0]["prop"] != "toyHelper" and ctx["outputs"][0]["prop"] != "qnnContextFile"


def test_every_android_fragment_is_included_by_a_generic_template() -> None:
    # a piece no Android template asks for would be dead text in the provider's folder (a typo in its name)
    text = "".join(
        p.read_text(encoding="utf-8")
        for root in (templates_root() / "android", templates_root() / "backends")
        for p in root.rglob("*.jinja")
    )
    asked = set(re.findall(r'pieces\["([^"]+)"\]', text)) | set(re.findall(r'/android/([\w.]+)\.jinja"', text))
    found = {f.name[: -len(".jinja")] for f in (templates_root() / "providers").glob("*/android/*.jinja")}
    assert len(found) > 40
    assert found - asked == set()
