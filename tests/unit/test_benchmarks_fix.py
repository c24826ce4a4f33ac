"""benchmarks/fix.py's table on one tiny model (Linear, LayerNorm, GELU, Linear), so the script cannot rot:
the table's structure, never its timings."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "fix.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mobilegen_bench_fix", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_fix_benchmark_table_on_a_tiny_model(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    bench = _bench()
    rows = bench.table([bench.TINY], tmp_path, warm_up=False, repeats=1)

    assert list(tmp_path.iterdir()) == []  # every build was made in a temporary folder, removed
    (row,) = rows
    assert (row.model, row.kept.keys()) == ("tiny", {"android", "ios"})
    assert row.nodes > 0
    for before, after in (row.nnapi, row.coreml):
        assert before.total > 0 and after.total > 0
        assert 0 <= before.supported <= before.total and 0 <= after.supported <= after.total
        assert after.supported >= before.supported  # the stage never keeps a pass that loses nodes
    assert all(isinstance(p, str) and p for passes in row.kept.values() for p in passes)
    assert all(math.isfinite(t) for t in (row.fix_s, row.build_s, row.nofix_s))

    lines = bench.render(rows)
    assert len(lines) == 3  # header, rule, one row
    cells = [line.strip("|").split(" | ") for line in (lines[0], lines[2])]
    assert [c.strip() for c in cells[0]] == list(bench.HEADER)
    assert len(cells[1]) == len(bench.HEADER) and cells[1][0].strip() == "tiny"
    assert lines[1] == "|" + "---|" * len(bench.HEADER)
    assert cells[1][2].count("→") == 1 and cells[1][3].count("→") == 1
