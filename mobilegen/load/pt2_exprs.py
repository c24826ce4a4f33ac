"""Decide whether text from a .pt2 file is inert when torch evaluates it or pastes it into Python code.

torch.export.load evaluates every symbolic shape expression with ``sympy.sympify`` (Python ``eval``), and
``ExportedProgram.module()`` turns the program's shape guards into Python it executes. These checks accept
what torch itself writes and refuse anything that could do more than build numbers and comparisons — and
any arithmetic that could not finish: exact integer powers make ``9**9**9**9`` run forever, so the size
of every number the text can build is bounded before anything evaluates it (:func:`_size_refusal`).
"""

from __future__ import annotations

import ast
import builtins
import keyword
import math
import re

MAX_EXPR = 10_000  # characters; real shape expressions are a few dozen
# Bounds on what a shape expression or guard may compute. torch writes sizes as int64 literals and powers
# with a literal exponent (``Pow(Symbol('s0', ...), Integer(2))`` for an area, ``Integer(-1)`` for a
# division); its deepest real expressions (a chain of strided convolutions) nest a few dozen calls.
MAX_INT = 2**63  # |integer literal|
MAX_EXPONENT = 64  # |literal exponent| of a power, literal count of a left shift, ndigits of a rounding
MAX_BITS = 1 << 20  # an upper bound on the size of any integer the expression can build (128 KiB)
MAX_DEPTH = 160  # syntax tree nesting (Python's own parser stops at 200 nested brackets)
MAX_NODES = 4_000  # syntax tree nodes
SYMBOL_BITS = 64  # a size symbol or input size stands for an int64
_FLOAT_TEXT = re.compile(r"[+-]?(\d{1,40}(\.\d{0,40})?|\.\d{1,40})([eE][+-]?\d{1,3})?")  # sympy's exact parse of
# "1e99999" alone takes most of a second: the decimal exponent stays within three digits


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
    Symbol's plain name or a Float's digits, calls only to sympy constructors or inert names — and of
    bounded size (:func:`sympy_size_refusal`)."""
    return _sympy_code_ok(text) and sympy_size_refusal(text) is None


def _sympy_code_ok(text: str) -> bool:
    if len(text) > MAX_EXPR or not (text.isascii() and text.isprintable()):
        return False
    try:
        tree = ast.parse(text, mode="eval")
        return _shallow(tree) and _sympy_ok(tree.body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def sympy_refusal(text: str) -> str | None:
    """Why torch must not evaluate the shape expression ``text`` (completes "the expression X ..."), or None."""
    if not _sympy_code_ok(text):
        return "is not plain arithmetic (torch evaluates it as Python)"
    if (why := sympy_size_refusal(text)) is not None:
        return f"{why}: evaluating it might never end"
    return None


def guard_refusal(text: str) -> str | None:
    """Why the shape guard ``text`` must not run (completes "the guard X ..."), or None."""
    if not _guard_code_ok(text):
        return "is not a plain size check (torch runs it as Python)"
    if (why := guard_size_refusal(text)) is not None:
        return f"{why}: checking it might never end"
    return None


def sympy_size_refusal(text: str) -> str | None:
    """Why evaluating the expression ``text`` could take unbounded time or memory, or None. For text that
    :func:`is_safe_sympy`'s other checks accept; anything that does not parse is "not arithmetic"."""
    return _parsed_size_refusal(text, _SYMPY_POWERS)


def guard_size_refusal(text: str) -> str | None:
    """:func:`sympy_size_refusal` for a shape guard (Python, which has the same exact integer powers)."""
    return _parsed_size_refusal(text, _GUARD_POWERS)


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
        if kw.arg is None or not isinstance(kw.value, ast.Constant):
            return False
        value = kw.value.value
        # assumptions (positive=True) are flags; Float's precision (in bits) is the one number torch writes
        if not (type(value) is bool or (kw.arg == "precision" and type(value) is int and 1 <= value <= 1024)):
            return False
    return all(_sympy_ok(a) for a in args)


def _string_arg_ok(func: str, value: str) -> bool:
    if func in ("Symbol", "Dummy"):
        return value.isidentifier() and not value.startswith("_") and not keyword.iskeyword(value)
    if func == "Float":
        return _FLOAT_TEXT.fullmatch(value) is not None
    return False


# ---- shape guards (what torch writes: "(L['x'].size()[0] // 2) <= L['x'].size()[0]") ---------------

_GUARD_BINOPS = (*_SYMPY_BINOPS, ast.LShift, ast.RShift)
_TENSOR_METHODS = frozenset({"size", "stride", "storage_offset", "dim", "numel"})
_GUARD_BUILTINS = frozenset({"max", "min", "abs", "int", "float", "bool", "round"})
_MATH_FUNCS = frozenset({"floor", "ceil", "trunc", "sqrt", "isnan", "isinf", "isfinite", "log2", "exp", "log", "pow"})
_MATH_VALUES = frozenset({"inf", "nan", "pi", "e"})
_TORCH_FUNCS = frozenset({"sym_max", "sym_min", "sym_float", "sym_int", "sym_sqrt", "sym_not", "sym_ite"})


def is_safe_guard(text: str) -> bool:
    """True when ``text`` only compares and combines sizes of the inputs (``L[...]``) with numbers, and
    of bounded size (:func:`guard_size_refusal`)."""
    return _guard_code_ok(text) and guard_size_refusal(text) is None


