"""The Swift of a package rendered with Core AI (``render_ios(..., coreai=...)``) parses, and the Core AI symbols
it uses are exactly the ones on the list taken from Apple's material (tests/data/coreai_swift_symbols.py).

What is checked, on the Swift of the two golden packages and a dynamic-shape package, each with a Core AI model:

* every file parses (tree-sitter-swift: no ERROR or MISSING node);
* the Core AI file's types, initializers (with their labels), methods (with their labels), ``NDArray.ScalarType``
  cases and ``InferenceValue.Descriptor`` cases are the listed ones — nothing invented, and nothing on the list
  left unused (a stale list fails too);
* every Core AI declaration sits inside ``#if canImport(CoreAI)`` behind ``@available(iOS 27.0, macOS 27.0, *)``,
  and the wrapper picks Core AI with ``#available(iOS 27.0, macOS 27.0, *)``, keeping ONNX Runtime otherwise;
* the wrapper's public API (``init(configuration:)``, ``load(configuration:)``, both ``prediction(input:)``,
  ``warmUp()``) is declared as in the ORT-only package, and the ``.aimodel`` folder is a ``.copy`` resource
  whose files are those of the converted folder.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from data import coreai_swift_symbols as facts
from ios_specs import make_specs
from ts_parsers import call_labels, is_subscript, node_text, parser, walk

from mobilegen.artifacts import ProjectSpec
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.targets.ios import project as ios

if TYPE_CHECKING:
    pass

PARSER = parser("swift")  # every test here parses Swift: the module skips without tree-sitter-swift

# Swift standard library / Foundation calls the Core AI file makes (everything else is Core AI or declared in the file).
SWIFT_METHODS = frozenset({"map", "reduce", "allSatisfy", "append", "reserveCapacity", "url"})
SWIFT_INITIALIZERS = frozenset({"Float", "Float16", "Int32", "UInt32", "Int64", "UInt64", "Array", "zip"})
SWIFT_TYPES = frozenset({"Sendable", "String", "Int", "Float", "Float16", "Int32", "Int64", "UInt32", "UInt64", "URL", "Span", "Self", "T", "BitwiseCopyable", "Void"})










def syntax_problems(source: str) -> list[str]:
    tree = PARSER.parse(source.encode())
    return [f"{n.type} at {n.start_point}: {node_text(n)[:60]!r}" for n in walk(tree.root_node) if n.type == "ERROR" or n.is_missing]


def core_ai_symbols(source: str, class_name: str) -> dict[str, set[str]]:
    """The Core AI symbols of the generated ``+CoreAI.swift``: types, initializers, methods, scalar types and
    descriptor cases, spelled as in tests/data/coreai_swift_symbols.py."""
    root = PARSER.parse(source.encode()).root_node
    declared = {node_text(n.child_by_field_name("name")) for n in walk(root) if n.type == "function_declaration"}
    params = {node_text(n.child_by_field_name("name")) for n in walk(root) if n.type == "parameter"}  # a closure parameter called
    out: dict[str, set[str]] = {"types": set(), "initializers": set(), "methods": set(), "scalar_types": set(), "descriptor_cases": set(), "unknown": set()}
    for n in walk(root):
        if n.type == "user_type" and n.parent is not None and n.parent.type != "attribute":
            name = node_text(n).split("<", 1)[0].split(".", 1)[0]
            if name in facts.TYPES:
                out["types"].add(name)
            elif name not in SWIFT_TYPES and not name.startswith(class_name):
                out["unknown"].add(f"type {name}")
        if n.type != "call_expression" or is_subscript(n):
            continue
        callee = n.children[0]
        labels, trailing = call_labels(n)
        signature = "".join(f"{lb}:" for lb in labels) + ("_:" if trailing and not labels else "")
        if callee.type == "simple_identifier":
            name = node_text(callee)
            if name in facts.TYPES:
                out["initializers"].add(f"{name}({signature})")
            elif name not in SWIFT_INITIALIZERS and not name.startswith(class_name) and name not in declared | params:
                out["unknown"].add(f"call {name}({signature})")
        elif callee.type == "navigation_expression":
            suffix = callee.child_by_field_name("suffix")
            method = node_text(suffix.child_by_field_name("suffix") if suffix is not None else None)
            receiver = node_text(callee.children[0])
            if method in declared or method in SWIFT_METHODS or method[:1].isupper() or receiver.startswith(class_name):
                continue  # the file's own functions, Swift's, initializers of nested types, the error enum's cases
            out["methods"].add(f"{method}({signature})")
    out["scalar_types"] = set(re.findall(r"scalarType == \.(\w+)", source)) | set(
        re.findall(r"case \.(float\w*|int\w*|uint\w*|bfloat\w*):", source)
    )
    out["descriptor_cases"] = set(re.findall(r"case \.(\w+)\(let ", source))
    return out


def _dynamic_text_spec(tmp: Path) -> ProjectSpec:
    spec, _ = make_specs(tmp)["ios_two_input"]
    return ProjectSpec(
        model_name="dyn",
        io=IOSpec(
            (TensorSpec("tokens", "int64", ("batch", "seq")), TensorSpec("mask", "float32", ("batch", "seq"))),
            (TensorSpec("hidden", "float32", ("batch", "seq", 8)), TensorSpec("ids", "int64", ("batch",))),
        ),
        model_file=spec.model_file,
        golden_mgv=spec.golden_mgv,
        atol=0.0,
        rtol=0.0,
    )


def _fake_aimodel(folder: Path) -> Path:
    """An .aimodel folder's layout (coreai-torch writes main.mlirb, main.hash, metadata.json): the renderer
    copies files, it never reads them."""
    folder.mkdir(parents=True)
    (folder / "main.mlirb").write_bytes(b"\x00mlirb")
    (folder / "main.hash").write_text("0" * 64)
    (folder / "metadata.json").write_text("{}")
    return folder


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    tmp = tmp_path_factory.mktemp("coreai_swift")
    cases = {label: (spec, opts, ios.CoreAIModel(_fake_aimodel(tmp / f"{label}.aimodel"), ("input_ids",) if label == "ios_two_input" else ()))
             for label, (spec, opts) in make_specs(tmp / "inputs").items()}
    cases["dynamic"] = (_dynamic_text_spec(tmp / "inputs"), ios.IosOptions(), ios.CoreAIModel(_fake_aimodel(tmp / "dyn.aimodel"), ("tokens",)))
    out: dict[str, tuple[Path, str]] = {}
    for label, (spec, opts, coreai) in cases.items():
        dest = tmp / label
        ios.render_ios(spec, opts, dest, coreai=coreai)
        out[label] = (dest, ios.class_name_for(spec, opts))
    return out


def test_every_swift_file_parses(packages: dict[str, tuple[Path, str]]) -> None:
    problems = {
        f"{label}/{p.relative_to(dest)}": found
        for label, (dest, _) in packages.items()
        for p in sorted(dest.rglob("*.swift"))
        if (found := syntax_problems(p.read_text(encoding="utf-8")))
    }
    assert problems == {}


def test_core_ai_symbols_are_the_documented_ones(packages: dict[str, tuple[Path, str]]) -> None:
    expected = {
        "types": set(facts.TYPES),
        "initializers": {f"{t}({''.join(f'{lb}:' for lb in labels)})" for t, lists in facts.INITIALIZERS.items() for labels in lists},
        "methods": set(facts.METHODS),
        "scalar_types": set(facts.SCALAR_TYPES),
        "descriptor_cases": set(facts.DESCRIPTOR_CASES),
        "unknown": set(),
    }
    for label, (dest, class_name) in packages.items():
        source = (dest / "Sources" / class_name / f"{class_name}+CoreAI.swift").read_text(encoding="utf-8")
        found = core_ai_symbols(source, class_name)
        assert found == expected, label


def test_the_symbol_scan_catches_an_invented_call() -> None:
    bad = """
    import CoreAI
    @available(iOS 27.0, macOS 27.0, *)
    final class XCoreAIEngine {
        func f(model: AIModel, array: NDArray) async throws {
            let fn = try model.loadFunction(name: "main")
            _ = try await model.predict(array)
            _ = NDArray(shape: [1], scalarType: .int64)
            if array.scalarType == .int8 {}
        }
    }
    """
    found = core_ai_symbols(bad, "X")
    assert "loadFunction(name:)" in found["methods"] and "predict(_:)" in found["methods"]
    assert not found["methods"] <= set(facts.METHODS)
    assert "int8" in found["scalar_types"]


def test_core_ai_is_gated_to_27_and_ort_stays(packages: dict[str, tuple[Path, str]]) -> None:
    for label, (dest, class_name) in packages.items():
        sources = dest / "Sources" / class_name
        core = (sources / f"{class_name}+CoreAI.swift").read_text(encoding="utf-8")
        wrapper = (sources / f"{class_name}.swift").read_text(encoding="utf-8")
        body = core.split("#if canImport(CoreAI)\nimport CoreAI\n#endif", 1)[1]
        gated = body.split("#if canImport(CoreAI)\n", 1)[1]
        assert gated.startswith("/// ") and "\n@available(iOS 27.0, macOS 27.0, *)\nfinal class " in gated, label
        assert "AIModel" not in body.split("#if canImport(CoreAI)\n", 1)[0], label  # nothing Core AI outside the guard
        assert "if configuration.preferCoreAI, #available(iOS 27.0, macOS 27.0, *) {" in wrapper, label
        assert "import OnnxRuntimeBindings" in wrapper and "ORTSession(env:" in wrapper, label


def _public_api(text: str) -> list[str]:
    return sorted(re.sub(r"\s+", " ", m) for m in re.findall(r"\n    public (?:static )?(?:func|init)[^{]*", text))


def test_public_api_unchanged_and_model_shipped(packages: dict[str, tuple[Path, str]], tmp_path: Path) -> None:
    for label, (spec, opts) in make_specs(tmp_path / "inputs").items():
        plain = tmp_path / label
        ios.render_ios(spec, opts, plain)
        class_name = ios.class_name_for(spec, opts)
        dest = packages[label][0]
        before = (plain / "Sources" / class_name / f"{class_name}.swift").read_text(encoding="utf-8")
        after = (dest / "Sources" / class_name / f"{class_name}.swift").read_text(encoding="utf-8")
        old_api, new_api = _public_api(before), _public_api(after)
        # the one addition: Configuration.init takes preferCoreAI (defaulted, so every existing call compiles)
        assert [a for a in new_api if a not in old_api] == [a for a in new_api if "preferCoreAI" in a], label
        assert [a for a in old_api if a not in new_api] == [a for a in old_api if a.startswith("init( useCoreML")], label
        manifest = (dest / "Package.swift").read_text(encoding="utf-8")
        assert f'.copy("Resources/{class_name}.aimodel"),' in manifest
        shipped = dest / "Sources" / class_name / "Resources" / f"{class_name}.aimodel"
        assert sorted(p.name for p in shipped.iterdir()) == ["main.hash", "main.mlirb", "metadata.json"]
        assert not (plain / "Sources" / class_name / f"{class_name}+CoreAI.swift").exists()
        assert "CoreAI" not in before and "aimodel" not in (plain / "Package.swift").read_text(encoding="utf-8")


def test_narrowed_inputs_keep_int64_in_the_api(packages: dict[str, tuple[Path, str]]) -> None:
    dest, class_name = packages["dynamic"]
    core = (dest / "Sources" / class_name / f"{class_name}+CoreAI.swift").read_text(encoding="utf-8")
    wrapper = (dest / "Sources" / class_name / f"{class_name}.swift").read_text(encoding="utf-8")
    assert "public var tokens: [Int64]" in wrapper
    assert "Self.narrowed(input.tokens, name:" in core and "Int32(exactly: value)" in core
    assert "Self.read(array1, as: Int32.self).map { Int64($0) }" in core  # an int64 output comes back as Int64


def test_ort_symbols_still_the_listed_ones(packages: dict[str, tuple[Path, str]]) -> None:
    """The ORT side of a Core AI package passes the ORT symbol gate (tests/unit/test_ios_ort_symbols.py);
    the Core AI file and the Core AI XCTests are this module's to check."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("ort_symbols", Path(__file__).with_name("test_ios_ort_symbols.py"))
    assert spec is not None and spec.loader is not None
    ort_symbols = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ort_symbols)
    sources = {
        f"{label}/{p.relative_to(dest).as_posix()}": p.read_text(encoding="utf-8")
        for label, (dest, _) in packages.items()
        for p in sorted(dest.rglob("*.swift"))
        if not p.name.endswith(("+CoreAI.swift", "CoreAITests.swift"))  # the Core AI files: this module checks them
    }
    # the blocking prediction(input:) of a Core AI instance: Task.detached, DispatchSemaphore signal()/wait()
    ort_symbols.KNOWN_METHODS = ort_symbols.KNOWN_METHODS | {"detached", "signal", "wait"}
    assert ort_symbols.scan(sources) == []


