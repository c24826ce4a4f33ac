"""Generated Swift parses (tree-sitter-swift), for the golden packages and for hostile model/tensor names.

There is no Swift toolchain for Apple platforms in CI, so this is the syntax gate; the ORT symbol gate
is tests/unit/test_ios_ort_symbols.py.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from ios_specs import NAMES, make_specs
from ts_parsers import parser

from mobilegen.render.lang import swift
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.targets.ios.project import IosOptions, render_ios

if TYPE_CHECKING:
    from tree_sitter import Node

pytestmark = pytest.mark.slow

PARSER = parser("swift")  # every test here parses Swift: the module skips without tree-sitter-swift


def _walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children:
        yield from _walk(child)


def syntax_problems(source: bytes) -> list[str]:
    tree = PARSER.parse(source)
    return [
        f"{'MISSING' if n.is_missing else n.type} at {n.start_point}: {(n.text or b'')[:60]!r}"
        for n in _walk(tree.root_node)
        if n.type == "ERROR" or n.is_missing
    ]


def called_names(source: bytes, class_name: str) -> set[str]:
    """Names of free functions / initializers called (``fatalError()``, ``Result {…}``, ``Set(…)``),
    with the generated class name replaced by ``<C>`` (``TinyCnnInput(…)`` → ``<C>Input``)."""
    out = set()
    for n in _walk(PARSER.parse(source).root_node):
        if n.type == "call_expression" and n.children[0].type == "simple_identifier":
            name = (n.children[0].text or b"").decode()
            suffix = name[len(class_name) :] if name.startswith(class_name) else None
            out.add("<C>" + suffix if suffix in ("", "Input", "Output", "Error", "DemoApp") else name)
    return out


def code_without_comments(source: bytes) -> bytes:
    """The source with every comment cut out (comments may carry arbitrary model text)."""
    tree = PARSER.parse(source)
    spans = [(n.start_byte, n.end_byte) for n in _walk(tree.root_node) if n.type in ("comment", "multiline_comment")]
    out, pos = bytearray(), 0
    for start, end in sorted(spans):
        out += source[pos:start]
        pos = max(pos, end)
    return bytes(out + source[pos:])


def swift_files(root: Path) -> list[Path]:
    files = sorted(root.rglob("*.swift"))
    assert root / "Package.swift" in files
    return files


@pytest.mark.parametrize("name", NAMES)
def test_golden_packages_parse(name: str, tmp_path: Path) -> None:
    spec, opts = make_specs(tmp_path / "inputs")[name]
    out = tmp_path / name
    render_ios(spec, opts, out)
    for path in swift_files(out):
        assert syntax_problems(path.read_bytes()) == [], path


# --- hostile names -----------------------------------------------------------------------------------

_HOSTILE_PIECES = [
    '"',
    '\\',
    '\\(',
    '\\(fatalError())',
    '")\nfatalError()\n//',
    '"""',
    '#"',
    '"#',
    "#",
    "*/",
    "/*",
    "//",
    "\n",
    "\r\n",
    "\t",
    "\0",
    "\u2028",
    "\u202e",
    "é",
    "数据",
    "😀",
    "class",
    "self",
    "Self",
    "Type",
    "init",
    "in",
    "prediction",
    "warmUp",
    "inputNames",
    "_",
    "__",
    "$0",
    "0",
    "9lives",
    "a.b",
    "a_b",
    "aB",
    "aBShape",
    "out",
    "_shape",
    "Shape",
    "model",
    "input",
    " ",
    "`",
    "}",
    "{{ x }}",
    "{% raw %}",
]

_names = st.lists(st.sampled_from(_HOSTILE_PIECES), min_size=1, max_size=4).map("".join) | st.text(
    min_size=0, max_size=12
).filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s))
_dtypes = st.sampled_from(["float32", "int64", "int32", "uint8", "int8", "uint32", "uint64"])
_dims = st.lists(st.integers(1, 4) | _names.filter(bool), min_size=0, max_size=3).map(tuple)
_tensors = st.lists(st.tuples(_names, _dtypes, _dims), min_size=1, max_size=3)

BASELINE_CALLS: set[str] = set()


def _baseline_calls(tmp: Path) -> set[str]:
    if not BASELINE_CALLS:
        spec, opts = make_specs(tmp / "inputs")["ios_two_input"]
        render_ios(spec, IosOptions(coreml=True), tmp / "baseline")
        dyn = replace(spec, io=IOSpec((TensorSpec("x", "float32", ("n", 2)),), spec.io.outputs))
        render_ios(dyn, IosOptions(coreml=True), tmp / "baseline_dyn")
        for root in (tmp / "baseline", tmp / "baseline_dyn"):
            for path in swift_files(root):
                BASELINE_CALLS.update(called_names(path.read_bytes(), "TextClassifier"))
    return BASELINE_CALLS


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model_name=_names, inputs=_tensors, outputs=_tensors, coreml=st.booleans())
@example(model_name="/*", inputs=[("", "float32", ())], outputs=[("*/", "float32", ())], coreml=False)  # a comment's delimiters in two strings
def test_hostile_names_give_parseable_swift_with_nothing_injected(
    model_name: str,
    inputs: list[tuple[str, str, tuple[int | str, ...]]],
    outputs: list[tuple[str, str, tuple[int | str, ...]]],
    coreml: bool,
) -> None:
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        baseline = _baseline_calls(tmp)
        spec, _ = make_specs(tmp / "inputs")["ios_cnn"]
        io = IOSpec(
            tuple(TensorSpec(n, d, s) for n, d, s in inputs),
            tuple(TensorSpec(n, d, s) for n, d, s in outputs),
        )
        spec = replace(spec, model_name=model_name, io=io, notes=(model_name,))
        out = tmp / "out"
        render_ios(spec, IosOptions(coreml=coreml), out)

        texts: dict[Path, str] = {}
        for path in swift_files(out):
            source = path.read_bytes()
            assert syntax_problems(source) == [], (path.relative_to(out), source.decode()[:3000])
            # Nothing new is called: an injected `fatalError()` would show up here.
            assert called_names(source, swift.swift_type_name(model_name)) <= baseline, path.relative_to(out)
            # Model text reaches code only through the escaper, whose output is printable ASCII.
            code = code_without_comments(source)
            assert all(b == 0x0A or 0x20 <= b < 0x7F for b in code), path.relative_to(out)
            texts[path] = source.decode("utf-8")

        wrapper = next(t for p, t in texts.items() if p.parent.parent.name == "Sources" and p.name != "InputContract.swift")
        for name, _, _ in inputs + outputs:
            assert swift.swift_string(name) in wrapper


