"""How mobilegen's commands look and fail: plain help, one style of usage error, commands built on use.

- Help shows what a value is (``--input NAME:SHAPE[:DTYPE]``, ``-o DIR``, ``--opset N``) and nothing after
  a flag (Typer's ``<bool>``/``<path>``/``<list[str]>`` type labels invited ``--FLAG true``); the usage
  line reads ``mobilegen android [OPTIONS] MODEL``.
- A usage error Click finds (unknown flag, missing argument, bad value) is printed like one mobilegen
  raises: ``error: <what> — <what to do>``, one line, exit 2, and with ``--json`` the same JSON document.
- The group builds a command's Click parameters only when that command runs or shows its help (Typer
  builds every command up front: ~15 ms of each start-up); ``mobilegen --help`` lists them from their
  docstrings, each with its first sentence whole.
- Output into a pipe whose reader has gone (``mobilegen check ... | head -1``) ends quietly with exit 141,
  what a shell reports for a tool killed by SIGPIPE (:func:`closed_pipe_exit`).
"""

from __future__ import annotations

import inspect
import os
import re
import sys
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from contextlib import contextmanager
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, TypeVar, get_args, get_origin

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

try:  # recent Typer vendors its own copy of click
    from typer._click import exceptions as click_exc  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover — Typer releases that use click itself
    from click import exceptions as click_exc  # type: ignore[no-redef]

if TYPE_CHECKING:
    from typer._click import Context, HelpFormatter
    from typer.models import CommandInfo


F = TypeVar("F", bound=Callable[..., Any])

# A value's metavar by its type, when the declaration names none; flags get none.
_TYPE_METAVAR: dict[object, str] = {int: "N", float: "NUM", str: "TEXT"}
_BOOL_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0"})

# 128 + SIGPIPE: the status a shell shows for a tool that wrote into a pipe whose reader had gone (`yes | head`).
# Python ignores SIGPIPE and raises BrokenPipeError instead; its docs suggest exit 1, which is mobilegen's
# "internal bug". (Restoring SIGPIPE's default would kill the process on any closed socket as well.)
PIPE_CLOSED_EXIT = 141


class UsageErrorWithHint(click_exc.UsageError):  # type: ignore[misc,unused-ignore]
    """A Click usage error that says what to pass (e.g. the ``--ep`` choices)."""

    def __init__(self, message: str, *, hint: str, ctx: Context | None = None) -> None:
        super().__init__(message, ctx=ctx)
        self.hint = hint


def _metavar(param: TyperOption) -> str | None:
    if param.metavar is not None or param.is_flag or param.count:
        return param.metavar
    desc = getattr(param, "type_descriptor", None)
    annotation = getattr(desc, "annotation", None)
    if get_origin(annotation) is list and get_args(annotation):
        annotation = get_args(annotation)[0]
    choices = getattr(desc, "choices", None)
    if choices:
        return "|".join(str(getattr(c, "value", c)) for c in choices)
    if annotation is bool:
        return "true|false"
    if isinstance(annotation, type) and issubclass(annotation, PurePath):
        return "PATH"
    return _TYPE_METAVAR.get(annotation, "VALUE")


def _argument_name(param: TyperArgument) -> str:
    name = param.metavar or (param.name or "arg").upper()
    return name if param.required else f"[{name}]"


def _ep_choices() -> str:
    from mobilegen import providers  # read when needed: plug-ins registered by then are listed

    return f"choose one or more of {', '.join(providers.names())} (repeat --ep for several)"


class MobilegenCommand(TyperCommand):
    """A command with plain help. ``missing_hints``: what to say when a required parameter is missing
    (parameter name → a function giving the hint, read when the error happens)."""

    missing_hints: ClassVar[dict[str, Callable[[], str]]] = {"ep": _ep_choices}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperOption):
                param.metavar = _metavar(param)

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        # Helps whose words come from the provider registry, read when shown (mobilegen.cli.provider_help).
        from mobilegen.cli.provider_help import completed_help

        for param in self.params:
            if isinstance(param, TyperOption) and (text := completed_help(self.name, param.name)) is not None:
                param.help = text
        super().format_help(ctx, formatter)

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        return pieces + [_argument_name(p) for p in self.get_params(ctx) if isinstance(p, TyperArgument)]

    def format_options(self, ctx: Context, formatter: HelpFormatter) -> None:
        arguments = [
            (_argument_name(p).strip("[]"), f"{p.help or ''}  [required]".strip() if p.required else p.help or "")
            for p in self.get_params(ctx)
            if isinstance(p, TyperArgument) and not p.hidden
        ]
        options = [rec for p in self.get_params(ctx) if not isinstance(p, TyperArgument) and (rec := p.get_help_record(ctx))]
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)  # type: ignore[no-any-return,unused-ignore]
        except click_exc.MissingParameter as err:
            hint = self.missing_hints.get(getattr(err.param, "name", None) or "")
            if hint is None:
                raise
            raise UsageErrorWithHint(err.format_message(), hint=hint(), ctx=ctx) from None


