"""Seeded mutation fuzzing of the CLI (issue 9): whatever the input, a run ends with a documented exit code,
one ``error:`` line and no traceback, leaves nothing behind and runs no code from the file.

Real artifacts are built once per module — two small ONNX models, a torch.export archive (.pt2) and a
mobilegen package (folder and zip, tests/package_fixtures.py) — and every example mutates one of them with
its own ``random.Random(seed)``: bytes (bit flips, truncation, splices), ONNX protos through onnx.helper
(weird names, dims, dtypes, opsets, attributes, external data, graph shape), .pt2 entries (JSON configs,
garbled pickles, a ``__reduce__`` payload), manifests (values, structure, raw text, resealed or not) and
zip entries. Then one real command runs in-process (``inspect``, ``check --json``, ``convert``, ``verify``).

The test id is the seed and a failure lists the mutations applied: that is the reproducer. Everything is
fixed by the seeds, so CI is reproducible; the whole file takes about a minute on 2 cores.
``MOBILEGEN_FUZZ_SCALE=N`` runs N times as many examples, ``MOBILEGEN_FUZZ_SEED=S`` other seeds (local use).
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import logging
import os
import random
import re
import shutil
import signal
import stat
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from package_fixtures import build_package, make_onnx_model  # noqa: E402
from torch_defects import torch_serde_log_off  # noqa: E402, F401 — a fixture

from mobilegen.cli import app  # noqa: E402
from mobilegen.package import canonical_json, write_zip  # noqa: E402

SCALE = max(1, int(os.environ.get("MOBILEGEN_FUZZ_SCALE", "1")))
SEED0 = int(os.environ.get("MOBILEGEN_FUZZ_SEED", "9000"))
DOCUMENTED_EXIT_CODES = {0, 2, 3, 4, 5, 6, 7, 8, 9}
EXAMPLE_TIMEOUT_S = 120  # a hang is a failure, not a stuck CI job
# onnxruntime's telemetry library writes $TMPDIR/.ses when onnxruntime is imported (once per process, and
# every later onnxruntime process reuses it): not mobilegen's staging.
ORT_SESSION_FILE = ".ses"

runner = CliRunner()


def seeds(offset: int, count: int) -> list[int]:
    return [SEED0 + offset + i for i in range(count * SCALE)]


# ---- the sandbox every example runs in ------------------------------------------------------------


class Hung(BaseException):
    """Raised by the per-example alarm (a BaseException, so no ``except Exception`` swallows it)."""


@dataclass
class Sandbox:
    work: Path  # inputs and outputs of this example
    tmpdir: Path  # $TMPDIR and tempfile.tempdir: must be empty after the run
    marker: Path  # a payload that runs creates this file
    steps: list[str] = field(default_factory=list)  # the mutations applied (the reproducer)

    def note(self, step: str) -> None:
        self.steps.append(step)


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    tmp = tmp_path / "TMPDIR"
    work = tmp_path / "work"
    tmp.mkdir()
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.chdir(work)
    # A logging handler bound to an earlier run's (closed) captured stderr must not print "Logging error"
    # tracebacks into this run's: torch's records are checked through run_cli's own handler instead.
    monkeypatch.setattr(logging, "raiseExceptions", False)

    def on_alarm(_signum: int, _frame: object) -> None:
        raise Hung(f"no result after {EXAMPLE_TIMEOUT_S} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(EXAMPLE_TIMEOUT_S)
    try:
        yield Sandbox(work, tmp, tmp_path / "MARKER")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else None
    except OSError:
        return None


_STAGING = re.compile(r"^\..*(\.tmp-|\.tmp$|\.lock$)")


def run_cli(sb: Sandbox, args: list[object], *, inputs: tuple[Path, ...] = ()) -> Any:
    """Run one command and check the contract every run must keep; returns the CliRunner result."""
    argv = [str(a) for a in args]
    before = {p: _digest(p) for p in inputs}
    # torch logs through its own handlers, bound to the stderr of whichever run first configured them: in
    # a real run those records reach stderr, so every record is collected here and counts as stderr output.
    logged = _LogCapture()
    loggers = [logging.getLogger()] + [
        lg for lg in logging.root.manager.loggerDict.values() if isinstance(lg, logging.Logger) and lg.handlers
    ]
    for lg in loggers:
        lg.addHandler(logged)
    try:
        result = runner.invoke(app, argv)
    except Hung as err:
        pytest.fail(f"{err}\n{_context(sb, argv, None)}")
    finally:
        for lg in loggers:
            lg.removeHandler(logged)
    ctx = _context(sb, argv, result) + logged.text()
    assert result.exit_code in DOCUMENTED_EXIT_CODES, ctx
    assert result.exception is None or isinstance(result.exception, SystemExit), ctx
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, ctx
    assert not any(r.exc_info for r in logged.records), "a traceback is logged on stderr\n" + ctx
    assert result.exit_code == 0 or not logged.records, "lines are logged on stderr besides the error line\n" + ctx
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    errors = [i for i, ln in enumerate(lines) if ln.startswith("error:")]
    if result.exit_code == 0:
        assert errors == [], ctx
    else:
        assert errors == [0], ctx  # the error line comes first and only once ...
        assert "internal error" not in lines[0], ctx
        assert all(ln.startswith("  ") for ln in lines[1:]), ctx  # ... then only its details (verify lists problems)
    if "--json" in argv:
        doc = json.loads(result.stdout)  # exactly one document, also on failure
        if result.exit_code not in (0, 7):
            assert doc.get("exit_code") == result.exit_code, ctx
    assert not sb.marker.exists(), "a payload from the input ran\n" + ctx
    assert sorted(set(os.listdir(sb.tmpdir)) - {ORT_SESSION_FILE}) == [], "left in $TMPDIR\n" + ctx
    left = [str(p.relative_to(sb.work)) for p in sb.work.rglob("*") if _STAGING.match(p.name)]
    assert left == [], "staging left behind\n" + ctx
    for p, digest in before.items():
        assert _digest(p) == digest, f"input {p.name} changed\n" + ctx
    return result


class _LogCapture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record not in self.records:  # the same record reaches every logger it propagates through
            self.records.append(record)

    def text(self) -> str:
        if not self.records:
            return ""
        return "\nlogged:\n" + "\n".join(f"  {r.name}: {r.getMessage()[:300]}" + (" (with a traceback)" if r.exc_info else "") for r in self.records)


def _context(sb: Sandbox, argv: list[str], result: Any) -> str:
    text = "mobilegen " + " ".join(argv) + "\nmutations:\n  " + "\n  ".join(sb.steps or ["(none)"])
    if result is not None:
        text += f"\nexit code {result.exit_code}\nstderr:\n{result.stderr[-3000:]}\nstdout:\n{result.stdout[:1500]}"
    return text


# ---- values that break things ---------------------------------------------------------------------

WEIRD_NAMES = [
    "", " ", "a\x00b", "../../evil", "/abs/name", "x" * 3000, "名前", "emoji😀", "line\nbreak", "tab\tx",
    "<script>alert(1)</script>", '"; rm -rf / #', "${HOME}", "%s%n", ".", "..", "0", "123abc", "class", "self",
    "__init__", "x:y", "a/b\\c", "\u202eRTL", "null", "x", "y", "two", "*/ /*", "`cmd`", "a' + 'b",
]
WEIRD_INTS = [0, 1, -1, 2, 3, 7, 255, 2**31 - 1, 2**31, -(2**31), 2**40, 2**62, 2**63 - 1, -(2**63)]
WEIRD_DIMS = [0, -1, -7, 1, 3, 2**31 - 1, 2**31, 2**40, 2**63 - 1]
WEIRD_OPSETS = [0, 1, 6, 7, 9, 12, 13, 20, 21, 24, 25, 26, 99, 2**31 - 1, 2**62]
WEIRD_IR = [0, 1, 2, 3, 4, 7, 8, 10, 11, 12, 13, 99, 2**40]
WEIRD_ELEM_TYPES = [0, 2, 3, 6, 7, 8, 9, 10, 11, 14, 16, 17, 19, 21, 23, 24, 999]


def weird_json(rng: random.Random, marker: Path) -> Any:
    """A JSON value mobilegen or torch never writes (including Python a careless reader would run)."""
    code = f"__import__('builtins').open({str(marker)!r}, 'w')"
    return rng.choice([
        None, True, False, 0, -1, 1.5, 2**64, -(2**70), 10**400, float("nan"), float("inf"), "", "x" * 10000,
        "../../../etc/passwd", "/etc/passwd", "a\x00b", code, f"s0 + {code}", "名前", [], {}, [[[[[]]]]],
        {"__class__": code}, [None] * 50, {"as_int": code}, "1e999", "nan",
    ])


class Mutator:
    """A seeded random source that records every mutation it applies."""

    def __init__(self, seed: int, sb: Sandbox) -> None:
        self.rng = random.Random(seed)
        self.sb = sb

    def bytes(self, data: bytes, donors: list[bytes], rounds: int | None = None) -> bytes:
        buf = bytearray(data)
        rng = self.rng
        for _ in range(rounds or rng.randint(1, 3)):
            op = rng.choice(["flip", "flip", "truncate", "splice", "insert", "delete", "overwrite", "duplicate"])
            n = len(buf)
            if op == "flip" and n:
                for _ in range(rng.choice([1, 1, 2, 8, 64])):
                    i, bit = rng.randrange(n), rng.randrange(8)
                    buf[i] ^= 1 << bit
                    self.sb.note(f"flip bit {bit} of byte {i}")
            elif op == "truncate":
                cut = rng.choice([0, 1, n // 2, max(0, n - 1), rng.randint(0, n)])
                del buf[cut:]
                self.sb.note(f"truncate to {cut} bytes")
            elif op == "splice" and donors:
                donor = rng.choice(donors)
                a = rng.randint(0, len(donor))
                b = rng.randint(a, min(len(donor), a + rng.choice([4, 64, 4096])))
                at = rng.randint(0, n)
                buf[at:at] = donor[a:b]
                self.sb.note(f"splice donor bytes [{a}:{b}] at {at}")
            elif op == "insert":
                at = rng.randint(0, n)
                chunk = rng.choice([b"\xff" * 16, b"\x00" * 16, b"\x80" * 10 + b"\x01", b"PK\x03\x04", b"\xff\xff\xff\xff\x0f"])
                buf[at:at] = chunk
                self.sb.note(f"insert {chunk[:8]!r}… at {at}")
            elif op == "delete" and n:
                a = rng.randrange(n)
                b = min(n, a + rng.choice([1, 4, 100]))
                del buf[a:b]
                self.sb.note(f"delete bytes [{a}:{b}]")
            elif op == "overwrite" and n:
                a = rng.randrange(n)
                val = rng.choice([0x00, 0xFF, 0x7F, 0x80])
                for i in range(a, min(n, a + rng.choice([1, 4, 8]))):
                    buf[i] = val
                self.sb.note(f"overwrite from byte {a} with {val:#x}")
            elif op == "duplicate" and n:
                a = rng.randrange(n)
                b = min(n, a + rng.choice([8, 256, 4096]))
                buf[b:b] = buf[a:b]
                self.sb.note(f"duplicate bytes [{a}:{b}]")
        return bytes(buf)


# ---- ONNX -----------------------------------------------------------------------------------------


def conv_model() -> onnx.ModelProto:
    """Conv → Relu → GlobalAveragePool → Flatten → Gemm → Softmax, with real weights (opset 13)."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(np.zeros(4, np.float32), "b"),
        numpy_helper.from_array(rng.standard_normal((5, 4)).astype(np.float32), "w2"),
        numpy_helper.from_array(np.ones(5, np.float32), "b2"),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "w2", "b2"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "conv",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 5])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.fixture(scope="module")
