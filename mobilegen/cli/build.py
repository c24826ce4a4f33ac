"""Build commands: one per target of the target registry (``mobilegen android``, ``ios``, ``web``,
``react-native``, a registered target's) and ``package`` — the whole chain into one handoff folder.

Each command is made from its target's :class:`~mobilegen.targets.TargetCommand`: the common build flags
(``mobilegen.cli.flags``), the target flags of its platform's providers (``mobilegen.cli.provider_flags``)
and the target's own. Built-in targets' commands are listed where they are registered here and in
``mobilegen.cli.js_build``; a target registered later gets its command at the end of ``mobilegen --help``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mobilegen.cli import app, run_command
from mobilegen.cli.flags import (
    LOAD,
    PASSES,
    QUANTIZE,
    RUN,
    SHAPE,
    TASK,
    TEXT_TASK,
    VERIFY,
    Command,
    Flags,
    Part,
    param,
)
from mobilegen.cli.provider_flags import refuse_without_target, target_options, target_params

if TYPE_CHECKING:
    from rich.console import Console
    from typer.models import CommandInfo

    from mobilegen.targets import TargetCommand


def _out_param(command: str) -> inspect.Parameter:
    """``-o``; each command has its own default folder, so `android` then `ios` on one model keep both."""
    help_ = f"Output folder (default: ./MODEL-{command}, named after the model file)."
    return param("output", Annotated[Path | None, typer.Option("--output", "-o", metavar="DIR", help=help_)], None)


def default_out(model: Path, command: str) -> Path:
    """``./MODEL-android``, ``./MODEL-ios``, ``./MODEL-package``: one folder per command, so the README's
    quick start (``android`` then ``ios`` on one model) keeps both results."""
    return Path(f"{model.stem}-{command}")


def _build(f: Flags, out: Path, targets: dict[str, Any], *, keep_dynamic: bool, standalone: bool = False) -> Any:
    from mobilegen.backends import parse_runtimes
    from mobilegen.pipeline import BuildOptions, build

    # in the order the flags were always checked: model, quantization, task, verification
    model_opts, quantize = f.model_options(), f.quantize_options()
    task = f.task_spec()
    return build(
        BuildOptions(
            model=f["model"],
            out=out,
            targets=targets,
            model_opts=model_opts,
            # --sample of a text task is its sample texts (in the task spec)
            verify=f.verify_options(with_sample=task is None or not task.is_text),
            keep_dynamic=keep_dynamic,
            fix=not f["no_fix"],
            compare_exporters=not f["no_compare_exporters"],
            approximate=tuple(f["approximate"] or ()),
            style=f["style"],
            force=f["force"],
            zip=f["zip_out"],
            standalone=standalone,
            quantize=quantize,
            task=task,
            runtimes=parse_runtimes(f.get("runtime"), list(targets)),
        )
    )


# The package documents list every notice; the CLI says the build-scope ones (mobilegen.notices).
_SEVERITY_STYLE = {"warning": "yellow", "severe": "bold red"}


def _human_build(r: Any, console: Console) -> None:
    from rich.markup import escape as esc
    from rich.table import Table

    console.print(f"[bold green]wrote[/bold green] {esc(str(r.out_dir))}/ ({', '.join(r.targets)})" + (f" and {esc(str(r.zip_path))}" if r.zip_path else ""))
    console.print(
        f"model: {r.loaded.kind} → ONNX opset {r.onnx.opset} ({r.onnx.exporter} exporter) → ORT format v{r.ort.ort_format_version} "
        f"({r.ort.optimization_style} style)"
    )
    from mobilegen.report.facts import checks_text

    v = r.verification
    worst = max((row.max_abs for row in v.rows), default=0.0)
    console.print(f"verification: {checks_text([row.status for row in v.rows])} (max abs error {worst:.2e}, atol {v.atol:g}, rtol {v.rtol:g})")
    console.print("runtimes: " + ", ".join(f"onnxruntime {ver} ({ch})" for ch, ver in r.runtimes.items()))
    for m in r.options.get("runtimes") or ():  # --runtime litert: the other runtimes' models
        q = " (int8)" if m.get("quantization") else ""
        console.print(f"{m['runtime']}: {esc(m['file'])}{q} for {', '.join(m['platforms'])}: {m['bytes']:,} bytes, converted in {m['convert_seconds']:.1f} s")
    if r.coverage:
        t = Table("EP", "nodes", "partitions", "verdict", "top refused ops", box=None, pad_edge=False)
        for rep in r.coverage:
            refused = ", ".join(f"{op}×{n}" for op, n, _ in rep.unsupported_summary()[:4])
            colour = {"yes": "green", "maybe": "yellow"}.get(rep.verdict, "red")
            estimate = " (estimate)" if rep.estimate else ""  # the device has the last word on this provider
            t.add_row(esc(rep.shown), f"{rep.supported_nodes}/{rep.total_nodes}", str(len(rep.partitions)), f"[{colour}]{rep.verdict}[/{colour}]{estimate}", esc(refused))
        console.print(t)
        for rep in r.coverage:
            if rep.estimate:
                console.print(f"[dim]note: {esc(rep.estimate)}[/dim]")
    _human_fixes(r, console)
    from mobilegen.report.quantization import summary_lines

    for line in summary_lines(r.shipped):
        console.print(f"quantization: {esc(line)}")
    from mobilegen.notices import build_notices

    for w in build_notices(r.warnings):
        style = _SEVERITY_STYLE[w.severity]
        console.print(f"[{style}]warning:[/{style}] {esc(w.text)}")
    console.print(f"report: {esc(str(r.out_dir))}/report/report.html")


def _human_fixes(r: Any, console: Console) -> None:
    """The graph passes each provider's model got, with its coverage before them; the per-target models."""
    from rich.markup import escape as esc

    from mobilegen.report.facts import fixes_text

    for rep in r.coverage:
        text = fixes_text(r, rep)
        if text:
            console.print(f"graph passes for {esc(rep.shown)}: {esc(text)}")
    if r.per_target:
        console.print("models: " + ", ".join(f"{esc(m.ort_file)} ({esc(' and '.join(m.targets))})" for m in r.shipped))