class _LazyCommands(MutableMapping[str, Any]):
    """The group's commands: each built by Typer from its declaration on first access."""

    def __init__(self, app: LazyTyper) -> None:
        self._app = app
        self._built: dict[str, Any] = {}

    def infos(self) -> dict[str, CommandInfo]:
        from typer.main import get_command_name

        out = {}
        for info in [*self._app.lazy_commands, *(i for more in self._app.dynamic_commands for i in more())]:
            callback = info.callback
            assert callback is not None, "a command must have a callback"
            out[info.name or get_command_name(callback.__name__)] = info
        return out

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            from typer.main import get_command_from_info

            info = self.infos()[name]  # KeyError: no such command
            self._built[name] = get_command_from_info(
                info, pretty_exceptions_short=self._app.pretty_exceptions_short, rich_markup_mode=self._app.rich_markup_mode
            )
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]  # only added commands can be removed

    def __iter__(self) -> Iterator[str]:
        names = list(self.infos())
        return iter(names + [n for n in self._built if n not in names])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def summary(self, name: str) -> Any:
        """The built command, or a parameterless stand-in with its help (enough for a help listing)."""
        if name in self._built:
            return self._built[name]
        info = self.infos()[name]
        text = inspect.getdoc(info.callback) if info.help is None else inspect.cleandoc(info.help)
        return TyperCommand(name=name, help=text, short_help=info.short_help, hidden=info.hidden, deprecated=info.deprecated)


class MobilegenGroup(TyperGroup):
    """The root group: commands built on use, usage errors in mobilegen's style."""

    source: ClassVar[LazyTyper]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        lazy = _LazyCommands(self.source)
        lazy.update(self.commands)
        self.commands = lazy

    def get_help_option(self, ctx: Context) -> TyperOption | None:
        option = super().get_help_option(ctx)
        if option is not None and option.default is None:
            # False, not "not given": Typer then skips its coercion, which imports pydantic (~100 ms)
            # for every `mobilegen COMMAND --help`.
            option.default = False
        return option  # type: ignore[no-any-return,unused-ignore]

    def list_commands(self, ctx: Context) -> list[str]:
        return list(self.commands)  # names only: TyperGroup's reads every command (building it)

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        lazy = self.commands
        assert isinstance(lazy, _LazyCommands)
        commands = [(name, cmd) for name in self.list_commands(ctx) if not (cmd := lazy.summary(name)).hidden]
        if commands:
            with formatter.section("Commands"):
                formatter.write_dl([(name, cmd.short_help or first_sentence(cmd.help or "")) for name, cmd in commands])

    def make_context(self, info_name: str | None, args: list[str], parent: Context | None = None, **extra: Any) -> Context:
        with closed_pipe_exit(), usage_errors(args):
            return super().make_context(info_name, args, parent, **extra)  # type: ignore[no-any-return,unused-ignore]

    def invoke(self, ctx: Context) -> Any:
        args = [*ctx._protected_args, *ctx.args]
        command = args[0] if args and args[0] in self.list_commands(ctx) else None
        with closed_pipe_exit(), usage_errors(args, command=command):
            return super().invoke(ctx)


class LazyTyper(typer.Typer):
    """A Typer app whose commands are built on use (``MobilegenGroup``) as ``MobilegenCommand``s."""

    def __init__(self, **kwargs: Any) -> None:
        self.lazy_commands: list[CommandInfo] = []
        # functions giving more commands, asked each time the commands are listed (a registered target's)
        self.dynamic_commands: list[Callable[[], list[CommandInfo]]] = []
        super().__init__(cls=type("Group", (MobilegenGroup,), {"source": self}), **kwargs)

    def command(self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs: Any) -> Callable[[F], F]:
        register = super().command(name, cls=cls or MobilegenCommand, **kwargs)

        def decorator(f: F) -> F:
            register(f)
            self.lazy_commands.append(self.registered_commands.pop())  # Typer would build it up front
            return f

        return decorator


_SENTENCE_END = re.compile(r"(?<![ (])\.(?=\s|$)")


def first_sentence(text: str) -> str:
    """A command's summary in ``mobilegen --help``: the first sentence of its help, whole (Click's short
    help cut it at the line width with "…"), without the full stop."""
    paragraph = " ".join(inspect.cleandoc(text).split("\n\n", 1)[0].split())
    end = _SENTENCE_END.search(paragraph)
    return paragraph[: end.start()] if end else paragraph


@contextmanager
def closed_pipe_exit() -> Iterator[None]:
    """The reader of stdout or stderr has gone (``| head``): nothing more can be said, so nothing is: exit
    :data:`PIPE_CLOSED_EXIT`. Both streams then point at /dev/null, so that Python's flush at exit does not
    fail again (and print "Exception ignored ... BrokenPipeError")."""
    try:
        yield
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        for stream in (sys.stdout, sys.stderr):
            try:
                os.dup2(devnull, stream.fileno())
            except (AttributeError, OSError, ValueError):  # not a file (a test runner's buffer): nothing to flush
                pass
        os.close(devnull)
        raise typer.Exit(PIPE_CLOSED_EXIT) from None


