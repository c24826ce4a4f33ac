"""Every ONNX Runtime symbol the rendered Swift uses must be on the list taken from ORT's Objective-C
headers (tests/data/ort_objc_symbols.py), with its exact Swift spelling.

What is checked, on the Swift of several rendered packages:

* every ``ORT[A-Z]…`` identifier (code, comments and strings alike) is a known class, enum or function;
* every ``ORTEnum.member`` is a case of that enum;
* every ``ORTType(…)`` initializer call has a known label list, ``ORTFunction()`` takes no arguments;
* every method call ``x.name(label: …)`` whose base name is an ORT method matches an ORT method's full
  Swift name exactly; any other method must be declared in the rendered code itself or be on a short
  list of Swift / Foundation / XCTest / SwiftUI methods (so an invented ORT method cannot slip in under
  a new base name);
* CoreML provider-option keys and values in the code are ones ONNX Runtime parses.

Property reads (``info.shape``) are not type-checked here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from data import ort_objc_symbols as ort
from ios_specs import make_specs
from ts_parsers import call_labels, is_subscript, node_text, parser, walk

from mobilegen.artifacts import ProjectSpec
from mobilegen.providers.coreml import ios as coreml_ios
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.targets.ios import project as ios

if TYPE_CHECKING:
    from tree_sitter import Node

# Non-ORT methods the templates call (Swift standard library, Foundation, Dispatch, XCTest, SwiftUI).
KNOWN_METHODS = frozenset(
    """
    map reduce allSatisfy append contains enumerated joined get resume async url urls appendingPathComponent
    createDirectory withUnsafeBytes copyBytes copyMemory now foregroundColor navigationTitle task
    withUnsafeMutableBytes removeLast draw deletingPathExtension decode
    split trimmingCharacters filter data write hash prefix sorted rounded firstIndex
    first removeAll removeFirst lock unlock try
    assumingMemoryBound intersection withUnsafeBufferPointer
    """.split()
)

ORT_IDENT = re.compile(r"\bORT[A-Z][A-Za-z0-9_]*")
ORT_MEMBER = re.compile(r"\b(ORT[A-Z][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)")










def _declared_names(roots: list[Node]) -> set[str]:
    names: set[str] = set()
    for root in roots:
        for node in walk(root):
            if node.type == "function_declaration":
                names.add(node_text(node.child_by_field_name("name")))
            elif node.type == "enum_entry":
                names.update(node_text(n) for n in node.children_by_field_name("name") if n.type == "simple_identifier")
    return names


_FUNC = re.compile(r"\bfunc\s+([A-Za-z_][A-Za-z0-9_]*)\s*(?:<[^>]*>)?\s*\(")


def _declared_full_names(sources: dict[str, str]) -> set[str]:
    """``run(image:)`` for every ``func run(image: …)`` the generated code declares (its own API may share
    a base name with an ORT method, e.g. the task API's ``run(image:)`` / ``run(pcm:)``)."""
    out: set[str] = set()
    for text in sources.values():
        for m in _FUNC.finditer(text):
            depth, i, params = 1, m.end(), []
            start = i
            while i < len(text) and depth:
                ch = text[i]
                if ch in "([<{":
                    depth += 1
                elif ch in ")]>}":
                    depth -= 1
                if (ch == "," and depth == 1) or depth == 0:
                    params.append(text[start:i])
                    start = i + 1
                i += 1
            labels = [p.split(":", 1)[0].split()[0] for p in params if ":" in p]
            out.add(f"{m.group(1)}({''.join(f'{lb}:' for lb in labels)})")
    return out


def scan(sources: dict[str, str]) -> list[str]:
    """Problems with ORT symbols in ``sources`` (file name → Swift text); empty when all are known."""
    problems: list[str] = []
    trees = {name: parser("swift").parse(text.encode()) for name, text in sources.items()}
    declared = _declared_names([t.root_node for t in trees.values()])
    declared_full = _declared_full_names(sources)
    for name, text in sources.items():
        for m in ORT_IDENT.finditer(text):
            if m.group(0) not in ort.SYMBOLS:
                problems.append(f"{name}: unknown ORT symbol {m.group(0)}")
        for m in ORT_MEMBER.finditer(text):
            type_name, member = m.groups()
            if type_name in ort.ENUMS:
                if member not in ort.ENUMS[type_name][1]:
                    problems.append(f"{name}: {type_name} has no case {member}")
            elif type_name in ort.SYMBOLS:
                problems.append(f"{name}: {type_name}.{member} is not in the Objective-C API")
        for node in walk(trees[name].root_node):
            if node.type != "call_expression" or is_subscript(node):
                continue
            callee = node.children[0]
            labels, trailing = call_labels(node)
            if callee.type == "simple_identifier" and node_text(callee).startswith("ORT"):
                callee_name = node_text(callee)
                if callee_name in ort.FUNCTIONS:
                    if labels or trailing:
                        problems.append(f"{name}: {callee_name} takes no arguments")
                elif labels not in ort.INITIALIZERS.get(callee_name, {}):
                    problems.append(f"{name}: no initializer {callee_name}({''.join(f'{lb}:' for lb in labels)})")
            elif callee.type == "navigation_expression":
                suffix = callee.child_by_field_name("suffix")
                method = node_text(suffix.child_by_field_name("suffix") if suffix is not None else None)
                full = f"{method}({''.join(f'{lb}:' for lb in labels)})"
                if method in ort.METHOD_BASE_NAMES and full not in ort.METHODS and full in declared_full:
                    continue  # the generated code's own method of the same base name
                if method in ort.METHOD_BASE_NAMES:
                    if full not in ort.METHODS or trailing:
                        problems.append(f"{name}: {full} is not an ORT method (known: {sorted(m for m in ort.METHODS if m.startswith(method + '('))})")
                elif method[:1].isupper() or method == "init":
                    continue  # a nested type's initializer (Model.Configuration(...)) or self.init(...)
                elif method not in declared and method not in KNOWN_METHODS:
                    problems.append(f"{name}: unknown method {full}: not ORT API, not declared in the generated code")
    return problems


def _dynamic_spec(tmp: Path) -> ProjectSpec:
    spec, _ = make_specs(tmp)["ios_two_input"]
    return ProjectSpec(
        model_name="dyn",
        io=IOSpec(
            (TensorSpec("tokens", "int32", ("batch", "seq")), TensorSpec("image", "uint8", (1, 3, "h", "w"))),
            (TensorSpec("scores", "int64", ("batch", 4)), TensorSpec("raw", "uint64", (2,)), TensorSpec("q", "int8", (1,))),
        ),
        model_file=spec.model_file,
        golden_mgv=spec.golden_mgv,
        atol=0.0,
        rtol=0.0,
    )


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("ios_symbols")
    sources: dict[str, str] = {}
    cases = list(make_specs(tmp / "inputs").items())
    cases.append(("dynamic", (_dynamic_spec(tmp / "inputs"), ios.IosOptions(coreml=True, compute_units="cpu-and-ne"))))
    for label, (spec, opts) in cases:
        out = tmp / label
        ios.render_ios(spec, opts, out)
        for path in sorted(out.rglob("*.swift")):
            sources[f"{label}/{path.relative_to(out).as_posix()}"] = path.read_text(encoding="utf-8")
    return sources


def test_rendered_swift_uses_only_listed_ort_symbols(rendered: dict[str, str]) -> None:
    assert scan(rendered) == []


def test_rendered_swift_uses_the_core_api(rendered: dict[str, str]) -> None:
    """Sanity check of the scanner's input: the wrapper really calls ORT."""
    text = "\n".join(rendered.values())
    for needle in (
        "ORTIsCoreMLExecutionProviderAvailable()",
        "appendCoreMLExecutionProvider(withOptionsV2:",
        "session.run(withInputs:",
        "ORTTensorElementDataType.uInt8",
        "ORTTensorElementDataType.uInt64",
    ):
        assert needle in text


def test_scanner_reports_unknown_symbols() -> None:
    bad = {
        "Bad.swift": """
import OnnxRuntimeBindings
func f(session: ORTSession, v: ORTValue) throws {
    let env = try ORTEnvironment(loggingLevel: ORTLoggingLevel.warning)
    let x = try ORTValue(data: d, elementType: ORTTensorElementDataType.float16, shape: [])
    let y = try session.run(withInputs: [:], outputNames: [], runOptions: nil, error: nil)
    try session.runAsync(withInputs: [:])
    let z = try v.tensorData(copy: true)
    _ = ORTIsCoreMLExecutionProviderAvailable(true)
}
"""
    }
    problems = "\n".join(scan(bad))
    assert "unknown ORT symbol ORTEnvironment" in problems
    assert "no initializer ORTValue(data:elementType:shape:)" in problems
    assert "ORTTensorElementDataType has no case float16" in problems
    assert "run(withInputs:outputNames:runOptions:error:) is not an ORT method" in problems
    assert "unknown method runAsync(withInputs:)" in problems
    assert "tensorData(copy:) is not an ORT method" in problems
    assert "ORTIsCoreMLExecutionProviderAvailable takes no arguments" in problems


def test_coreml_provider_options_are_ones_ort_parses(rendered: dict[str, str]) -> None:
    # the wrapper files (InputContract.swift is a plain data type with no session)
    wrappers = {k: v for k, v in rendered.items() if "/Sources/" in k and "App/" not in k and not k.endswith("/InputContract.swift")}
    assert wrappers
    for name, text in wrappers.items():
        keys = set(re.findall(r'"([A-Za-z]+)": configuration\.', text)) | set(
            re.findall(r'options\["([A-Za-z]+)"\]', text)
        )
        assert keys == {"ModelFormat", "MLComputeUnits", "RequireStaticInputShapes", "ModelCacheDirectory"}, name
        assert keys <= set(ort.COREML_PROVIDER_OPTIONS)
        units = re.search(r"enum ComputeUnits: String.*?\n        \}", text, re.S)
        formats = re.search(r"enum ModelFormat: String.*?\n        \}", text, re.S)
        assert units is not None and formats is not None
        assert set(re.findall(r'= "(\w+)"', units.group(0))) == ort.COREML_PROVIDER_OPTIONS["MLComputeUnits"]
        assert set(re.findall(r'= "(\w+)"', formats.group(0))) == ort.COREML_PROVIDER_OPTIONS["ModelFormat"]


def test_python_option_tables_match_ort() -> None:
    assert {v for v, _ in coreml_ios.COMPUTE_UNITS.values()} == ort.COREML_PROVIDER_OPTIONS["MLComputeUnits"]
    assert {v for v, _ in coreml_ios.FORMATS.values()} == ort.COREML_PROVIDER_OPTIONS["ModelFormat"]
    assert {case for _, case in ios.SWIFT_ELEMENT_TYPES.values()} <= ort.ENUMS["ORTTensorElementDataType"][1]