def onnx_models() -> list[onnx.ModelProto]:
    return [make_onnx_model(), conv_model()]


def _value_names(g: onnx.GraphProto) -> list[str]:
    names = {v.name for v in (*g.input, *g.output, *g.initializer)}
    for n in g.node:
        names.update(n.input)
        names.update(n.output)
    return sorted(x for x in names if x)


def _rename(g: onnx.GraphProto, old: str, new: str, everywhere: bool, rng: random.Random) -> None:
    places: list[Any] = [*g.input, *g.output, *g.initializer, *g.value_info]
    for v in places:
        if v.name == old and (everywhere or rng.random() < 0.5):
            v.name = new
    for n in g.node:
        for seq in (n.input, n.output):
            for i, x in enumerate(seq):
                if x == old and (everywhere or rng.random() < 0.5):
                    seq[i] = new


def _inline(g: onnx.GraphProto) -> list[onnx.TensorProto]:
    return [t for t in g.initializer if t.data_location != TensorProto.EXTERNAL]


def _pick_shape(rng: random.Random, g: onnx.GraphProto) -> Any:
    vi = rng.choice([*g.input, *g.output])
    return vi, vi.type.tensor_type.shape


def mutate_onnx(m: Mutator, model: onnx.ModelProto, folder: Path) -> None:
    """Apply one structured mutation to ``model`` (in place); may write external-data files into ``folder``."""
    rng, g, note = m.rng, model.graph, m.sb.note
    kind = rng.choice([
        "rename", "rename", "node-name", "dim", "dim", "rank", "elem-type", "opset", "ir", "domain-import",
        "attribute", "attribute", "op", "initializer", "external", "external", "drop-outputs", "drop-inputs",
        "drop-node", "dup-node", "cycle", "dangling-output", "extra-input", "no-nodes", "metadata",
        "value-info", "function", "subgraph", "chain",
    ])
    if kind == "rename":
        old, new = rng.choice(_value_names(g)), rng.choice(WEIRD_NAMES)
        everywhere = rng.random() < 0.7
        _rename(g, old, new, everywhere, rng)
        note(f"rename value {old!r} -> {new[:40]!r} ({'everywhere' if everywhere else 'in some places'})")
    elif kind == "node-name":
        node = rng.choice(g.node)
        node.name = rng.choice(WEIRD_NAMES)
        note(f"node {node.op_type} named {node.name[:40]!r}")
    elif kind == "dim":
        vi, shape = _pick_shape(rng, g)
        if not shape.dim:
            return
        d = rng.choice(shape.dim)
        if rng.random() < 0.6:
            d.dim_value = rng.choice(WEIRD_DIMS)
            note(f"{vi.name!r}: a dim = {d.dim_value}")
        else:
            d.dim_param = rng.choice(["", "batch", "N", "a b", "x" * 1000, "1", "-1", "名", "0x10", "__import__"])
            note(f"{vi.name!r}: a dim = {d.dim_param[:40]!r}")
    elif kind == "rank":
        vi, shape = _pick_shape(rng, g)
        choice = rng.choice(["clear", "add", "drop", "no-shape"])
        if choice == "clear":
            del shape.dim[:]
        elif choice == "add":
            shape.dim.add().dim_value = rng.choice([1, 2, 0])
        elif choice == "drop" and shape.dim:
            del shape.dim[-1]
        else:
            vi.type.tensor_type.ClearField("shape")
        note(f"{vi.name!r}: shape {choice}")
    elif kind == "elem-type":
        vi = rng.choice([*g.input, *g.output])
        vi.type.tensor_type.elem_type = rng.choice(WEIRD_ELEM_TYPES)
        note(f"{vi.name!r}: elem_type {vi.type.tensor_type.elem_type}")
    elif kind == "opset":
        op = next(o for o in model.opset_import if o.domain in ("", "ai.onnx"))
        op.version = rng.choice(WEIRD_OPSETS)
        note(f"default opset {op.version}")
    elif kind == "ir":
        model.ir_version = rng.choice(WEIRD_IR)
        note(f"ir_version {model.ir_version}")
    elif kind == "domain-import":
        if rng.random() < 0.5:
            del model.opset_import[:]
            note("no opset_import")
        else:
            model.opset_import.append(helper.make_opsetid(rng.choice(["", "com.evil", "ai.onnx.ml", "com.microsoft"]), rng.choice(WEIRD_OPSETS)))
            note(f"extra opset_import {model.opset_import[-1].domain!r} {model.opset_import[-1].version}")
    elif kind == "attribute":
        node = rng.choice(g.node)
        how = rng.choice(["int", "ints", "type", "unknown", "remove", "graph"])
        if how in ("int", "ints", "type", "remove") and node.attribute:
            attr = rng.choice(node.attribute)
            if how == "int":
                node.attribute.remove(attr)
                node.attribute.append(helper.make_attribute(attr.name, rng.choice(WEIRD_INTS)))
            elif how == "ints":
                node.attribute.remove(attr)
                values = [rng.choice(WEIRD_INTS) for _ in range(rng.choice([0, 1, 3, 9]))]
                node.attribute.append(helper.make_attribute(attr.name, values, attr_type=onnx.AttributeProto.INTS))
            elif how == "type":
                node.attribute.remove(attr)
                node.attribute.append(helper.make_attribute(attr.name, rng.choice(["x", 1.5, b"\x00"])))
            else:
                node.attribute.remove(attr)
            note(f"node {node.name!r}: attribute {attr.name} {how}")
        elif how == "graph":
            sub = helper.make_graph([], "sub", [], [])
            node.attribute.append(helper.make_attribute("then_branch", sub))
            note(f"node {node.name!r}: graph attribute")
        else:
            node.attribute.append(helper.make_attribute(rng.choice(["evil", "", "axis", "perm"]), rng.choice(WEIRD_INTS)))
            note(f"node {node.name!r}: attribute {node.attribute[-1].name!r} added")
    elif kind == "op":
        node = rng.choice(g.node)
        if rng.random() < 0.5:
            node.op_type = rng.choice(["", "Evil", "Loop", "If", "Scan", "Identity", "Conv", "Relu", "MatMul", "Neg\x00"])
        else:
            node.domain = rng.choice(["com.evil", "ai.onnx.ml", "com.microsoft", "ai.onnx.preview.training", "../x"])
        note(f"node {node.name!r}: op {node.domain!r}:{node.op_type!r}")
    elif kind == "initializer" and _inline(g):
        init = rng.choice(_inline(g))
        arr = numpy_helper.to_array(init)
        init.CopyFrom(numpy_helper.from_array(arr, init.name))
        how = rng.choice(["truncate", "dims", "dtype", "empty", "float_data"])
        if how == "truncate":
            init.raw_data = init.raw_data[: rng.randint(0, max(0, len(init.raw_data) - 1))]
        elif how == "dims":
            init.dims[:] = [rng.choice(WEIRD_DIMS[:6]) for _ in range(rng.randint(0, 4))]
        elif how == "dtype":
            init.data_type = rng.choice(WEIRD_ELEM_TYPES)
        elif how == "empty":
            init.ClearField("raw_data")
        else:
            init.float_data.extend([1.0, 2.0])
        note(f"initializer {init.name!r}: {how}")
    elif kind == "external" and _inline(g):
        _external(m, rng.choice(_inline(g)), folder)
    elif kind == "drop-outputs":
        del g.output[:]
        note("no graph outputs")
    elif kind == "drop-inputs":
        del g.input[:]
        note("no graph inputs")
    elif kind == "drop-node":
        node = rng.choice(g.node)
        g.node.remove(node)
        note(f"drop node {node.name!r}")
    elif kind == "dup-node":
        node = rng.choice(g.node)
        g.node.append(copy.deepcopy(node))
        note(f"duplicate node {node.name!r}")
    elif kind == "cycle":
        node = rng.choice(g.node)
        if node.input:
            node.input[0] = node.output[0]
            note(f"node {node.name!r} consumes its own output")
    elif kind == "dangling-output":
        g.output[0].name = "nowhere"
        note("graph output names a value nothing produces")
    elif kind == "extra-input":
        g.input.append(helper.make_tensor_value_info(rng.choice(WEIRD_NAMES) or "unused", TensorProto.FLOAT, [rng.choice(WEIRD_DIMS)]))
        note(f"extra graph input {g.input[-1].name[:40]!r}")
    elif kind == "no-nodes":
        del g.node[:]
        note("no nodes")
    elif kind == "metadata":
        model.producer_name = rng.choice(WEIRD_NAMES)
        prop = model.metadata_props.add()
        prop.key, prop.value = rng.choice(WEIRD_NAMES), rng.choice(WEIRD_NAMES)
        g.doc_string = rng.choice(WEIRD_NAMES)
        note("weird producer / metadata / doc_string")
    elif kind == "value-info":
        name = rng.choice(_value_names(g))
        g.value_info.append(helper.make_tensor_value_info(name, rng.choice([1, 7, 9]), [rng.choice(WEIRD_DIMS) for _ in range(rng.randint(0, 5))]))
        note(f"conflicting value_info for {name!r}")
    elif kind == "function":
        node = rng.choice(g.node)
        fn = helper.make_function("local.evil", "Fn", ["a"], ["b"], [helper.make_node(rng.choice(["Identity", "Evil", "Fn"]), ["a"], ["b"], domain=rng.choice(["", "local.evil"]))], [helper.make_opsetid("", 13)])
        model.functions.append(fn)
        model.opset_import.append(helper.make_opsetid("local.evil", 1))
        node.op_type, node.domain = "Fn", "local.evil"
        del node.attribute[:]
        note(f"node {node.name!r} calls a model-local function (body {fn.node[0].op_type})")
    elif kind == "subgraph":
        node = rng.choice(g.node)
        inner = helper.make_graph([helper.make_node("Identity", [node.input[0] if node.input else "x"], ["o"])], "inner", [], [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)])
        cond = numpy_helper.from_array(np.array(True), "cond_" + node.name)
        g.initializer.append(cond)
        node.CopyFrom(helper.make_node("If", [cond.name], list(node.output[:1]), name=node.name, then_branch=inner, else_branch=inner))
        note(f"node {node.name!r} replaced by an If whose branches capture an outer value")
    elif kind == "chain":
        out = g.output[0].name
        last = next((n for n in g.node if out in n.output), None)
        if last is None:
            return
        count = rng.choice([100, 2000])
        prev = "chain_0"
        last.output[list(last.output).index(out)] = prev
        for i in range(count):
            nxt = out if i == count - 1 else f"chain_{i + 1}"
            g.node.append(helper.make_node("Identity", [prev], [nxt], name=f"id{i}"))
            prev = nxt
        note(f"{count} Identity nodes before the output")


