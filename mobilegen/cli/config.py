"""``mobilegen.toml``: any flag of any command from a file; flags on the command line override it.

Layers, lowest first: a command's own defaults < top-level keys < the command's table (``[android]``,
``[package]``, ...) < the command line. The file feeds Click's ``default_map``: the root callback
(:func:`attach`) gives the invoked command an eager ``--config FILE`` option, whose callback installs a
``default_map`` that reads the file when the first default is looked up. Eager options run before the
others, positionals included, so every default comes from the file; values given on the command line
never look theirs up, so they win. ``--help`` (eager too) shows no defaults from the file.

Every value is checked against the parameters of the commands it applies to: its TOML type first (strict:
``zip = "yes"`` is an error, not a truthy string), then the coercion the command line goes through.

A file found implicitly (``./mobilegen.toml``: it may come with a cloned repository) cannot turn on what a
user would not type unseen: ``force``, ``trust_pickle``, ``model_class`` (imports Python code) and an
``output`` outside the file's own folder are refused there (exit 2, one line naming the key). A file named
with ``--config FILE`` may set them; the CLI then says so on stderr (:func:`privileged_notice`), as copier
keeps ``--trust`` off its config file.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping, MutableMapping
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, get_args, get_origin

import typer

from mobilegen.cli.console import META_KEY, print_notice, report_error
from mobilegen.errors import UsageError

if TYPE_CHECKING:
    from typer._click import Command, Context, Parameter

CONFIG_NAME = "mobilegen.toml"
MAX_CONFIG_BYTES = 1 << 20
# Parameters a file found implicitly may not set: each runs code or replaces something outside the folder.
PRIVILEGED = {"force": "--force", "trust_pickle": "--trust-pickle", "model_class": "--model-class"}
# Parameters that name where a command writes: from an implicit file, only inside the file's folder.
OUTPUTS = frozenset({"output"})

_EXPECTED = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "a string", "path": "a path (a string)"}
_EXAMPLE = {"bool": "true", "int": "29", "float": "0.001", "str": '"..."', "path": '"path/to/file"'}


def _use_file(ctx: typer.Context, value: Path | None) -> None:
    """``--config``'s callback: the command's defaults come from the file given, or from ./mobilegen.toml
    when there is one. The file is read when the first default is needed, never for ``--help``."""
    path = value if value is not None else Path(CONFIG_NAME)
    if value is not None or os.path.lexists(path):
        ctx.default_map = _FileDefaults(ctx, path, explicit=value is not None)


class _FileDefaults(MutableMapping[str, Any]):
    """A ``default_map`` read from ``path`` on first use. Help formatting looks defaults up too, but with
    ``ctx.resilient_parsing`` set: then nothing is read, so ``--help`` works whatever the file holds."""

    def __init__(self, ctx: Context, path: Path, *, explicit: bool) -> None:
        self._ctx = ctx
        self._path = path
        self._explicit = explicit
        self._values: dict[str, Any] | None = None

    def _loaded(self) -> dict[str, Any]:
        if self._values is None:
            try:
                self._values = command_defaults(self._ctx, self._path, explicit=self._explicit)
            except UsageError as err:
                report_error(err, json_out=bool(self._ctx.params.get("json_out")), debug=False)
                raise typer.Exit(err.exit_code) from None
            self._ctx.meta[META_KEY] = str(self._path)
            notice = privileged_notice(self._path, self._values)
            if notice is not None:
                print_notice(notice)  # the CLI prints; this module only decides what
        return self._values

    def __getitem__(self, key: str) -> Any:
        # Not for help formatting, nor for --help's own lookup: the file is read at the first lookup of a
        # value it could hold, after the flags given on the command line (--json included) are processed.
        if self._ctx.resilient_parsing or key not in {p.name for p in option_keys(self._ctx.command).values()}:
            raise KeyError(key)
        return self._loaded()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._loaded()[key] = value

    def __delitem__(self, key: str) -> None:
        del self._loaded()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())


ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="FILE",
        expose_value=False,
        is_eager=True,  # before MODEL: Click processes positionals with the options given on the command line
        callback=_use_file,
        help=f"Read flags from this TOML file (default: ./{CONFIG_NAME} if there is one); command-line flags override it.",
    ),
]


def _config_option() -> Parameter:
    """The ``--config`` option, built by Typer from its declaration like every other option."""
    probe = typer.Typer()

    @probe.command()
    def _probe(config: ConfigOpt = None) -> None:  # never called: only its parameter is used
        del config

    return typer.main.get_command(probe).params[0]


def attach(ctx: typer.Context) -> None:
    """Give the command being invoked its ``--config`` option (called from the root callback, after the
    command is resolved and before its arguments are parsed). The group is rebuilt on every run."""
    from typer.core import TyperGroup

    group, name = ctx.command, ctx.invoked_subcommand
    command = group.get_command(ctx, name) if isinstance(group, TyperGroup) and name else None
    if command is not None and not any(p.name == "config" for p in command.params):
        command.params.insert(0, _config_option())


# --- reading and checking the file ------------------------------------------------------------------


def command_defaults(ctx: Context, path: Path, *, explicit: bool = True) -> dict[str, Any]:
    """The running command's ``default_map`` from ``path`` (keyed by parameter name), after checking
    the whole file against every command: a typo in ``[ios]`` fails an ``android`` run too. ``explicit``:
    the file was named with ``--config``; otherwise (found in the current folder) it may not set the
    :data:`PRIVILEGED` keys nor an output outside its folder, in any table."""
    doc = read_toml(path)
    parent = ctx.parent.command if ctx.parent is not None else None
    commands: Mapping[str, Command] = getattr(parent, "commands", None) or {str(ctx.info_name): ctx.command}
    keymaps = {name: option_keys(cmd) for name, cmd in commands.items()}
    checker = _Checker(path, ctx, explicit=explicit)
    tables: dict[str, dict[str, Any]] = {}
    top: dict[str, Any] = {}
    for key, value in doc.items():
        if isinstance(value, dict) and key in commands:
            tables[key] = value
        else:
            top[key] = value
    for norm, (key, value) in _unique(checker, top, None).items():
        owners = [name for name, km in keymaps.items() if norm in km]
        if not owners:
            checker.unknown(key, value, None, sorted({k for km in keymaps.values() for k in km} | set(commands)))
        for name in owners:
            checker.value(key, value, keymaps[name][norm], None)
    for name, table in tables.items():
        for norm, (key, value) in _unique(checker, table, name).items():
            if norm not in keymaps[name]:
                checker.unknown(key, value, name, sorted(keymaps[name]))
            checker.value(key, value, keymaps[name][norm], name)
    running = keymaps.get(str(ctx.info_name), {})
    out: dict[str, Any] = {}
    for scope, source in ((None, top), (ctx.info_name, tables.get(str(ctx.info_name), {}))):
        for norm, (key, value) in _unique(checker, source, scope).items():
            if norm in running:
                out[str(running[norm].name)] = checker.value(key, value, running[norm], scope)
    return out


def read_toml(path: Path) -> dict[str, Any]:
    """The parsed file; a missing, special, oversized, non-UTF-8 or malformed file is a UsageError."""
    import tomllib

    hint = f"pass --config with a TOML file, or remove ./{CONFIG_NAME}"
    if not os.path.lexists(path) or (path.is_symlink() and not path.exists()):
        raise UsageError(f"config file {path} does not exist", hint="check the --config path")
    if not path.is_file():
        raise UsageError(f"config file {path} is not a regular file", hint=hint)
    from mobilegen.infra.datafiles import open_data_file

    try:
        with open_data_file(path, f"config file {path}", hint=hint) as f:  # no FIFO swapped in meanwhile
            data = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as err:
        raise UsageError(f"cannot read config file {path}: {err.strerror or err}", hint="check its permissions") from err
    if len(data) > MAX_CONFIG_BYTES:
        raise UsageError(f"config file {path} is over {MAX_CONFIG_BYTES >> 20} MiB", hint="a config file holds flags: keep it small")
    try:
        text = data.decode("utf-8")
        _check_key_depth(path, text)
        return tomllib.loads(text)
    except UnicodeDecodeError as err:
        raise UsageError(f"config file {path} is not UTF-8 text", hint="save it as UTF-8") from err
    except RecursionError:  # tomllib recurses per nesting level: [[[[... or {a={a=...
        raise UsageError(f"config file {path} is nested too deeply to be a config file", hint=_CONFIG_HINT) from None
    except tomllib.TOMLDecodeError as err:
        raise UsageError(f"config file {path} is not valid TOML: {err}", hint=f'write key = value lines, e.g. {_switch_example()} = true or input = ["x:1x3x224x224"]') from err


def _switch_example() -> str:
    """A flag to show in the hint: the first registered provider's on/off build flag (the flag most files set)."""
    from mobilegen import providers

    return next((f.name for p in providers.all_providers() for f in p.target_flags if f.kind is bool), "zip")


