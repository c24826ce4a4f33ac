"""Write the generated parts of README.md and docs/ from the code itself (`make docs`).

A generated part sits between two markers, and only that part is rewritten; the prose around it is
hand-written and stays::

    <!-- generated: NAME -->
    ...written by this script...
    <!-- end generated -->

NAME is one of :data:`SECTIONS`:

- ``commands``: one row per command of ``mobilegen --help``, its first help sentence (README);
- ``cli-flags``: per command of the Typer app (the Click command tree of ``mobilegen.cli.app``), its help
  and every argument and option: the flag, its value (type or choices), its default, its help — the help
  the command shows, with the texts the provider registry fills in;
- ``exit-codes``: the exit codes of the error classes in ``mobilegen/errors.py``, with their docstrings;
- ``passes``: the graph passes of ``mobilegen/passes/registry.py`` and the providers that declare each;
- ``pass-reasons``: why each provider declares each of its passes (``ExecutionProvider.fix_reasons``);
- ``providers``: the execution providers of the provider registry, their settings and flags.

``python scripts/gen_docs.py`` rewrites every stale part; ``--check`` only lists them (exit 1 if any).
tests/unit/test_docs.py regenerates in memory and fails with "run `make docs`" when a committed part differs.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python scripts/gen_docs.py` from a checkout: document this tree's mobilegen
    sys.path.insert(0, str(ROOT))

BEGIN = re.compile(r"<!-- generated: ([a-z0-9-]+) -->\n")
END = "<!-- end generated -->"


def _cell(text: object) -> str:
    """``text`` as one Markdown table cell: one line, ``|`` escaped, and outside `code` no HTML tag or
    emphasis by accident (a docstring's ``code`` becomes `code`)."""
    parts = " ".join(str(text).replace("``", "`").split()).split("`")
    for i, part in enumerate(parts):
        part = part.replace("|", "\\|")
        if i % 2 == 0:  # prose: Markdown would read <Name> as a tag and a * as emphasis
            part = part.replace("<", "&lt;").replace("*", "\\*")
        parts[i] = part
    return "`".join(parts)


def _code(text: str) -> str:
    """``text`` as inline code inside a table cell (only ``|`` needs escaping there)."""
    escaped = text.replace("|", "\\|")
    return f"`{escaped}`"


def _table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# --- the command-line interface -------------------------------------------------------------------


def _commands() -> tuple[Any, Any, list[tuple[str, Any, Any]]]:
    """The root Click group, its context, and (name, command, context) for every command, help filled in."""
    import typer

    try:  # the Click that recent Typer vendors (what mobilegen's commands are built on), as mobilegen.cli.clickext
        from typer._click import Context
    except ImportError:  # pragma: no cover — Typer releases that use click itself
        from click import Context

    from mobilegen.cli import app
    from mobilegen.cli.config import _config_option

    group = typer.main.get_command(app)
    root = Context(group, info_name="mobilegen")
    out = []
    for name in group.list_commands(root):
        command = group.get_command(root, name)
        if command is None or command.hidden:
            continue
        if not any(p.name == "config" for p in command.params):  # as `mobilegen.cli.config.attach` does on a run
            command.params.insert(0, _config_option())
        ctx = Context(command, info_name=name, parent=root)
        command.get_help(ctx)  # fills the help texts read from the registries (MobilegenCommand.format_help)
        out.append((name, command, ctx))
    return group, root, out


def _usage(name: str, command: Any, ctx: Any) -> str:
    return " ".join(["mobilegen", name, *command.collect_usage_pieces(ctx)])


def _first_sentence(text: str) -> str:
    from mobilegen.cli.clickext import first_sentence

    return first_sentence(text)


def _anchor(text: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def commands_table() -> str:
    """The README's command table: usage and first help sentence, each linked to its flags in docs/cli.md."""
    _, _, commands = _commands()
    rows = []
    for name, command, ctx in commands:
        heading = f"mobilegen {name}"
        rows.append(
            (
                f"[{_code(_usage(name, command, ctx).replace(' [OPTIONS]', ''))}](docs/cli.md#{_anchor(heading)})",
                _cell(_first_sentence(command.help or "")),
            )
        )
    return _table(["command", "what it does"], rows)


def _value(param: Any) -> str:
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return "flag"
    metavar = param.metavar or (param.name or "").upper()
    text = _code(str(metavar))
    return f"{text}, repeatable" if param.multiple else text


def _default(param: Any) -> str:
    if param.required:
        return "required"
    default = param.default
    if default is None or default is False or default == () or default == [] or callable(default):
        return ""
    return _code(_literal(default))


def _literal(value: object) -> str:
    """A default as it is written on the command line or in mobilegen.toml."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return ",".join(_literal(v) for v in value)
    return str(value)


_DEFAULT_SUFFIX = re.compile(r"\s*\[(?:default: [^\]]*|required)\]\s*$")


def _option_row(param: Any, ctx: Any) -> tuple[str, str, str, str]:
    from typer.core import TyperArgument

    if isinstance(param, TyperArgument):
        name = str(param.metavar or (param.name or "").upper())
        flag = _code(name if param.required else f"[{name}]")
        help_text = param.help or ""
        return flag, "argument", "required" if param.required else "", _cell(help_text)
    flags = ", ".join(_code(o) for o in sorted([*param.opts, *param.secondary_opts], key=lambda o: (o.startswith("--"), o)))
    record = param.get_help_record(ctx)
    help_text = _DEFAULT_SUFFIX.sub("", record[1] if record else param.help or "")
    return flags, _value(param), _default(param), _cell(help_text)


def cli_flags() -> str:
    """Per command: its usage, its help and the table of its arguments and options."""
    from typer.core import TyperArgument

    _, _, commands = _commands()
    parts = []
    for name, command, ctx in commands:
        params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
        params.sort(key=lambda p: not isinstance(p, TyperArgument))  # MODEL first, then the options as --help lists them
        rows = [_option_row(p, ctx) for p in params]
        help_text = inspect.cleandoc(command.help or "")
        parts.append(
            f"### mobilegen {name}\n\n```\n{_usage(name, command, ctx)}\n```\n\n{help_text}\n\n"
            + _table(["flag", "value", "default", "meaning"], rows)
        )
    return "\n\n".join(parts)


# --- exit codes -----------------------------------------------------------------------------------


def exit_codes() -> str:
    """One row per exit code an error class carries, with the ``error`` field ``--json`` writes."""
    from mobilegen import errors

    classes = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.MobilegenError) and c is not errors.MobilegenError]
    by_code: dict[int, list[type[errors.MobilegenError]]] = {}
    for cls in classes:
        by_code.setdefault(cls.exit_code, []).append(cls)
    rows = []
    for code in sorted(by_code):
        group = by_code[code]
        meaning = " ".join(" ".join(inspect.cleandoc(c.__doc__ or "").split()) for c in group if c.__doc__)
        rows.append(
            (
                str(code),
                ", ".join(_code(f'"{c.kind}"') for c in group),
                ", ".join(_code(c.__name__) for c in group),
                _cell(meaning),
            )
        )
    return _table(["code", "`error` in `--json`", "raised as (`mobilegen.errors`)", "meaning"], rows)


# --- graph passes and providers -------------------------------------------------------------------


def _builtin_providers() -> list[Any]:
    from mobilegen import providers

    return [providers.get(name) for name in providers.BUILTIN]  # not plug-ins or a test's registrations


def passes_table() -> str:
    """The passes in the order the fix stage tries them, with the providers that declare each."""
    from mobilegen.passes import registry

    provs = _builtin_providers()

    def declared_by(name: str) -> str:
        return ", ".join(p.display_name for p in provs if name in p.fixes) or "none"

    rows = [
        (
            _code(registry.FIXED_DIMS),
            "named input dims → their example sizes, for the whole build (never judged; not a `GraphPass`)",
            "exact",
            declared_by(registry.FIXED_DIMS),
        )
    ]
    for name in registry.BUILTIN:
        graph_pass = registry.find(name)
        if graph_pass is None:
            continue
        kind = "exact" if graph_pass.exact else f"approximate (`--approximate {graph_pass.approximate_as}`)"
        rows.append((_code(name), _cell(graph_pass.summary.replace("->", "→")), kind, declared_by(name)))
    return _table(["pass", "rewrite", "kind", "declared by"], rows)


def pass_reasons_table() -> str:
    """Why each built-in provider declares each pass (its ``fix_reasons``), in the order the fix stage
    tries the passes."""
    from mobilegen.passes import registry

    provs = _builtin_providers()
    rows = [
        (_code(name), _cell(p.display_name), _cell(p.fix_reason(name) or "no reason given"))
        for name in (registry.FIXED_DIMS, *registry.BUILTIN)
        for p in provs
        if name in p.fixes
    ]
    return _table(["pass", "provider", "why it declares the pass"], rows)


def providers_table() -> str:
    """The built-in execution providers: platform, settings (with their flags and defaults), passes."""
    rows = []
    for p in _builtin_providers():
        settings = []
        for s in p.settings:
            flag = f" ({_code(s.flag)})" if s.flag else ""
            default = f", default {_code(_literal(s.default))}" if s.default not in ("", (), None) else ""
            settings.append(f"{_code(s.name)}{flag}{default}")
        rows.append(
            (
                _code(p.name),
                _cell(p.display_name),
                _cell(p.platform),
                "; ".join(settings),
                "estimate" if p.estimate else "",
                str(len(p.fixes)),
            )
        )
    return _table(["name (`--ep`)", "display name", "platform", "settings", "verdicts", "graph passes"], rows)


SECTIONS: dict[str, Callable[[], str]] = {
    "commands": commands_table,
    "cli-flags": cli_flags,
    "exit-codes": exit_codes,
    "passes": passes_table,
    "pass-reasons": pass_reasons_table,
    "providers": providers_table,
}


# --- files ----------------------------------------------------------------------------------------


def documents(root: Path = ROOT) -> list[Path]:
    """README.md and every page under docs/."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def regenerate(text: str, cache: dict[str, str] | None = None) -> str:
    """``text`` with every generated part rewritten (an unknown name or a missing end marker raises)."""
    cache = {} if cache is None else cache
    out, pos = [], 0
    for m in BEGIN.finditer(text):
        if m.start() < pos:
            raise ValueError(f"generated part '{m.group(1)}' starts inside another one")
        end = text.find(END, m.end())
        if end < 0:
            raise ValueError(f"generated part '{m.group(1)}' has no '{END}'")
        name = m.group(1)
        if name not in SECTIONS:
            raise ValueError(f"unknown generated part '{name}' (known: {', '.join(SECTIONS)})")
        if name not in cache:
            cache[name] = SECTIONS[name]()
        out += [text[pos : m.end()], cache[name], "\n"]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def stale(root: Path = ROOT) -> dict[Path, str]:
    """The documents whose generated parts differ from what the code says, with their new text."""
    cache: dict[str, str] = {}
    out = {}
    for path in documents(root):
        text = path.read_text(encoding="utf-8")
        new = regenerate(text, cache)
        if new != text:
            out[path] = new
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    changed = stale()
    for path, text in changed.items():
        print(f"{'stale' if check else 'wrote'} {path.relative_to(ROOT)}")
        if not check:
            path.write_text(text, encoding="utf-8")
    if not changed:
        print("docs up to date")
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