def _external(m: Mutator, init: onnx.TensorProto, folder: Path) -> None:
    """Point an initializer at external data: missing, escaping, absolute, a link, out of range."""
    rng = m.rng
    arr = numpy_helper.to_array(init)
    data = arr.tobytes()
    init.CopyFrom(numpy_helper.from_array(arr, init.name))
    init.ClearField("raw_data")
    init.data_location = TensorProto.EXTERNAL
    where = rng.choice(["weights.bin", "weights.bin", "missing.bin", "../escape.bin", "/etc/hostname", "sub/../weights.bin", "link.bin", "dir.bin", "", "a\x00b.bin"])
    offset = rng.choice([None, "0", "-1", "99999999999", "abc", "8"])
    length = rng.choice([None, str(len(data)), "0", "-5", str(2**40), "x"])
    (folder / "weights.bin").write_bytes(data + data)
    if where == "link.bin":
        outside = folder.parent / "outside.bin"
        outside.write_bytes(data)
        (folder / where).symlink_to(outside)
    elif where == "dir.bin":
        (folder / where).mkdir()
    (folder.parent / "escape.bin").write_bytes(data)
    for key, value in (("location", where), ("offset", offset), ("length", length)):
        if value is not None:
            entry = init.external_data.add()
            entry.key, entry.value = key, value
    m.sb.note(f"initializer {init.name!r}: external data location={where!r} offset={offset} length={length}")