# --- the Core AI XCTests (Tests/<target>/<Class>CoreAITests.swift) -----------------------------------------------

# What the Core AI tests call on the generated package, checked against its declarations: the wrapper's API
# (load(configuration:), prediction(input:), runtime, coreAIUnavailableReason, Runtime.coreAI), the Core AI
# engine's model URL, and the test target's GoldenVectors; everything else is XCTest, Foundation or CryptoKit.
PACKAGE_METHODS = frozenset({"load", "prediction", "mismatches", "modelInput"})
PACKAGE_MEMBERS = frozenset({"runtime", "coreAIUnavailableReason", "modelURL", "coreAI"})
PACKAGE_INITIALIZERS = frozenset({"GoldenVectors", "Configuration"})


def _declarations(sources: list[str]) -> tuple[dict[str, list[list[tuple[str, bool]]]], set[str]]:
    """Every function / initializer declared in ``sources`` (name → its parameters' (label, defaulted) lists;
    an initializer under its type's name) and every property and enum case name."""
    functions: dict[str, list[list[tuple[str, bool]]]] = {}
    members: set[str] = set()
    for source in sources:
        root = PARSER.parse(source.encode()).root_node
        for n in walk(root):
            if n.type in ("function_declaration", "init_declaration"):
                if n.type == "function_declaration":
                    name = node_text(n.child_by_field_name("name"))
                else:
                    owner = n.parent.parent if n.parent is not None and n.parent.parent is not None else None
                    name = node_text(owner.child_by_field_name("name")) if owner is not None else ""
                params = []
                for i, c in enumerate(n.children):
                    if c.type == "parameter":
                        label = node_text(c.children[0])
                        defaulted = i + 1 < n.child_count and n.children[i + 1].type == "="
                        params.append(("_" if label == "_" else label, defaulted))
                functions.setdefault(name, []).append(params)
            elif n.type == "property_declaration":
                members |= {node_text(p) for p in n.children if p.type == "pattern"}
            elif n.type == "enum_entry":
                members |= {node_text(c) for c in n.children if c.type == "simple_identifier"}
    return functions, members


