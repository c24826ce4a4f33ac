"""``mobilegen bench``: time a model on this host in the benchmark-result schema; ``mobilegen report``:
merge benchmark results (host or device) into a package's report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mobilegen.cli import app, run_command
from mobilegen.cli.options import DebugOpt, ForceOpt, JsonOpt, unique

if TYPE_CHECKING:
    from rich.console import Console

    from mobilegen.bench import BenchResult, MergeResult


def _human_bench(result: BenchResult, console: Console) -> None:
    from rich.markup import escape
    from rich.table import Table

    from mobilegen.bench.runtimes import NO_ORT

    ort = "" if result.ort_version == NO_ORT else f", onnxruntime {escape(result.ort_version)}"
    table = Table(
        title=f"{escape(result.model_file)} on {escape(result.device.label)}{ort} ({result.runs} runs after {result.warmup} warm-up)",
        title_justify="left",
    )
    for col in ("configuration", "status", "session create", "first run", "p50", "p90", "min", "mean", "nodes off the CPU", "partitions"):
        table.add_column(col)
    notes: list[str] = []  # why a configuration did not run: under the table, so the columns stay narrow
    for c in result.configurations:
        if c.shipped_default and (left_out := c.options.get("skipped_providers")):
            notes.append(f"{escape(c.name)}: what the {escape(c.shipped_default)} app ships, without {escape(left_out)}")
        if model_file := c.options.get("model_file"):
            where = f" on {escape(runtime)}" if (runtime := c.options.get("runtime")) else ", the file that target ships"
            notes.append(f"{escape(c.name)}: times {escape(model_file)}{where}")
        if c.status != "ok":
            table.add_row(escape(c.name), f"[yellow]{escape(c.status)}[/yellow]", *["–"] * 8)
            notes.append(f"{escape(c.name)} {escape(c.status)}: {escape(c.reason or 'no reason given')}")
            continue
        w = c.warm
        p = c.placement
        off = str(sum(1 for n in p.nodes if n.provider != "CPUExecutionProvider")) if p.available else "–"
        cells = [c.session_create_ms, c.first_run_ms, *((None,) * 4 if w is None else (w.p50, w.p90, w.min, w.mean))]
        table.add_row(escape(c.name), "ok", *("–" if x is None else f"{x:.3f} ms" for x in cells), off, str(p.partitions) if p.available else "–")
    console.print(table)
    for note in notes:
        console.print(f"  {note}")
    if result.preprocessing:
        pre = Table(title=f"preprocessing alone ({escape(result.preprocessing[0].entry_point)})", title_justify="left")
        for col in ("source", "model input", "status", "first run", "p50", "p90", "min", "mean"):
            pre.add_column(col)
        for r in result.preprocessing:
            out = "–" if r.output is None else f"{r.output[0]}x{r.output[1]}"
            w = r.warm
            cells = [r.first_run_ms, *((None,) * 4 if w is None else (w.p50, w.p90, w.min, w.mean))]
            pre.add_row(f"{r.source[0]}x{r.source[1]}", out, escape(r.status), *("–" if x is None else f"{x:.3f} ms" for x in cells))
        console.print(pre)


def _human_merge(result: MergeResult, console: Console) -> None:
    from rich.markup import escape

    if not result.changed:
        console.print(
            f"[bold green]already merged[/bold green] into {escape(result.package)}: every result given is there "
            f"({len(result.results)} in report/report.md and report/report.html); nothing changed"
        )
    else:
        added = f"{len(result.added)} new" if result.added else "no new results (already merged)"
        console.print(
            f"[bold green]merged[/bold green] into {escape(result.package)}: {added}, {len(result.results)} "
            "in report/report.md and report/report.html; manifest.json updated"
        )
    for c in result.comparisons:
        if not c.available:
            console.print(f"  {escape(c.device)} · {escape(c.config)}: not compared ({escape(c.note)})")
            continue
        verdict = "[green]as predicted[/green]" if c.agrees else "[yellow]differs[/yellow]"
        console.print(
            f"  {escape(c.device)} · {escape(c.config)} vs {escape(c.prediction or '')}: {verdict}; partitions "
            f"{c.predicted_partitions} predicted, {c.observed_partitions} observed; "
            f"{len(c.predicted_on_ep_ran_cpu)} predicted on the provider ran on the CPU, "
            f"{len(c.predicted_cpu_ran_on_ep)} predicted on the CPU ran on the provider"
        )


@app.command("bench")
def bench(
    model: Annotated[Path, typer.Argument(metavar="MODEL|PACKAGE", help="A .ort, .tflite or .aimodel, or a package folder (its models and golden inputs).", show_default=False)],
    ep: Annotated[
        list[str] | None,
        typer.Option("--ep", metavar="EP", callback=unique, help="Configuration to run: default (what the apps ship), cpu or a provider mobilegen runs on this host. Repeat the option for several. Without it: a package's shipped defaults, then cpu."),  # its choices are completed when shown: mobilegen.cli.provider_help
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            metavar="TARGET",
            help="Which model of a package with one model per target to time (model/android/… or model/ios/…): a target the package ships.",
            show_default=False,
        ),
    ] = None,
    runs: Annotated[int, typer.Option("--runs", metavar="N", help="Timed warm runs per configuration.")] = 50,
    warmup: Annotated[int, typer.Option("--warmup", metavar="N", help="Untimed runs after the first one.")] = 5,
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE.json", help="Also write the result to FILE.json (for mobilegen report --results).")] = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Time MODEL on this host with onnxruntime and the session options the Android app ships: session
    creation, first run, warm runs (min, p50, p90, mean), and where each node ran (ORT profiling). A .tflite
    or .aimodel (and a package's LiteRT / Core AI models) runs on its own runtime's host package."""

    def action() -> BenchResult:
        from mobilegen.bench import run_host_bench
        from mobilegen.errors import UsageError

        if output is not None and output.suffix != ".json":
            raise UsageError(f"-o {output}: must name a .json file", hint="e.g. -o result.json")
        if output is not None and output.exists() and not force:
            raise UsageError(f"{output} already exists", hint="pick another -o or pass --force")
        if output is not None and (package := _package_holding(model, output)) is not None:
            raise UsageError(
                f"-o {output}: inside the package folder {package}, whose manifest.json lists every file (verify would fail)",
                hint=f"write it outside the package, then: mobilegen report {package} --results FILE.json",
            )
        result = run_host_bench(model, tuple(ep) if ep else None, runs=runs, warmup=warmup, target=target)
        if output is not None:
            _write_result(output, result.text().encode("utf-8"), force=force)
        return result

    run_command(action, json_out=json_out, debug=debug, human=_human_bench, to_json=lambda r: r.to_json())