def _onnx_command(rng: random.Random, model: Path, out: Path) -> tuple[list[object], tuple[Path, ...]]:
    choice = rng.choice(["inspect", "inspect", "inspect-json", "check", "check", "convert", "convert"])
    if choice == "inspect":
        return ["inspect", model], ()
    if choice == "inspect-json":
        return ["inspect", model, "--json"], ()
    if choice == "check":
        eps = rng.sample(["nnapi", "coreml", "xnnpack"], rng.randint(1, 3))
        return ["check", model, "--json", *(a for ep in eps for a in ("--ep", ep))], ()
    out.mkdir()
    return ["convert", model, "-o", out / "model.ort"], (out,)


def _check_outputs(result: Any, outs: tuple[Path, ...], sb: Sandbox, argv: list[object]) -> None:
    """convert writes exactly the .ort and its config on success, nothing on failure."""
    for out in outs:
        got = sorted(os.listdir(out))
        want = ["model.ort", "model.required_operators.config"] if result.exit_code == 0 else []
        assert got == want, _context(sb, [str(a) for a in argv], result)


@pytest.mark.parametrize("seed", seeds(0, 50))
def test_fuzz_onnx_bytes(seed: int, sandbox: Sandbox, onnx_models: list[onnx.ModelProto]) -> None:
    """Serialized ONNX with bit flips, truncations, splices: never exit 1, nothing left."""
    m = Mutator(seed, sandbox)
    donors = [x.SerializeToString() for x in onnx_models]
    base = m.rng.randrange(len(donors))
    sandbox.note(f"start from ONNX model #{base}")
    model = sandbox.work / "model.onnx"
    model.write_bytes(m.bytes(donors[base], donors))
    args, outs = _onnx_command(m.rng, model, sandbox.work / "out")
    result = run_cli(sandbox, args, inputs=(model,))
    _check_outputs(result, outs, sandbox, args)


@pytest.mark.parametrize("seed", seeds(1000, 130))
def test_fuzz_onnx_structure(seed: int, sandbox: Sandbox, onnx_models: list[onnx.ModelProto]) -> None:
    """ONNX protos edited through onnx.helper: names, dims, dtypes, opsets, attributes, external data."""
    m = Mutator(seed, sandbox)
    base = m.rng.randrange(len(onnx_models))
    sandbox.note(f"start from ONNX model #{base}")
    model = copy.deepcopy(onnx_models[base])
    folder = sandbox.work / "model"
    folder.mkdir()
    for _ in range(m.rng.choice([1, 1, 2, 3])):
        try:
            mutate_onnx(m, model, folder)
        except (IndexError, ValueError):  # nothing left to change that way (an earlier mutation emptied or broke it)
            sandbox.note("(a mutation found nothing to change)")
    data = model.SerializeToString()
    if m.rng.random() < 0.15:
        data = m.bytes(data, [], rounds=1)
    path = folder / "model.onnx"
    path.write_bytes(data)
    args, outs = _onnx_command(m.rng, path, sandbox.work / "out")
    result = run_cli(sandbox, args, inputs=(path, folder / "weights.bin"))
    _check_outputs(result, outs, sandbox, args)


@pytest.mark.parametrize("seed", seeds(4000, 40))
def test_fuzz_ort_bytes(seed: int, sandbox: Sandbox, package: Path, onnx_models: list[onnx.ModelProto]) -> None:
    """ORT-format (FlatBuffers) files with damaged bytes: `inspect` parses them itself."""
    m = Mutator(seed, sandbox)
    model = sandbox.work / "model.ort"
    model.write_bytes(m.bytes((package / "model" / "model.ort").read_bytes(), [x.SerializeToString() for x in onnx_models]))
    args: list[object] = ["inspect", model] + (["--json"] if m.rng.random() < 0.3 else [])
    run_cli(sandbox, args, inputs=(model,))


# ---- .pt2 archives ---------------------------------------------------------------------------------


class Payload:
    """Unpickles by running ``code`` (creates the sandbox's marker file), then returns ``value``."""

    def __init__(self, marker: Path, value: str = "None") -> None:
        self.code = f"(open({str(marker)!r}, 'w').close(), {value})[1]"

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (eval, (self.code,))


def _torch_saved(obj: object) -> bytes:
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


@pytest.fixture(scope="module")
def pt2_entries(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, bytes]]:
    """A real torch.export archive (dynamic batch, so it has shape expressions), as root + entries."""
    import torch

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.l = torch.nn.Linear(4, 3)
            self.register_buffer("scale", torch.tensor([2.0]))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (self.l(x) * self.scale).relu()

    path = tmp_path_factory.mktemp("pt2") / "net.pt2"
    torch.manual_seed(0)
    ep = torch.export.export(Net().eval(), (torch.randn(2, 4),), dynamic_shapes={"x": {0: torch.export.Dim("b")}})
    torch.export.save(ep, str(path))
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        root = names[0].split("/", 1)[0]
        return root, {n.split("/", 1)[1]: zf.read(n) for n in names}


def _json_paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    stack = [(node, prefix)]
    while stack:
        v, p = stack.pop()
        if p:
            yield p
        if isinstance(v, dict):
            stack.extend((v[k], (*p, k)) for k in v)
        elif isinstance(v, list):
            stack.extend((x, (*p, i)) for i, x in enumerate(v))


def _set_path(doc: Any, path: tuple[Any, ...], value: Any, delete: bool = False) -> None:
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value


def mutate_json_doc(m: Mutator, doc: Any, what: str) -> Any:
    """Replace, delete or retype one value somewhere in ``doc`` (returns the new doc)."""
    paths = list(_json_paths(doc))
    if not paths:
        return weird_json(m.rng, m.sb.marker)
    # Bias towards keys that matter to loaders: use_pickle, path_name, expr_str, target, names, versions.
    hot = [p for p in paths if isinstance(p[-1], str) and p[-1] in ("use_pickle", "path_name", "expr_str", "target", "name", "schema_version", "sha256", "size", "path", "dtype", "sizes", "as_int", "files", "executable", "kind", "format_version", "max_opset", "atol", "rtol", "inputs", "outputs", "shape", "mobile_runtimes")]
    path = m.rng.choice(hot) if hot and m.rng.random() < 0.7 else m.rng.choice(paths)
    if m.rng.random() < 0.15:
        _set_path(doc, path, None, delete=True)
        m.sb.note(f"{what}: delete {list(path)}")
        return doc
    value = weird_json(m.rng, m.sb.marker)
    if path[-1] == "use_pickle":
        value = True
    _set_path(doc, path, value)
    m.sb.note(f"{what}: set {list(path)[:8]} = {json.dumps(value)[:60]}")
    return doc