def _matches(labels: tuple[str, ...], params: list[tuple[str, bool]]) -> bool:
    """A call's labels fit a declaration: the declared labels in order, any defaulted parameter left out."""
    i = 0
    for label, defaulted in params:
        if i < len(labels) and labels[i] == label:
            i += 1
        elif not defaulted:
            return False
    return i == len(labels)


def _package_calls(source: str, class_name: str) -> tuple[list[tuple[str, tuple[str, ...]]], set[str]]:
    """The calls of the Core AI tests into the package (method or initializer name, labels), and the package
    members they read."""
    root = PARSER.parse(source.encode()).root_node
    calls: list[tuple[str, tuple[str, ...]]] = []
    members: set[str] = set()
    for n in walk(root):
        if n.type == "call_expression" and not is_subscript(n):
            callee = n.children[0]
            name = node_text(callee).rsplit(".", 1)[-1]
            if name in PACKAGE_METHODS | PACKAGE_INITIALIZERS:
                calls.append((name, call_labels(n)[0]))
        elif n.type in ("navigation_suffix", "prefix_expression"):  # a.member, and an implicit member .member
            name = node_text(n.child_by_field_name("suffix")) if n.type == "navigation_suffix" else node_text(n).removeprefix(".")
            if name in PACKAGE_MEMBERS:
                members.add(name)
    return calls, members


