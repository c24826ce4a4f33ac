"""The package's import structure: no import cycles, and no import from a lower layer up into a higher one.

Read from the source (AST), so it counts every ``import``/``from ... import`` of a mobilegen module,
at the top of a file and inside functions alike. Imports under ``if TYPE_CHECKING:`` never run; the
layer and cycle tests leave them out, and two more tests count them too: a type named across layers is
design coupling even when no import runs (the stage functions' signatures still name ``BuildOptions``,
:data:`KNOWN_TYPE_CHECKING_UP` lists those edges with the reason each is left).

The layers, top to bottom, are data (:data:`LAYERS`); a module belongs to the layer of its longest
listed prefix. A module may import its own layer and any layer below it.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Collection
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "mobilegen"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # ``mobilegen`` itself: the lazy public API over the pipeline (it imports nothing when loaded; its
    # type declarations name the pipeline's options and functions)
    ("cli and the public API", ("mobilegen", "mobilegen.__main__", "mobilegen.cli")),
    ("pipeline", ("mobilegen.pipeline", "mobilegen.commands", "mobilegen.options", "mobilegen.bench")),
    (
        "stages",
        (
            "mobilegen.load",
            "mobilegen.export",
            "mobilegen.tasks",
            "mobilegen.passes.stage",  # the fix stage; the passes themselves are below (providers preprocess with them)
            "mobilegen.convert",
            "mobilegen.verify",
            "mobilegen.quantize",
            "mobilegen.coverage.stage",
            "mobilegen.render.stage",
            "mobilegen.report",
            "mobilegen.package",
            "mobilegen.backends.stage",  # the --runtime stage: converts, int8 through the quantize stage's accuracy gate
            "mobilegen.backends.coreai",  # Core AI: its int8 goes through the same accuracy gate (its stage module)
        ),
    ),
    (
        "providers and targets",
        (
            "mobilegen.providers",
            "mobilegen.targets",
            "mobilegen.android_qnn",
            "mobilegen.runtimes",
            "mobilegen.backends",  # the --runtime registry: each runtime's converter, host runner and template fragment
            "mobilegen.coverage",  # the provider-independent analysis the providers' rules are written in
            "mobilegen.render",  # the template renderer and the escapers the targets render with
            "mobilegen.passes",  # the graph passes: the fix stage applies them, providers' recipes preprocess with them
            "mobilegen.notices",
        ),
    ),
    # plain data every layer reads: the stage objects, IO and task specs, errors, the version, helpers
    (
        "artifacts, spec, errors",
        (
            "mobilegen.artifacts",
            "mobilegen.spec",
            "mobilegen.tasks.spec",
            "mobilegen.errors",
            "mobilegen.infra",
            "mobilegen.version",
            "mobilegen.verify.golden",  # the golden-vector files' format (.mgv/.npz): data, read by runtimes and targets
        ),
    ),
]

# Cycles known today, each with the reason it is still here. A cycle not listed fails the test.
KNOWN_CYCLES: dict[frozenset[str], str] = {}


def module_names(root: Path) -> dict[str, Path]:
    out = {}
    for p in root.rglob("*.py"):
        parts = p.relative_to(root.parent).with_suffix("").parts
        out[".".join(parts[:-1] if p.name == "__init__.py" else parts)] = p
    return out


def imports_of(mod: str, is_package: bool, source: str, mods: Collection[str], *, type_checking: bool = False) -> dict[str, int]:
    """The mobilegen modules one module's source imports -> the line of the first such import
    (``type_checking``: also those under ``if TYPE_CHECKING:``)."""
    package = mod if is_package else mod.rpartition(".")[0]

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    found: dict[str, int] = {}

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(ast.Module(body=child.body if type_checking else child.orelse, type_ignores=[]))
                if type_checking:
                    visit(ast.Module(body=child.orelse, type_ignores=[]))
                continue
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    base = ".".join([*up, *([base] if base else [])])
                names = [f"{base}.{a.name}" for a in child.names]  # a module, or a name in one
            for name in names:
                target = resolve(name) if name.split(".")[0] == "mobilegen" else None
                if target is not None and target != mod:
                    found.setdefault(target, child.lineno)
            visit(child)

    visit(ast.parse(source))
    return found


@functools.cache
def import_graph(type_checking: bool = False) -> dict[str, dict[str, int]]:
    """module -> {imported module: line}, for the package as it is (``type_checking``: counting the imports
    under ``if TYPE_CHECKING:``)."""
    mods = module_names(ROOT)
    return {
        m: imports_of(m, p.name == "__init__.py", p.read_text(encoding="utf-8"), mods, type_checking=type_checking)
        for m, p in mods.items()
    }


def layer_of(mod: str) -> int:
    best, layer = -1, -1
    for i, (_name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (mod == prefix or mod.startswith(prefix + ".")) and len(prefix) > best:
                best, layer = len(prefix), i
    return layer


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            strongconnect(v)
    return out


def describe_cycle(graph: dict[str, dict[str, int]], comp: list[str]) -> str:
    members = set(comp)
    edges = [f"{a} -> {b} (line {line})" for a in comp for b, line in sorted(graph.get(a, {}).items()) if b in members]
    return f"cycle of {len(comp)} modules:\n    " + "\n    ".join(edges)


def upward_edges(graph: dict[str, dict[str, int]]) -> list[str]:
    out = []
    for a, targets in sorted(graph.items()):
        for b, line in sorted(targets.items()):
            if layer_of(b) < layer_of(a):
                out.append(f"{a} (layer {LAYERS[layer_of(a)][0]!r}) imports {b} (layer {LAYERS[layer_of(b)][0]!r}), line {line}")
    return out


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(m for m in module_names(ROOT) if layer_of(m) < 0)
    assert not unplaced, f"modules in no layer of LAYERS: {unplaced}"


def test_no_import_cycles() -> None:
    graph = import_graph()
    new = [describe_cycle(graph, c) for c in cycles(graph) if frozenset(c) not in KNOWN_CYCLES]
    assert not new, "import cycles:\n" + "\n".join(new)


def test_no_import_points_up_a_layer() -> None:
    up = upward_edges(import_graph())
    assert not up, "imports from a lower layer into a higher one:\n  " + "\n  ".join(up)


@pytest.mark.parametrize(
    ("importer", "line", "problem"),
    [
        ("mobilegen.errors", "from mobilegen.pipeline import build\n", "upward"),  # base -> pipeline
        ("mobilegen.load.loader", "def _f() -> None:\n    from mobilegen.verify.stage import reference\n", "cycle"),
    ],
)
def test_the_checks_catch_a_bad_import(importer: str, line: str, problem: str) -> None:
    """The same checks on the package with one bad import added to one module's source: they report it."""
    mods = module_names(ROOT)
    path = mods[importer]
    graph = dict(import_graph())
    graph[importer] = imports_of(importer, path.name == "__init__.py", path.read_text(encoding="utf-8") + "\n\n" + line, mods)
    if problem == "upward":
        assert any(e.startswith("mobilegen.errors ") and "mobilegen.pipeline" in e for e in upward_edges(graph))
        assert not any(e.startswith("mobilegen.errors ") for e in upward_edges(import_graph()))
    else:
        new = [c for c in cycles(graph) if frozenset(c) not in KNOWN_CYCLES]
        assert any({"mobilegen.load.loader", "mobilegen.verify.stage"} <= set(c) for c in new), describe_cycle(graph, new[0]) if new else "none"
        assert not [c for c in cycles(import_graph()) if frozenset(c) not in KNOWN_CYCLES]