def mutate_pt2(m: Mutator, entries: dict[str, bytes]) -> None:
    rng, note, marker = m.rng, m.sb.note, m.sb.marker
    kind = rng.choice([
        "json", "json", "json", "target", "use-pickle", "sample-payload", "sample-garbled", "sample-other",
        "weight-bytes", "drop", "add", "meta-entry", "constant-payload", "legacy-version",
    ])
    if kind == "json":
        name = rng.choice([n for n in entries if n.endswith(".json")])
        try:
            doc = json.loads(entries[name])
        except ValueError:
            return
        entries[name] = json.dumps(mutate_json_doc(m, doc, name)).encode()
    elif kind == "target":
        doc = json.loads(entries["models/model.json"])
        nodes = doc["graph_module"]["graph"]["nodes"]
        node = rng.choice(nodes)
        node["target"] = rng.choice([
            "torch.serialization.os.system", "torch.load", "builtins.eval", "torch.ops.aten.add.Tensor",
            "torch.ops.aten.evil.default", "_operator.getitem", "math.sqrt", "#evil", "torch.ops.higher_order.cond", "",
        ])
        note(f"models/model.json: node {node.get('name')!r} target {node['target']!r}")
        entries["models/model.json"] = json.dumps(doc).encode()
    elif kind == "use-pickle":
        cfg = json.loads(entries["data/weights/model_weights_config.json"])
        meta = rng.choice(list(cfg["config"].values()))
        meta["use_pickle"] = True
        entries["data/weights/model_weights_config.json"] = json.dumps(cfg).encode()
        payload = rng.random() < 0.7
        entries[f"data/weights/{meta['path_name']}"] = _torch_saved(Payload(marker, "__import__('torch').zeros(3)") if payload else np.zeros(3))
        note(f"weight {meta['path_name']} use_pickle with {'a payload' if payload else 'a numpy array'}")
    elif kind == "sample-payload":
        entries["data/sample_inputs/model.pt"] = _torch_saved(Payload(marker, "((__import__('torch').zeros(2, 4),), {})"))
        note("sample inputs: a __reduce__ payload")
    elif kind == "sample-garbled":
        data = entries["data/sample_inputs/model.pt"]
        entries["data/sample_inputs/model.pt"] = m.bytes(data, [])
        note("sample inputs garbled (above)")
    elif kind == "sample-other":
        import torch

        obj = rng.choice([
            ((torch.zeros(2, 4),), {"x'+__import__('os').getcwd()+'": torch.zeros(1)}),
            ((torch.zeros(5, 7),), {}),
            ((), {}),
            ({"a": 1},),
            ((torch.zeros(2, 4, dtype=torch.int64),), {}),
            [torch.zeros(0)],
        ])
        entries["data/sample_inputs/model.pt"] = _torch_saved(obj)
        note(f"sample inputs: torch.save of {type(obj).__name__} {str(obj)[:80]}")
    elif kind == "weight-bytes":
        name = rng.choice([n for n in entries if n.startswith("data/weights/weight_")])
        entries[name] = m.bytes(entries[name], [])
        note(f"{name} garbled (above)")
    elif kind == "drop":
        name = rng.choice(sorted(entries))
        del entries[name]
        note(f"drop {name}")
    elif kind == "add":
        name = rng.choice(["data/aotinductor/model/model.so", "data/constants/custom_obj_0", "../../evil", "/abs", "models/second.json", "data/sample_inputs/second.pt"])
        entries[name] = rng.choice([b"", b"\x7fELF", entries["models/model.json"], _torch_saved(Payload(marker))])
        note(f"add entry {name}")
    elif kind == "meta-entry":
        name = rng.choice(["archive_format", "archive_version", ".data/version", "byteorder"])
        entries[name] = rng.choice([b"", b"big", b"pt3", b"99", b"-1", b"\xff\xfe", b"0" * 100])
        note(f"{name} = {entries[name][:20]!r}")
    elif kind == "constant-payload":
        cfg = {"config": {"evil": {"path_name": rng.choice(["custom_obj_0", "tensor_0", "opaque_obj_0", "../x"]), "use_pickle": True}}}
        entries["data/constants/model_constants_config.json"] = json.dumps(cfg).encode()
        entries[f"data/constants/{cfg['config']['evil']['path_name']}"] = _torch_saved(Payload(marker))
        note(f"constant {cfg['config']['evil']['path_name']} pickled with a payload")
    elif kind == "legacy-version":
        entries["/version"] = b"3\n"
        note("top-level 'version' entry (pre-2.8 layout)")


def _write_pt2(path: Path, root: str, entries: dict[str, bytes], m: Mutator) -> None:
    buf = io.BytesIO()
    new_root = m.rng.choice([root, root, root, "other", ""])
    if new_root != root:
        m.sb.note(f"archive root folder {new_root!r}")
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in entries.items():
            full = name[1:] if name.startswith("/") else (f"{new_root}/{name}" if new_root else name)
            zf.writestr(full, data)
    data = buf.getvalue()
    if m.rng.random() < 0.15:
        data = m.bytes(data, [])
    path.write_bytes(data)


@pytest.mark.parametrize("seed", seeds(2000, 70))
def test_fuzz_pt2(seed: int, sandbox: Sandbox, pt2_entries: tuple[str, dict[str, bytes]]) -> None:
    """torch.export archives with edited configs, pickles and entries: no payload runs without --trust-pickle."""
    m = Mutator(seed, sandbox)
    root, base = pt2_entries
    entries = dict(base)
    for _ in range(m.rng.choice([1, 1, 2])):
        mutate_pt2(m, entries)
    path = sandbox.work / "net.pt2"
    _write_pt2(path, root, entries, m)
    command = m.rng.choice(["inspect", "inspect", "inspect", "check", "convert"])
    outs: tuple[Path, ...] = ()
    if command == "inspect":
        args: list[object] = ["inspect", path, "--json"] if m.rng.random() < 0.3 else ["inspect", path]
    elif command == "check":
        args = ["check", path, "--json", "--ep", "xnnpack"]
    else:
        out = sandbox.work / "out"
        out.mkdir()
        args, outs = ["convert", path, "-o", out / "model.ort"], (out,)
    result = run_cli(sandbox, args, inputs=(path,))
    _check_outputs(result, outs, sandbox, args)


# ---- .pt2 hooks: pytree specs, shape expressions and guards, call targets (issue 24) -----------------
#
# The payload is a Python module in the example's folder (on sys.path, as the current folder is for
# `python -m mobilegen`) that creates the marker when imported: a spec hook that makes torch import it
# (an ``__enum__`` context, a defaultdict's default_factory_module) is caught by run_cli's marker check.


def payload_module(sb: Sandbox, seed: int) -> str:
    """Write a module that touches the marker when imported; returns its (per-example) name."""
    name = f"mg_fuzz_payload_{seed}"
    (sb.work / f"{name}.py").write_text(f"import enum\nopen({str(sb.marker)!r}, 'w').close()\n\nclass E(enum.Enum):\n    A = 1\n")
    return name


def _leaf() -> dict[str, Any]:
    return {"type": None, "context": None, "children_spec": []}


