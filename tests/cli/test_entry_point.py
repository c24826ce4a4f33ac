"""The console entry point as a process: one line for usage errors, exit codes, SIGTERM cleanup."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mobilegen", *args], capture_output=True, text=True, cwd=cwd)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["export", "m.pt", "--bogus"], "no such option: --bogus"),
        (["export"], "missing argument 'MODEL'"),
        (["nosuch"], "no such command"),
    ],
)
def test_usage_errors_are_one_line(args: list[str], needle: str) -> None:
    p = run(*args)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], p.stderr
    assert "--help" in lines[0]


def test_version_and_help_exit_zero() -> None:
    assert run("--version").returncode == 0
    assert run("--help").returncode == 0


def test_json_gate_failure_is_one_document(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Erf", ["a"], ["b"]), helper.make_node("Relu", ["b"], ["y"])]
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    p = run("check", str(path), "--ep", "nnapi", "--max-partitions", "1", "--json")
    assert p.returncode == 7, p.stderr
    data = json.loads(p.stdout)
    assert data["reports"] and data["error"] == "coverage-gate" and data["exit_code"] == 7


def _relu_erf(path: Path) -> Path:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Erf", ["a"], ["b"]), helper.make_node("Relu", ["b"], ["y"])]
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def run_into_closed_pipe(*args: str, stream: str) -> subprocess.CompletedProcess[str]:
    """``mobilegen ARGS`` with ``stream`` (stdout or stderr) a pipe whose reader has already gone, as after
    ``| head -1`` read its line: every write to it fails (EPIPE). The other stream is captured."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, stream: write_end}
        return subprocess.run([sys.executable, "-m", "mobilegen", *args], text=True, check=False, **pipes)  # type: ignore[call-overload,no-any-return]
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    ("args", "stream"),
    [
        (["check", "{model}", "--ep", "nnapi", "--json"], "stdout"),  # `--json | head -c 10`
        (["check", "{model}", "--ep", "nnapi"], "stderr"),  # `2>&1 | head -1`: the human output is on stderr
        (["check", "{model}", "--ep", "nnapi", "--json", "--max-partitions", "0"], "stdout"),  # a gate result too
        (["--help"], "stdout"),
    ],
)
def test_a_closed_pipe_ends_quietly_with_141(tmp_path: Path, args: list[str], stream: str) -> None:
    # it ended in exit 1 (mobilegen's "internal error") with no message, or a traceback at shutdown
    model = str(_relu_erf(tmp_path / "m.onnx"))
    p = run_into_closed_pipe(*(a.replace("{model}", model) for a in args), stream=stream)
    assert p.returncode == 141, (p.returncode, p.stdout, p.stderr)
    other = p.stderr if stream == "stdout" else p.stdout
    assert other == ""  # nothing said: no "internal error", no "Exception ignored ... BrokenPipeError"
    assert sorted(q.name for q in tmp_path.iterdir()) == ["m.onnx"]


@pytest.mark.slow
def test_sigterm_leaves_no_staging_folder(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mobilegen", "android", str(ROOT / "examples" / "encoder_tiny.pt2"), "--nnapi", "-o", str(tmp_path / "out")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.time() + 60
    while time.time() < deadline and not any(p.name.startswith(".out.tmp-") for p in tmp_path.iterdir()):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=60)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    assert rc == 128 + signal.SIGTERM, (rc, err)
    assert list(tmp_path.iterdir()) == [], (list(tmp_path.iterdir()), err)