# Cycles that only the TYPE_CHECKING imports close, each with the reason it is still here.
KNOWN_TYPE_CHECKING_CYCLES: dict[frozenset[str], str] = {
    frozenset(
        {
            "mobilegen.providers",
            "mobilegen.providers.base",
            "mobilegen.providers.quantization",
            "mobilegen.coverage.partition",
            "mobilegen.coverage.rules",
            "mobilegen.coverage.target",
        }
    ): "the plug-in contract: ExecutionProvider's hooks take the analysis' Support, EPTable and EPTarget, whose "
    "modules read Reason and the registry at run time; breaking it needs Protocols for those three (as WhatIf has)",
}

# Imports under TYPE_CHECKING from a lower layer into a higher one, each with the reason it is still here.
_STAGES_TAKE_BUILD_OPTIONS = (
    "the stage function takes the whole BuildOptions; each stage taking options of its own (as the quantizer's "
    "QuantizeOptions) removes it"
)
KNOWN_TYPE_CHECKING_UP: dict[tuple[str, str], str] = {
    **{
        (stage, "mobilegen.options"): _STAGES_TAKE_BUILD_OPTIONS
        for stage in (
            "mobilegen.backends.stage",
            "mobilegen.export.advice",
            "mobilegen.export.stage",
            "mobilegen.package.options",
            "mobilegen.passes.stage",
            "mobilegen.quantize.stage",
            "mobilegen.render.stage",
            "mobilegen.targets.chosen",
            "mobilegen.tasks.stage",
        )
    },
    ("mobilegen.artifacts", "mobilegen.coverage.model"): "ProjectSpec and BuildResult carry CoverageReport, "
    "defined with the analysis; it belongs with the other stage objects (it reads only Reason)",
    ("mobilegen.artifacts", "mobilegen.quantize.records"): "ShippedModel carries the QuantizationRecord, plain data "
    "whose option helpers read the quantizer's QuantizeOptions",
}


def test_no_import_cycles_counting_type_checking() -> None:
    graph = import_graph(type_checking=True)
    known = KNOWN_CYCLES.keys() | KNOWN_TYPE_CHECKING_CYCLES.keys()
    new = [describe_cycle(graph, c) for c in cycles(graph) if frozenset(c) not in known]
    assert not new, "import cycles, counting TYPE_CHECKING imports:\n" + "\n".join(new)
    gone = [sorted(c) for c in KNOWN_TYPE_CHECKING_CYCLES if c not in {frozenset(x) for x in cycles(graph)}]
    assert not gone, f"known cycles no longer there (drop them from KNOWN_TYPE_CHECKING_CYCLES): {gone}"


def test_type_checking_imports_point_up_only_where_known() -> None:
    graph = import_graph(type_checking=True)
    up = [(a, b) for a, targets in sorted(graph.items()) for b in sorted(targets) if layer_of(b) < layer_of(a)]
    new = [f"{a} imports {b} (line {graph[a][b]})" for a, b in up if (a, b) not in KNOWN_TYPE_CHECKING_UP]
    assert not new, "TYPE_CHECKING imports from a lower layer into a higher one:\n  " + "\n  ".join(new)
    gone = sorted(set(KNOWN_TYPE_CHECKING_UP) - set(up))
    assert not gone, f"known upward imports no longer there (drop them from KNOWN_TYPE_CHECKING_UP): {gone}"