MAX_DOTS_PER_LINE = 64
_CONFIG_HINT = "a config file holds flags: key = value lines and [command] tables"


def _check_key_depth(path: Path, text: str) -> None:
    """Refuse a line with more than :data:`MAX_DOTS_PER_LINE` dots outside strings and comments before
    ``tomllib`` sees it: it takes time and memory quadratic in a dotted key's length (``a.a.a…`` of
    30,000 parts: 7 s and 3.5 GB). A config's keys are flag names, one part deep."""
    quote = ""  # the open string's delimiter: a quote character, or three of them
    line = dots = i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\" and quote[0] == '"':
                i += 2
                continue
            if text.startswith(quote, i):
                i += len(quote)
                quote = ""
                continue
            if c == "\n":
                if len(quote) == 1:
                    quote = ""  # an unterminated one-line string: tomllib reports it
                line, dots = line + 1, 0
        elif c in "\"'":
            quote = c * 3 if text.startswith(c * 3, i) else c
            i += len(quote)
            continue
        elif c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif c == "\n":
            line, dots = line + 1, 0
        elif c == ".":
            dots += 1
            if dots > MAX_DOTS_PER_LINE:
                raise UsageError(f"config file {path}: line {line + 1} nests keys more than {MAX_DOTS_PER_LINE} levels deep", hint=_CONFIG_HINT)
        i += 1


