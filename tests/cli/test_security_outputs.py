"""Outputs under attack (issue 9 items 2, 3, 4, 10, 12, 14): inputs are never replaced, nothing that appears
during a run is lost, special files and symlinks are refused, full disks leave nothing, stale staging of dead
processes is removed and a live process's never is."""

from __future__ import annotations

import errno
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper
from typer.testing import CliRunner

from mobilegen.cli import app
from mobilegen.infra import outputs, staging

runner = CliRunner()


@pytest.fixture
def model(tmp_path: Path) -> Path:
    d = tmp_path / "models"
    d.mkdir()
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    path = d / "id.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


@pytest.fixture
def tmpdir_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private TMPDIR, so leftovers there can be counted."""
    d = tmp_path / "tmpdir"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    monkeypatch.setattr(staging, "_swept", set())
    return d


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def assert_fails(result, code: int, *needles: str) -> None:
    assert result.exit_code == code, (result.exit_code, result.stderr)
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, result.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def hidden(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def build(model: Path, out: Path, *extra: object):
    return invoke("android", model, "-o", out, *extra)


# ----------------------------------------------------------------------------- item 2: zips


def test_zip_never_replaces_the_input_model(model: Path, tmp_path: Path) -> None:
    as_zip = tmp_path / "m.zip"  # `mobilegen android m.zip -o m --zip --force`
    shutil.copyfile(model, as_zip)
    before = as_zip.read_bytes()
    assert_fails(build(as_zip, tmp_path / "m", "--zip", "--force"), 2, "is the input model")
    os.link(model, tmp_path / "linked.zip")  # a hard link to the input is the input
    assert_fails(build(model, tmp_path / "linked", "--zip", "--force"), 2, "is the input model")
    assert as_zip.read_bytes() == before and (tmp_path / "linked.zip").read_bytes() == model.read_bytes()
    assert not (tmp_path / "m").exists() and not (tmp_path / "linked").exists()
    assert hidden(tmp_path) == []


def test_zip_force_replaces_only_an_earlier_mobilegen_zip(model: Path, tmp_path: Path) -> None:
    out, zpath = tmp_path / "out", tmp_path / "out.zip"
    with zipfile.ZipFile(zpath, "w") as zf:  # someone's zip, even one with a manifest.json of another kind
        zf.writestr("out/manifest.json", '{"kind": "something-else"}')
    before = zpath.read_bytes()
    assert_fails(build(model, out, "--zip", "--force"), 2, "not a mobilegen package zip")
    assert zpath.read_bytes() == before and not out.exists()
    zpath.unlink()
    assert build(model, out, "--zip").exit_code == 0
    first = zpath.read_bytes()
    r = build(model, out, "--zip", "--force")  # an earlier mobilegen zip: replaced
    assert r.exit_code == 0, r.stderr
    assert zpath.read_bytes() == first  # reproducible build, same bytes
    assert hidden(tmp_path) == []


# ----------------------------------------------------------------------------- item 3: appears meanwhile


def _before_final_step(monkeypatch: pytest.MonkeyPatch, hook) -> None:
    """Run ``hook`` (another program at work) after the checks, right before the final step."""
    real = getattr(outputs._Transaction.commit, "real", outputs._Transaction.commit)

    def commit(self) -> None:
        hook()
        real(self)

    commit.real = real  # type: ignore[attr-defined]
    monkeypatch.setattr(outputs._Transaction, "commit", commit)


@pytest.mark.parametrize("what", ["folder", "file", "empty folder"])
def test_output_that_appears_during_the_run_is_kept(model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str) -> None:
    out = tmp_path / "out"

    def appear() -> None:
        if what == "file":
            out.write_text("theirs")
        else:
            out.mkdir()
            if what == "folder":
                (out / "mine.txt").write_text("keep me")

    _before_final_step(monkeypatch, appear)
    assert_fails(build(model, out), 2, "already exists")
    if what == "file":
        assert out.read_text() == "theirs"
    else:
        assert [p.name for p in out.iterdir()] == ([] if what == "empty folder" else ["mine.txt"])
    assert hidden(tmp_path) == []


def test_force_replaces_only_what_it_checked(model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    assert build(model, out).exit_code == 0
    manifest = (out / "manifest.json").read_bytes()
    _before_final_step(monkeypatch, lambda: (out / "notes.txt").write_text("written during the run"))
    assert_fails(build(model, out, "--force"), 2, "already exists", "changed during the run")
    assert (out / "notes.txt").read_text() == "written during the run"
    assert (out / "manifest.json").read_bytes() == manifest

    def swap() -> None:  # another program replaced the folder by its own
        shutil.rmtree(out)
        out.mkdir()
        (out / "theirs.txt").write_text("theirs")

    _before_final_step(monkeypatch, swap)
    assert_fails(build(model, out, "--force"), 2, "changed during the run")
    assert [p.name for p in out.iterdir()] == ["theirs.txt"]
    assert hidden(tmp_path) == []


def test_export_force_never_replaces_a_file_that_changed(model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "m.onnx"
    out.write_text("old")
    _before_final_step(monkeypatch, lambda: out.write_text("newer, written by someone else"))
    assert_fails(invoke("export", model, "-o", out, "--force"), 2, "changed during the run")
    assert out.read_text() == "newer, written by someone else"
    assert hidden(tmp_path) == []


def test_lock_file_is_removed_and_reused_safely(tmp_path: Path) -> None:
    target = tmp_path / "x"
    with staging.locked(target):
        assert (tmp_path / ".x.lock").exists()
    assert not (tmp_path / ".x.lock").exists()


# ----------------------------------------------------------------------------- item 4: special files


def _special(tmp_path: Path, kind: str) -> Path:
    p = tmp_path / f"special-{kind}"
    if kind == "fifo":
        os.mkfifo(p)
    else:
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(p))
        s.close()
    return p


@pytest.mark.parametrize("kind", ["fifo", "socket"])
@pytest.mark.parametrize("force", [False, True])
def test_special_file_outputs_are_refused(model: Path, tmp_path: Path, kind: str, force: bool) -> None:
    p = _special(tmp_path, kind)
    flags = ["--force"] if force else []
    assert_fails(invoke("export", model, "-o", p, *flags), 2, "not a regular file or folder")
    assert_fails(build(model, p, *flags), 2, "not a regular file or folder")
    zipped = _special(tmp_path, kind + "2")
    z = zipped.rename(tmp_path / "pkg.zip")
    assert_fails(build(model, tmp_path / "pkg", "--zip", *flags), 2, "not a regular file or folder")
    cfg = _special(tmp_path, kind + "3").rename(tmp_path / "net.required_operators.config")
    assert_fails(invoke("convert", model, "-o", tmp_path / "net.ort", *flags), 2, "not a regular file or folder")
    assert not stat.S_ISREG(p.lstat().st_mode) and not stat.S_ISREG(z.lstat().st_mode) and not stat.S_ISREG(cfg.lstat().st_mode)
    assert not (tmp_path / "pkg").exists() and not (tmp_path / "net.ort").exists()
    assert hidden(tmp_path) == []


def test_symlinked_output_is_refused(model: Path, tmp_path: Path) -> None:
    target = tmp_path / "target.onnx"
    target.write_text("not yours")
    link = tmp_path / "link.onnx"
    link.symlink_to(target)
    assert_fails(invoke("export", model, "-o", link, "--force"), 2, "symbolic link")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dirlink").symlink_to(tmp_path / "dir")
    assert_fails(build(model, tmp_path / "dirlink", "--force"), 2, "symbolic link")
    assert target.read_text() == "not yours" and link.is_symlink() and list((tmp_path / "dir").iterdir()) == []


# ----------------------------------------------------------------------------- item 10: convert names


def test_convert_refuses_an_ort_named_like_the_config_before_writing(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "dir"
    out.mkdir()
    assert_fails(invoke("convert", model, "-o", out / "required_operators.config"), 2, "named like an operator config")
    assert list(out.iterdir()) == []


def test_converts_into_one_folder_keep_their_own_config(model: Path, tmp_path: Path) -> None:
    for name in ("a", "b"):
        r = invoke("convert", model, "-o", tmp_path / f"{name}.ort")
        assert r.exit_code == 0, r.stderr
        config = (tmp_path / f"{name}.required_operators.config").read_text()
        assert f"# - {name}.ort" in config and "ai.onnx;" in config
    assert not (tmp_path / "required_operators.config").exists()
    (tmp_path / "c.required_operators.config").write_text("mine")
    assert_fails(invoke("convert", model, "-o", tmp_path / "c.ort"), 2, "c.required_operators.config", "already exists")
    assert (tmp_path / "c.required_operators.config").read_text() == "mine" and not (tmp_path / "c.ort").exists()
    assert hidden(tmp_path) == []


# ----------------------------------------------------------------------------- item 12: full disks


def _enospc_copy(monkeypatch: pytest.MonkeyPatch, under: Path) -> None:
    real = shutil.copyfile

    def copyfile(src, dst, *a, **kw):
        if Path(dst).resolve().is_relative_to(under.resolve()):
            Path(dst).write_bytes(b"\0" * 4096)  # half-written, as a full disk leaves it
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(src, dst, *a, **kw)

    monkeypatch.setattr(shutil, "copyfile", copyfile)
    real_link = os.link

    def link(src, dst, *a, **kw):  # a full file system refuses a new name too (no room for the directory entry)
        if Path(dst).resolve().is_relative_to(under.resolve()):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_link(src, dst, *a, **kw)

    monkeypatch.setattr(os, "link", link)


def test_full_tmpdir_is_named(model: Path, tmp_path: Path, tmpdir_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _enospc_copy(monkeypatch, tmpdir_env)
    out = tmp_path / "o"
    out.mkdir()
    assert_fails(build(model, out / "pkg"), 2, "TMPDIR", str(tmpdir_env), "No space left")
    assert_fails(invoke("convert", model, "-o", out / "m.ort"), 2, "TMPDIR", "No space left")
    assert list(out.iterdir()) == [] and list(tmpdir_env.iterdir()) == []


def test_full_output_disk_leaves_nothing(model: Path, tmp_path: Path, tmpdir_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "o"
    out.mkdir()
    _enospc_copy(monkeypatch, out)
    assert_fails(invoke("export", model, "-o", out / "m.onnx"), 2, f"cannot write {out / 'm.onnx'}", "No space left")
    assert list(out.iterdir()) == [] and list(tmpdir_env.iterdir()) == []


def test_full_disk_while_building_the_package(model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mobilegen.package

    def full(*a, **kw):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(mobilegen.package, "finalize_package", full)
    out = tmp_path / "o"
    out.mkdir()
    assert_fails(build(model, out / "pkg"), 2, f"cannot write {out}", "No space left")
    assert list(out.iterdir()) == []


# ----------------------------------------------------------------------------- item 14: stale staging


def _stale(parent: Path, name: str, pid: int, start: str | None) -> Path:
    d = parent / name
    d.mkdir()
    (d / "new").mkdir()
    (d / "new" / "model.ort").write_bytes(b"\0" * 1000)
    (d / staging.OWNER).write_text(f"{pid} {start or '-'}\n")
    return d


def test_stale_staging_of_dead_processes_is_removed(model: Path, tmp_path: Path, tmpdir_env: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live_start = staging._proc_start(live.pid)
        parent = tmp_path / "o"
        parent.mkdir()
        gone = [
            _stale(parent, f".pkg.tmp-{dead_pid}-abcdefgh", dead_pid, None),
            _stale(parent, f".pkg.zip.tmp-{dead_pid}-abcdefg2", dead_pid, "123"),
            _stale(tmpdir_env, f"mobilegen-ort-{dead_pid}-abcdefgh", dead_pid, None),
        ]
        kept = [
            _stale(parent, f".pkg.tmp-{live.pid}-livelive", live.pid, live_start),
            _stale(tmpdir_env, f"mobilegen-ort-{live.pid}-livelive", live.pid, live_start),
            _stale(parent, f".other.tmp-{dead_pid}-notowned", dead_pid + 1, None),  # owner file names another PID
        ]
        if live_start is not None:  # a reused PID: alive, but not the process that wrote the owner file
            gone.append(_stale(parent, f".pkg.tmp-{live.pid}-reusedpd", live.pid, str(int(live_start) - 1)))
        user = parent / ".notes.tmp-1-abcdefgh"  # no owner file: never ours to remove
        user.mkdir()
        kept.append(user)
        r = build(model, parent / "pkg")
        assert r.exit_code == 0, r.stderr
        assert [p.name for p in gone if p.exists()] == []
        assert [p.name for p in kept if not p.exists()] == []
        assert (parent / "pkg" / "manifest.json").is_file()
    finally:
        live.kill()
        live.wait()


# ----------------------------------------------------------------------------- item 13: signals (fast part)

DEFERRED = """
import os, signal, sys, time
sys.path.insert(0, sys.argv[1])
from mobilegen.infra.signals import install
install()
try:
    import slow_native_init
    time.sleep(5)  # the interrupt comes within a few ms of the import's end
    print("no interrupt")