def mutate_spec(m: Mutator, doc: dict[str, Any], module: str) -> None:
    rng, note = m.rng, m.sb.note
    sig = doc["graph_module"]["module_call_graph"][0]["signature"]
    where = rng.choice(["in_spec", "out_spec"])
    protocol, root = json.loads(sig[where])
    enum = json.dumps({"__enum__": True, "fqn": f"{module}:E", "name": "A"})
    how = rng.choice(["enum-root", "enum-key", "defaultdict", "namedtuple", "unnamed", "weird-context", "weird-spec", "deep", "children"])
    if how == "enum-root":
        root = {"type": rng.choice(["builtins.tuple", "builtins.list"]), "context": enum, "children_spec": [root]}
    elif how == "enum-key":
        root = {"type": rng.choice(["builtins.dict", "collections.OrderedDict"]), "context": f"[{enum}]", "children_spec": [root]}
    elif how == "defaultdict":
        factory = {"default_factory_module": module, "default_factory_name": rng.choice(["E", "open"]), "dict_context": ["k"]}
        root = {"type": "collections.defaultdict", "context": factory, "children_spec": [root]}
    elif how == "namedtuple":
        root = {"type": "collections.namedtuple", "context": rng.choice([f"{module}.Pair", "torch.return_types.max", "", "x" * 3000]), "children_spec": [root, _leaf()]}
    elif how == "unnamed":
        root = {"type": rng.choice(["NO_SERIALIZED_TYPE_NAME_FOUND", f"{module}.Point", "builtins.set", "torch.Tensor", None]), "context": "null", "children_spec": [root]}
    elif how == "weird-context":
        value = weird_json(rng, m.sb.marker)
        root = {"type": rng.choice(["builtins.tuple", "builtins.dict", "collections.deque", "torch.Size"]), "context": rng.choice([json.dumps(value), value]), "children_spec": [root]}
    elif how == "deep":  # written as text: json.dumps itself would hit the recursion limit
        depth = rng.choice([50, 900, 5000])
        head = '{"type": "builtins.tuple", "context": "null", "children_spec": ['
        sig[where] = f"[{protocol}, " + head * depth + json.dumps(root) + "]}" * depth + "]"
        note(f"models/model.json: {where} nested {depth} deep")
        return
    elif how == "children":
        root = {"type": "builtins.dict", "context": json.dumps(["a", "b", "c"]), "children_spec": [root]}
    if how == "weird-spec":
        text: Any = rng.choice([weird_json(rng, m.sb.marker), "[1, {", json.dumps([2, root]), "[" * 20000 + "]" * 20000, json.dumps([1, root, 3])])
        sig[where] = text
    else:
        sig[where] = json.dumps([protocol, root])
    note(f"models/model.json: {where} {how}")


TOWERS = [
    "9**9**9**9", "Pow(Integer(9), Pow(Integer(9), Integer(9)))", "PowByNatural(Integer(2), Integer(1000000000000))",
    "LShift(Integer(1), Integer(1000000000000000000))", "RoundDecimal(Integer(1), Integer(-1000000000000000000))",
    "Pow(Pow(Pow(Pow(Integer(9223372036854775807), 64), 64), 64), 64)", "Float('1e99999')", "(1,)*2**40",
    "Integer(" + "9" * 5000 + ")", "Add(" * 180 + "1" + ")" * 180, "-" * 3000 + "1", "Float('1.5', precision=100000000)",
    "Mul(" + ", ".join(["Symbol('s0', positive=True, integer=True)"] * 200) + ")", "Max(" + ", ".join(f"Integer({i})" for i in range(500)) + ")",
]
GUARDS = [
    "9**9**9**9 > 0", "L['x'].size()[0] ** 9**9**9 > 0", "(L['x'].size()[0] << L['x'].size()[0]) > 1",
    "round(L['x'].size()[0], -10**18) == 0", "L['x'].size()[0] == " + "9" * 400, "(L['x'].size()[0] // 2) <= L['x'].size()[0]",
]


def mutate_expression(m: Mutator, doc: dict[str, Any], module: str) -> None:
    rng, note = m.rng, m.sb.note
    if rng.random() < 0.3:
        guard = rng.choice([*GUARDS, f"__import__({module!r}) is None"])
        doc["guards_code"] = [guard]
        note(f"models/model.json: guard {guard[:60]!r}")
        return
    places = [p for p in _json_paths(doc) if p[-1] == "expr_str"]
    path = rng.choice(places)
    value = rng.choice([*TOWERS, f"__import__({module!r}) and Symbol('s0', positive=True, integer=True)"])
    _set_path(doc, path, value)
    note(f"models/model.json: set {list(path)[-4:]} = {value[:60]!r}")


def mutate_call(m: Mutator, doc: dict[str, Any]) -> None:
    rng, note = m.rng, m.sb.note
    node = rng.choice(doc["graph_module"]["graph"]["nodes"])
    if rng.random() < 0.3:
        node["inputs"][0]["arg"] = {"as_operator": rng.choice(["torch.ops.aten.relu.default", "torch.serialization.os.system", "builtins.eval"])}
        note(f"models/model.json: node {node.get('name')!r} gets a function argument")
        return
    node["target"] = rng.choice([
        "torch.ops.aten.from_file.default", "torch.ops.aten.save.default", "torch.ops.aten._print.default",
        "torch.ops.higher_order.while_loop", "torch.ops.higher_order.flat_apply", "torch.ops.aten._reshape_alias.default",
        "torch.ops.mylib.evil.default", "torch.ops.load_library", "torch.ops.aten.add", "torch.ops.aten.mul.Tensor",
    ])
    note(f"models/model.json: node {node.get('name')!r} target {node['target']!r}")


