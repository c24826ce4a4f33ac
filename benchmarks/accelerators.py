"""Android's accelerators on architectures built from `transformers` configs: NNAPI and the QNN *estimate*
before → after the fix stage, at two Hexagon generations, and after int8 quantization (issue 16).

The models are benchmarks/fix.py's (imported from it: random weights, small widths, the depth of a real
one, saved as a user would). Each is built with the Python API as
`mobilegen android MODEL --nnapi --qnn --qnn-htp-arch 73` would, with the fix stage on (the default) and
off (`BuildOptions(fix=False)`, `--no-fix`); both shipped Android models are then analysed again for QNN
at v69, as `mobilegen check MODEL --ep qnn --qnn-htp-arch 69` analyses a model (`EPTarget("qnn",
qnn_htp_arch="69")`, with the release the project pins). Last, unless --no-int8, it is built as
`mobilegen android MODEL --nnapi --qnn --qnn-htp-arch 69 --quantize int8 --calibration random` (the
accuracy gate's thresholds at 0: random weights calibrated on random data measure coverage, not accuracy;
the worst cosine is printed). Prints one table:

  model, nodes     the exported graph's node count (the --no-fix Android model)
  NNAPI            supported/total nodes (as the analysis counts them) and partitions: --no-fix → default
  QNN v73, v69     the same, for the QNN estimate at that Hexagon generation
  int8 ...         the int8 build's shipped model: QNN v69 estimate, NNAPI, and the gate's worst cosine

QNN figures are estimates: the QNN SDK on the phone decides each node (mobilegen.providers.qnn.ESTIMATE).
Asserts nothing. `--quick`: BERT and ViT only (~1.5 minutes). About 3.5 minutes on 2 cores (all models, int8
included; `--no-int8`: less).
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NNAPI, QNN = "nnapi", "qnn"
HTP_BUILD, HTP_OLD = 73, 69
QUICK = ("MiniLM (BERT)", "ViT")


def _fix_benchmark() -> Any:
    """benchmarks/fix.py (its model builders and Counts), by path: benchmarks/ is not a package."""
    spec = importlib.util.spec_from_file_location("mobilegen_bench_fix", Path(__file__).resolve().parent / "fix.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being created
    spec.loader.exec_module(module)
    return module


fix = _fix_benchmark()
Counts = fix.Counts


@dataclass(frozen=True)
class Pair:
    """A provider's coverage without the fix stage → with it; or why a build failed."""

    before: Any = None  # Counts
    after: Any = None
    error: str = ""

    def __str__(self) -> str:
        return self.error or f"{self.before} → {self.after}"


@dataclass(frozen=True)
class Int8:
    qnn_old: Any = None  # Counts of the shipped int8 model, QNN estimate at HTP_OLD
    nnapi: Any = None
    cosine: float | None = None  # the accuracy gate's worst cosine
    error: str = ""


@dataclass(frozen=True)
class Row:
    model: str
    nodes: int
    nnapi: Pair
    qnn: Pair  # at HTP_BUILD: the builds' own estimate
    qnn_old: Pair  # at HTP_OLD: the same models analysed again
    int8: Int8 | None
    seconds: float  # every build and analysis of the row
    notes: tuple[str, ...] = ()


def _options(case: Any, model: Path, out: Path, *, fix_stage: bool, htp_arch: int, int8: bool) -> Any:
    import mobilegen
    from mobilegen.quantize import QuantizeOptions

    spec = f"inputs:{'x'.join(map(str, case.shape))}:{case.dtype}"  # a TorchScript file records no shapes
    quantize = QuantizeOptions(mode="int8", calibration="random", min_cosine=0.0, min_top1=0.0) if int8 else None
    return mobilegen.BuildOptions(
        model=model, out=out, fix=fix_stage, quantize=quantize, model_opts=mobilegen.ModelOptions(inputs=(spec,)),
        targets={"android": mobilegen.AndroidOptions(nnapi=True, qnn=True, qnn_htp_arch=htp_arch)},
    )


def _build(opts: Any) -> Any:
    import io

    import mobilegen
    from mobilegen.infra.progress import Reporter, reporting

    with reporting(Reporter(io.StringIO())):
        return mobilegen.build(opts)


def _report(result: Any, label: str) -> Any:
    return next(r for r in result.coverage if r.label == label)


def _counts(report: Any) -> Any:
    return Counts(report.supported_nodes, report.total_nodes, len(report.partitions))


def _reanalysed(result: Any, htp_arch: int) -> Any:
    """The QNN estimate of ``result``'s Android model at ``htp_arch``, as `check --ep qnn --qnn-htp-arch`
    makes it, on the rules of the release the project pins (as the build's own analysis)."""
    import onnx

    from mobilegen.coverage import EPTarget, analyze_all

    path = result.model_of("android").onnx.path
    version = result.runtimes[result.channels.get("android", "maven")]
    target = EPTarget(QNN, qnn_htp_arch=str(htp_arch), ort_version=version)
    (report,) = analyze_all(onnx.load(str(path)), [target], source=path)
    return _counts(report)


def _error(err: Exception) -> str:
    return f"failed: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"


