"""Bad data files given to the CLI end in one ``error:`` line, exit 2, quickly and within bounded memory —
never an internal error (exit 1), a traceback or a hang (issue 24, item 6).

Cases that hung or blew up before run as a subprocess with a timeout (a hang fails the test instead of
stopping the run), the others in process. Every case gets a generous wall-clock bound: a regression here
is a hang or a minutes-long decompression, not a few milliseconds.
"""

from __future__ import annotations

import io
import os
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import assert_fails, invoke, private_tmpdir
from onnx import TensorProto, helper, save

BOUND_S = 30.0  # far above a refusal (well under a second), far below a hang or a bomb being unpacked


@pytest.fixture(autouse=True)
def _tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from private_tmpdir(tmp_path, monkeypatch)


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(folder / "m.onnx"))
    monkeypatch.chdir(folder)
    return folder


def _timed(*args: object) -> tuple[object, float]:
    start = time.monotonic()
    result = invoke(*args)
    return result, time.monotonic() - start


def _run(cwd: Path, *args: object) -> tuple[int, str, float]:
    """``python -m mobilegen ARGS`` in a subprocess that may not outlive the bound."""
    start = time.monotonic()
    try:
        p = subprocess.run(
            [sys.executable, "-m", "mobilegen", *map(str, args)],
            cwd=cwd, capture_output=True, text=True, timeout=BOUND_S * 2,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"mobilegen {' '.join(map(str, args))} did not finish within {BOUND_S * 2:.0f} s")
    return p.returncode, p.stderr, time.monotonic() - start


def _one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "internal error" not in stderr and "Traceback" not in stderr
    return lines[0]


def _build(*extra: object) -> tuple[str, ...]:
    return ("android", "m.onnx", "-o", "out", "--quantize", "int8", *map(str, extra))


# --- calibration and eval files -------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--calibration", "--eval"])
def test_an_npy_instead_of_an_npz(work: Path, flag: str) -> None:
    np.save(work / "samples.npy", np.zeros((8, 1, 4), np.float32))
    (work / "samples.npy").rename(work / "samples.npz")  # np.save's file under the name the flag wants
    extra = (flag, "samples.npz") if flag == "--calibration" else ("--calibration", "random", flag, "samples.npz")
    result, took = _timed(*_build(*extra))
    assert_fails(result, 2, f"{flag} samples.npz is an .npy file (one unnamed array), not an .npz", "numpy.savez")
    assert took < BOUND_S and not (work / "out").exists()
    # by its name, an .npy is refused before anything is read
    np.save(work / "named.npy", np.zeros((8, 1, 4), np.float32))
    named = (flag, "named.npy") if flag == "--calibration" else ("--calibration", "random", flag, "named.npy")
    assert_fails(invoke(*_build(*named)), 2, f"{flag} named.npy is not an .npz file")


