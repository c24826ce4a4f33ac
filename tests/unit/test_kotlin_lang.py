"""The Kotlin identifier sanitizer, string escaper, comment cleaner and package / class-name rules."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mobilegen.artifacts import FP16_TOLERANCE, ProjectSpec
from mobilegen.render.lang import kotlin as kt
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.targets.android.project import AndroidOptions, accelerated_tolerances

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("input_ids", "inputIds"),
        ("attention.mask", "attentionMask"),
        ("CO2 Emissions(g/km)", "co2EmissionsGKm"),
        ("963", "_963"),
        ("class", "class_"),
        ("in", "in_"),
        ("int", "int_"),
        ("", "value"),
        ("!!!", "value"),
        ("café", "cafe"),
        ("日本", "value"),
        ("x", "x"),
    ],
)
def test_identifier_camel(name: str, expected: str) -> None:
    assert kt.identifier(name) == expected


def test_identifier_styles_and_avoid() -> None:
    assert kt.identifier("input ids", style="pascal") == "InputIds"
    assert kt.identifier("inputIds", style="constant") == "INPUT_IDS"
    assert kt.identifier("close", avoid=["close"]) == "close_"
    with pytest.raises(ValueError):
        kt.identifier("x", style="snake")


def test_collisions_are_disambiguated_in_order() -> None:
    assert kt.unique_identifiers(["a.b", "a_b", "a-b"]) == ["aB", "aB_2", "aB_3"]
    # a suffixed name never steals another tensor's own name
    assert kt.disambiguate(["x", "x", "x_2"]) == ["x", "x_3", "x_2"]
    assert kt.unique_identifiers(["x", "x", "x2"]) == ["x", "x_2", "x2"]
    assert kt.unique_identifiers(["", ""], fallback="input") == ["input0", "input1"]
    assert kt.disambiguate(["A"], taken=["A"]) == ["A_2"]


def test_disambiguate_groups_keeps_derived_names_apart() -> None:
    sfx = ("", "Shape")
    # out's shape is outShape: out_shape must not take it.
    assert kt.disambiguate_groups(["out", "outShape"], sfx) == ["out", "outShape_2"]
    assert kt.disambiguate_groups(["outShape", "out"], sfx) == ["outShape", "out_2"]
    # constants: MODEL_NAME is taken, so the tensor "model" gets MODEL_2_NAME / MODEL_2_SHAPE
    assert kt.disambiguate_groups(["MODEL", "MODEL_NAME"], ("_NAME", "_SHAPE"), taken=["MODEL_NAME"]) == [
        "MODEL_2",
        "MODEL_NAME",
    ]
    # a suffixed stem never takes a derived name of another entry's own base
    assert kt.disambiguate_groups(["x", "x", "x_2"], sfx) == ["x", "x_3", "x_2"]
    with pytest.raises(ValueError):
        kt.disambiguate_groups(["x"], ())


@given(
    st.lists(st.sampled_from(["a", "aShape", "aShapeShape", "a_2", "a_2Shape", "b", "close"]), max_size=8),
    st.sets(st.sampled_from(["a", "aShape", "close", "a_2Shape"])),
)
def test_disambiguate_groups_never_collides(bases: list[str], taken: set[str]) -> None:
    sfx = ("", "Shape")
    stems = kt.disambiguate_groups(bases, sfx, taken=taken)
    derived = [s + x for s in stems for x in sfx]
    assert len(set(derived)) == len(derived)
    assert not set(derived) & taken


# --- accelerated tolerances (mobilegen.targets.android.project) ----------------------------------------------------


def _spec(atol: float = 1e-4, rtol: float = 1e-3, **kw: float) -> ProjectSpec:
    from pathlib import Path

    io = IOSpec((TensorSpec("x", "float32", (1,)),), (TensorSpec("y", "float32", (1,)),))
    return ProjectSpec(
        model_name="m", io=io, model_file=Path("m.ort"), golden_mgv=Path("g.mgv"), atol=atol, rtol=rtol, **kw
    )


@pytest.mark.parametrize(
    ("opts", "expected"),
    [
        (AndroidOptions(), (1e-4, 1e-3)),
        (AndroidOptions(xnnpack=True), (1e-4, 1e-3)),
        (AndroidOptions(nnapi=True), (1e-4, 1e-3)),
        (AndroidOptions(nnapi=True, nnapi_flags=("nchw", "cpu-disabled")), (1e-4, 1e-3)),
        (AndroidOptions(nnapi=True, nnapi_flags=("fp16",)), (FP16_TOLERANCE, FP16_TOLERANCE)),
        (AndroidOptions(nnapi=True, xnnpack=True, nnapi_flags=("fp16", "cpu-disabled")), (1e-2, 1e-2)),
    ],
)
def test_accelerated_tolerances(opts: AndroidOptions, expected: tuple[float, float]) -> None:
    assert accelerated_tolerances(_spec(), opts) == expected


def test_accelerated_tolerances_keep_looser_build_ones_and_explicit_values() -> None:
    fp16 = AndroidOptions(nnapi=True, nnapi_flags=("fp16",))
    assert accelerated_tolerances(_spec(atol=0.05, rtol=1e-3), fp16) == (0.05, 1e-2)
    assert accelerated_tolerances(_spec(accel_atol=0.2), fp16) == (0.2, 1e-2)
    assert accelerated_tolerances(_spec(accel_atol=0.2, accel_rtol=0.3), AndroidOptions()) == (0.2, 0.3)


@given(st.lists(st.text(max_size=12), max_size=8))
@settings(max_examples=200, deadline=None)
def test_unique_identifiers_are_valid_and_unique(names: list[str]) -> None:
    out = kt.unique_identifiers(names)
    assert len(out) == len(names)
    assert len(set(out)) == len(out)
    for ident in out:
        assert IDENT.match(ident), ident
        assert ident.rstrip("_") not in kt.RESERVED_WORDS or ident.endswith("_")
        assert ident not in kt.RESERVED_WORDS


@pytest.mark.parametrize(
    ("text", "literal"),
    [
        ("plain", '"plain"'),
        ('a"b', '"a\\"b"'),
        ("a\\b", '"a\\\\b"'),
        ("$x ${y}", '"\\$x \\${y}"'),
        ("\n\r\t\b", '"\\n\\r\\t\\b"'),
        ("\x00\x1f\x7f", '"\\u0000\\u001F\\u007F"'),
        ("é", '"\\u00E9"'),
        ("\u2028", '"\\u2028"'),
        ("😀", '"\\uD83D\\uDE00"'),
        ("*/ /*", '"*/ /*"'),
    ],
)
def test_string_literal(text: str, literal: str) -> None:
    assert kt.string_literal(text) == literal


def test_lone_surrogates_are_refused() -> None:
    from mobilegen.errors import RenderError

    with pytest.raises(RenderError):
        kt.string_literal("a\udc80")


def _decode_kotlin(body: str) -> str:
    """Minimal decoder of the escapes escape_string emits (the Kotlin lexer's meaning of them)."""
    simple = {"\\": "\\", '"': '"', "$": "$", "n": "\n", "r": "\r", "t": "\t", "b": "\b"}
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        assert ch not in '"$' and 0x20 <= ord(ch) < 0x7F, f"unescaped {ch!r}"
        if ch == "\\":
            nxt = body[i + 1]
            if nxt == "u":
                out.append(chr(int(body[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(simple[nxt])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16")


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",))))
@settings(max_examples=300, deadline=None)
def test_escape_round_trips(text: str) -> None:
    assert _decode_kotlin(kt.escape_string(text)) == text


@given(st.text())
def test_line_comment_is_one_safe_line(text: str) -> None:
    out = kt.line_comment(text)
    assert "\n" not in out and "\r" not in out and "\u2028" not in out and "\u2029" not in out and "\x85" not in out
    assert "/*" not in out and "*/" not in out


@pytest.mark.parametrize("package", ["com.example.model", "a.b", "org.my_company.v2"])
def test_valid_packages(package: str) -> None:
    assert kt.validate_package(package)


@pytest.mark.parametrize(
    "package",
    ["model", "com..x", "com.example.in", "com.1x", "com.example.class", "com.exa-mple", "com.é.x", "", "com.x."],
)
def test_invalid_packages(package: str) -> None:
    assert not kt.validate_package(package)
    assert kt.package_problems(package)


@given(st.text(max_size=30))
def test_derived_packages_are_valid(name: str) -> None:
    assert kt.validate_package(kt.derive_package(name))


@given(st.text(max_size=30))
def test_derived_class_names_are_valid(name: str) -> None:
    reserved = {"Inputs", "Outputs", "R"}
    cls = kt.derive_class_name(name, reserved=reserved)
    assert kt.validate_class_name(cls, reserved=reserved), cls


def test_class_names() -> None:
    assert kt.derive_class_name("mobilenet_v2") == "MobilenetV2"
    assert kt.derive_class_name("3d-unet") == "Model3dUnet"
    assert kt.derive_class_name("") == "Model"
    assert kt.derive_class_name("inputs", reserved={"Inputs"}) == "InputsModel"
    assert not kt.validate_class_name("myModel")
    assert not kt.validate_class_name("Outputs", reserved={"Outputs"})
    assert kt.validate_class_name("MyModel")


def test_kebab_and_snake() -> None:
    assert kt.kebab("TinyCnn") == "tiny-cnn"
    assert kt.snake("TinyCnn") == "tiny_cnn"
    assert kt.kebab("") == "model"


def test_filters_exported() -> None:
    assert set(kt.FILTERS) >= {"kt_str", "kt_ident", "kt_comment"}
    assert kt.FILTERS["kt_str"]("$") == '"\\$"'


def test_android_context_carries_both_tolerances() -> None:
    from mobilegen.targets.android.project import android_context

    ctx = android_context(_spec(), AndroidOptions(nnapi=True, nnapi_flags=("fp16",)))
    assert (ctx["atol"], ctx["rtol"], ctx["accel_atol"], ctx["accel_rtol"]) == ("0.0001", "0.001", "0.01", "0.01")
    assert "USE_FP16" in ctx["accel_tolerance_reason"]
    plain = android_context(_spec(), AndroidOptions(xnnpack=True))
    assert (plain["accel_atol"], plain["accel_rtol"]) == ("0.0001", "0.001")
    assert "float32" in plain["accel_tolerance_reason"]