def option_keys(command: Command) -> dict[str, Parameter]:
    """Config key (long flag name, ``-`` written as ``_``) → parameter; the positional MODEL is ``model``.
    Other positionals (``verify``'s PACKAGE) and ``--config`` itself cannot be set from the file."""
    keys: dict[str, Parameter] = {}
    for param in command.params:
        if param.name == "config":
            continue
        if param.param_type_name == "argument":
            if param.name == "model":
                keys["model"] = param
            continue
        for opt in param.opts:
            if opt.startswith("--"):
                keys[_norm(opt[2:])] = param
    return keys


def _norm(key: str) -> str:
    return key.replace("-", "_")


def _unique(checker: _Checker, table: Mapping[str, Any], scope: str | None) -> dict[str, tuple[str, Any]]:
    """Normalized key → (the key as written, value); ``output-name`` and ``output_name`` are one key."""
    out: dict[str, tuple[str, Any]] = {}
    for key, value in table.items():
        if _norm(key) in out:
            checker.fail(f"{_where(scope)}{key} is given twice ({out[_norm(key)][0]} is the same key)", hint="keep one of them")
        out[_norm(key)] = (key, value)
    return out


def _where(scope: str | None) -> str:
    return f"[{scope}] " if scope else ""


def _toml_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return "a date/time"


def _example(kind: str | None, value: Any) -> str:
    """How to write ``value`` as ``kind`` in TOML: the value itself converted when it reads as one
    (``"80"`` for a number → ``80``, ``80`` for a string → ``"80"``), else a generic example."""
    import json

    if kind in ("str", "path") and isinstance(value, bool | int | float):
        return json.dumps(str(value).lower() if isinstance(value, bool) else str(value))
    if kind == "bool" and isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower()
    if kind in ("int", "float") and isinstance(value, str | int | float) and not isinstance(value, bool):
        try:
            number = float(value)
        except (ValueError, OverflowError):  # "most"; an integer of 400 digits
            number = math.nan
        if math.isfinite(number) and (number.is_integer() or kind == "float"):
            return str(int(number)) if number.is_integer() else repr(number)
    return _EXAMPLE.get(kind or "", "...")


def _kind(param: Parameter) -> str | None:
    """What a parameter takes: bool, int, float, str or path (None: leave it to Typer's coercion)."""
    desc = getattr(param, "type_descriptor", None)
    annotation = getattr(desc, "annotation", None)
    if get_origin(annotation) is list and get_args(annotation):
        annotation = get_args(annotation)[0]
    if isinstance(annotation, type) and issubclass(annotation, PurePath):
        return "path"
    return {bool: "bool", int: "int", float: "float", str: "str"}.get(annotation) if isinstance(annotation, type) else None