@contextmanager
def usage_errors(args: Sequence[str], *, command: str | None = None) -> Iterator[None]:
    """Click's usage errors as one ``error:`` line (and the JSON document with ``--json``), exit 2.
    ``command``: the command being run, for errors Click raises without a context."""
    try:
        yield
    except click_exc.NoArgsIsHelpError as err:  # `mobilegen` alone: the help, as Click shows it
        err.show()
        raise typer.Exit(2) from None
    except click_exc.UsageError as err:
        report_usage_error(err, args, command=command)


def report_usage_error(err: Any, args: Sequence[str], *, command: str | None = None) -> NoReturn:
    from mobilegen.cli.console import emit_json, print_error

    message, hint = describe_usage_error(err, args, command=command)
    if "--json" in args[: args.index("--") if "--" in args else len(args)]:
        emit_json({"error": "usage", "message": message, "hint": hint, "details": [], "exit_code": 2})
    print_error(f"{message} — {hint}")
    raise typer.Exit(2) from None


def describe_usage_error(err: Any, args: Sequence[str], *, command: str | None = None) -> tuple[str, str]:
    """(message, hint) for a Click usage error: the message in mobilegen's wording (lower case, no full
    stop), the hint what to pass or where the flags are listed. ``command``: the command being run, when
    the error has no context to say it (Click's "option does not take a value")."""
    text = " ".join(err.format_message().split()).rstrip(".")
    message = text[:1].lower() + text[1:] if text[1:2].islower() else text
    ctx = err.ctx
    name = ctx.info_name if ctx is not None and ctx.parent is not None else command
    see = f"see 'mobilegen {name} --help'" if name else "see 'mobilegen --help'"
    hint = getattr(err, "hint", None)
    if hint:
        return message, f"{hint}; {see}"
    spaced = _spaced_list(err, message, args)
    if spaced is not None:
        flag, typed, metavar = spaced
        values = [v.strip(",") for v in typed]
        counts = (1, len(metavar.split(",")))  # A,B,C: one value for every channel, or one each
        if len(values) in counts:
            fix = f"write {flag} {','.join(values)}"
        else:  # joining them would be refused too: the forms that are valid
            fix = f"write one value ({flag} {values[0]}) or {counts[1]} comma-separated ({flag} {metavar})"
        return (
            f"{flag} takes its values as one comma-separated list, got {' '.join(typed)!r} (separated by spaces)",
            f"{fix}; {see}",
        )
    flag_value = _value_given_to_flag(err, message, args)
    if flag_value is not None:
        flag, value = flag_value
        return (
            f"option '{flag}' is a flag and takes no value (got {value!r})",
            f"give {flag} to turn it on, leave it out to keep it off; {see}",
        )
    return message, see


def _value_given_to_flag(err: Any, message: str, args: Sequence[str]) -> tuple[str, str] | None:
    """(flag, value) when the error is a value given to a flag: ``--FLAG=true`` (Click: "does not take a
    value") or ``--FLAG true`` (Click: an unexpected extra argument ``true``), else None."""
    if isinstance(err, click_exc.BadOptionUsage) and "does not take a value" in message:
        flag = str(err.option_name)
        given = next((a.split("=", 1)[1] for a in args if a.startswith(flag + "=")), "")
        return flag, given
    if "unexpected extra argument" in message:
        ctx = err.ctx
        flags = {o for p in getattr(getattr(ctx, "command", None), "params", ()) if getattr(p, "is_flag", False) for o in p.opts}
        return next(((a, b) for a, b in zip(args, args[1:], strict=False) if a in flags and b.lower() in _BOOL_WORDS), None)
    return None


def _spaced_list(err: Any, message: str, args: Sequence[str]) -> tuple[str, list[str], str] | None:
    """(option, its values as typed, its placeholder) when Click's extra arguments are the rest of a
    comma-list option's values written with spaces (``--mean 0.5 0.5 0.5``: Click takes ``0.5`` and
    leaves two extra arguments), else None. The options are those whose placeholder is a comma list
    (``A,B,C``)."""
    if "unexpected extra argument" not in message:
        return None
    params = getattr(getattr(err.ctx, "command", None), "params", ())
    listy = {o: str(p.metavar) for p in params if "," in str(getattr(p, "metavar", "") or "") for o in p.opts}
    for i, arg in enumerate(args[:-1]):
        flag, eq, joined = arg.partition("=")  # --mean=0.5 0.5 0.5 too
        if flag in listy and (eq or i + 2 < len(args)):
            values = [joined] if eq else [args[i + 1]]
            for extra in args[i + (1 if eq else 2) :]:
                if not _is_number(extra):
                    break
                values.append(extra)
            if len(values) > 1 and _is_number(values[0].rstrip(",")):
                return flag, values, listy[flag]
    return None


def _is_number(text: str) -> bool:
    try:
        float(text.strip(","))
    except ValueError:
        return False
    return True