def _npz_declaring(path: Path, shape: tuple[int, ...]) -> None:
    """An .npz whose one member's header declares ``shape`` (float32) and holds 16 bytes of data."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("x.npy", header.getvalue() + bytes(16))


def test_an_npz_declaring_698_tib(work: Path) -> None:
    _npz_declaring(work / "huge.npz", (698, 1 << 18, 1 << 20))  # float32: 698 TiB
    result, took = _timed(*_build("--calibration", "huge.npz"))
    assert_fails(result, 2, "--calibration huge.npz: array 'x' declares shape 698x262144x1048576 of float32 (698.0 TiB)", "allowed for this model's inputs")
    assert took < BOUND_S


def test_a_deflate_bomb_in_a_calibration_folder(work: Path) -> None:
    """256 MiB of zeros compressed to ~250 KiB: refused from its .npy header, never unpacked."""
    (work / "calib").mkdir()
    n = 64 << 20  # float32 elements: 256 MiB, over the 64 MiB a [1, 4] model's samples may take
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (n, 1, 4 // 4)})
    with zipfile.ZipFile(work / "calib" / "bomb.npz", "w", compression=zipfile.ZIP_DEFLATED) as zf, zf.open("x.npy", "w", force_zip64=True) as member:
        member.write(header.getvalue())
        chunk = bytes(16 << 20)
        for _ in range((n * 4) // len(chunk)):
            member.write(chunk)
    assert (work / "calib" / "bomb.npz").stat().st_size < 2 << 20
    code, stderr, took = _run(work, *_build("--calibration", "calib"))
    assert code == 2, stderr
    assert "bomb.npz: array 'x' declares shape 67108864x1x1 of float32 (256.0 MiB)" in _one_line(stderr)
    assert took < BOUND_S


def _png_header(width: int, height: int) -> bytes:
    """A PNG that declares ``width`` x ``height`` RGB pixels (a decompression bomb's header; no pixel data)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    data = zlib.compress(bytes(1 << 20), 9)  # a first megabyte of zero rows: what a bomb's IDAT starts with
    idat = struct.pack(">I", len(data)) + b"IDAT" + data + struct.pack(">I", zlib.crc32(b"IDAT" + data))
    return b"\x89PNG\r\n\x1a\n" + chunk + idat


def test_a_decompression_bomb_image_in_a_calibration_folder(work: Path) -> None:
    (work / "calib").mkdir()
    np.savez(work / "calib" / "ok.npz", x=np.zeros((8, 1, 4), np.float32))
    (work / "calib" / "bomb.png").write_bytes(_png_header(200_000, 200_000))  # 40 gigapixels
    code, stderr, took = _run(work, *_build("--calibration", "calib"))
    assert code == 2, stderr
    line = _one_line(stderr)
    assert "--calibration calib/bomb.png: an image" in line and "never decoded" in line
    assert took < BOUND_S and not (work / "out").exists()


# --- special files --------------------------------------------------------------------------------


@pytest.fixture
def fifo(work: Path) -> Path:
    path = work / "pipe.json"
    os.mkfifo(path)
    return path


def test_a_fifo_as_report_results(work: Path, fifo: Path) -> None:
    (work / "pkg").mkdir()
    (work / "pkg" / "manifest.json").write_text('{"kind": "mobilegen-package"}')
    code, stderr, took = _run(work, "report", "pkg", "--results", fifo.name)
    assert code == 2, stderr
    assert "error: pipe.json is a FIFO (named pipe), not a regular file" in _one_line(stderr)
    assert took < BOUND_S


@pytest.mark.parametrize("flag", ["--calibration", "--eval"])
def test_a_fifo_as_calibration_or_eval(work: Path, fifo: Path, flag: str) -> None:
    extra = (flag, fifo.name) if flag == "--calibration" else ("--calibration", "random", flag, fifo.name)
    code, stderr, took = _run(work, *_build(*extra))
    assert code == 2, stderr
    assert f"{flag} pipe.json is a FIFO (named pipe), not a regular file" in _one_line(stderr)
    assert took < BOUND_S


# --- .mgv given to bench --------------------------------------------------------------------------


def _mgv(*tensors: bytes, count: int | None = None) -> bytes:
    return b"MGGV" + struct.pack("<II", 1, len(tensors) if count is None else count) + b"".join(tensors)


def _tensor(name: bytes = b"x", code: int = 1, rank: int = 2, dims: tuple[int, ...] = (1, 4), nbytes: int = 16, data: bytes = bytes(16)) -> bytes:
    return struct.pack("<BI", 0, len(name)) + name + struct.pack("<BI", code, rank) + struct.pack(f"<{len(dims)}q", *dims) + struct.pack("<Q", nbytes) + data


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (_mgv(_tensor(rank=0xFFFFFFFF, dims=())), "has rank 4294967295, over 64"),
        (_mgv(_tensor(code=99)), "element type code 99"),
        (_mgv(_tensor()[:9]), "truncated"),
        (_mgv(count=1), "truncated"),
        (_mgv(_tensor(dims=(1 << 40, 1 << 40), nbytes=16)), "declares 16 bytes for shape"),
        (_mgv(_tensor(nbytes=1 << 62)), "declares 4611686018427387904 bytes"),
        (_mgv(count=0xFFFFFFFF), "declares 4294967295 tensors"),
        (b"MGGV\x01", "truncated"),
        (_mgv(_tensor(name=b"\xff")), "not UTF-8"),
    ],
    ids=["huge-rank", "dtype", "cut-name", "no-tensor", "dims-vs-bytes", "huge-nbytes", "huge-count", "cut-header", "name"],
)
def test_a_malformed_mgv_given_to_bench(pkg: Path, data: bytes, needle: str) -> None:
    (pkg / "golden" / "golden.mgv").write_bytes(data)
    result, took = _timed("bench", pkg, "--runs", "1", "--warmup", "0")
    assert_fails(result, 2, "golden.mgv: not a valid golden-vector file", needle)
    assert took < BOUND_S


# --- config ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("a = " + "[" * 100_000 + "]" * 100_000 + "\n", "is nested too deeply to be a config file"),
        ("a = " + "{b=" * 5_000 + "1" + "}" * 5_000 + "\n", "is nested too deeply to be a config file"),
        (".".join(["a"] * 100_000) + " = 1\n", "line 1 nests keys more than 64 levels deep"),
        ("[" + ".".join(["check"] * 100_000) + "]\n", "line 1 nests keys more than 64 levels deep"),
    ],
    ids=["arrays", "inline-tables", "dotted-key", "table-header"],
)
def test_a_deeply_nested_toml_config(work: Path, text: str, needle: str) -> None:
    (work / "mobilegen.toml").write_text(text)
    result, took = _timed("check", "m.onnx", "--ep", "nnapi")
    assert_fails(result, 2, "config file mobilegen.toml", needle)
    assert took < BOUND_S


def test_dots_in_strings_and_comments_are_not_nesting(work: Path) -> None:
    dots = "." * 200
    (work / "mobilegen.toml").write_text(f'# {dots}\n[check]\nep = ["nnapi"]  # {dots}\nmodel = "m.onnx"\nandroid-api = 29\n')
    result = invoke("check", "--json")
    assert result.exit_code == 0, result.stderr


# --- --sample (the verification gate's real inputs) -----------------------------------------------


def test_a_sample_declaring_698_tib_or_a_fifo(work: Path, fifo: Path) -> None:
    _npz_declaring(work / "huge.npz", (698, 1 << 18, 1 << 20))
    result, took = _timed("export", "m.onnx", "-o", "e.onnx", "--sample", "huge.npz")
    assert_fails(result, 2, "--sample huge.npz: array 'x' declares shape 698x262144x1048576 of float32 (698.0 TiB)")
    assert took < BOUND_S and not (work / "e.onnx").exists()
    code, stderr, took = _run(work, "export", "m.onnx", "-o", "e.onnx", "--sample", fifo.name)
    assert code == 2, stderr
    assert "--sample pipe.json is a FIFO (named pipe), not a regular file" in _one_line(stderr)
    assert took < BOUND_S
