"""``mobilegen report --results`` rewrites a package in place under the lock and transaction of the builds:
two runs into one package at once (two processes) both succeed, one after the other — the second merges
on top of the first — both results are in the report, and ``mobilegen verify`` passes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from cli_helpers import invoke

from mobilegen.infra.outputs import locked_package


def _results(pkg: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Two different results of the package's model: this host's, and the same as if from another machine."""
    host = tmp_path / "host.json"
    r = invoke("bench", pkg, "--runs", "3", "--warmup", "1", "-o", host)
    assert r.exit_code == 0, r.stderr
    doc = json.loads(host.read_text())
    doc["device"]["model"] = "other-machine"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc), encoding="utf-8")
    return host, other


def _report(pkg: Path, result: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mobilegen", "report", str(pkg), "--results", str(result), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def test_two_concurrent_reports_into_one_package(pkg: Path, tmp_path: Path) -> None:
    host, other = _results(pkg, tmp_path)
    manifest = (pkg / "manifest.json").read_bytes()
    with locked_package(pkg):  # as a build finishing into the package would: both reports wait for it
        procs = [_report(pkg, host), _report(pkg, other)]
        time.sleep(3)  # long enough for both to start and reach the lock
        assert [p.poll() for p in procs] == [None, None], [p.communicate() for p in procs]
        assert (pkg / "manifest.json").read_bytes() == manifest
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    docs = [json.loads(out) for out, _err in outs]
    assert all(len(d["added"]) == 1 for d in docs)
    # one ran first and saw only its own result; the other waited and merged on top of it
    assert sorted(len(d["results"]) for d in docs) == [1, 2]
    both = {*docs[0]["added"], *docs[1]["added"]}
    assert len(both) == 2
    md = (pkg / "report" / "report.md").read_text()
    assert "other-machine" in md and all(Path(rel).name in md for rel in both)
    assert sorted(p.name for p in (pkg / "report" / "results").iterdir()) == sorted(Path(rel).name for rel in both)
    listed = {f["path"] for f in json.loads((pkg / "manifest.json").read_text())["files"]}
    assert both <= listed and not any(".tmp-" in p for p in listed)
    assert [p.name for p in pkg.parent.iterdir() if ".tmp-" in p.name or p.name.endswith(".lock")] == []
    v = invoke("verify", pkg)
    assert v.exit_code == 0, v.stderr


def test_two_reports_racing_without_a_holder(pkg: Path, tmp_path: Path) -> None:
    host, other = _results(pkg, tmp_path)
    procs = [_report(pkg, host), _report(pkg, other)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert len(list((pkg / "report" / "results").iterdir())) == 2
    v = invoke("verify", pkg)
    assert v.exit_code == 0, v.stderr
