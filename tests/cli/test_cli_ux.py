"""What a newcomer sees: plain --help, one style of usage error, stage status lines on a terminal only,
tables that keep every value whole off a terminal."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import onnx
import pytest
import typer
from cli_helpers import assert_fails, invoke
from onnx import TensorProto, helper
from typer.testing import Result

import mobilegen.cli.console as console
from mobilegen import providers
from mobilegen.cli import app
from mobilegen.infra import progress

STATUS = re.compile(r"^\s*\d+\.\ds  (\S.*)$")


def _relu_erf(path: Path, *, input_name: str = "x", output_name: str = "y") -> Path:
    nodes = [
        helper.make_node("Relu", [input_name], ["a"], name="r1"),
        helper.make_node("Erf", ["a"], ["b"], name="erf"),
        helper.make_node("Relu", ["b"], [output_name], name="r2"),
    ]
    x = helper.make_tensor_value_info(input_name, TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info(output_name, TensorProto.FLOAT, [1, 4])
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return _relu_erf(tmp_path / "m.onnx")


@pytest.fixture
def fake_tty(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """stderr counts as a terminal (the console is remade for it, and again afterwards)."""
    console.err_console.cache_clear()
    monkeypatch.setattr(console, "_isatty", lambda stream: True)
    yield
    console.err_console.cache_clear()


def status_lines(stderr: str) -> list[str]:
    """The stage lines as a terminal shows them (a count's line rewritten in place shows its last text)."""
    shown = [line.rsplit("\r\x1b[2K", 1)[-1] for line in stderr.split("\n")]
    return [m.group(1).rstrip() for line in shown if (m := STATUS.match(line.rstrip("\r")))]


def command_names() -> list[str]:
    listing = invoke("--help").stdout.split("Commands:", 1)[1]
    # a summary that wraps continues on lines indented under it
    return [line.split()[0] for line in listing.splitlines() if line.strip() and not line.startswith("   ")]


# --- progress -----------------------------------------------------------------------------------------


def test_reporter_writes_one_line_per_stage() -> None:
    buf = StringIO()
    with progress.reporting(progress.Reporter(buf)):
        progress.step("exporting")
        for k in (1, 2, 3):
            progress.count("verifying", k, 3)
        progress.step("rendering", "android")
    assert status_lines(buf.getvalue()) == ["exporting", "verifying 3/3", "rendering android"]
    assert buf.getvalue().endswith("\n")  # the last line is ended before any result is printed


def test_no_reporter_no_output(capsys: pytest.CaptureFixture[str]) -> None:
    progress.step("exporting")
    progress.count("verifying", 1, 2)
    assert capsys.readouterr() == ("", "")


def test_status_lines_on_a_terminal(model: Path, tmp_path: Path, fake_tty: None) -> None:
    r = invoke("convert", model, "-o", tmp_path / "out.ort")
    assert r.exit_code == 0, r.stderr
    lines = status_lines(r.stderr)
    assert lines[:2] == ["exporting", "converting"], r.stderr
    assert re.fullmatch(r"running the reference (\d+)/\1", lines[2]) and re.fullmatch(r"verifying (\d+)/\1", lines[3]), lines
    assert "wrote" in r.stderr.split("verifying")[-1]  # the result comes after the stages, on its own line


def test_check_status_lines(model: Path, fake_tty: None) -> None:
    r = invoke("check", model, "--ep", "nnapi")
    assert r.exit_code == 0, r.stderr
    assert status_lines(r.stderr) == ["loading", "analysing"]


@pytest.mark.parametrize("tty", [True, False])
def test_no_status_lines_with_json_or_off_a_terminal(model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tty: bool) -> None:
    console.err_console.cache_clear()
    monkeypatch.setattr(console, "_isatty", lambda stream: tty)
    try:
        r = invoke("convert", model, "-o", tmp_path / "out.ort", *(["--json"] if tty else []))
    finally:
        console.err_console.cache_clear()
    assert r.exit_code == 0, r.stderr
    assert status_lines(r.stderr) == [] and "exporting" not in r.stderr and "\x1b[2K" not in r.stderr, r.stderr
    if tty:
        assert json.loads(r.stdout)["output"] == str(tmp_path / "out.ort")


def test_progress_reporter_only_on_a_terminal_without_json(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stderr", Tty())
    assert isinstance(console.progress_reporter(json_out=False), progress.Reporter)
    assert console.progress_reporter(json_out=True) is None
    monkeypatch.setattr("sys.stderr", StringIO())
    assert console.progress_reporter(json_out=False) is None


# --- tables off a terminal ----------------------------------------------------------------------------


def test_tables_keep_long_values_whole_off_a_terminal(tmp_path: Path) -> None:
    long_in, long_out = "encoder_" + "x" * 140, "logits_" + "y" * 120
    path = _relu_erf(tmp_path / "long.onnx", input_name=long_in, output_name=long_out)
    console.err_console.cache_clear()  # made for this (non-terminal) stderr
    r = invoke("inspect", path)
    assert r.exit_code == 0, r.stderr
    assert any(long_in in line for line in r.stderr.splitlines()), r.stderr
    assert any(long_out in line for line in r.stderr.splitlines()), r.stderr
    r = invoke("check", path, "--ep", "nnapi")
    assert r.exit_code == 0, r.stderr
    assert any("Erf" in line and "op Erf has no NNAPI builder" in line for line in r.stderr.splitlines()), r.stderr


# --- --help -------------------------------------------------------------------------------------------


def test_help_lists_every_command() -> None:
    names = command_names()
    assert names[:9] == ["inspect", "export", "convert", "android", "ios", "package", "verify", "check", "fix"][: len(names[:9])]
    assert {"android", "ios", "package", "check", "verify"} <= set(names)


@pytest.mark.parametrize("name", ["inspect", "export", "convert", "android", "ios", "package", "verify", "check", "web", "react-native"])
def test_help_shows_plain_flags_and_metavars(name: str) -> None:
    r = invoke(name, "--help")
    assert r.exit_code == 0, r.stderr
    text = r.stdout
    assert not re.search(r"<(bool|path|int|float|str|list\[\w+\])>", text), text
    usage = text.splitlines()[0]
    assert usage == f"Usage: mobilegen {name} [OPTIONS] {'PACKAGE' if name == 'verify' else 'MODEL'}", usage
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    for param in command.params:
        if getattr(param, "is_flag", False) and not param.hidden and param.opts:
            flag = param.opts[-1]
            # a tri-state on/off pair (--normalize / --no-normalize: unset means the model's own default) shows both
            pair = "".join(f" / {re.escape(o)}" for o in param.secondary_opts)
            assert re.search(rf"^\s+(-\w, )?{re.escape(flag)}{pair}(\s{{2,}}|$)", text, re.M), (flag, text)


def test_help_names_what_values_are() -> None:
    text = invoke("android", "--help").stdout
    for shown in ("-i, --input NAME:SHAPE", "-o, --output DIR", "--opset N", "--sample FILE.npz", "--android-api LEVEL"):
        assert shown in text, shown
    assert "--nnapi " in text and "--nnapi true" not in text


def test_help_names_values_of_every_option() -> None:
    # `--const TEXT`, fix's `--ep TEXT` and `--coreml-format TEXT` said nothing about the value
    assert "--const NAME=VALUE" in invoke("export", "--help").stdout
    text = invoke("fix", "--help").stdout
    for shown in ("--ep EP", "--coreml-format FORMAT", "--android-api LEVEL", "--const NAME=VALUE"):
        assert shown in text, shown
    assert " TEXT " not in text


@pytest.mark.parametrize("name", ["fix", "check", "android", "package"])
def test_android_api_help_has_the_registry_range_and_default(name: str) -> None:
    setting = next(s for p in providers.all_providers() if (s := p.setting("android_api")) is not None)
    text = " ".join(invoke(name, "--help").stdout.split())
    assert f"--android-api LEVEL Android API level the NNAPI rules assume ({setting.range_text}; default {setting.default})." in text


def test_command_list_shows_each_first_sentence_whole() -> None:
    # Click cut each summary at the line width with "…"
    listing = invoke("--help").stdout.split("Commands:", 1)[1]
    assert "…" not in listing and "..." not in listing
    flat = " ".join(listing.split())
    for info in app.lazy_commands:  # type: ignore[attr-defined]
        doc = " ".join(str(info.callback.__doc__).split())
        first = doc.split(". ", 1)[0].removesuffix(".")
        assert first in flat, first
    assert "Exit 0" not in flat  # verify's first sentence only, not its second paragraph


def test_every_command_help_runs_on_its_own() -> None:
    for name in command_names():
        r = invoke(name, "--help")
        assert r.exit_code == 0 and r.stdout.startswith(f"Usage: mobilegen {name} "), (name, r.stdout, r.stderr)


# --- usage errors: one style --------------------------------------------------------------------------


LINE = re.compile(r"^error: [a-z].* — .+$")


def _json_error(r: Result) -> dict[str, object]:
    doc = json.loads(r.stdout)
    assert set(doc) >= {"error", "message", "hint", "details", "exit_code"} and doc["exit_code"] == 2 and doc["error"] == "usage", doc
    return doc


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["export", "m.pt", "--bogus"], ["no such option: --bogus", "see 'mobilegen export --help'"]),
        (["export"], ["missing argument 'MODEL'", "see 'mobilegen export --help'"]),
        (["nosuch"], ["no such command 'nosuch'", "see 'mobilegen --help'"]),
        (["android", "m.pt", "--opset", "abc"], ["invalid value for '--opset'"]),
    ],
)
def test_click_usage_errors_are_one_mobilegen_line(args: list[str], needles: list[str], tmp_path: Path) -> None:
    line = assert_fails(invoke(*args), 2, *needles, alone=True)
    assert LINE.match(line), line
    if args[0] != "nosuch":
        _json_error(invoke(*args, "--json"))