def test_member_like_names_parse_and_shapes_belong_to_their_tensor(tmp_path: Path) -> None:
    names = ["out", "out_shape", "outShape", "model", "modelName", "prediction", "input", "init", "self", "Type"]
    spec, _ = make_specs(tmp_path / "inputs")["ios_cnn"]
    io = IOSpec(
        tuple(TensorSpec(n, "float32", (1, "n")) for n in names[:5]),
        tuple(TensorSpec(n, "float32", (2,)) for n in names[5:]),
    )
    render_ios(replace(spec, io=io), IosOptions(coreml=True), tmp_path / "out")
    for path in swift_files(tmp_path / "out"):
        assert syntax_problems(path.read_bytes()) == [], path
    wrapper = (tmp_path / "out/Sources/TinyCnn/TinyCnn.swift").read_text()
    # out's shape is outShape; out_shape's data is outShape_2 (its shape outShape_2Shape).
    assert "public var outShape: [Int]" in wrapper
    assert "public var outShape_2: [Float]" in wrapper and "public var outShape_2Shape: [Int]" in wrapper


def test_the_checks_catch_an_unescaped_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a broken escaper the injection shows up (guards the property test against passing vacuously)."""
    baseline = _baseline_calls(tmp_path)
    monkeypatch.setattr(swift, "swift_string", lambda text: '"' + text + '"')
    spec, opts = make_specs(tmp_path / "inputs")["ios_cnn"]
    io = IOSpec((TensorSpec('x")\nfatalError()\nlet y = ("', "float32", (1,)),), spec.io.outputs)
    render_ios(replace(spec, io=io), opts, tmp_path / "out")
    wrapper = (tmp_path / "out/Sources/TinyCnn/TinyCnn.swift").read_bytes()
    assert syntax_problems(wrapper) or "fatalError" in called_names(wrapper, "TinyCnn") - baseline


def test_benchmark_times_the_shipped_default_and_the_preprocessing(tmp_path: Path) -> None:
    """The iOS benchmark parses with and without an image task: "default" is the wrapper's init with the
    default Configuration (its provider list from mobilegen.targets.defaults, as the wrapper's defaults), and
    the preprocessing is the wrapper's public ImageInput.prepare, timed per source size, never re-implemented."""
    import re

    from task_specs import task_specs

    from mobilegen.targets.defaults import BENCH_IMAGE_SIZES, default_chain, option_flags

    specs = task_specs(tmp_path / "inputs")
    ort = {"coreml": "CoreMLExecutionProvider", "xnnpack": "XnnpackExecutionProvider"}
    for name, opts in (("cls_all", IosOptions(coreml=True, xnnpack=True)), ("image", IosOptions(xnnpack=True)), ("audio", IosOptions())):
        out = tmp_path / name
        render_ios(specs[name], opts, out)
        (bench,) = out.rglob("*BenchmarkTests.swift")
        source = bench.read_bytes()
        assert syntax_problems(source) == [], name
        text = code_without_comments(source).decode()
        chain = [ort[p.name] for p in default_chain("ios", option_flags(opts))] + ["CPUExecutionProvider"]
        listed = re.search(r"static let shippedProviders: \[String\] = \[(.*)\]", text)
        assert listed is not None and [s.strip().strip('"') for s in listed.group(1).split(",")] == chain, name
        assert '"schema_version": 2' in text and '"shipped_default": "ios"' in text
        assert "let model = try TinyCnn()" in text  # the default Configuration, as an app creates it
        wrapper = (out / "Sources").rglob("TinyCnn.swift")
        assert f"useCoreML: Bool = {'true' if opts.coreml else 'false'}" in next(wrapper).read_text(encoding="utf-8")
        if name == "audio":
            assert "ImageInput" not in text and "-> [[String: Any]] { [] }" in text
            continue
        assert text.count("TinyCnn.ImageInput.prepare(photo)") == 3 and "resizeCrop" not in text
        sizes = re.search(r"static let preprocessSizes: \[\(Int, Int\)\] = \[(.*)\]", text)
        assert sizes is not None and sizes.group(1) == ", ".join(f"({w}, {h})" for w, h in BENCH_IMAGE_SIZES)