def _guard_code_ok(text: str) -> bool:
    if len(text) > MAX_EXPR or not (text.isascii() and text.isprintable()):
        return False
    try:
        tree = ast.parse(text, mode="eval")
        return _shallow(tree) and _guard_ok(tree.body)
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


# ---- bounded size (both kinds) -----------------------------------------------------------------------

# Calls whose second argument is an exponent, a shift count or a number of digits: it must be a small
# literal, because each can make a number as large as its value says (``Pow(9, 9**9)``, ``1 << 10**18``,
# ``round(1, -10**18)`` computes 10**(10**18)).
_SYMPY_POWERS = {"Pow": "exponent", "PowByNatural": "exponent", "FloatPow": "exponent", "LShift": "shift", "RoundDecimal": "digits"}
_GUARD_POWERS = {"round": "digits"}
_WHAT = {"exponent": "a power whose exponent", "shift": "a left shift whose count", "digits": "a rounding whose number of digits"}


class _TooBig(Exception):
    pass


def _shallow(tree: ast.AST) -> bool:
    """At most MAX_NODES nodes nested at most MAX_DEPTH deep (an iterative walk: no recursion limit)."""
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES or depth > MAX_DEPTH:
            return False
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return True


def _parsed_size_refusal(text: str, powers: dict[str, str]) -> str | None:
    try:
        tree = ast.parse(text, mode="eval")
        if not _shallow(tree):
            return f"nests deeper than {MAX_DEPTH} or has more than {MAX_NODES} parts"
        bits = _bits(tree.body, powers)
    except _TooBig as err:
        return str(err)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "is not arithmetic"
    if bits > MAX_BITS:
        return f"can build a number of about {bits} bits (at most {MAX_BITS})"
    return None


def _bits(node: ast.AST, powers: dict[str, str]) -> int:
    """An upper bound on the bit length of any integer evaluating ``node`` can build (symbols and input
    sizes count as int64); raises _TooBig for a literal or a power that is not bounded."""
    if isinstance(node, ast.Constant):
        if type(node.value) is int:
            if abs(node.value) > MAX_INT:
                raise _TooBig(f"has the integer {_digits(node.value)}, larger than 2**63")
            return max(1, node.value.bit_length())
        return SYMBOL_BITS if isinstance(node.value, float) else 1
    if isinstance(node, ast.BinOp):
        if isinstance(node.left, (ast.Tuple, ast.List)) or isinstance(node.right, (ast.Tuple, ast.List)):
            raise _TooBig("repeats or combines a sequence")  # (1,) * 2**40 would allocate it
        left = _bits(node.left, powers)
        if isinstance(node.op, ast.Pow):
            return left * math.ceil(_small_literal(node.right, "exponent")) + 1
        if isinstance(node.op, ast.LShift):
            return left + math.ceil(_small_literal(node.right, "shift"))
        return _total(left, _bits(node.right, powers))
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        args: list[ast.AST] = list(node.args)
        if name in powers and len(args) >= 2:
            limit = _small_literal(args[1], powers[name])
            base = _bits(args[0], powers)
            rest = _total(*(_bits(a, powers) for a in args[2:]))
            if powers[name] == "exponent":
                return _total(base * math.ceil(limit) + 1, rest)
            return _total(base + math.ceil(limit), rest)  # a shift adds its count; rounding adds digits' worth
        if not isinstance(node.func, ast.Name):
            args.insert(0, node.func)  # a tensor method or math./torch. function: its object's parts count too
        return _total(SYMBOL_BITS if not args else 0, *(_bits(a, powers) for a in args))
    if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
        return SYMBOL_BITS  # a symbol, a constant (oo, math.inf) or an input's size
    return _total(*(_bits(child, powers) for child in ast.iter_child_nodes(node)))


def _total(*parts: int) -> int:
    """A product's size is at most the sum of its factors' (and so is a sum's, comparison's, tuple's...)."""
    total = sum(parts)
    if total > MAX_BITS:
        raise _TooBig(f"can build a number of more than {MAX_BITS} bits")
    return total


def _small_literal(node: ast.AST, what: str) -> float:
    """|value| of a literal number written as torch writes one (``2``, ``-1``, ``Integer(2)``,
    ``Rational(1, 2)``, ``Float('0.5', precision=53)``), at most MAX_EXPONENT; anything else: _TooBig."""
    value = _literal(node)
    if value is None or not math.isfinite(value) or abs(value) > MAX_EXPONENT:
        raise _TooBig(f"has {_WHAT[what]} is not a literal number within ±{MAX_EXPONENT}")
    return abs(value)


def _literal(node: ast.AST) -> float | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _literal(node.operand)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and type(node.value) is not bool:
        return float(node.value) if abs(node.value) <= MAX_INT else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("Integer", "Float", "Rational"):
        parts: list[float] = []
        for arg in node.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and node.func.id == "Float":
                if _FLOAT_TEXT.fullmatch(arg.value) is None:
                    return None
                parts.append(float(arg.value))
            elif (v := _literal(arg)) is not None:
                parts.append(v)
            else:
                return None
        if node.func.id == "Rational" and len(parts) == 2 and parts[1] != 0:
            return parts[0] / parts[1]
        return parts[0] if len(parts) == 1 else None
    return None


def _digits(value: int) -> str:
    text = str(value) if value.bit_length() < 2000 else f"of {value.bit_length()} bits"
    return text if len(text) <= 30 else f"{text[:12]}...({len(text)} digits)"
