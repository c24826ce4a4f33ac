"""Why a provider declares a graph pass is the provider's data (``ExecutionProvider.fix_reasons``), not the
pass's: every built-in provider gives a reason, citing ONNX Runtime's sources, for each pass it declares;
the registry lists them per pass; and the pass and coverage modules name no provider."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mobilegen import providers
from mobilegen.passes import registry
from mobilegen.providers import ExecutionProvider

ROOT = Path(__file__).resolve().parents[3]
# A reason cites where it was read: an ORT source file, a PR, or a rule id of the provider's table.
CITES = re.compile(r"\.(cc|h|md)\b|PR #\d+|\brule \w+\.\w+")


@pytest.mark.parametrize("name", list(providers.BUILTIN))
def test_each_declared_pass_has_one_reason_citing_a_source(name: str) -> None:
    provider = providers.get(name)
    named = [n for n, _ in provider.fix_reasons]
    assert len(named) == len(set(named)), f"{name}: a pass has two reasons"
    assert set(named) == set(provider.fixes), f"{name}: reasons for {sorted(set(named) ^ set(provider.fixes))} disagree with fixes"
    for pass_name in provider.fixes:
        assert registry.is_known(pass_name), f"{name} declares '{pass_name}', which mobilegen does not know"
        why = provider.fix_reason(pass_name)
        assert CITES.search(why), f"{name}/{pass_name}: the reason cites no source: {why!r}"


def test_reasons_name_the_declaring_providers_in_registry_order() -> None:
    declaring = [p for p in providers.all_providers() if "pad" in p.fixes]
    assert len(declaring) >= 2  # the built-ins: more than one provider wants Pad rewritten
    got = registry.reasons("pad")
    assert [who for who, _ in got] == [p.display_name for p in declaring]
    assert all(why == p.fix_reason("pad") and why for (_, why), p in zip(got, declaring, strict=True))
    first = declaring[0]
    # only the asked providers; a repeated one once; a provider not declaring the pass gives nothing
    assert registry.reasons("pad", [first.name, first.name]) == ((first.display_name, first.fix_reason("pad")),)
    undeclaring = next(p for p in providers.all_providers() if "pad" not in p.fixes)
    assert registry.reasons("pad", [undeclaring.name]) == ()
    assert registry.reasons("no-such-pass") == ()


def test_a_plugin_declaring_a_pass_without_a_reason_gives_an_empty_one() -> None:
    plugin = ExecutionProvider(
        name="reasonless_ep",
        display_name="Reasonless",
        platform="android",
        fixes=("pad", "sum-add"),
        fix_reasons=(("sum-add", "no Sum builder (sum_op_builder.cc)"),),
    )
    providers.register(plugin)
    try:
        assert dict(registry.reasons("pad", ["reasonless_ep"])) == {"Reasonless": ""}
        assert dict(registry.reasons("sum-add", ["reasonless_ep"])) == {"Reasonless": "no Sum builder (sum_op_builder.cc)"}
        assert ("Reasonless", "") in registry.reasons("pad")  # the registered plug-in is among every provider's
    finally:
        providers.unregister("reasonless_ep")


def _provider_words() -> re.Pattern[str]:
    words = {w.lower() for p in (providers.get(n) for n in providers.BUILTIN) for w in (p.name, p.display_name)}
    return re.compile("|".join(sorted(map(re.escape, words), key=len, reverse=True)), re.IGNORECASE)


@pytest.mark.parametrize("package", ["mobilegen/passes", "mobilegen/coverage"])
def test_the_machinery_names_no_provider(package: str) -> None:
    """The passes say what they rewrite and the coverage analysis asks the provider hooks: a provider's
    name in them (code, comment or docstring) is knowledge that belongs in ``mobilegen/providers/<name>/``."""
    words = _provider_words()
    found = [
        f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if words.search(line)
    ]
    assert not found, "provider names outside their packages:\n" + "\n".join(found)


def test_the_name_check_finds_a_provider_name() -> None:
    words = _provider_words()
    for p in (providers.get(n) for n in providers.BUILTIN):
        assert words.search(f"x = 1  # helps {p.display_name}") and words.search(f'EPTarget("{p.name}")')
    assert not words.search("pad = Concat(block, x, block)")
