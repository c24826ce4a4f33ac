"""Seeded mutation fuzzing of the data files a user hands the CLI (issue 24): ``mobilegen.toml`` configs,
calibration folders and ``.npz`` files, ``report --results`` files, and the ``.mgv`` golden vectors
``bench`` reads from a package.

Every example starts from a valid file, applies a few mutations drawn from its own ``random.Random(seed)``
(bytes: flips, truncation, splices; structure: wrong types, huge numbers and shapes, deep nesting, dotted
keys, privileged keys) and runs one real command in process. Whatever the input, the run must:

- end with exit 0 or a documented error code — never 1 (an internal error) — and no traceback;
- when it fails, say so in exactly one ``error:`` line;
- finish within a time bound (an alarm stops a hang);
- write nothing outside its output (``-o``, the package given to ``report``) and ``$TMPDIR`` (which must be
  empty again afterwards), and never change its inputs.

The test id is the seed and a failure lists the mutations applied: that is the reproducer. The whole file
runs in well under 30 s; ``MOBILEGEN_FUZZ_SCALE=N`` runs N times as many examples.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import shutil
import signal
import struct
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_helpers import invoke, private_tmpdir
from onnx import TensorProto, helper, save

SCALE = int(os.environ.get("MOBILEGEN_FUZZ_SCALE", "1"))
SEED0 = 24_000
EXAMPLE_TIMEOUT_S = 20
DOCUMENTED = {0, 2, 3, 4, 5, 6, 7, 8, 9, 10}


def seeds(offset: int, count: int) -> list[int]:
    return [SEED0 + offset + i for i in range(count * SCALE)]


class Hung(BaseException):
    """Raised by the per-example alarm (a BaseException: no ``except Exception`` swallows it)."""


@dataclass
class Example:
    root: Path  # everything of this example: work/ (inputs, the current folder) and TMPDIR/
    work: Path
    rng: random.Random
    steps: list[str] = field(default_factory=list)

    def note(self, step: str) -> None:
        self.steps.append(step)


@pytest.fixture
def example(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Example]:
    gen = private_tmpdir(tmp_path, monkeypatch)
    next(gen)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)

    def on_alarm(_signum: int, _frame: object) -> None:
        raise Hung(f"no result after {EXAMPLE_TIMEOUT_S} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(EXAMPLE_TIMEOUT_S)
    try:
        yield Example(tmp_path, work, random.Random(request.node.callspec.params["seed"]))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    next(gen, None)  # TMPDIR must be empty again


def _tree(root: Path, skip: tuple[Path, ...]) -> dict[str, str]:
    """Relative path -> sha256 (or the kind) of everything under ``root`` but ``skip``."""
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        if any(p == s or p.is_relative_to(s) for s in skip):
            continue
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = "link"
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[rel] = "dir" if p.is_dir() else "special"
    return out


def run(ex: Example, args: list[object], *, outputs: tuple[Path, ...] = ()) -> Any:
    """Run ``mobilegen ARGS`` and check the contract; ``outputs``: where the command may write."""
    skip = (ex.root / "TMPDIR", *outputs)
    before = _tree(ex.root, skip)
    start = time.monotonic()
    try:
        result = invoke(*args)
    except Hung:
        pytest.fail(f"hung: mobilegen {' '.join(map(str, args))}; mutations: {ex.steps}")
    took = time.monotonic() - start
    why = f"mobilegen {' '.join(map(str, args))} -> {result.exit_code}; mutations: {ex.steps}\n{result.stderr[-2000:]}"
    assert result.exit_code in DOCUMENTED, why
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, why
    if result.exit_code != 0:
        assert len([ln for ln in result.stderr.splitlines() if ln.startswith("error:")]) == 1, why
    assert took < EXAMPLE_TIMEOUT_S, why
    assert _tree(ex.root, skip) == before, f"written outside the outputs: {why}"
    return result


# --- inputs every example starts from --------------------------------------------------------------


def _onnx(path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


@pytest.fixture(scope="module")
def bench_package(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """A finished package and a valid benchmark result of its model (the results and .mgv examples' start)."""
    from package_fixtures import build_package

    root = tmp_path_factory.mktemp("fuzz-inputs") / "pkg"
    build_package(root)
    out = root.parent / "host.json"
    r = invoke("bench", root, "--runs", "2", "--warmup", "0", "-o", out)
    assert r.exit_code == 0, r.stderr
    return root, out.read_bytes()


# --- mutations ---------------------------------------------------------------------------------------


def mutate_bytes(ex: Example, data: bytes, rounds: int = 3) -> bytes:
    b = bytearray(data)
    for _ in range(ex.rng.randint(1, rounds)):
        op = ex.rng.choice(["flip", "truncate", "splice", "insert", "zero"])
        if not b:
            b = bytearray(ex.rng.randbytes(8))
        at = ex.rng.randrange(len(b))
        if op == "flip":
            b[at] ^= 1 << ex.rng.randrange(8)
        elif op == "truncate":
            del b[at:]
        elif op == "splice":
            n = ex.rng.randint(1, 16)
            b[at : at + n] = ex.rng.randbytes(n)
        elif op == "insert":
            b[at:at] = ex.rng.randbytes(ex.rng.randint(1, 64))
        else:
            b[at : at + 8] = bytes(min(8, len(b) - at))
        ex.note(f"bytes:{op}@{at}")
    return bytes(b)


_WEIRD: list[Callable[[random.Random], Any]] = [
    lambda r: None,
    lambda r: r.choice([True, False]),
    lambda r: r.choice([0, -1, 2**31, 2**63 - 1, -(2**63), 10**400]),
    lambda r: r.choice([1e308, -0.0, 3.5]),
    lambda r: r.choice(["", "x" * 10_000, "../../outside", "/etc/passwd", "\u202e\x00", "nan", "random"]),
    lambda r: [r.random() for _ in range(r.randint(0, 5))],
    lambda r: {"a": {"b": r.randint(0, 9)}},
    lambda r: f"__NEST__{r.choice([10, 900, 3000, 100_000])}",  # [[[...0...]]] that deep, spliced into the text
]


def _unnest(text: str) -> str:
    """The text with every ``"__NEST__N"`` replaced by N nested lists (too deep for json.dumps itself)."""
    while (at := text.find('"__NEST__')) >= 0:
        end = text.index('"', at + 1)
        depth = int(text[at + len('"__NEST__') : end])
        text = text[:at] + "[" * depth + "0" + "]" * depth + text[end + 1 :]
    return text


# --- configs ---------------------------------------------------------------------------------------

_CONFIG_KEYS = [
    "model", "output", "input", "opset", "force", "trust-pickle", "model-class", "model_kwargs", "atol", "rtol", "ep",
    "android-api", "nnapi", "sample", "calibration", "quantize", "output-name", "const", "unknown-key", "config",
]
_TABLES = [None, "export", "check", "android", "inspect", "package", "nonsense"]


def _toml_value(r: random.Random) -> str:
    kind = r.randrange(9)
    if kind == 0:
        return r.choice(["true", "false"])
    if kind == 1:
        return str(r.choice([0, 17, -3, 2**63 - 1, 10**30]))
    if kind == 2:
        return r.choice(['"m.onnx"', '"../outside/x.onnx"', '"/tmp/abs.onnx"', '"out/m.onnx"', '"nets/net.py:Net"', '"~/x"'])
    if kind == 3:
        depth = r.choice([2, 50, 2000, 50_000])
        return "[" * depth + "1" + "]" * depth
    if kind == 4:
        depth = r.choice([2, 50, 5_000])
        return "{a=" * depth + "1" + "}" * depth
    if kind == 5:
        return '"' + "x" * r.choice([0, 1, 100_000]) + '"'
    if kind == 6:
        return '["x:1x4", "y:' + "9" * r.randint(1, 40) + '"]'
    if kind == 7:
        return "1979-05-27T07:32:00Z"
    return r.choice(["1e999", "nan", "inf", "0x7fffffffffffffff", "3.5"])


_BENIGN = ['model = "m.onnx"', "atol = 0.001", 'input = ["x:1x4"]', "opset = 17", 'output-name = ["out"]', "force = false", 'output = "sub/m2.onnx"']


def _config_text(ex: Example) -> str:
    r = ex.rng
    if r.random() < 0.3:  # a valid file: the runs that succeed must keep the contract too
        ex.note("benign")
        return "[export]\n" + "\n".join(r.sample(_BENIGN, r.randint(1, 4))) + "\n"
    lines: list[str] = []
    tables = [None, *r.sample(_TABLES[1:], r.randint(0, 3))]  # the top level first, each table once
    for table in tables:
        if table is not None:
            lines.append(f"[{table}]")
        for key in r.sample(_CONFIG_KEYS, r.randint(0, 3)):
            if r.random() < 0.1:
                key = ".".join([key] * r.choice([2, 65, 5000]))
            lines.append(f"{key} = {_toml_value(r)}")
            ex.note(f"{table or 'top'}:{key[:40]}")
    text = "\n".join(lines) + "\n"
    return mutate_bytes(ex, text.encode(), 2).decode("utf-8", "replace") if r.random() < 0.3 else text


@pytest.mark.parametrize("seed", seeds(0, 14))
def test_fuzz_config(example: Example, seed: int) -> None:
    del seed
    ex = example
    _onnx(ex.work / "m.onnx")
    (ex.work / "nets").mkdir()
    (ex.work / "nets" / "net.py").write_text(f"open({str(ex.root / 'MARKER')!r}, 'w').close()\n")
    (ex.work / "mobilegen.toml").write_text(_config_text(ex), encoding="utf-8")
    command = ex.rng.choice([["inspect", "m.onnx", "--json"], ["export", "m.onnx"], ["check", "m.onnx", "--ep", "nnapi"]])
    result = run(ex, command, outputs=(ex.work,))  # an implicit config writes only inside its folder...
    assert not (ex.root / "MARKER").exists(), f"a config found implicitly ran code: {ex.steps}"
    assert (ex.work / "mobilegen.toml").exists() and (ex.work / "m.onnx").exists()  # ...and never its inputs
    del result


# --- calibration files and folders ----------------------------------------------------------------


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _npz_member(ex: Example) -> tuple[str, bytes]:
    """One member: a valid sample array, or one with a mutated header, shape, dtype or name."""
    r = ex.rng
    arr = np.full((r.choice([1, 8, 10]), 1, 4), 0.25, np.float32)
    name = "x"
    kind = r.randrange(7)
    if kind == 1:
        arr = arr.astype(r.choice([np.float64, np.int64, np.uint8, np.bool_, np.float16]))
    elif kind == 2:
        arr = np.zeros(r.choice([(0, 1, 4), (8, 4), (8, 1, 5), (8, 1, 4, 1), ()]), np.float32)
    elif kind == 3:
        name = r.choice(["y", "", "x" * 300, "../x", "x/y"])
    data = _npy(arr)
    if kind == 4:  # the header declares another shape than the data holds
        shape = r.choice([(1 << 40, 4), (698, 1 << 18, 1 << 20), (10**6, 1, 4), (2, 1, 4)])
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": r.random() < 0.3, "shape": shape})
        data = header.getvalue() + data[len(header.getvalue()) :]
    elif kind == 5:
        data = mutate_bytes(ex, data)
    elif kind == 6 and r.random() < 0.5:
        data = data.replace(b"'<f4'", b"'|O'")
    ex.note(f"member:{kind}:{name[:20]}")
    return name, data


def _npz(ex: Example) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=ex.rng.choice([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])) as zf:
        for _ in range(ex.rng.choice([1, 1, 1, 2])):
            name, data = _npz_member(ex)
            entry = name + ".npy" if ex.rng.random() < 0.95 else name
            if entry not in zf.namelist():
                zf.writestr(entry, data)
    out = buf.getvalue()
    return mutate_bytes(ex, out, 2) if ex.rng.random() < 0.2 else out


