"""No code from a model file runs while loading it (issue 9, items 1 and 8).

Item 1: a crafted torch.export archive (.pt2) must not run code without --trust-pickle. Each hostile
archive below is a real program re-written so that ``torch.export.load`` itself runs a payload that
creates a marker file (``test_the_hostile_archives_are_live`` proves it); the stealthy ones then let
loading carry on normally. Item 8: ``--model-class`` code that calls ``sys.exit`` or names something
that is not an nn.Module class fails cleanly.
"""

from __future__ import annotations

import ctypes
import io
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections import namedtuple
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from ci import missing_tool
from cli_helpers import assert_fails, invoke
from model_files import LinearRelu
from torch._export.verifier import SpecViolationError
from torch_defects import torch_serde_log_off  # noqa: F401 — a fixture

from mobilegen.errors import LoadError
from mobilegen.load import pt2_safety
from mobilegen.load.loader import LoadOptions, load_model


class _Payload:
    """Unpickles by calling ``eval(code)``: the marker is created, then ``code``'s value is returned."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (eval, (self.code,))


def _touch_then(marker: Path, result: str) -> str:
    return f"(open({str(marker)!r}, 'w').close(), {result})[1]"


def _torch_saved(obj: object) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A normal program with a dynamic batch dim (so it has symbolic shape expressions)."""
    path = tmp_path_factory.mktemp("pt2") / "net.pt2"
    torch.manual_seed(0)
    ep = torch.export.export(LinearRelu().eval(), (torch.randn(2, 4),), dynamic_shapes={"x": {0: torch.export.Dim("b")}})
    torch.export.save(ep, str(path))
    return path