@pytest.mark.parametrize("seed", seeds(6000, 30))
def test_fuzz_pt2_hooks(seed: int, sandbox: Sandbox, pt2_entries: tuple[str, dict[str, bytes]], monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.export archives with hostile pytree specs, shape expressions, guards and call targets: no
    payload module is imported, nothing hangs, every run ends with one line."""
    m = Mutator(seed, sandbox)
    module = payload_module(sandbox, seed)
    monkeypatch.syspath_prepend(str(sandbox.work))
    root, base = pt2_entries
    entries = dict(base)
    doc = json.loads(entries["models/model.json"])
    for _ in range(m.rng.choice([1, 1, 2])):
        kind = m.rng.choice(["spec", "spec", "expression", "call"])
        if kind == "spec":
            mutate_spec(m, doc, module)
        elif kind == "expression":
            mutate_expression(m, doc, module)
        else:
            mutate_call(m, doc)
    entries["models/model.json"] = json.dumps(doc).encode()
    path = sandbox.work / "net.pt2"
    with zipfile.ZipFile(path, "w") as zf:  # an intact archive: the loader must reach the program's JSON
        for name, data in entries.items():
            zf.writestr(f"{root}/{name}", data)
    command = m.rng.choice(["inspect", "inspect", "check", "convert"])
    args: list[object] = {"inspect": ["inspect", path], "check": ["check", path, "--json", "--ep", "xnnpack"], "convert": ["convert", path, "-o", sandbox.work / "m.ort"]}[command]
    run_cli(sandbox, args, inputs=(path,))
    assert module not in sys.modules, "the payload module was imported\n" + _context(sandbox, [str(a) for a in args], None)


def test_the_spec_payload_is_live(tmp_path: Path, pt2_entries: tuple[str, dict[str, bytes]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Control for test_fuzz_pt2_hooks: torch.export.load imports the payload module an __enum__ spec names."""
    import torch

    sb = Sandbox(tmp_path, tmp_path, tmp_path / "MARKER")
    module = payload_module(sb, 0)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    root, base = pt2_entries
    doc = json.loads(base["models/model.json"])
    sig = doc["graph_module"]["module_call_graph"][0]["signature"]
    protocol, spec = json.loads(sig["out_spec"])
    enum = json.dumps({"__enum__": True, "fqn": f"{module}:E", "name": "A"})
    sig["out_spec"] = json.dumps([protocol, {"type": "builtins.tuple", "context": enum, "children_spec": [spec]}])
    with zipfile.ZipFile(tmp_path / "hook.pt2", "w") as zf:
        for name, data in {**base, "models/model.json": json.dumps(doc).encode()}.items():
            zf.writestr(f"{root}/{name}", data)
    torch.export.load(str(tmp_path / "hook.pt2"))
    assert sb.marker.exists()
    monkeypatch.delitem(sys.modules, module)


# ---- packages --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz-package") / "TinyOut"
    old = os.environ.pop("SOURCE_DATE_EPOCH", None)
    try:
        build_package(root)
    finally:
        if old is not None:
            os.environ["SOURCE_DATE_EPOCH"] = old
    return root


def reseal(root: Path, *, files: bool) -> None:
    """Recompute the manifest's self-hash (and the file entries), as someone editing on purpose would."""
    try:
        doc = json.loads((root / "manifest.json").read_text())
        if files:
            for entry in doc["files"]:
                p = root / entry["path"]
                if p.is_file() and not p.is_symlink():
                    data = p.read_bytes()
                    entry["size"], entry["sha256"] = len(data), hashlib.sha256(data).hexdigest()
        doc.pop("manifest_sha256", None)
        doc["manifest_sha256"] = hashlib.sha256(canonical_json(doc).encode()).hexdigest()
        (root / "manifest.json").write_text(canonical_json(doc))
    except (ValueError, TypeError, KeyError, RecursionError, AttributeError, OSError):
        pass  # a manifest too broken to reseal stays as it is


def _npz(arrays: dict[str, np.ndarray], allow_pickle: bool = False) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, arr in arrays.items():
            with zf.open(f"{name}.npy", "w") as f:
                np.lib.format.write_array(f, arr, allow_pickle=allow_pickle)
    return buf.getvalue()


def mutate_manifest_text(m: Mutator, text: str) -> bytes:
    rng = m.rng
    how = rng.choice(["nan", "huge", "deep", "dup-key", "bom", "bytes", "true-version", "not-object", "long-name"])
    if how == "nan":
        text = text.replace('"atol": 0.0001', '"atol": NaN', 1)
    elif how == "huge":
        text = text.replace('"size": ', '"size": ' + "9" * rng.choice([20, 400, 5000]) + "0", 1)
    elif how == "deep":
        depth = rng.choice([100, 5000, 100_000])
        text = text.replace('"warnings": [', '"warnings": [' + "[" * depth + "]" * depth + ",", 1)
    elif how == "dup-key":
        text = text.replace('"schema_version": 1,', '"schema_version": 1,\n  "schema_version": 2,', 1)
    elif how == "bom":
        text = "\ufeff" + text
    elif how == "bytes":
        return m.bytes(text.encode(), [])
    elif how == "true-version":
        text = text.replace('"schema_version": 1', '"schema_version": true', 1)
    elif how == "not-object":
        text = rng.choice(["[]", "null", "1", '"mobilegen-package"', ""])
    else:
        text = text.replace('"path": "README.md"', '"path": "' + "R" * 70000 + '"', 1)
    m.sb.note(f"manifest text: {how}")
    return text.encode()


def mutate_package_folder(m: Mutator, root: Path) -> bool:
    """Edit the package folder; returns False when the result can only be verified as a folder."""
    rng, note, marker = m.rng, m.sb.note, m.sb.marker
    kind = rng.choice([
        "manifest-json", "manifest-json", "manifest-json", "manifest-files", "manifest-text", "file-bytes",
        "ort-bytes", "npz", "npz", "mgv", "drop-file", "add-file", "special",
    ])
    manifest = root / "manifest.json"
    if kind == "manifest-json":
        doc = mutate_json_doc(m, json.loads(manifest.read_text()), "manifest.json")
        manifest.write_text(json.dumps(doc, indent=2))
        if rng.random() < 0.7:
            reseal(root, files=False)
            note("manifest resealed")
    elif kind == "manifest-files":
        doc = json.loads(manifest.read_text())
        entry = rng.choice(doc["files"])
        how = rng.choice(["path", "dup", "size", "sha", "exec", "drop", "not-dict"])
        if how == "path":
            entry["path"] = rng.choice(["../outside.txt", "/etc/passwd", "a\x00b", "manifest.json", "", "model/", "model\\model.ort", "./README.md", "README.md/", "x" * 5000])
        elif how == "dup":
            doc["files"].append(dict(entry))
        elif how == "size":
            entry["size"] = rng.choice([-1, 2**63, 10**30, 1.5, "12", None, True])
        elif how == "sha":
            entry["sha256"] = rng.choice(["", "zz" * 32, "A" * 64, None, 5])
        elif how == "exec":
            entry["executable"] = rng.choice([None, 1, "yes", []])
        elif how == "drop":
            doc["files"].remove(entry)
        else:
            doc["files"][doc["files"].index(entry)] = rng.choice([[], "README.md", None, 3])
        note(f"manifest files: {how} on {entry.get('path', '?')[:40]!r}")
        manifest.write_text(json.dumps(doc, indent=2))
        reseal(root, files=False)
    elif kind == "manifest-text":
        manifest.write_bytes(mutate_manifest_text(m, manifest.read_text()))
        if rng.random() < 0.5:
            reseal(root, files=False)
    elif kind == "file-bytes":
        name = rng.choice(["README.md", "golden/tolerances.json", "report/coverage.json", "model/model.onnx", "android/gradlew"])
        (root / name).write_bytes(m.bytes((root / name).read_bytes(), []))
        note(f"{name} garbled (above)")
        if rng.random() < 0.7:
            reseal(root, files=True)
            note("files and manifest resealed")
    elif kind == "ort-bytes":
        ort = root / "model" / "model.ort"
        ort.write_bytes(m.bytes(ort.read_bytes(), [(root / "model" / "model.onnx").read_bytes()]))
        note("model/model.ort garbled (above)")
        reseal(root, files=True)
    elif kind == "npz":
        npz = root / "golden" / "golden.npz"
        how = rng.choice(["payload", "garbled", "shape", "dtype", "extra", "empty", "header-lie"])
        if how == "payload":
            arr = np.empty(1, dtype=object)
            arr[0] = Payload(marker)
            with zipfile.ZipFile(npz) as zf:  # keep the real names too, each replaced by the payload
                names = [n[:-4] for n in zf.namelist()]
            data = _npz({n: arr for n in names}, allow_pickle=True)
        elif how == "garbled":
            data = m.bytes(npz.read_bytes(), [])
        elif how == "shape":
            with np.load(npz) as z:
                arrays = {k: np.zeros((2, 3), np.float32) for k in z.files}
            data = _npz(arrays)
        elif how == "dtype":
            with np.load(npz) as z:
                arrays = {k: z[k].astype(rng.choice([np.float64, np.int8, np.complex64, np.bool_])) for k in z.files}
            data = _npz(arrays)
        elif how == "extra":
            with np.load(npz) as z:
                arrays = {k: z[k] for k in z.files}
            arrays[rng.choice(["inputs/evil", "outputs/evil", "../x", "y"])] = np.ones(3, np.float32)
            data = _npz(arrays)
        elif how == "empty":
            data = _npz({})
        else:  # a .npy header claiming far more data than there is
            with np.load(npz) as z:
                names = list(z.files)
            header = np.lib.format.header_data_from_array_1_0(np.zeros(1, np.float32))
            header["shape"] = (rng.choice([2**20, 2**31, 2**40]),)
            buf = io.BytesIO()
            np.lib.format.write_array_header_1_0(buf, header)
            raw = buf.getvalue() + b"\x00" * 64
            zbuf = io.BytesIO()
            with zipfile.ZipFile(zbuf, "w") as zf:
                for n in names:
                    zf.writestr(f"{n}.npy", raw)
            data = zbuf.getvalue()
        npz.write_bytes(data)
        note(f"golden/golden.npz: {how}")
        reseal(root, files=True)
    elif kind == "mgv":
        mgv = root / "golden" / "golden.mgv"
        mgv.write_bytes(m.bytes(mgv.read_bytes(), []))
        note("golden/golden.mgv garbled (above)")
        reseal(root, files=rng.random() < 0.7)
    elif kind == "drop-file":
        name = rng.choice(["model/model.ort", "golden/golden.npz", "golden/golden.mgv", "manifest.json", "README.md"])
        (root / name).unlink()
        note(f"drop {name}")
        if rng.random() < 0.5:
            reseal(root, files=True)
    elif kind == "add-file":
        name = rng.choice(["notes.txt", ".hidden", "model/extra.ort", "golden/extra.npz", "名前.txt"])
        (root / name).write_bytes(b"x")
        note(f"add {name}")
    else:
        how = rng.choice(["symlink-outside", "symlink-zero", "fifo", "dir-for-file", "empty-dir"])
        target = root / rng.choice(["README.md", "golden/golden.npz", "model/model.ort", "extra"])
        if target.exists():
            target.unlink()
        if how == "symlink-outside":
            target.symlink_to("/etc/hostname")
        elif how == "symlink-zero":
            target.symlink_to("/dev/zero")
        elif how == "fifo":
            os.mkfifo(target)
        elif how == "dir-for-file":
            target.mkdir()
        else:
            (root / "empty").mkdir()
        note(f"{how} at {target.relative_to(root)}")
        return False
    return True


def mutate_zip(m: Mutator, src: Path, dst: Path) -> None:
    """Rewrite the zip with one entry-level change, or damage its bytes."""
    rng, note = m.rng, m.sb.note
    kind = rng.choice(["rename", "dup", "drop", "symlink", "encrypted", "method", "bytes", "prefix", "comment", "roots", "bomb"])
    with zipfile.ZipFile(src) as zin:
        infos = [(i, zin.read(i)) for i in zin.infolist()]
    if kind == "bytes":
        dst.write_bytes(m.bytes(src.read_bytes(), []))
        note("zip bytes damaged (above)")
        return
    if kind == "prefix":
        dst.write_bytes(rng.choice([b"MZ" + b"\x00" * 100, b"#!/bin/sh\n"]) + src.read_bytes())
        note("junk before the zip")
        return
    i = rng.randrange(len(infos))
    info, data = infos[i]
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        if kind == "comment":
            zout.comment = b"x" * 65535
        for j, (inf, d) in enumerate(infos):
            if j != i:
                zout.writestr(inf, d)
                continue
            if kind == "rename":
                new = rng.choice(["../evil", "/abs/evil", "TinyOut\\model\\x", "TinyOut/" + "n" * 5000, "TinyOut/a\x00b", "TinyOut/../../x", "TinyOut/model/../../../x"])
                inf = copy.copy(inf)
                inf.filename = new
                note(f"entry {info.filename} renamed {new[:40]!r}")
            elif kind == "dup":
                zout.writestr(inf, d)
                note(f"entry {info.filename} twice")
            elif kind == "drop":
                note(f"entry {info.filename} dropped")
                continue
            elif kind == "symlink":
                inf = copy.copy(inf)
                inf.external_attr = (stat.S_IFLNK | 0o777) << 16
                d = rng.choice([b"/etc/passwd", b"../../../etc", b"/dev/zero"])
                note(f"entry {info.filename} is a symlink to {d!r}")
            elif kind == "roots":
                inf = copy.copy(inf)
                inf.filename = "Other/" + inf.filename.split("/", 1)[1]
                note(f"entry {info.filename} under a second root folder")
            elif kind == "bomb":
                d = b"\x00" * rng.choice([10**6, 50 * 10**6])
                note(f"entry {info.filename} replaced by {len(d)} zero bytes (deflated)")
            zout.writestr(inf, d)
    if kind in ("encrypted", "method"):
        raw = bytearray(dst.read_bytes())
        name = info.filename.encode()
        for sig, at in ((b"PK\x03\x04", 6 if kind == "encrypted" else 8), (b"PK\x01\x02", 8 if kind == "encrypted" else 10)):
            pos = raw.find(sig)
            while pos >= 0:
                name_at = pos + (30 if sig == b"PK\x03\x04" else 46)
                if raw[name_at : name_at + len(name)] == name:
                    if kind == "encrypted":
                        raw[pos + at] |= 1
                    else:
                        raw[pos + at : pos + at + 2] = (99).to_bytes(2, "little")
                pos = raw.find(sig, pos + 4)
        dst.write_bytes(bytes(raw))
        note(f"entry {info.filename} marked {'encrypted' if kind == 'encrypted' else 'compression method 99'}")


@pytest.mark.filterwarnings("ignore:Duplicate name:UserWarning")  # zip entries duplicated on purpose
@pytest.mark.parametrize("seed", seeds(3000, 160))
def test_fuzz_package(seed: int, sandbox: Sandbox, package: Path) -> None:
    """verify on packages with edited manifests, files and zip entries: exit 0 or 9, one line, nothing left."""
    m = Mutator(seed, sandbox)
    root = Path(shutil.copytree(package, sandbox.work / "TinyOut", symlinks=True))
    zippable = True
    for _ in range(m.rng.choice([0, 1, 1, 1, 2])):
        try:
            zippable = mutate_package_folder(m, root)
        except Exception as err:  # noqa: BLE001 — an earlier mutation removed or broke what this one edits
            sandbox.note(f"(a mutation found nothing to change: {type(err).__name__})")
            zippable = False
        if not zippable:  # a FIFO or a link is the last change: reading it again would block or leave
            break
    target = root
    if zippable and m.rng.random() < 0.5:
        plain = write_zip(root, sandbox.work / "plain.zip", prefix="TinyOut")
        target = sandbox.work / "TinyOut.zip"
        if m.rng.random() < 0.6:
            mutate_zip(m, plain, target)
            plain.unlink()
        else:
            plain.rename(target)
        shutil.rmtree(root)
    args: list[object] = ["verify", target] + (["--json"] if m.rng.random() < 0.4 else [])
    files = (target,) if target.is_file() else tuple(p for p in target.rglob("*") if p.is_file() and not p.is_symlink())
    result = run_cli(sandbox, args, inputs=files)  # verify never changes what it checks
    if not sandbox.steps:
        assert result.exit_code == 0, _context(sandbox, [str(a) for a in args], result)
    elif result.exit_code == 2:  # mutations that left no mark of a package (no manifest, golden or model file)
        assert "is not a mobilegen package" in result.stderr, _context(sandbox, [str(a) for a in args], result)
    else:
        assert result.exit_code in (0, 9), _context(sandbox, [str(a) for a in args], result)


@pytest.mark.usefixtures("torch_serde_log_off")
def test_the_payloads_are_live(tmp_path: Path, pt2_entries: tuple[str, dict[str, bytes]]) -> None:
    """The fuzzer's payloads do run when something unpickles them (so "no marker" can fail): torch.export.load
    on an archive with payload sample inputs, np.load(allow_pickle=True) on a payload golden.npz."""
    import torch

    root, base = pt2_entries
    marker = tmp_path / "MARKER"
    entries = dict(base)
    entries["data/sample_inputs/model.pt"] = _torch_saved(Payload(marker, "((__import__('torch').zeros(2, 4),), {})"))
    with zipfile.ZipFile(tmp_path / "evil.pt2", "w") as zf:
        for name, data in entries.items():
            zf.writestr(f"{root}/{name}", data)
    torch.export.load(str(tmp_path / "evil.pt2"))
    assert marker.exists()
    marker.unlink()
    arr = np.empty(1, dtype=object)
    arr[0] = Payload(marker)
    (tmp_path / "golden.npz").write_bytes(_npz({"inputs/x": arr}, allow_pickle=True))
    with np.load(tmp_path / "golden.npz", allow_pickle=True) as z:
        z["inputs/x"]
    assert marker.exists()