@pytest.mark.parametrize("seed", seeds(100, 12))
def test_fuzz_calibration(example: Example, seed: int) -> None:
    del seed
    ex = example
    _onnx(ex.work / "m.onnx")
    r = ex.rng
    if r.random() < 0.5:
        source = ex.work / "calib.npz"
        source.write_bytes(_npz(ex))
    else:
        source = ex.work / "calib"
        source.mkdir()
        for i in range(r.randint(1, 3)):
            (source / f"part{i}.npz").write_bytes(_npz(ex))
        extra = r.choice([None, "notes.txt", "photo.png", "sub.npz"])
        if extra == "sub.npz":
            (source / extra).mkdir()
        elif extra is not None:
            (source / extra).write_bytes(b"\x89PNG\r\n\x1a\n" + r.randbytes(32))
        ex.note(f"folder extra={extra}")
    mode = r.choice(["int8", "int8", "dynamic"])
    args: list[object] = ["android", "m.onnx", "-o", "out", "--quantize", mode, "--calibration", source.name]
    if mode == "dynamic" and r.random() < 0.5:
        (ex.work / "eval.npz").write_bytes(_npz(ex))
        args += ["--eval", "eval.npz"]
    run(ex, args, outputs=(ex.work / "out",))


# --- report --results --------------------------------------------------------------------------------