except KeyboardInterrupt:
    print("interrupted after import:", sys.modules["slow_native_init"].DONE)
"""


def test_ctrl_c_during_an_import_is_taken_once_the_import_finished(tmp_path: Path) -> None:
    # stands for torch / onnxruntime initialising: an interrupt raised inside it breaks the module for good
    (tmp_path / "slow_native_init.py").write_text(
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\nfor _ in range(20):\n    time.sleep(0.01)\nDONE = True\n"
    )
    p = subprocess.run([sys.executable, "-c", DEFERRED, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "interrupted after import: True", (p.stdout, p.stderr)


def test_an_error_raised_after_a_signal_is_an_interrupt(monkeypatch: pytest.MonkeyPatch) -> None:
    import signal

    import typer

    import mobilegen.cli as cli
    from mobilegen.infra import signals

    def broken() -> None:
        raise ImportError("initialization failed")  # what a native module makes of a KeyboardInterrupt

    monkeypatch.setattr(signals, "received", [signal.SIGINT])
    with pytest.raises(typer.Exit) as exc:
        cli.run_command(broken, json_out=False, debug=False, human=lambda r, c: None, to_json=lambda r: r)
    assert exc.value.exit_code == 130
    monkeypatch.setattr(signals, "received", [])
    with pytest.raises(typer.Exit) as exc:
        cli.run_command(broken, json_out=False, debug=False, human=lambda r, c: None, to_json=lambda r: r)
    assert exc.value.exit_code == 1
