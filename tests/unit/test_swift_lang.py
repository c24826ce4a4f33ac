"""The Swift identifier sanitizer, string escaper, comment cleaner and type-name rules."""

from __future__ import annotations

import re

import pytest

from mobilegen.errors import RenderError, UsageError
from mobilegen.render.lang import swift

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("input", "input"),
        ("input_ids", "inputIds"),
        ("attention-mask", "attentionMask"),
        ("pooled.output", "pooledOutput"),
        ("X", "x"),
        ("CO2 Emissions(g/km)", "co2EmissionsGKm"),
        ("ImageInput", "imageInput"),
        ("963", "_963"),
        ("1st layer", "_1stLayer"),
        ("café", "cafe"),
        ("class", "class_"),
        ("self", "self_"),
        ("Self", "self_"),
        ("Type", "type"),
        ("in", "in_"),
        ("some", "some_"),
        ("async", "async_"),
        ("_", "value"),
        ("", "value"),
        ("数据", "value"),
        ('a")\nfatalError()', "aFatalError"),
    ],
)
def test_swift_identifier(name: str, expected: str) -> None:
    assert swift.swift_identifier(name) == expected
    assert IDENT.match(expected)


def test_identifier_reserved_members_get_suffix() -> None:
    assert swift.swift_identifier("prediction", reserved={"prediction"}) == "prediction_"
    assert swift.swift_identifier("x", fallback="input0") == "x"
    assert swift.swift_identifier("", fallback="input0") == "input0"


def test_every_keyword_is_suffixed() -> None:
    for kw in swift.SWIFT_KEYWORDS:
        ident = swift.swift_identifier(kw)
        assert ident not in swift.SWIFT_KEYWORDS
        assert IDENT.match(ident), kw


def test_unique_identifiers_are_distinct_and_deterministic() -> None:
    names = ["a.b", "a_b", "aB", "aB_2", "", "", "class", "class_", "9", "_9"]
    first = swift.unique_identifiers(names, fallback="input")
    assert first == swift.unique_identifiers(names, fallback="input")
    assert len(set(first)) == len(first)
    assert first[:4] == ["aB", "aB_2", "aB_3", "aB2"]
    assert first[4:6] == ["input4", "input5"]
    assert first[6:8] == ["class_", "class__2"]
    assert all(IDENT.match(i) and i not in swift.SWIFT_KEYWORDS for i in first)


def test_namer_respects_reserved_and_claims() -> None:
    namer = swift.SwiftNamer(reserved={"warmUp", "inputNames"})
    assert namer.name("warm_up") == "warmUp_"
    assert namer.name("input names") == "inputNames_"
    assert namer.claim("xShape") == "xShape"
    assert namer.claim("xShape") == "xShape_2"


def test_claim_group_keeps_families_apart() -> None:
    namer = swift.SwiftNamer(reserved={"prediction"})
    sfx = ("", "Shape")
    assert namer.name_group("out", sfx) == "out"  # out, outShape
    assert namer.name_group("out_shape", sfx) == "outShape_2"  # outShape is out's shape
    assert namer.name_group("outShape_2", sfx) == "outShape2"
    assert namer.name_group("prediction", sfx) == "prediction_"
    assert namer.claim("out") == "out_2"  # everything claimed by a group is taken
    other = swift.SwiftNamer()
    assert other.name_group("out_shape", sfx) == "outShape"  # declaration order decides
    assert other.name_group("out", sfx) == "out_2"
    with pytest.raises(RenderError):
        other.claim_group("9x", sfx)
    with pytest.raises(RenderError):
        namer.claim("1abc")


@pytest.mark.parametrize(
    ("text", "literal"),
    [
        ("plain", '"plain"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("\\(evil)", '"\\\\(evil)"'),
        ("nul\0", '"nul\\0"'),
        ("a\nb\rc\td", '"a\\nb\\rc\\td"'),
        ("\x07bell", '"\\u{7}bell"'),
        ("\x7f", '"\\u{7F}"'),
        ("é", '"\\u{E9}"'),
        ("😀", '"\\u{1F600}"'),
        ("\u2028", '"\\u{2028}"'),
        ('"""', '"\\"\\"\\""'),
        ("#", '"#"'),
        ("'", "\"'\""),
        ("/*", '"/\\u{2A}"'),  # no comment delimiter for a tool that does not lex strings
        ("*/", '"\\u{2A}/"'),
        ("a*b/c", '"a*b/c"'),
    ],
)
def test_swift_string(text: str, literal: str) -> None:
    assert swift.swift_string(text) == literal
    assert literal.isascii()


def test_swift_string_never_leaves_an_open_interpolation() -> None:
    body = swift.swift_string_body('x\\(fatalError())"')
    # every backslash in the body starts an escape sequence we wrote
    assert re.fullmatch(r'(?:[^\\"]|\\[\\"0nrt]|\\u\{[0-9A-F]{1,8}\})*', body)


def test_lone_surrogate_is_refused() -> None:
    with pytest.raises(RenderError):
        swift.swift_string("a\udc80b")


def test_swift_comment_is_one_safe_line() -> None:
    out = swift.swift_comment("a\nb\r\nc\u2028d\x85e /* f */ g\x00")
    assert "\n" not in out and "\r" not in out and "\u2028" not in out and "\x85" not in out
    assert "/*" not in out and "*/" not in out
    assert out.startswith("a b")


def test_swift_float() -> None:
    assert swift.swift_float(1e-5) == "1e-05"
    assert swift.swift_float(0.001) == "0.001"
    assert swift.swift_float(0) == "0.0"
    with pytest.raises(RenderError):
        swift.swift_float(float("nan"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tiny_cnn", "TinyCnn"),
        ("Text Classifier", "TextClassifier"),
        ("resnet18", "Resnet18"),
        ("my-model.v2", "MyModelV2"),
        ("18layers", "Model18layers"),
        ("", "Model"),
        ("数据", "Model"),
        ("data", "DataModel"),
        ("string", "StringModel"),
        ("ORTValue", "OrtValue"),
        ("class", "Class"),
        ("self", "SelfModel"),
    ],
)
def test_swift_type_name(text: str, expected: str) -> None:
    assert swift.swift_type_name(text) == expected
    assert swift.type_name_problem(expected) is None


@pytest.mark.parametrize(
    "bad",
    ["", "myModel", "My_Model", "My-Model", "1Model", "Modèle", "Self", "String", "Data", "ORTThing", "A" * 65, "Any"],
)
def test_check_type_name_refuses(bad: str) -> None:
    assert swift.type_name_problem(bad) is not None
    with pytest.raises(UsageError) as info:
        swift.check_type_name(bad)
    assert info.value.exit_code == 2
    assert "--name" in info.value.message
    assert info.value.hint and "PascalCase" in info.value.hint


@pytest.mark.parametrize("good", ["MyModel", "ResNet50", "Classifier", "A"])
def test_check_type_name_accepts(good: str) -> None:
    assert swift.check_type_name(good) == good


def test_filters_exported() -> None:
    assert {"swift_str", "swift_ident", "swift_comment", "swift_type"} <= set(swift.FILTERS)
    assert swift.FILTERS["swift_str"]("a\"b") == '"a\\"b"'