def rewrite(src: Path, dst: Path, edit: Callable[[str, bytes], bytes | None], extra: dict[str, bytes] | None = None) -> Path:
    """Copy the archive, passing each entry (named as torch names it, without the root folder) through
    ``edit`` (None drops it); ``extra`` entries go under the root folder, or at the top if they start with /."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        root = zin.namelist()[0].split("/", 1)[0]
        for info in zin.infolist():
            data = edit(info.filename.split("/", 1)[1], zin.read(info.filename))
            if data is not None:
                zout.writestr(info.filename, data)
        for name, data in (extra or {}).items():
            zout.writestr(name[1:] if name.startswith("/") else f"{root}/{name}", data)
    return dst


def _edit_json(entry: str, change: Callable[[dict], None]) -> Callable[[str, bytes], bytes]:
    def edit(name: str, data: bytes) -> bytes:
        if name != entry:
            return data
        obj = json.loads(data)
        change(obj)
        return json.dumps(obj).encode()

    return edit


def sample_inputs(src: Path, dst: Path, marker: Path) -> Path:
    """Stealthy: the sample inputs run the payload, then are the real ones, so loading succeeds."""
    evil = _torch_saved(_Payload(_touch_then(marker, "((__import__('torch').zeros(2, 4),), {})")))
    return rewrite(src, dst, lambda n, d: evil if n == "data/sample_inputs/model.pt" else d)


def pickled_weight(src: Path, dst: Path, marker: Path) -> Path:
    config = "data/weights/model_weights_config.json"
    with zipfile.ZipFile(src) as zf:
        metas = json.loads(zf.read(next(n for n in zf.namelist() if n.endswith(config))))["config"]
    meta = metas["l.weight"]
    sizes = [d["as_int"] for d in meta["tensor_meta"]["sizes"]]
    evil = _torch_saved(_Payload(_touch_then(marker, f"__import__('torch').zeros({sizes})")))

    def edit(name: str, data: bytes) -> bytes:
        if name == f"data/weights/{meta['path_name']}":
            return evil
        return _edit_json(config, lambda o: o["config"]["l.weight"].update(use_pickle=True))(name, data)

    return rewrite(src, dst, edit)


def opaque_constant(src: Path, dst: Path, marker: Path) -> Path:
    entry = {"path_name": "opaque_obj_0", "is_param": False, "use_pickle": True, "tensor_meta": None}
    edit = _edit_json("data/constants/model_constants_config.json", lambda o: o["config"].update(evil=entry))
    return rewrite(src, dst, edit, {"data/constants/opaque_obj_0": pickle.dumps(_Payload(_touch_then(marker, "0")))})


def shape_expression(src: Path, dst: Path, marker: Path) -> Path:
    """Stealthy: sympify evaluates the expression, which touches the marker and yields the real symbol."""

    def edit(name: str, data: bytes) -> bytes:
        if name != "models/model.json":
            return data
        pattern = rb'"expr_str": "(Symbol\(\'\w+\', positive=True, integer=True\))"'
        payload = f"__import__('pathlib').Path('{marker}').touch() or ".encode()
        out, n = re.subn(pattern, lambda m: b'"expr_str": "' + payload + m.group(1) + b'"', data)
        assert n > 0
        return out

    return rewrite(src, dst, edit)


def shape_guard(src: Path, dst: Path, marker: Path) -> Path:
    """Runs when the program is called (export and verification call it)."""
    guard = f"__import__('pathlib').Path('{marker}').touch() is None"
    return rewrite(src, dst, _edit_json("models/model.json", lambda o: o.update(guards_code=[guard])))


def parameter_name(src: Path, dst: Path, marker: Path) -> Path:
    """module() pastes parameter names into `getattr(self, "<name>")` in the source it executes."""
    evil = f'x") if getattr(__import__("os"),"system")("touch {marker}") else getattr(self, "x'
    assert "." not in evil  # torch splits the name at dots
    new = json.dumps("l." + evil).encode()
    return rewrite(src, dst, lambda n, d: d.replace(b'"l.weight"', new) if n.endswith(".json") else d)


def aot_library(src: Path, dst: Path, marker: Path) -> Path:
    """torch.export.load dlopens AOTInductor libraries it finds (not live here: this is no real library)."""
    return rewrite(src, dst, lambda n, d: d, {"data/aotinductor/model/model.so": b"\x7fELF"})


def legacy_layout(src: Path, dst: Path, marker: Path) -> Path:
    """Without archive_version the current reader raises a RuntimeError, and torch.export.load retries
    with the pre-2.8 reader, which unpickles the top-level serialized_*.pt entries."""
    from torch._export.serde.schema import SCHEMA_VERSION

    with zipfile.ZipFile(src) as zf:
        program = zf.read(next(n for n in zf.namelist() if n.endswith("models/model.json")))
    evil = _torch_saved(_Payload(_touch_then(marker, "{}")))
    top = {
        "/version": ".".join(map(str, SCHEMA_VERSION)).encode(),
        "/serialized_exported_program.json": program,
        "/serialized_state_dict.pt": _torch_saved({}),
        "/serialized_constants.pt": evil,
        "/serialized_example_inputs.pt": evil,
    }
    return rewrite(src, dst, lambda n, d: None if n == "archive_version" else d, top)


HOSTILE: dict[str, tuple[Callable[[Path, Path, Path], Path], str]] = {
    "sample_inputs": (sample_inputs, "data/sample_inputs/model.pt"),
    "pickled_weight": (pickled_weight, "data/weights/weight_"),
    "opaque_constant": (opaque_constant, "data/constants/opaque_obj_0"),
    "shape_expression": (shape_expression, "models/model.json"),
    "shape_guard": (shape_guard, "models/model.json"),
    "parameter_name": (parameter_name, "models/model.json"),
    "aot_library": (aot_library, "data/aotinductor/model/model.so"),
    "legacy_layout": (legacy_layout, "'version'"),  # the entry that makes the legacy reader reachable
}


def hostile(kind: str, clean: Path, tmp_path: Path) -> tuple[Path, Path, str]:
    make, entry = HOSTILE[kind]
    marker = tmp_path / "pwned"
    return make(clean, tmp_path / f"{kind}.pt2", marker), marker, entry


# what torch raises after these payloads ran (they replace real data with the payload's return value)
BROKEN_AFTER_THE_PAYLOAD: dict[str, tuple[type[Exception], str]] = {
    "legacy_layout": (SpecViolationError, "Parameter l.weight is not in the state dict"),  # empty state dict
    "pickled_weight": (SpecViolationError, "is not an instance of torch.nn.Parameter"),  # a plain tensor
    "opaque_constant": (AssertionError, "got <class 'int'>"),  # the constant is the payload's 0
    "parameter_name": (AttributeError, "has no attribute 'x'"),  # module() ran the injected code, then failed
}


@pytest.mark.usefixtures("torch_serde_log_off")
@pytest.mark.parametrize("kind", sorted(set(HOSTILE) - {"aot_library"}))
def test_the_hostile_archives_are_live(kind: str, clean: Path, tmp_path: Path) -> None:
    """Control: torch itself runs each payload, loading the file or calling the program as export does
    (so the refusals below are not vacuous). A payload that breaks loading after it ran must break it in
    the one way named in BROKEN_AFTER_THE_PAYLOAD; any other error fails the control."""
    path, marker, _ = hostile(kind, clean, tmp_path)
    if kind in BROKEN_AFTER_THE_PAYLOAD:
        error, message = BROKEN_AFTER_THE_PAYLOAD[kind]
        with pytest.raises(error, match=message):
            torch.export.load(str(path)).module()(torch.randn(2, 4))
    else:
        torch.export.load(str(path)).module()(torch.randn(2, 4))
    assert marker.exists()


@pytest.mark.usefixtures("torch_serde_log_off")
def test_stealthy_variants_load_normally_under_torch(clean: Path, tmp_path: Path) -> None:
    for kind in ("sample_inputs", "shape_expression"):
        path, marker, _ = hostile(kind, clean, tmp_path)
        ep = torch.export.load(str(path))
        assert marker.exists() and ep.module()(torch.randn(3, 4)).shape == (3, 3)
        marker.unlink()


COMMANDS: dict[str, Callable[[Path], list[object]]] = {
    "inspect": lambda out: [],
    "export": lambda out: ["-o", out / "m.onnx"],
    "check": lambda out: ["--ep", "nnapi"],
    "package": lambda out: ["--android", "-o", out / "pkg"],
    "android": lambda out: ["-o", out / "app"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("kind", ["sample_inputs", "shape_expression", "parameter_name"])
def test_every_command_refuses_without_running_it(command: str, kind: str, clean: Path, tmp_path: Path) -> None:
    path, marker, entry = hostile(kind, clean, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    assert_fails(invoke(command, path, *COMMANDS[command](out)), 3, entry, "--trust-pickle")
    assert not marker.exists()
    assert list(out.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, "out"])


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_every_hostile_archive_is_refused(kind: str, clean: Path, tmp_path: Path) -> None:
    path, marker, entry = hostile(kind, clean, tmp_path)
    assert_fails(invoke("export", path, "-o", tmp_path / "m.onnx", "--json"), 3, entry, "--trust-pickle")
    assert not marker.exists() and not (tmp_path / "m.onnx").exists()


def test_trust_pickle_loads_it_and_runs_its_code(clean: Path, tmp_path: Path) -> None:
    """--trust-pickle means "this file may run code": the stealthy archive then loads as torch loads it."""
    path, marker, _ = hostile("sample_inputs", clean, tmp_path)
    r = invoke("inspect", path, "--trust-pickle", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["inputs"][0]["shape"] == ["x_dim0", 4]
    assert marker.exists()


def test_normal_archives_load_without_trust(clean: Path) -> None:
    loaded = load_model(clean, LoadOptions())
    assert loaded.kind == "exported_program"
    assert loaded.example_sizes == {"x_dim0": 2}  # read from the (plain-tensor) sample inputs
    example = Path(__file__).resolve().parents[2] / "examples" / "encoder_tiny.pt2"
    assert load_model(example).example_sizes == {"tokens_dim1": 16}


def test_real_shape_guards_are_accepted(tmp_path: Path) -> None:
    """A derived dim makes torch record a guard ("(L['x'].size()[0] // 2) <= ..."): still loads, and runs."""

    class Half(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x[: x.shape[0] // 2].sum(0)

    half = torch.export.Dim("half", min=2, max=32)
    ep = torch.export.export(Half(), (torch.randn(8, 3),), dynamic_shapes={"x": {0: 2 * half}})
    assert ep._guards_code  # the case this test is about
    path = tmp_path / "half.pt2"
    torch.export.save(ep, str(path))
    loaded = load_model(path)
    assert loaded.module.module()(torch.randn(6, 3)).shape == (3,)


def test_backstop_blocks_a_pickle_the_checks_did_not_foresee(clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mobilegen.load import pt2_safety

    path, marker, _ = hostile("sample_inputs", clean, tmp_path)
    monkeypatch.setattr(pt2_safety, "archive_refusal", lambda p: None)  # as if the pre-check missed it
    with pytest.raises(LoadError, match=r"asks for (__builtin__|builtins)\.eval") as info:
        load_model(path)
    assert "--trust-pickle" in info.value.one_line()
    assert not marker.exists()


def test_backstop_is_idle_outside_a_load(tmp_path: Path) -> None:
    from mobilegen.load import pt2_safety

    marker = tmp_path / "ran"
    data = pickle.dumps(_Payload(_touch_then(marker, "1")))
    with pt2_safety._untrusted_load() as blocked, pytest.raises(pt2_safety.CodeBlocked):
        pickle.loads(data)
    assert blocked == ["a pickle inside the archive asks for builtins.eval"] and not marker.exists()
    assert pickle.loads(data) == 1 and marker.exists()  # the hook stays installed but does nothing now


# ---- issue 24: pytree-spec hooks, call targets, unbounded shape arithmetic ------------------------------


HOOK_C = '#include <stdio.h>\n__attribute__((constructor)) static void mark(void) { FILE *f = fopen(MARKER, "w"); if (f) fclose(f); }\n'


@pytest.fixture
def native_library(tmp_path: Path) -> tuple[Path, Path]:
    """A tiny shared library (built with the machine's C compiler) whose constructor creates a marker
    file when anything loads it; returns (library, marker). A fresh path per test: the process loads a
    library once, so no test sees another's."""
    cc = shutil.which("cc")
    if cc is None:
        missing_tool("no C compiler (cc) to build the spec-hook payload library")  # fails under CI
    folder = tmp_path / "lib"
    folder.mkdir()
    marker = tmp_path / "pwned"
    (folder / "hook.c").write_text(HOOK_C)
    lib = folder / "libx.so"
    subprocess.run([str(cc), "-shared", "-fPIC", f"-DMARKER={json.dumps(str(marker))}", "-o", str(lib), str(folder / "hook.c")], check=True, capture_output=True, timeout=120)
    return lib, marker


def spec_hook(src: Path, dst: Path, library: Path, where: str) -> Path:
    """The pytree spec's context holds an enum that torch resolves as ``ctypes.cdll[library]``: loading the
    archive loads the library. In in_spec it replaces the root's context (the program then refuses its
    inputs); in out_spec it wraps the output in a 1-tuple (stealthy: the program runs normally)."""
    enum = json.dumps({"__enum__": True, "fqn": "ctypes:cdll", "name": str(library)})

    def change(doc: dict) -> None:
        sig = doc["graph_module"]["module_call_graph"][0]["signature"]
        protocol, root = json.loads(sig[where])
        if where == "in_spec":
            root["context"] = enum
        else:
            root = {"type": "builtins.tuple", "context": enum, "children_spec": [root]}
        sig[where] = json.dumps([protocol, root])

    return rewrite(src, dst, _edit_json("models/model.json", change))


@pytest.mark.parametrize("where", ["in_spec", "out_spec"])
def test_spec_hook_archives_are_live(where: str, clean: Path, tmp_path: Path, native_library: tuple[Path, Path]) -> None:
    """Control: plain torch.export.load loads the library (its constructor creates the marker)."""
    lib, marker = native_library
    path = spec_hook(clean, tmp_path / "hook.pt2", lib, where)
    ep = torch.export.load(str(path))
    assert marker.exists()
    if where == "out_spec":  # stealthy: the program still runs, its output wrapped in a tuple
        assert ep.module()(torch.randn(3, 4))[0].shape == (3, 3)


SPEC_COMMANDS: dict[str, Callable[[Path], list[object]]] = {
    **COMMANDS,
    "convert": lambda out: ["-o", out / "m.ort"],
    "fix": lambda out: ["--ep", "nnapi", "-o", out / "m.onnx"],
    "ios": lambda out: ["-o", out / "ios"],
}


@pytest.mark.parametrize("command", sorted(SPEC_COMMANDS))
@pytest.mark.parametrize("where", ["in_spec", "out_spec"])
def test_every_command_refuses_a_spec_hook(command: str, where: str, clean: Path, tmp_path: Path, native_library: tuple[Path, Path]) -> None:
    lib, marker = native_library
    path = spec_hook(clean, tmp_path / "hook.pt2", lib, where)
    out = tmp_path / "out"
    out.mkdir()
    line = assert_fails(invoke(command, path, *SPEC_COMMANDS[command](out)), 3, "'models/model.json'", where, "--trust-pickle")
    assert "__enum__" in line
    assert not marker.exists()
    assert list(out.iterdir()) == []


def test_backstop_blocks_a_spec_hook_the_checks_did_not_foresee(clean: Path, tmp_path: Path, native_library: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The second layer alone: with the archive check skipped, torch's pytree hook cannot import."""
    lib, marker = native_library
    path = spec_hook(clean, tmp_path / "hook.pt2", lib, "out_spec")
    monkeypatch.setattr(pt2_safety, "archive_refusal", lambda p: None)  # as if the pre-check missed it
    with pytest.raises(LoadError, match="a pytree spec inside the archive makes torch import 'ctypes'") as info:
        load_model(path)
    assert "--trust-pickle" in info.value.one_line()
    assert not marker.exists()


def test_backstop_blocks_native_libraries_and_is_idle_outside_a_load(native_library: tuple[Path, Path]) -> None:
    """The audit-hook part of the backstop, for a path that does not go through torch's importlib."""
    lib, marker = native_library
    with pt2_safety._untrusted_load() as blocked, pytest.raises(pt2_safety.CodeBlocked):
        ctypes.CDLL(str(lib))
    assert blocked == [f"loading the archive loads the native library {str(lib)!r}"] and not marker.exists()
    ctypes.CDLL(str(lib))  # outside a load the hook does nothing
    assert marker.exists()


def test_user_namedtuple_specs_need_trust(tmp_path: Path) -> None:
    """A namedtuple type in a spec is looked up by name in what the loading process registered: refused
    without --trust-pickle, loaded with it (here the type is registered, as the user's code would)."""
    from torch.utils import _pytree

    pair = namedtuple("pair", "a b")  # noqa: PYI024 — the kind of type a user returns

    class Pairs(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return pair(x + 1, x * 2)

    _pytree._register_namedtuple(pair, serialized_type_name="mobilegen_tests.pair")
    try:
        path = tmp_path / "pairs.pt2"
        torch.export.save(torch.export.export(Pairs(), (torch.randn(2, 3),)), str(path))
        assert_fails(invoke("inspect", path), 3, "out_spec", "collections.namedtuple", "--trust-pickle")
        r = invoke("inspect", path, "--trust-pickle", "--json")
        assert r.exit_code == 0, r.stderr
    finally:
        _pytree._deregister_pytree_node(pair)


def _from_file(src: Path, dst: Path, filename: Path) -> Path:
    """``x + torch.zeros(4)`` with the zeros replaced by ``aten.from_file(filename)``."""

    def change(doc: dict) -> None:
        (node,) = [n for n in doc["graph_module"]["graph"]["nodes"] if n["target"] == "torch.ops.aten.zeros.default"]
        node["target"] = "torch.ops.aten.from_file.default"
        node["inputs"] = [
            {"name": "filename", "arg": {"as_string": str(filename)}, "kind": 1},
            {"name": "shared", "arg": {"as_bool": False}, "kind": 1},
            {"name": "size", "arg": {"as_int": 4}, "kind": 1},
        ]

    return rewrite(src, dst, _edit_json("models/model.json", change))


class _AddZeros(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.zeros(4)


@pytest.fixture(scope="module")
def add_zeros(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pt2") / "add_zeros.pt2"
    torch.export.save(torch.export.export(_AddZeros(), (torch.zeros(4),)), str(path))
    return path


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Fail (instead of blocking the suite) when the block takes longer: a hang is the bug under test."""

    def expire(_signum: int, _frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_from_file_programs_are_live(add_zeros: Path, tmp_path: Path) -> None:
    """Control: torch loads the program and running it reads a file outside the model."""
    data = tmp_path / "outside.bin"
    data.write_bytes(torch.full((4,), 7.0).numpy().tobytes())
    ep = torch.export.load(str(_from_file(add_zeros, tmp_path / "ff.pt2", data)))
    assert ep.module()(torch.zeros(4)).tolist() == [7.0] * 4


@pytest.mark.parametrize("layer", ["archive", "program"])
def test_a_from_file_program_is_refused_before_it_runs(layer: str, add_zeros: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its file is a FIFO no one writes: running the program would block for ever. Both layers refuse it
    on their own: the names in the archive, and (with that check skipped) the loaded graph."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    path = _from_file(add_zeros, tmp_path / "ff.pt2", fifo)
    if layer == "program":
        monkeypatch.setattr(pt2_safety, "archive_refusal", lambda p: None)
        needle = "calls aten::from_file.default, which reads the file its argument names"
    else:
        needle = "calls 'torch.ops.aten.from_file.default', which reads the file its argument names"
    with _deadline(60):
        assert_fails(invoke("inspect", path), 3, "'models/model.json'", needle, "--trust-pickle")


@pytest.mark.parametrize(
    ("target", "needle"),
    [
        ("torch.ops.mylib.evil.default", "'mylib' namespace"),
        ("torch.serialization.os.system", "not an ATen or prims operator"),
        ("torch.ops.higher_order.while_loop", "run forever"),
        ("torch.ops.aten._reshape_alias.default", "outside the tensor"),
    ],
)
def test_call_targets_outside_the_allowlist_are_refused(target: str, needle: str, clean: Path, tmp_path: Path) -> None:
    def change(doc: dict) -> None:
        doc["graph_module"]["graph"]["nodes"][-1]["target"] = target

    path = rewrite(clean, tmp_path / "target.pt2", _edit_json("models/model.json", change))
    assert_fails(invoke("export", path, "-o", tmp_path / "m.onnx"), 3, repr(target), needle, "--trust-pickle")


def test_a_function_argument_is_refused(clean: Path, tmp_path: Path) -> None:
    def change(doc: dict) -> None:
        doc["graph_module"]["graph"]["nodes"][-1]["inputs"][0]["arg"] = {"as_operator": "torch.ops.aten.relu.default"}

    path = rewrite(clean, tmp_path / "fn.pt2", _edit_json("models/model.json", change))
    assert_fails(invoke("inspect", path), 3, "passes the function 'torch.ops.aten.relu.default'")


TOWER = "9**9**9**9"


def tower_expression(src: Path, dst: Path) -> Path:
    pattern = rb'"expr_str": "Symbol\(\'\w+\', positive=True, integer=True\)"'
    return rewrite(src, dst, lambda n, d: re.sub(pattern, f'"expr_str": "{TOWER}"'.encode(), d) if n == "models/model.json" else d)


def tower_guard(src: Path, dst: Path) -> Path:
    return rewrite(src, dst, _edit_json("models/model.json", lambda o: o.update(guards_code=[f"{TOWER} > 0"])))


def test_power_towers_are_live() -> None:
    """Control: sympify (as torch calls it) does not finish 9**9**9**9 (a subprocess, stopped after 3 s)."""
    code = f"import sympy; sympy.sympify({TOWER!r})"
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", code], timeout=3, capture_output=True)


@pytest.mark.parametrize("make", [tower_expression, tower_guard])
def test_power_towers_are_refused_within_a_second(make: Callable[[Path, Path], Path], clean: Path, tmp_path: Path) -> None:
    path = make(clean, tmp_path / "tower.pt2")
    assert pt2_safety.archive_refusal(clean) is None  # first imports (sympy) are not what is timed
    started = time.monotonic()
    with _deadline(1.0):
        refusal = pt2_safety.archive_refusal(path)
    assert refusal is not None and "9**9**9**9" in refusal.reason and "literal number within ±64" in refusal.reason
    with _deadline(30):  # the whole command, imports included
        assert_fails(invoke("inspect", path), 3, "'models/model.json'", TOWER, "might never end")
    assert time.monotonic() - started < 30


def test_huge_size_hints_are_refused(clean: Path, tmp_path: Path) -> None:
    """A symbol's hint is its example size, substituted into every expression: it is an int64 too."""
    pattern = rb'"hint": \{"as_int": \d+\}'
    path = rewrite(clean, tmp_path / "hint.pt2", lambda n, d: re.sub(pattern, b'"hint": {"as_int": ' + b"9" * 400 + b"}", d) if n == "models/model.json" else d)
    assert_fails(invoke("inspect", path), 3, "'models/model.json'", "larger than 2**64")


class _Dynamic(torch.nn.Module):
    """What torch writes for a real dynamic program: strided conv sizes (FloorDiv, Pow in the shape
    expressions), size arithmetic nodes, a guard, torch.cond and a no_grad block."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, stride=2)
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.conv(x)
        y = y.reshape(y.shape[0], 4, y.shape[2] * y.shape[3]).mean(-1)
        with torch.no_grad():
            z = self.fc(y)
        return z, torch.cond(z.sum() > 0, lambda t: t + 1, lambda t: t - 1, (z,))


def test_real_dynamic_programs_still_load_and_run(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model, x = _Dynamic().eval(), torch.randn(2, 3, 16, 16)
    side = torch.export.Dim("side", min=8, max=512)
    ep = torch.export.export(model, (x,), dynamic_shapes={"x": {0: torch.export.Dim("b", max=64), 2: side, 3: side}})
    path = tmp_path / "dynamic.pt2"
    torch.export.save(ep, str(path))
    text = zipfile.ZipFile(path).read(next(n for n in zipfile.ZipFile(path).namelist() if n.endswith("models/model.json"))).decode()
    assert "Pow(" in text and "FloorDiv(" in text and "higher_order.cond" in text and "wrap_with_set_grad_enabled" in text
    loaded = load_model(path)
    x2 = torch.randn(3, 3, 20, 20)
    for got, want in zip(loaded.module.module()(x2), model(x2), strict=True):
        torch.testing.assert_close(got, want)


# ---- item 8: --model-class ----------------------------------------------------------------------


@pytest.fixture
def weights(tmp_path: Path) -> Path:
    path = tmp_path / "sd.pt"
    torch.save(torch.nn.Linear(4, 3).state_dict(), path)
    return path


def _user_module(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "usermodel.py"
    path.write_text("import sys\nimport torch\n\n" + body)
    return path


def test_model_class_module_exiting_on_import_fails(weights: Path, tmp_path: Path) -> None:
    mod = _user_module(tmp_path, "sys.exit(0)\n")
    sys.modules.pop("_mobilegen_user_usermodel", None)
    assert_fails(invoke("inspect", weights, "--model-class", f"{mod}:Net"), 3, "sys.exit(0)", "__main__")
    r = invoke("inspect", weights, "--model-class", f"{mod}:Net", "--json")
    assert r.exit_code == 3
    assert json.loads(r.stdout)["error"] == "load"
    assert "_mobilegen_user_usermodel" not in sys.modules  # the half-imported module is not left behind


def test_model_class_package_module_exiting_on_import_fails(weights: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mg_exits_on_import.py").write_text("import sys\nsys.exit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert_fails(invoke("inspect", weights, "--model-class", "mg_exits_on_import:Net"), 3, "sys.exit(3)")


def test_model_class_constructor_exiting_fails(weights: Path, tmp_path: Path) -> None:
    mod = _user_module(tmp_path, "class Net(torch.nn.Module):\n    def __init__(self):\n        sys.exit(0)\n")
    assert_fails(invoke("inspect", weights, "--model-class", f"{mod}:Net"), 3, "constructing", "sys.exit(0)")


def test_model_class_constructor_error_is_a_load_error(weights: Path, tmp_path: Path) -> None:
    mod = _user_module(tmp_path, "class Net(torch.nn.Module):\n    def __init__(self):\n        raise ValueError('no config')\n")
    assert_fails(invoke("inspect", weights, "--model-class", f"{mod}:Net"), 3, "ValueError: no config")


def test_model_class_missing_file_is_a_usage_error(weights: Path, tmp_path: Path) -> None:
    assert_fails(invoke("inspect", weights, "--model-class", f"{tmp_path / 'nope.py'}:Net"), 2, "does not exist")


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("def Net():\n    open(MARKER, 'w').close()\n", "a function"),
        ("Net = 3\n", "an int"),
        ("class Net:\n    def __init__(self):\n        open(MARKER, 'w').close()\n", "the class Net"),
    ],
)
def test_model_class_that_is_not_a_module_class_is_never_called(weights: Path, tmp_path: Path, body: str, needle: str) -> None:
    marker = tmp_path / "called"
    mod = _user_module(tmp_path, f"MARKER = {str(marker)!r}\n" + body)
    assert_fails(invoke("inspect", weights, "--model-class", f"{mod}:Net"), 2, needle, "not a torch.nn.Module")
    assert not marker.exists()
