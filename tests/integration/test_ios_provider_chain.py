"""The generated Swift wrapper's provider chain at session creation (issue 26 item 4), checked on its syntax tree.

There is no Swift toolchain here (tests/integration/test_ios_swift.py), so the chain is checked structurally
with tree-sitter-swift on rendered wrappers (CoreML + XNNPACK, CoreML alone, XNNPACK alone):

* every session is created at one place, ``ORTSession(env:modelPath:sessionOptions:)`` inside a loop;
* a failed session creation gives up the first provider of the link (``chain.removeFirst()``), records the
  reason, and goes round again; the only ``throw`` of that ``catch`` is the CPU-alone case
  (``guard let … = chain.first else { throw … }``);
* a provider that cannot be appended is recorded with its reason and left out; the loop goes on;
* ``skippedProviders: [String]`` is public, built from those reasons, and the README documents it.

Before this change the wrapper created a CPU+XNNPACK session in a second ``ORTSession`` call whose failure
threw, so an XNNPACK failure left the app without a model: these checks fail on that template.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from ios_specs import make_specs
from ts_parsers import parser

from mobilegen.targets.ios.project import IosOptions, render_ios

if TYPE_CHECKING:
    from tree_sitter import Node

pytestmark = pytest.mark.slow

PARSER = parser("swift")

CONFIGS = {
    "coreml_xnnpack": {"coreml": True, "xnnpack": True},
    "coreml": {"coreml": True},
    "xnnpack": {"coreml": False, "xnnpack": True},
}


def _walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children:
        yield from _walk(child)


def _text(node: Node) -> str:
    return (node.text or b"").decode()


def _ancestors(node: Node) -> Iterator[Node]:
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def _calls(root: Node, callee: str) -> list[Node]:
    return [n for n in _walk(root) if n.type == "call_expression" and _text(n.children[0]) == callee]


def _throws(node: Node) -> list[Node]:
    return [n for n in _walk(node) if n.type == "control_transfer_statement" and _text(n).startswith("throw")]


def _enclosing_do(node: Node) -> Node:
    """The ``do`` statement whose body (not its ``catch``) holds ``node``."""
    child = node
    for parent in _ancestors(node):
        if parent.type == "do_statement" and child.type != "catch_block":
            return parent
        child = parent
    raise AssertionError(f"{_text(node)[:60]!r} is not inside a do/catch")


def _catch(do: Node) -> Node:
    blocks = [c for c in do.children if c.type == "catch_block"]
    assert len(blocks) == 1, _text(do)[:80]
    return blocks[0]


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def wrapper(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Node, Path]:
    root = tmp_path_factory.mktemp(f"ios_chain_{request.param}")
    spec, _ = make_specs(root / "inputs")["ios_cnn"]
    out = root / "out"
    render_ios(spec, IosOptions(**CONFIGS[request.param]), out)  # type: ignore[arg-type]
    source = next(out.rglob("Sources/*/TinyCnn.swift")).read_bytes()
    tree = PARSER.parse(source)
    assert not tree.root_node.has_error
    return tree.root_node, out


def test_every_session_is_created_by_the_chain_loop(wrapper: tuple[Node, Path]) -> None:
    root, _ = wrapper
    creations = _calls(root, "ORTSession")
    assert len(creations) == 1, [_text(c)[:60] for c in creations]
    loops = [a for a in _ancestors(creations[0]) if a.type in ("while_statement", "repeat_while_statement", "for_statement")]
    assert loops, "the session is created once, not in a loop over the provider chain"


def test_a_failed_session_creation_gives_up_the_first_provider_and_goes_on(wrapper: tuple[Node, Path]) -> None:
    root, _ = wrapper
    catch = _catch(_enclosing_do(_calls(root, "ORTSession")[0]))
    assert _calls(catch, "chain.removeFirst"), "the failing link's first provider is not given up"
    assert any("session creation with" in _text(c) for c in _calls(catch, "skipped.append")), "no reason recorded"
    for throw in _throws(catch):
        guards = [a for a in _ancestors(throw) if a.type == "guard_statement" and a.start_byte >= catch.start_byte]
        assert guards and "= chain.first else" in _text(guards[0]).replace("\n", " "), (
            f"the catch throws while providers are left to try: {_text(throw)[:80]!r}"
        )


def test_a_provider_that_cannot_be_appended_is_skipped_with_the_reason(wrapper: tuple[Node, Path]) -> None:
    root, _ = wrapper
    appends = [
        n
        for n in _walk(root)
        if n.type == "call_expression"
        and _text(n.children[0]).split(".")[-1] in ("appendCoreMLExecutionProvider", "appendXnnpackExecutionProvider")
    ]
    assert appends
    functions = {
        _text(next(c for c in f.children if c.type == "simple_identifier"))
        for a in appends
        for f in _ancestors(a)
        if f.type == "function_declaration"
    }
    assert functions == {"appendProvider"}, functions
    callers = _calls(root, "appendProvider")
    assert callers
    for call in callers:
        catch = _catch(_enclosing_do(call))
        assert not _throws(catch), _text(catch)[:80]
        assert any("failed to initialise" in _text(c) for c in _calls(catch, "skipped.append")), _text(catch)[:120]


def test_skipped_providers_are_public_and_documented(wrapper: tuple[Node, Path]) -> None:
    root, out = wrapper
    props = [n for n in _walk(root) if n.type == "property_declaration" and "skippedProviders" in _text(n)]
    assert len(props) == 1 and _text(props[0]).split() == ["public", "let", "skippedProviders:", "[String]"], [
        _text(p) for p in props
    ]
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "skippedProviders" in readme and "CPU provider alone" in readme