def _json_build(r: Any) -> dict[str, Any]:
    from mobilegen.notices import build_notices, texts
    from mobilegen.report.facts import fix_fields

    return {
        "output": str(r.out_dir),
        "zip": str(r.zip_path) if r.zip_path else None,
        "targets": list(r.targets),
        "model": {"source": str(r.loaded.source), "kind": r.loaded.kind, "sha256": r.loaded.sha256},
        "onnx": {"path": str(r.onnx.path), "opset": r.onnx.opset, "exporter": r.onnx.exporter, "fallback_reason": r.onnx.fallback_reason},
        "ort": {
            "path": str(r.ort.path),
            "required_operators": str(r.ort.config_path),
            "format_version": r.ort.ort_format_version,
            "optimization_style": r.ort.optimization_style,
            "optimization_level": r.ort.optimization_level,
        },
        "io": r.onnx.io.to_dict(),
        "verification": r.verification.to_dict(),
        "runtimes": r.runtimes,
        "task": r.options.get("task"),  # --task: the spec and its files (as the manifest's options.task)
        "exporter_advice": r.options.get("exporter_advice"),  # the other exporter's placement (mobilegen.export.advice)
        "models": [
            {
                "targets": list(m.targets),
                "onnx": str(m.onnx.path),
                "ort": str(m.converted().path),
                "required_operators": str(m.converted().config_path),
                "fixes": [f.to_dict() for f in m.fixes],
                "quantization": None if m.quantization is None else m.quantization.to_dict(),
            }
            for m in r.shipped
        ],
        "coverage": [
            {k: v for k, v in rep.to_dict().items() if k != "nodes"} | {"supported_percent": round(rep.percent, 1)} | fix_fields(r, rep)
            for rep in r.coverage
        ],
        "warnings": texts(build_notices(r.warnings)),
    } | ({"runtime_models": r.options["runtimes"]} if r.options.get("runtimes") else {})


# --- the commands --------------------------------------------------------------------------------------


def _build_parts(target_parts: Iterable[Part], *, text: bool) -> list[Part]:
    """Every build command's flags after its own: passes, quantization, verification, task, loading, output."""
    return [*target_parts, *PASSES, *QUANTIZE, *VERIFY, *TASK, *(TEXT_TASK if text else ()), "style", *LOAD, "zip_out", *RUN]


def _options(name: str, cmd: TargetCommand, f: Flags, fields: Mapping[str, str]) -> Any:
    """``name``'s options from the flags: ``fields`` (flag -> keyword) and its providers' target flags."""
    options_type = cmd.options_type()
    given = {keyword: f.get(flag) for flag, keyword in fields.items()}
    return options_type(**given, **target_options(name, f, options_type))


def _provider_flags(platforms: Sequence[str]) -> Callable[[], list[inspect.Parameter]]:
    return lambda: target_params(platforms)