def test_core_ai_xctests_call_the_package_as_declared(packages: dict[str, tuple[Path, str]]) -> None:
    """The golden-vector and benchmark XCTests on Core AI: they parse (test_every_swift_file_parses), name no Core AI
    framework symbol themselves (the wrapper's API is what they test), call the wrapper and GoldenVectors with
    declared labels, and reach Core AI only inside ``#if canImport(CoreAI)`` behind ``#available(iOS 27.0, macOS 27.0, *)``."""
    for label, (dest, class_name) in packages.items():
        tests = dest / "Tests" / f"{class_name}Tests" / f"{class_name}CoreAITests.swift"
        source = tests.read_text(encoding="utf-8")
        declared, members = _declarations(
            [p.read_text(encoding="utf-8") for p in sorted((dest / "Sources").rglob("*.swift"))]
            + [(tests.parent / "GoldenVectors.swift").read_text(encoding="utf-8")]
        )
        calls, read = _package_calls(source, class_name)
        assert {c for c, _ in calls} == PACKAGE_METHODS | PACKAGE_INITIALIZERS, label  # each is exercised
        for name, labels in calls:
            assert any(_matches(labels, params) for params in declared.get(name, [])), f"{label}: {name}({''.join(x + ':' for x in labels)}) is not declared"
        assert read == PACKAGE_MEMBERS and read <= members, label
        core = core_ai_symbols(source, class_name)
        assert core["types"] == set() and not (core["methods"] & set(facts.METHODS)) and core["initializers"] == set(), label
        assert "import CoreAI" not in source, label
        gated = source.split("#if canImport(CoreAI)\n")
        assert len(gated) == 3 and all(g.lstrip().startswith("guard #available(iOS 27.0, macOS 27.0, *)") for g in gated[1:]), label
        assert source.count("CoreAIEngine.modelURL") == 1 and "runtime == .coreAI" in source, label
        assert "atol: Double = " in source and "static let rtol: Double = " in source, label


def test_core_ai_xctests_are_rendered_with_core_ai_only(tmp_path: Path) -> None:
    for label, (spec, opts) in make_specs(tmp_path / "inputs").items():
        dest = tmp_path / label
        ios.render_ios(spec, opts, dest)
        assert not list(dest.rglob("*CoreAITests.swift")), label


def test_the_call_check_catches_a_wrong_label() -> None:
    declared, _ = _declarations(["final class M { public static func load(configuration: Configuration = Configuration()) async throws -> M { fatalError() } }"])
    calls, _ = _package_calls("func f() async throws { _ = try await M.load(config: .init()) ; _ = try await M.load() }", "M")
    assert [(n, lb) for n, lb in calls if n == "load"] == [("load", ("config",)), ("load", ())]
    assert not _matches(("config",), declared["load"][0]) and _matches((), declared["load"][0])