def _int8(case: Any, saved: Path, work: Path) -> Int8:
    from mobilegen.errors import MobilegenError

    try:
        result = _build(_options(case, saved, work / "int8", fix_stage=True, htp_arch=HTP_OLD, int8=True))
    except MobilegenError as err:
        return Int8(error=_error(err))
    record = result.model_of("android").quantization
    cosines = [a.cosine for a in record.accuracy if not a.exact] if record is not None else []
    if record is not None and record.shipped != "int8":
        return Int8(error=f"shipped {record.shipped}: {record.reason}")
    return Int8(_counts(_report(result, QNN)), _counts(_report(result, NNAPI)), min(cosines, default=None))


def measure(case: Any, work: Path, *, int8: bool = True) -> Row:
    """One case's row, built in ``work``."""
    import onnx

    from mobilegen.errors import MobilegenError

    t = time.perf_counter()
    saved = fix.save(case, work)
    builds: dict[bool, Any] = {}
    errors: dict[bool, str] = {}
    for fix_stage in (False, True):
        opts = _options(case, saved, work / f"fix-{fix_stage}", fix_stage=fix_stage, htp_arch=HTP_BUILD, int8=False)
        try:
            builds[fix_stage] = _build(opts)
        except MobilegenError as err:
            errors[fix_stage] = _error(err)
    if errors:
        failed = Pair(error="; ".join(f"{'default' if k else '--no-fix'} {v}" for k, v in errors.items()))
        return Row(case.name, 0, failed, failed, failed, None, time.perf_counter() - t)
    plain, fixed = builds[False], builds[True]

    def pair(label: str) -> Pair:
        return Pair(_counts(_report(plain, label)), _counts(_report(fixed, label)))

    notes = []
    for label in (NNAPI, QNN):  # the fix stage's own "before" is the --no-fix build's coverage
        record = fixed.fixes_of(label, "android")
        b = record.before if record is not None else None
        if b is not None and Counts(b.supported_nodes, b.total_nodes, b.partitions) != pair(label).before:
            notes.append(f"{case.name}: the default build's {label} before the fix stage is {b.supported_nodes}/{b.total_nodes} {b.partitions}p, not the --no-fix build's")
    nodes = len(onnx.load(str(plain.model_of("android").onnx.path), load_external_data=False).graph.node)
    old = Pair(_reanalysed(plain, HTP_OLD), _reanalysed(fixed, HTP_OLD))
    quantized = _int8(case, saved, work) if int8 else None
    return Row(case.name, nodes, pair(NNAPI), pair(QNN), old, quantized, time.perf_counter() - t, tuple(notes))


def table(cases: Sequence[Any], work: Path | None = None, *, int8: bool = True) -> list[Row]:
    """One row per case, each built in a temporary folder of ``work`` (removed afterwards)."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="mobilegen-bench-accelerators-", dir=work) as tmp:
        for i, case in enumerate(cases):
            folder = Path(tmp) / str(i)
            folder.mkdir()
            rows.append(measure(case, folder, int8=int8))
    return rows


def header(int8: bool) -> tuple[str, ...]:
    cols = (
        "model", "nodes", "NNAPI before → after",
        f"QNN v{HTP_BUILD} (estimate) before → after", f"QNN v{HTP_OLD} (estimate) before → after",
    )
    return (*cols, f"int8 QNN v{HTP_OLD} (estimate)", "int8 NNAPI", "int8 worst cosine") if int8 else cols


def render(rows: Sequence[Row], *, int8: bool = True) -> list[str]:
    """The table as Markdown lines: a header, a rule, one line per row."""
    cols = header(int8)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [r.model, str(r.nodes or "-"), str(r.nnapi), str(r.qnn), str(r.qnn_old)]
        if int8:
            q = r.int8
            if q is None or q.error:
                cells += [q.error if q else "-", "", ""]
            else:
                cells += [str(q.qnn_old), str(q.nnapi), f"{q.cosine:.4f}" if q.cosine is not None else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " ") if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help=f"{' and '.join(QUICK)} only")
    parser.add_argument("--no-int8", dest="int8", action="store_false", help="skip the int8 builds")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # configs only: nothing to download
    logging.disable(logging.WARNING)
    from mobilegen.providers.qnn import ESTIMATE

    cases = [c for c in fix.CASES() if not args.quick or c.name in QUICK]
    t = time.perf_counter()
    rows = table(cases, int8=args.int8)
    print(f"`mobilegen android MODEL --nnapi --qnn --qnn-htp-arch {HTP_BUILD}`, --no-fix → default; "
          f"QNN v{HTP_OLD}: the same Android models analysed again at --qnn-htp-arch {HTP_OLD}")
    if args.int8:
        print(f"int8: `--qnn-htp-arch {HTP_OLD} --quantize int8 --calibration random` (gate thresholds 0), fix stage on")
    print("cells: % supported (supported/total nodes) partitions")
    print()
    print("\n".join(render(rows, int8=args.int8)))
    for note in (n for r in rows for n in r.notes):
        print(f"note: {note}")
    print()
    print(f"Every QNN figure is an estimate. {ESTIMATE}.")
    print(f"{len(rows)} models in {time.perf_counter() - t:.0f} s ({', '.join(f'{r.model} {r.seconds:.0f} s' for r in rows)})")


if __name__ == "__main__":
    main()