def _package_holding(model: Path, output: Path) -> Path | None:
    """The package folder (MODEL itself, or the one holding MODEL.ort) that ``output`` would land in."""
    from mobilegen.artifacts import MANIFEST

    start = model.resolve()
    for folder in (start, *start.parents[:3]):  # a package's .ort is at most model/<target>/ deep
        if (folder / MANIFEST).is_file():
            if not output.resolve().is_relative_to(folder):
                return None
            return model if folder == start else folder
    return None


def _write_result(output: Path, data: bytes, *, force: bool) -> None:
    """Write ``output`` the way every -o is written (``mobilegen.infra.outputs``): atomically, its missing parent
    folders created, and none of them left behind by a failed write."""
    from mobilegen.infra.outputs import staged_files, write_error

    with staged_files([output], force=force) as (staged,):
        try:
            staged.path.write_bytes(data)
        except OSError as err:
            raise write_error(output, err) from err


@app.command("report")
def report(
    package: Annotated[Path, typer.Argument(metavar="PACKAGE", help="A package folder.", show_default=False)],
    results: Annotated[
        list[Path],
        typer.Option("--results", metavar="FILE.json", help="A benchmark result (mobilegen bench -o, or the device benchmark's JSON). Repeatable."),
    ],
    json_out: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Merge benchmark results into PACKAGE's report: latency per device and configuration, and each
    accelerated configuration's observed placement against the static prediction; manifest updated."""

    def action() -> Any:
        from mobilegen.bench import merge_results

        return merge_results(package, results)

    run_command(action, json_out=json_out, debug=debug, human=_human_merge, to_json=lambda r: r.to_dict())