def _set(doc: Any, path: list[Any], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def _paths(doc: Any, prefix: list[Any]) -> Iterator[list[Any]]:
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield [*prefix, k]
            yield from _paths(v, [*prefix, k])
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield [*prefix, i]
            yield from _paths(v, [*prefix, i])


def _mutated_result(ex: Example, valid: bytes) -> bytes:
    if ex.rng.random() < 0.25:  # a valid result from another device: merged, and the package still verifies
        doc = json.loads(valid)
        doc["device"]["model"] = ex.rng.choice(["Pixel 8", "<b>x</b> & \u202e", "x" * 200, "é"])
        ex.note(f"benign device={doc['device']['model'][:20]}")
        return json.dumps(doc).encode()
    if ex.rng.random() < 0.25:
        return mutate_bytes(ex, valid)
    doc = json.loads(valid)
    every = list(_paths(doc, []))
    for _ in range(ex.rng.randint(1, 3)):
        path = ex.rng.choice(every)
        value = ex.rng.choice(_WEIRD)(ex.rng)
        ex.note(f"json:{'/'.join(map(str, path))}={str(value)[:30]}")
        _set(doc, path, value)
        every = list(_paths(doc, []))
    return _unnest(json.dumps(doc)).encode()


@pytest.mark.parametrize("seed", seeds(200, 12))
def test_fuzz_results(example: Example, bench_package: tuple[Path, bytes], seed: int) -> None:
    del seed
    ex = example
    src, valid = bench_package
    pkg = Path(shutil.copytree(src, ex.work / "pkg"))
    (ex.work / "r.json").write_bytes(_mutated_result(ex, valid))
    result = run(ex, ["report", "pkg", "--results", "r.json"], outputs=(pkg,))
    if result.exit_code == 0:
        assert invoke("verify", pkg).exit_code == 0, ex.steps


# --- .mgv given to bench ---------------------------------------------------------------------------


def _mutated_mgv(ex: Example, valid: bytes) -> bytes:
    r = ex.rng
    if r.random() < 0.25:  # other numbers in the last tensor's data: a valid file
        b = bytearray(valid)
        at = len(b) - r.randint(1, 16)
        b[at] ^= 0x01
        ex.note(f"data@{at}")
        return bytes(b)
    if r.random() < 0.5:
        return mutate_bytes(ex, valid)
    b = bytearray(valid)
    # the first tensor's fields: count @8, role @12, name_len @13, then name, code, rank, dims, nbytes
    nlen = struct.unpack_from("<I", b, 13)[0]
    code_at = 17 + nlen
    field_at = r.choice([("count", 8, "<I"), ("name_len", 13, "<I"), ("code", code_at, "<B"), ("rank", code_at + 1, "<I"), ("dim0", code_at + 5, "<q")])
    name, at, fmt = field_at
    limit = {"<I": 2**32 - 1, "<B": 255, "<q": 2**63 - 1}[fmt]
    value = r.choice([0, 1, 2, 63, 65, limit, limit // 2, -1 if fmt == "<q" else 7])
    struct.pack_into(fmt, b, at, value)
    ex.note(f"mgv:{name}={value}")
    return bytes(b)


@pytest.mark.parametrize("seed", seeds(300, 12))
def test_fuzz_mgv(example: Example, bench_package: tuple[Path, bytes], seed: int) -> None:
    del seed
    ex = example
    src, _valid = bench_package
    pkg = Path(shutil.copytree(src, ex.work / "pkg"))
    mgv = pkg / "golden" / "golden.mgv"
    mgv.write_bytes(_mutated_mgv(ex, mgv.read_bytes()))
    run(ex, ["bench", "pkg", "--runs", "1", "--warmup", "0"])