def _target_command(name: str, summary: str) -> Command:
    """``mobilegen NAME``: the target's build, with the flags of its :class:`~mobilegen.targets.TargetCommand`."""
    from mobilegen import targets

    def run(f: Flags) -> None:
        def action() -> Any:
            cmd = targets.command(name)
            assert cmd is not None, f"target '{name}' has no command"
            opts = _options(name, cmd, f, cmd.fields)
            out = f["output"] or default_out(f["model"], name)
            return _build(f, out, {name: opts}, keep_dynamic=f.get("keep_dynamic", True), standalone=cmd.standalone)

        run_command(action, json_out=f["json_out"], debug=f["debug"], human=_human_build, to_json=_json_build)

    def parts() -> list[Part]:
        cmd = targets.command(name)
        assert cmd is not None, f"target '{name}' has no command"
        # after --output-name: the target flags of the providers its apps run, from the registry
        return ["model", _out_param(name), *SHAPE, "output_name", _provider_flags((name,)), *_build_parts(cmd.flags, text=cmd.text_tasks)]

    run.__name__ = run.__qualname__ = name.replace("-", "_")
    run.__doc__ = summary
    return Command(run, parts)


def register_target_commands(names: Iterable[str]) -> None:
    """Add ``mobilegen NAME`` for each built-in target of ``names`` (here: where ``mobilegen --help`` lists it)."""
    from mobilegen.targets import commands

    for name in names:
        app.command(name)(_target_command(name, commands.BUILTIN[name].summary))


def registered_target_commands() -> list[CommandInfo]:
    """The commands of the targets registered with ``targets.register`` that bring a ``command``."""
    from typer.models import CommandInfo

    from mobilegen import targets
    from mobilegen.cli.clickext import MobilegenCommand

    out = []
    for name in targets.names():
        if name in targets.BUILTIN or (cmd := targets.command(name)) is None:
            continue
        out.append(CommandInfo(name=name, cls=MobilegenCommand, callback=_target_command(name, cmd.summary)))
    return out


app.dynamic_commands.append(registered_target_commands)
register_target_commands(("android", "ios"))


def _included() -> list[tuple[str, TargetCommand]]:
    """The targets ``package`` can include (``--NAME``), in registry order."""
    from mobilegen import targets

    return [(name, cmd) for name in targets.names() if (cmd := targets.command(name)) is not None]


def _include_flags() -> list[inspect.Parameter]:
    return [
        param(_include_name(name), Annotated[bool, typer.Option(f"--{name}", help=cmd.include)], False) for name, cmd in _included()
    ]


def _long_flag(name: str) -> str:
    """A catalogue option's long flag (``maven_group`` -> ``--maven-group``)."""
    from mobilegen.cli.flags import CATALOGUE

    info = CATALOGUE[name].annotation.__metadata__[0]  # typer.Option("--flag", ...): the first name is its "default"
    return next(str(d) for d in (info.default, *(info.param_decls or ())) if str(d).startswith("--"))


def _include_name(target: str) -> str:
    return "include_" + target.replace("-", "_")


def _package_parts() -> list[Part]:
    from mobilegen import targets

    # the flags each target takes in a package, then the runtime and the fixed dims, which apply to all
    own = [*(flag for _, cmd in _included() for flag in cmd.package_fields), "runtime", "keep_dynamic"]
    # after --output-name: the target flags of every target's providers, from the registry
    return [
        "model", _include_flags, _out_param("package"), *SHAPE, "output_name", _provider_flags(targets.names()),
        *_build_parts(own, text=True),
    ]  # fmt: skip


def _package(f: Flags) -> None:
    """Build one handoff package for Android, iOS, Web and/or React Native: projects, model, golden vectors, report, manifest."""

    def action() -> Any:
        from mobilegen.errors import UsageError

        included = _included()
        chosen_names = [name for name, _ in included if f.get(_include_name(name))]
        if not chosen_names:
            flags = [f"--{name}" for name, _ in included]
            raise UsageError("package needs a target", hint=f"pass {', '.join(flags[:-1])} and/or {flags[-1]}")
        refuse_without_target(chosen_names, f)
        for name, cmd in included:
            if cmd.package_only is not None and name not in chosen_names:
                only, what = cmd.package_only
                if any(f.get(flag) is not None for flag in only):
                    shown = " / ".join(_long_flag(flag) for flag in only)
                    raise UsageError(f"{shown} {what}", hint=f"add --{name}, or drop them")
        chosen = {name: _options(name, cmd, f, cmd.package_fields) for name, cmd in included if name in chosen_names}
        return _build(f, f["output"] or default_out(f["model"], "package"), chosen, keep_dynamic=f["keep_dynamic"])

    run_command(action, json_out=f["json_out"], debug=f["debug"], human=_human_build, to_json=_json_build)


_package.__name__ = _package.__qualname__ = "package"
app.command("package")(Command(_package, _package_parts))