def test_mobilegen_usage_errors_look_the_same(model: Path, tmp_path: Path) -> None:
    line = assert_fails(invoke("package", model, "-o", tmp_path / "out"), 2, "package needs a target", "pass --android", alone=True)
    assert LINE.match(line), line
    assert _json_error(invoke("package", model, "-o", tmp_path / "out", "--json"))["message"] == "package needs a target"
    assert not (tmp_path / "out").exists()


def test_check_without_ep_lists_the_choices(model: Path) -> None:
    r = invoke("check", model)
    line = assert_fails(r, 2, "missing option '--ep'", alone=True)
    for name in providers.names():
        assert name in line, line
    assert LINE.match(line), line
    assert "nnapi" in str(_json_error(invoke("check", model, "--json"))["hint"])


@pytest.mark.parametrize("args", [["android", "m.pt", "--nnapi", "true"], ["android", "--nnapi", "true", "m.pt"], ["ios", "m.pt", "--coreml", "yes"]])
def test_a_value_after_a_flag_says_flags_take_none(args: list[str]) -> None:
    flag = args[args.index("true" if "true" in args else "yes") - 1]
    assert_fails(invoke(*args), 2, f"option '{flag}' is a flag and takes no value", f"give {flag} to turn it on", alone=True)


@pytest.mark.parametrize(("command", "flag"), [("android", "--nnapi"), ("ios", "--coreml"), ("package", "--zip")])
def test_flag_equals_value_says_the_same_as_flag_space_value(command: str, flag: str) -> None:
    # `--nnapi=true` said "see 'mobilegen --help'" and dropped the explanation `--nnapi true` gets
    joined = assert_fails(invoke(command, "m.pt", f"{flag}=true"), 2, alone=True)
    spaced = assert_fails(invoke(command, "m.pt", flag, "true"), 2, alone=True)
    assert joined == spaced == (
        f"error: option '{flag}' is a flag and takes no value (got 'true') — give {flag} to turn it on, leave it out to keep it off; "
        f"see 'mobilegen {command} --help'"
    )
    assert _json_error(invoke(command, "m.pt", f"{flag}=true", "--json"))["hint"] == _json_error(invoke(command, "m.pt", flag, "true", "--json"))["hint"]


def test_repeated_ep_is_reported_once(model: Path, tmp_path: Path) -> None:
    r = invoke("check", model, "--ep", "nnapi", "--ep", "xnnpack", "--ep", "nnapi", "--json")
    assert r.exit_code == 0, r.stderr
    assert [rep["ep"] for rep in json.loads(r.stdout)["reports"]] == ["nnapi", "xnnpack"]
    out = tmp_path / "fixed.onnx"
    r = invoke("fix", model, "--ep", "nnapi", "--ep", "nnapi", "-o", out, "--json")
    assert r.exit_code == 0, r.stderr
    assert [rep["ep"] for rep in json.loads(r.stdout)["reports"]] == ["nnapi"]
    r = invoke("fix", model, "--ep", "nnapi", "--ep", "nnapi", "-o", out, "--force")
    assert r.exit_code == 0, r.stderr
    assert r.stderr.count("nnapi: ") == 1, r.stderr


def test_a_value_after_an_option_gets_no_flag_hint() -> None:
    line = assert_fails(invoke("android", "m.pt", "--opset", "1", "extra"), 2, "unexpected extra argument")
    assert "is a flag" not in line
