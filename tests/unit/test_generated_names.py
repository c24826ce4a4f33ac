"""Names derived from tensors never collide with each other nor with what the templates declare.

Android: every tensor gets a property P, a shape property P + "Shape", and constants C_NAME / C_SHAPE
in the companion. iOS: every tensor gets a property S and a shape S + "Shape" (Input/Output property
and declared-shape constant of the class). These must be pairwise distinct, disjoint from every member
the templates declare in the same scope, and a shape name must always belong to its own tensor
(QA: an input named ``model`` gave MODEL_NAME twice; outputs ``out`` / ``out_shape`` gave ``outShape``
= out_shape's data and ``outShape_2`` = out's shape).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from android_specs import make_specs as android_specs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ios_specs import make_specs as ios_specs

from mobilegen.artifacts import ProjectSpec
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.targets.android import project as android
from mobilegen.targets.ios import project as ios

KOTLIN_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Names of members the templates declare, in both languages' spellings, plus near misses.
TRICKY = [
    "model",
    "MODEL_NAME",
    "model_name",
    "modelName",
    "MODEL_ASSET",
    "input_names",
    "INPUT_NAMES",
    "output_names",
    "close",
    "run",
    "options",
    "env",
    "session",
    "sessionOptions",
    "inputs",
    "outputs",
    "Companion",
    "companion",
    "TAG",
    "tag",
    "atol",
    "ATOL",
    "accelerated_atol",
    "ACCELERATED_RTOL",
    "cpu_only",
    "lock",
    "closed",
    "create",
    "activeProviders",
    "out",
    "out_shape",
    "outShape",
    "out_shape_shape",
    "out_2",
    "out_name",
    "x",
    "x_2",
    "X_SHAPE",
    "prediction",
    "warmUp",
    "init",
    "self",
    "Type",
    "configuration",
    "modelURL",
    "",
    "1",
    "1_name",
    "é",
]

PAIRS = [
    ("out", "out_shape"),
    ("out_shape", "out"),
    ("out", "outShape", "outShapeShape"),
    ("model", "model_2", "MODEL_2"),
    ("x", "x", "x_2", "x_2_shape"),
    ("a.b", "a_b", "aB", "aB_2Shape"),
    ("xYZ", "xYz"),
    ("tag", "TAG", "tag_name"),
]


# --- Android -----------------------------------------------------------------------------------------


def _android_base(tmp: Path) -> ProjectSpec:
    spec, _ = android_specs(tmp)["android_cnn"]
    return spec


def _io(inputs: list[str], outputs: list[str]) -> IOSpec:
    return IOSpec(
        tuple(TensorSpec(n, "float32", (1, "n")) for n in inputs),
        tuple(TensorSpec(n, "float32", (2,)) for n in outputs),
    )


def _check_android(ctx: dict[str, Any]) -> None:
    tensors = ctx["inputs"] + ctx["outputs"]
    class_name = ctx["class_name"]
    members: list[str] = []
    consts: list[str] = []
    for t in tensors:
        # A shape property / constant always belongs to its own tensor.
        assert t["shape_prop"] == t["prop"] + "Shape"
        stem = t["name_const"].removesuffix("_NAME")
        assert t["name_const"] == stem + "_NAME" and t["shape_const"] == stem + "_SHAPE"
        members += [t["prop"], t["shape_prop"]]
        consts += [t["name_const"], t["shape_const"]]
    for name in members + consts:
        assert KOTLIN_IDENT.match(name), name
    assert len(set(members)) == len(members), members
    assert len(set(consts)) == len(consts), consts
    assert not set(members) & (android.reserved_members() | {class_name})
    assert not set(consts) & android.fixed_constants()


@pytest.mark.parametrize("name", TRICKY)
@pytest.mark.parametrize("role", ["input", "output"])
def test_android_single_tricky_name(name: str, role: str, tmp_path: Path) -> None:
    spec = _android_base(tmp_path)
    io = _io([name], ["y"]) if role == "input" else _io(["x"], [name])
    ctx = android.android_context(replace(spec, io=io), android.AndroidOptions())
    _check_android(ctx)


def test_android_model_input_does_not_take_model_name(tmp_path: Path) -> None:
    spec = _android_base(tmp_path)
    ctx = android.android_context(replace(spec, io=_io(["model"], ["MODEL_NAME"])), android.AndroidOptions())
    (inp,), (out,) = ctx["inputs"], ctx["outputs"]
    assert inp["prop"] == "model" and inp["name_const"] == "MODEL_2_NAME" and inp["shape_const"] == "MODEL_2_SHAPE"
    assert out["name_const"] == "MODEL_NAME_NAME"


def test_android_out_and_out_shape(tmp_path: Path) -> None:
    spec = _android_base(tmp_path)
    ctx = android.android_context(replace(spec, io=_io(["x"], ["out", "out_shape"])), android.AndroidOptions())
    out, out_shape = ctx["outputs"]
    assert (out["prop"], out["shape_prop"]) == ("out", "outShape")
    assert (out_shape["prop"], out_shape["shape_prop"]) == ("outShape_2", "outShape_2Shape")
    assert (out["name_const"], out["shape_const"]) == ("OUT_NAME", "OUT_SHAPE")
    assert (out_shape["name_const"], out_shape["shape_const"]) == ("OUT_SHAPE_2_NAME", "OUT_SHAPE_2_SHAPE")


@pytest.mark.parametrize("names", PAIRS)
def test_android_colliding_families(names: tuple[str, ...], tmp_path: Path) -> None:
    spec = _android_base(tmp_path)
    ctx = android.android_context(replace(spec, io=_io(["x"], list(names))), android.AndroidOptions())
    _check_android(ctx)


_names = st.one_of(st.sampled_from(TRICKY), st.text(max_size=8))


@given(st.lists(_names, min_size=1, max_size=5), st.lists(_names, min_size=1, max_size=5))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_android_names_never_collide(tmp_path: Path, inputs: list[str], outputs: list[str]) -> None:
    spec = _android_base(tmp_path / "spec")
    outputs = [n for n in dict.fromkeys(outputs) if n not in inputs] or ["zz"]
    ctx = android.android_context(replace(spec, io=_io(list(dict.fromkeys(inputs)), outputs)), android.AndroidOptions())
    _check_android(ctx)


_KOTLIN_DECL = re.compile(r"^( {0,8})(?:[a-z@]\w*(?:\([^)]*\))? +)*?(?:val|var|fun|class|object) +(?:[\w.]+\.)?(\w+)")


def test_android_reserved_names_cover_the_template(tmp_path: Path) -> None:
    """Every member the wrapper file declares (file, class, companion and nested-class level) is either
    tensor-derived or in the reserved lists — so the lists cannot fall behind the template."""
    spec, opts = android_specs(tmp_path / "in")["android_two_input"]
    io = IOSpec(
        (TensorSpec("ids", "int64", (1, "seq")), TensorSpec("mask", "float32", (1, 8))),
        (TensorSpec("logits", "float32", (1, 2)),),
    )
    spec = replace(spec, io=io)
    ctx = android.android_context(spec, opts)
    android.render_android(spec, opts, tmp_path / "out")
    wrapper = next((tmp_path / "out").rglob(f"{ctx['class_name']}.kt"))
    declared = set()
    skipping = False
    for line in wrapper.read_text().splitlines():
        # Options, a provider's nested enum and ReusedInputs are scopes of their own that no tensor-derived name
        # enters (ReusedInputs' own b<i>/t<i>/fill<i> members shadow any outer name inside it).
        if m_scope := re.match(r"^    (?:data class (Options)|enum class (\w+)|private class (ReusedInputs))\b", line):
            skipping = not line.rstrip().endswith("}")
            declared.add(next(g for g in m_scope.groups() if g))
            continue
        if skipping:
            skipping = line != "    }"
            continue
        m = _KOTLIN_DECL.match(line)
        if m and len(m.group(1)) % 4 == 0:
            declared.add(m.group(2))
    derived = {n for t in ctx["inputs"] + ctx["outputs"] for n in (t["prop"], t["shape_prop"], t["name_const"], t["shape_const"])}
    # the input contract's constants (issue 31): the const stem + each contract suffix
    derived |= {t["contract"]["const"] + s for t in ctx["inputs"] for s in android.CONST_SUFFIXES[2:]}
    known = (
        android.reserved_members()
        | android.fixed_constants()
        | android.class_names()
        | {ctx["class_name"], ctx["exception_name"]}
    )
    assert {"ids", "idsShape", "IDS_NAME", "LOGITS_SHAPE", "create", "ATOL", "ACCELERATED_ATOL"} <= declared
    assert declared - derived - known == set()


# --- iOS -----------------------------------------------------------------------------------------------


def _ios_base(tmp: Path) -> ProjectSpec:
    spec, _ = ios_specs(tmp)["ios_cnn"]
    return spec


def _ios_ctx(spec: ProjectSpec, io: IOSpec) -> dict[str, Any]:
    return ios.ios_context(replace(spec, io=io), ios.IosOptions(), model_sha256="0" * 64)


def _check_ios(ctx: dict[str, Any]) -> None:
    tensors = ctx["inputs"] + ctx["outputs"]
    names: list[str] = []
    for t in tensors:
        assert t["shape_ident"] == t["ident"] + "Shape"
        names += [t["ident"], t["shape_ident"]]
    assert len(set(names)) == len(names), names
    assert not set(names) & (ios.generated_members() | {ctx["class_name"]})


@pytest.mark.parametrize("name", TRICKY)
@pytest.mark.parametrize("role", ["input", "output"])
def test_ios_single_tricky_name(name: str, role: str, tmp_path: Path) -> None:
    io = _io([name], ["y"]) if role == "input" else _io(["x"], [name])
    _check_ios(_ios_ctx(_ios_base(tmp_path), io))


def test_ios_out_and_out_shape(tmp_path: Path) -> None:
    ctx = _ios_ctx(_ios_base(tmp_path), _io(["x"], ["out", "out_shape"]))
    out, out_shape = ctx["outputs"]
    assert (out["ident"], out["shape_ident"]) == ("out", "outShape")
    assert (out_shape["ident"], out_shape["shape_ident"]) == ("outShape_2", "outShape_2Shape")


@pytest.mark.parametrize("names", PAIRS)
def test_ios_colliding_families(names: tuple[str, ...], tmp_path: Path) -> None:
    _check_ios(_ios_ctx(_ios_base(tmp_path), _io(["x"], list(names))))


@given(st.lists(_names, min_size=1, max_size=5), st.lists(_names, min_size=1, max_size=5))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_ios_names_never_collide(tmp_path: Path, inputs: list[str], outputs: list[str]) -> None:
    _check_ios(_ios_ctx(_ios_base(tmp_path / "spec"), _io(inputs, outputs)))


_SWIFT_TOP = re.compile(r"^public (?:final )?(?:struct|class|enum) (\w+)")
_SWIFT_DECL = re.compile(
    r"^    (?:@\w+ +)*(?:(?:public|private|internal|fileprivate|static|final|override|mutating) +)*"
    r"(?:let|var|func|enum|struct|class|case)\s+(\w+)"
)


def test_ios_reserved_names_cover_the_template(tmp_path: Path) -> None:
    """Every member of the wrapper class and of the Input / Output structs is either tensor-derived or
    in ios.generated_members() — so the list cannot fall behind the template."""
    spec = _ios_base(tmp_path / "in")
    io = IOSpec((TensorSpec("ids", "int64", (1, "seq")),), (TensorSpec("logits", "float32", (1, 2)),))
    spec = replace(spec, io=io)
    ctx = _ios_ctx(spec, io)
    ios.render_ios(spec, ios.IosOptions(coreml=True), tmp_path / "out")
    class_name = ctx["class_name"]
    wrapper = tmp_path / "out" / "Sources" / class_name / f"{class_name}.swift"
    scopes = {class_name, class_name + "Input", class_name + "Output"}
    declared: set[str] = set()
    current = None
    for line in wrapper.read_text().splitlines():
        top = _SWIFT_TOP.match(line)
        if top:
            current = top.group(1)
            continue
        m = _SWIFT_DECL.match(line)
        if current in scopes and m:
            declared.add(m.group(1))
        if current in scopes and re.match(r"^    (?:public |private )?(?:convenience )?init\(", line):
            declared.add("init")
    derived = {n for t in ctx["inputs"] + ctx["outputs"] for n in (t["ident"], t["shape_ident"])}
    assert {"ids", "idsShape", "logitsShape", "prediction", "modelName", "init"} <= declared
    assert declared - derived - ios.generated_members() == set()


def test_android_class_names_cannot_shadow_a_type_the_templates_use() -> None:
    # Every capitalised name the Kotlin templates use as a type (before `(`, `<`, `?`, `.`, `::`, after
    # `: ` or `is `/`as `) is reserved: a model named after it ("int" -> Int) must not shadow it.
    from mobilegen.render.lang import kotlin as kt
    from mobilegen.render.tree import templates_root

    # the Android templates and every provider's Android fragments, which the wrapper files include
    roots = [templates_root() / "android", *sorted((templates_root() / "providers").glob("*/android"))]
    paths = [p for root in roots for p in (*root.rglob("*.kt"), *root.rglob("*.kt.jinja"))]  # not the Gradle scripts (.kts)
    assert len(paths) > 20 and any("providers" in p.parts for p in paths)
    used: set[str] = set()
    for path in paths:
        text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', path.read_text(encoding="utf-8"))
        text = re.sub(r"//.*", "", re.sub(r"\{[{%#].*?[}%#]\}", "", text))
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)  # KDoc and block comments
        used |= set(re.findall(r"\b([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)\s*(?:[(<?.]|::)", text))
        used |= set(re.findall(r"(?::|\bis|\bas)\s+([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)\b", text))
    missing = sorted(used - android.class_names())
    assert not missing, f"reserve these in android.FIXED_CLASS_NAMES (or the provider's kotlin_classes): {missing}"
    assert kt.derive_class_name("int", reserved=android.class_names()) != "Int"
    assert kt.class_name_problems("String", reserved=android.class_names())
