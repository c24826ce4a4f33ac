"""Decide whether text from a .pt2 file is inert when torch evaluates it or pastes it into Python code.

torch.export.load evaluates every symbolic shape expression with ``sympy.sympify`` (Python ``eval``), and
``ExportedProgram.module()`` turns the program's shape guards into Python it executes. These checks accept
what torch itself writes and refuse anything that could do more than build numbers and comparisons.
"""

from __future__ import annotations

import ast
import builtins
import keyword

MAX_EXPR = 10_000  # characters; real shape expressions are a few dozen


def is_inert_string(text: object) -> bool:
    """Safe inside a quoted Python literal: printable, no quote or backslash to end it early."""
    return isinstance(text, str) and text.isprintable() and not any(ch in text for ch in "'\"\\")


# ---- symbolic shape expressions (torch writes srepr: "Mul(Integer(2), Symbol('s0', positive=True))") ----

# Called by name in srepr output, or defined by torch's deserializer (its sympy_functions table).
_SYMPY_CALLS = frozenset(
    "Symbol Dummy Integer Rational Float Add Mul Pow Mod Max Min Abs floor ceiling sqrt "
    "Eq Ne Lt Le Gt Ge Equality Unequality StrictLessThan LessThan StrictGreaterThan GreaterThan "
    "And Or Not Xor Piecewise ExprCondPair ITE Tuple "
    "FloorDiv ModularIndexing Where PythonMod CleanDiv CeilToInt FloorToInt CeilDiv LShift RShift "
    "PowByNatural FloatPow FloatTrueDiv IntTrueDiv IsNonOverlappingAndDenseIndicator TruncToFloat "
    "TruncToInt RoundToInt RoundDecimal ToFloat Identity".split()
)
_SYMPY_VALUES = frozenset("true false oo zoo nan pi E I".split())
_SYMPY_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.BitAnd, ast.BitOr, ast.BitXor)
_UNARYOPS = (ast.USub, ast.UAdd, ast.Not, ast.Invert)
_CMPOPS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_known: frozenset[str] | None = None


def _known_names() -> frozenset[str]:
    """Names ``sympify`` resolves to real objects (its namespace is ``from sympy import *`` plus builtins);
    any other name becomes an inert Symbol or undefined Function."""
    global _known
    if _known is None:
        import sympy

        _known = frozenset(dir(builtins)) | frozenset(dir(sympy))
    return _known


def _sympy_name_ok(name: str) -> bool:
    if name in _SYMPY_CALLS or name in _SYMPY_VALUES:
        return True
    return not name.startswith("_") and name not in _known_names()


def is_safe_sympy(text: str) -> bool:
    """True when evaluating ``text`` as sympy does can only build sympy expressions: printable ASCII (sympy
    drops newlines, so none may hide anything), no attribute access, no subscripts, no strings except a
    Symbol's plain name or a Float's digits, calls only to sympy constructors or inert names."""
    if len(text) > MAX_EXPR or not (text.isascii() and text.isprintable()):
        return False
    try:
        tree = ast.parse(text, mode="eval")
        return _sympy_ok(tree.body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _sympy_ok(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float, bool)
    if isinstance(node, ast.Name):
        return _sympy_name_ok(node.id)
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, _SYMPY_BINOPS) and _sympy_ok(node.left) and _sympy_ok(node.right)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, _UNARYOPS) and _sympy_ok(node.operand)
    if isinstance(node, ast.Compare):
        return all(isinstance(op, _CMPOPS) for op in node.ops) and all(_sympy_ok(n) for n in (node.left, *node.comparators))
    if isinstance(node, ast.BoolOp):
        return all(_sympy_ok(v) for v in node.values)
    if isinstance(node, ast.Tuple):
        return all(_sympy_ok(e) for e in node.elts)
    if isinstance(node, ast.Call):
        return _sympy_call_ok(node)
    return False