class _Checker:
    """Checks values from one file for one context; every error names the file and the key."""

    def __init__(self, path: Path, ctx: Context, *, explicit: bool = True) -> None:
        self.path = path
        self.base = path.parent
        self.ctx = ctx
        self.explicit = explicit

    def fail(self, what: str, *, hint: str) -> NoReturn:
        raise UsageError(f"{self.path}: {what}", hint=hint)

    def unknown(self, key: str, value: Any, scope: str | None, known: list[str]) -> NoReturn:
        import difflib

        close = difflib.get_close_matches(_norm(key), known, n=1)
        maybe = f"did you mean {close[0]!r}? " if close else ""
        if scope is None and isinstance(value, dict):
            self.fail(f"unknown table [{key}] (tables are command names)", hint=f"{maybe}use one of [{'], ['.join(sorted(self._commands()))}]")
        where = f"not an option of mobilegen {scope}" if scope else "not an option of any command"
        see = f"mobilegen {scope} --help" if scope else "mobilegen COMMAND --help"
        self.fail(f"unknown key {_where(scope)}{key} ({where})", hint=f"{maybe}keys are long flag names, listed by '{see}'")

    def _commands(self) -> list[str]:
        parent = self.ctx.parent.command if self.ctx.parent is not None else None
        return list(getattr(parent, "commands", None) or [str(self.ctx.info_name)])

    def value(self, key: str, value: Any, param: Parameter, scope: str | None) -> Any:
        """``value`` checked for ``param``: a list for a repeatable flag (a scalar becomes one item),
        paths resolved against the file's folder."""
        if not self.explicit:
            self._implicit_allows(key, value, param, scope)
        kind = _kind(param)
        if param.multiple or param.nargs == -1:
            items = value if isinstance(value, list) else [value]
            checked: Any = [self._scalar(key, item, param, kind, scope, listed=True) for item in items]
        elif isinstance(value, list):
            example = _example(kind, value[0]) if len(value) == 1 else _EXAMPLE.get(kind or "", "...")
            self.fail(f"{_where(scope)}{key} takes one value, not a list", hint=f"write {key} = {example}")
        else:
            checked = self._scalar(key, value, param, kind, scope, listed=False)
        runtime = getattr(param, "get_runtime_param", None)  # Typer's coercion: what a command-line value goes through
        if runtime is not None:
            try:
                runtime().coerce(checked, param=param, ctx=self.ctx)
            except typer.BadParameter as err:
                self.fail(f"{_where(scope)}{key} = {value!r}: {err.message}", hint=f"'mobilegen {scope or 'COMMAND'} --help' describes {key}")
        return checked

    def _scalar(self, key: str, value: Any, param: Parameter, kind: str | None, scope: str | None, *, listed: bool) -> Any:
        ok = {
            "bool": isinstance(value, bool),
            "int": isinstance(value, int) and not isinstance(value, bool),
            "float": isinstance(value, int | float) and not isinstance(value, bool),
            "str": isinstance(value, str),
            "path": isinstance(value, str),
        }.get(kind or "", not isinstance(value, list | dict))
        if not ok:
            example = _example(kind, value)
            shown = f"[{example}, ...]" if listed else example
            expected = _EXPECTED.get(kind or "", "a plain value")
            self.fail(
                f"{_where(scope)}{key} must be {expected}{' (or a list of them)' if listed else ''}, not {_toml_type(value)}",
                hint=f"write {key} = {shown}",
            )
        if kind == "float":
            return float(value)
        if kind == "path":
            return self._path(value)
        if param.name == "calibration" and isinstance(value, str) and value != "random":  # FILE.npz|FOLDER|random
            return self._path(value)
        if param.name == "model_class" and isinstance(value, str) and value.rpartition(":")[0].endswith(".py"):
            module, _, cls = value.rpartition(":")
            return f"{self._path(module)}:{cls}"
        return value

    def _implicit_allows(self, key: str, value: Any, param: Parameter, scope: str | None) -> None:
        """A file nobody named may not run code, nor aim a write outside its folder: refused with the key
        named (``force = false`` and the like, which turn nothing on, pass)."""
        flag = PRIVILEGED.get(str(param.name))

        def how(flag: str) -> str:
            return f"pass {flag} on the command line, or name the file with --config {self.path} if you trust it"

        if flag is not None and value is not False and value is not None:
            self.fail(
                f"{_where(scope)}{key} is not taken from a {CONFIG_NAME} found in the current folder "
                f"({'it runs code' if param.name != 'force' else 'it replaces existing outputs'})",
                hint=how(flag),
            )
        if param.name in OUTPUTS and isinstance(value, str) and not _within(self.base, Path(self._path(value))):
            self.fail(
                f"{_where(scope)}{key} = {value!r} is outside the folder of {self.path}, "
                f"and a {CONFIG_NAME} found in the current folder writes only inside it",
                hint=how("-o"),
            )

    def _path(self, value: str) -> str:
        """A path from the file, relative to the file's folder (``~`` expanded, as a shell would)."""
        p = Path(value).expanduser()
        return str(p if p.is_absolute() else self.base / p)


def _within(folder: Path, path: Path) -> bool:
    """Whether ``path`` stays inside ``folder`` both as written (``..`` resolved) and after symbolic links."""
    base = Path(os.path.abspath(folder))
    if not Path(os.path.abspath(path)).is_relative_to(base):
        return False
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(base))


def privileged_notice(path: Path, values: Mapping[str, Any]) -> str | None:
    """The notice for a ``--config`` file that sets what an implicit one may not (None when it sets none)."""
    given = [flag for name, flag in PRIVILEGED.items() if values.get(name) not in (None, False)]
    if values.get("output") is not None and not _within(path.parent, Path(str(values["output"]))):
        given.append(f"-o {values['output']}")
    if not given:
        return None
    return f"--config {path} sets {', '.join(given)} (as if given on the command line)"
