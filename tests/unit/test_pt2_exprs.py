"""What text from a .pt2 torch may evaluate (shape expressions, guards) or paste into code (names)."""

from __future__ import annotations

import pytest
import sympy
from torch.utils._sympy import functions as tf

from mobilegen.load.pt2_exprs import (
    guard_refusal,
    is_inert_string,
    is_safe_guard,
    is_safe_sympy,
    sympy_refusal,
)

s0 = sympy.Symbol("s0", positive=True, integer=True)
s1 = sympy.Symbol("s77", integer=True, nonnegative=True)


@pytest.mark.parametrize(
    "expr",
    [
        s0,
        2 * s0,
        s0 + s1 - 1,
        s0**2,
        tf.FloorDiv(s0, 2),
        tf.CeilDiv(s0, 3),
        tf.Mod(s0, 2),
        tf.PythonMod(s0, 5),
        sympy.Max(1, s0),
        sympy.Min(s0, s1),
        sympy.Eq(tf.Mod(s0, 2), 0),
        sympy.Ne(s0, 1),
        s0 < s1,
        sympy.And(s0 >= 2, s0 <= 64),
        sympy.Rational(1, 2) * s0,
        sympy.Float(0.5) * s0,
        sympy.oo,
        -sympy.oo,
        sympy.Piecewise((1, s0 > 2), (0, True)),
        tf.ToFloat(s0),
        tf.TruncToInt(tf.ToFloat(s0)),
        s0 / 2,  # Pow(Integer(2), Integer(-1))
        sympy.sqrt(s0),  # Pow(..., Rational(1, 2))
        tf.PowByNatural(s0, 3),
        sympy.Integer(2**63 - 1) * s0,
        tf.FloorDiv(tf.FloorDiv(tf.FloorDiv(s0 - 3, 2) - 2, 2) - 2, 2) ** 2,  # strided convolutions
    ],
)
def test_what_torch_writes_is_accepted(expr: sympy.Basic) -> None:
    text = sympy.srepr(expr)  # the form torch.export.save writes
    assert is_safe_sympy(text), text


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "(__import__('os').system('true') and 0) or Symbol('s0', positive=True)",
        "Symbol('x').__class__",
        "S('1 + 1')",
        "sympify('1')",
        "parse_expr('1')",
        "eval('1')",
        "getattr(Integer(1), 'p')",
        "open('/etc/passwd')",
        "Symbol('a b')",
        "Symbol('__class__')",
        "Symbol(name='x')",
        "Symbol('x', positive='yes')",
        "Symbol('x')(1)",
        "Float('1e5; import os')",
        "Integer('1')",
        "lambda: 1",
        "[Integer(1)][0]",
        "Integer(1) if True else Integer(0)",
        "Symbol('x',\n positive=True)",
        "\uff33ymbol('x')",
        "Add(" * 5000 + "1" + ")" * 5000,
        "Integer(1) @ Integer(2)",
        "Function('f')",
    ],
)
def test_code_is_refused(text: str) -> None:
    assert not is_safe_sympy(text)


@pytest.mark.parametrize(
    "guard",
    [
        "(L['x'].size()[0] // 2) <= L['x'].size()[0]",
        "L['x'].size()[0] == L['y'].size()[1]",
        "2 <= L['x'].size()[0] and L['x'].size()[0] <= 64",
        "(L['d']['k'].size()[0] % 2) == 0",
        "L['xs'][1].size()[0] != 1",
        "math.floor(L['x'].size()[0] / 2) >= 1",
        "max(1, L['x'].stride()[0]) == 4",
        "L['x'].storage_offset() == 0",
        "L['n'] <= math.inf",
    ],
)
def test_size_guards_are_accepted(guard: str) -> None:
    assert is_safe_guard(guard)


@pytest.mark.parametrize(
    "guard",
    [
        "__import__('os').system('true') == 0",
        "L['x'].__class__ == 1",
        "L['x'].size()[0].bit_length() == 1",
        "L[\"a'b\"].size()[0] == 1",
        "L['x'].size() == (1, 2)",
        "open('f') is None",
        "eval('1') == 1",
        "math.system(1) == 0",
        "torch.load('x') is None",
        "getattr(L, 'x') == 1",
        "L['x'].size(dim=0) == 1",
        "x.size()[0] == 1",
    ],
)
def test_other_guards_are_refused(guard: str) -> None:
    assert not is_safe_guard(guard)


@pytest.mark.parametrize(("text", "ok"), [("l.weight", True), ("layers.0.conv-1", True), ('a")+b', False), ("a'b", False), ("a\\b", False), ("a\nb", False), (3, False)])
def test_inert_strings(text: object, ok: bool) -> None:
    assert is_inert_string(text) is ok


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("9**9**9**9", "exponent is not a literal number"),
        ("9**9**9**9 > 0", "exponent is not a literal number"),
        ("Pow(Integer(9), Pow(Integer(9), Integer(9)))", "exponent is not a literal number"),
        ("PowByNatural(Integer(2), Integer(100000000000))", "exponent is not a literal number"),
        ("Pow(Symbol('s0', positive=True), Symbol('s1', positive=True))", "exponent is not a literal number"),
        ("Pow(Pow(Pow(Pow(Integer(9223372036854775807), 64), 64), 64), 64)", "more than 1048576 bits"),
        ("LShift(Integer(1), Integer(1000000000000000000))", "left shift whose count"),
        ("RoundDecimal(Integer(1), Integer(-1000000000000000000))", "number of digits"),
        ("Integer(99999999999999999999999)", "larger than 2**63"),
        ("(1,)*2**40", "repeats or combines a sequence"),
        ("Float('1e99999')", "not plain arithmetic"),  # sympy's exact parse alone takes most of a second
        ("Float('1.5', precision=100000000)", "not plain arithmetic"),
        ("Add(" * 180 + "1" + ")" * 180, "not plain arithmetic"),  # nests deeper than MAX_DEPTH
        ("-" * 1000 + "1", "not plain arithmetic"),
    ],
)
def test_unbounded_arithmetic_is_refused(text: str, needle: str) -> None:
    why = sympy_refusal(text)
    assert why is not None and needle in why


@pytest.mark.parametrize(
    ("guard", "needle"),
    [
        ("L['x'].size()[0] ** 9**9**9 > 0", "exponent is not a literal number"),
        ("9**9**9**9 > 0", "exponent is not a literal number"),
        ("(L['x'].size()[0] << L['y'].size()[0]) > 1", "left shift whose count"),
        ("round(L['x'].size()[0], -10**18) == 0", "number of digits"),
        ("L['x'].size()[0] == 99999999999999999999999", "larger than 2**63"),
    ],
)
def test_unbounded_guards_are_refused(guard: str, needle: str) -> None:
    why = guard_refusal(guard)
    assert why is not None and needle in why


def test_bounded_powers_are_accepted() -> None:
    assert sympy_refusal("Pow(Symbol('s0', positive=True, integer=True), Integer(2))") is None
    assert sympy_refusal("Integer(2)**Integer(64)") is None
    assert guard_refusal("L['x'].size()[0] ** 2 <= 4096") is None
