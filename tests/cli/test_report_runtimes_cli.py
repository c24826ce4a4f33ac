"""A real ``mobilegen package`` build (ORT only, the main venv has no litert-torch/coreai): the report's
Runtimes section has one row, whose size and parity agree with the package's files and verification table."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import invoke

ROOT = Path(__file__).resolve().parents[2]
CNN = ROOT / "examples" / "mobilenet_tiny.pt"


def test_ort_only_build_has_one_runtime_row(tmp_path: Path) -> None:
    out = tmp_path / "Cnn"
    r = invoke("package", CNN, "--input", "image:1x3x64x64", "--android", "--nnapi", "-o", out)
    assert r.exit_code == 0, r.stderr
    md = (out / "report" / "report.md").read_text(encoding="utf-8")
    section = md.split("## Runtimes", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and not ln.startswith("| runtime")]
    assert len(rows) == 1, section
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    size = (out / "model" / "model.ort").stat().st_size
    assert cells[:5] == ["ONNX Runtime (ort)", "android", "model/model.ort", str(size), cells[4]]
    assert cells[7:9] == ["pass", "onnxruntime"]
    # the accelerate text is NNAPI's coverage, the same counts the coverage JSON holds
    cov = json.loads((out / "report" / "coverage.json").read_text(encoding="utf-8"))
    (nnapi,) = cov["reports"]
    n = len(nnapi["partitions"])
    assert cells[9] == f"nnapi {nnapi['supported_nodes']}/{nnapi['total_nodes']}, {n} partition{'' if n == 1 else 's'}"
    html = (out / "report" / "report.html").read_text(encoding="utf-8")
    assert '<section id="runtimes">' in html and html.count("<td>ONNX Runtime (ort)</td>") == 1
