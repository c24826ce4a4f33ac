"""The partition picture of one coverage report, as data for the HTML template: a legend, a run strip (one
bar per stretch of nodes with the same placement, width ∝ nodes) and a grid with one cell per node in
order, each with a tooltip. Sized to stay readable for thousands of nodes; every number is formatted
here, so the template only places text."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mobilegen.report.facts import CPU, partition_text, placement, plural, runs

if TYPE_CHECKING:
    from mobilegen.coverage.model import CoverageReport

# Partition colours (Tableau 10 without its grey); CPU is grey. Cycled when there are more partitions.
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#2f4b7c",
)
CPU_COLOR = "#cfcfcf"

LEGEND_MAX = 20  # partitions named in the legend; the rest share colours (the tooltips still tell)
STRIP_WIDTH = 1000
STRIP_HEIGHT = 22
LABEL_WIDTH = 44  # row labels left of the grid
GAP = 1


@dataclass(frozen=True)
class LegendEntry:
    color: str
    text: str  # "CPU (3 nodes)", "partition 2 (14 nodes)"


@dataclass(frozen=True)
class Rect:
    """One SVG rectangle with its tooltip; coordinates already formatted as the SVG carries them."""

    x: str
    y: str
    width: str
    height: str
    fill: str
    tip: str


@dataclass(frozen=True)
class RowLabel:
    x: int
    y: int
    text: str  # index of the row's first node


@dataclass(frozen=True)
class PartitionPicture:
    label: str  # the EP label (raw text)
    node_count: int
    legend: tuple[LegendEntry, ...]
    more_partitions: int  # partitions left out of the legend
    strip: tuple[Rect, ...]
    grid_width: int
    grid_height: int
    font_size: int
    row_labels: tuple[RowLabel, ...]
    cells: tuple[Rect, ...]
    strip_width: int = STRIP_WIDTH
    strip_height: int = STRIP_HEIGHT


def color(part: int) -> str:
    return PALETTE[(part - 1) % len(PALETTE)] if part else CPU_COLOR


def partition_picture(c: CoverageReport) -> PartitionPicture | None:
    """The picture of ``c``; None when it has no nodes."""
    nodes = placement(c)
    if not nodes:
        return None
    n = len(nodes)
    cols = 50 if n <= 1000 else 100
    cell = 14 if n <= 1000 else 9
    rows = math.ceil(n / cols)

    counts: dict[int, int] = {}
    for _i, _name, _op, p in nodes:
        counts[p] = counts.get(p, 0) + 1
    shown = sorted(p for p in counts if p)
    legend = [LegendEntry(CPU_COLOR, f"{CPU} ({counts.get(0, 0)} nodes)")]
    legend += [LegendEntry(color(p), f"partition {p} ({counts[p]} nodes)") for p in shown[:LEGEND_MAX]]

    strip = []
    for part, first, count in runs(c):
        x = STRIP_WIDTH * first / n
        w = max(STRIP_WIDTH * count / n, 0.5)
        tip = f"{partition_text(part)}: nodes {first}–{first + count - 1} ({count} {plural(count, 'node')})"
        strip.append(Rect(f"{x:.2f}", "0", f"{w:.2f}", str(STRIP_HEIGHT), color(part), tip))

    cells = []
    for idx, name, op, part in nodes:
        r, col = divmod(idx, cols)
        node = c.nodes[idx]
        tip = f"#{idx} {name} ({op}): {partition_text(part)}"
        if not node.supported and node.reasons:
            tip += " — " + "; ".join(node.reasons)
        size = str(cell - GAP)
        cells.append(Rect(str(LABEL_WIDTH + col * cell), str(r * cell), size, size, color(part), tip))

    return PartitionPicture(
        label=c.shown,
        node_count=n,
        legend=tuple(legend),
        more_partitions=max(len(shown) - LEGEND_MAX, 0),
        strip=tuple(strip),
        grid_width=LABEL_WIDTH + cols * cell,
        grid_height=rows * cell,
        font_size=max(cell - 4, 7),
        row_labels=tuple(RowLabel(LABEL_WIDTH - 4, r * cell + cell - 3, str(r * cols)) for r in range(rows)),
        cells=tuple(cells),
    )