def _sympy_call_ok(node: ast.Call) -> bool:
    if not (isinstance(node.func, ast.Name) and _sympy_name_ok(node.func.id)):
        return False
    args = list(node.args)
    first = args[0] if args else None
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        if not _string_arg_ok(node.func.id, first.value):
            return False
        args.pop(0)
    for kw in node.keywords:
        if kw.arg is None or not (isinstance(kw.value, ast.Constant) and type(kw.value.value) in (int, bool)):
            return False
    return all(_sympy_ok(a) for a in args)


def _string_arg_ok(func: str, value: str) -> bool:
    if func in ("Symbol", "Dummy"):
        return value.isidentifier() and not value.startswith("_") and not keyword.iskeyword(value)
    if func == "Float":
        return len(value) <= 64 and all(ch in "0123456789.eE+-" for ch in value)
    return False


# ---- shape guards (what torch writes: "(L['x'].size()[0] // 2) <= L['x'].size()[0]") ---------------

_GUARD_BINOPS = (*_SYMPY_BINOPS, ast.LShift, ast.RShift)
_TENSOR_METHODS = frozenset({"size", "stride", "storage_offset", "dim", "numel"})
_GUARD_BUILTINS = frozenset({"max", "min", "abs", "int", "float", "bool", "round"})
_MATH_FUNCS = frozenset({"floor", "ceil", "trunc", "sqrt", "isnan", "isinf", "isfinite", "log2", "exp", "log", "pow"})
_MATH_VALUES = frozenset({"inf", "nan", "pi", "e"})
_TORCH_FUNCS = frozenset({"sym_max", "sym_min", "sym_float", "sym_int", "sym_sqrt", "sym_not", "sym_ite"})


def is_safe_guard(text: str) -> bool:
    """True when ``text`` only compares and combines sizes of the inputs (``L[...]``) with numbers."""
    if len(text) > MAX_EXPR or not (text.isascii() and text.isprintable()):
        return False
    try:
        return _guard_ok(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _guard_ok(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float, bool) or node.value is None
    if isinstance(node, ast.Name):
        return node.id == "inf"
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name) and node.value.id == "math" and node.attr in _MATH_VALUES
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, _GUARD_BINOPS) and _guard_ok(node.left) and _guard_ok(node.right)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, _UNARYOPS) and _guard_ok(node.operand)
    if isinstance(node, ast.Compare):
        return all(isinstance(op, _CMPOPS) for op in node.ops) and all(_guard_ok(n) for n in (node.left, *node.comparators))
    if isinstance(node, ast.BoolOp):
        return all(_guard_ok(v) for v in node.values)
    if isinstance(node, ast.Subscript):
        return _input_ref_ok(node)
    if isinstance(node, ast.Call):
        return _guard_call_ok(node)
    return False


def _input_ref_ok(node: ast.AST) -> bool:
    """``L['x']['k'][0]`` or ``L['x'].size()[1]``: an input, or an index into one of its size tuples."""
    if isinstance(node, ast.Name):
        return node.id == "L"
    if isinstance(node, ast.Subscript):
        key = node.slice
        if not (isinstance(key, ast.Constant) and (type(key.value) is int or is_inert_string(key.value))):
            return False
        return _input_ref_ok(node.value)
    if isinstance(node, ast.Call):
        return _tensor_method_ok(node)
    return False


def _tensor_method_ok(node: ast.Call) -> bool:
    f = node.func
    return (
        isinstance(f, ast.Attribute)
        and f.attr in _TENSOR_METHODS
        and not isinstance(f.value, ast.Call)
        and _input_ref_ok(f.value)
        and not node.keywords
        and all(isinstance(a, ast.Constant) and type(a.value) is int for a in node.args)
    )


def _guard_call_ok(node: ast.Call) -> bool:
    f = node.func
    if node.keywords:
        return False
    if isinstance(f, ast.Name):
        allowed = f.id in _GUARD_BUILTINS
    elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        allowed = (f.value.id == "math" and f.attr in _MATH_FUNCS) or (f.value.id == "torch" and f.attr in _TORCH_FUNCS)
    else:
        return _tensor_method_ok(node)
    return allowed and all(_guard_ok(a) for a in node.args)
