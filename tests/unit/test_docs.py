"""The README and docs/: the generated parts agree with the code (else "run `make docs`"), the README stays
short, and every relative link reaches a file and a heading that exist."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 250


def _gen_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_docs", module)
    spec.loader.exec_module(module)
    return module


gen_docs = _gen_docs()
DOCUMENTS = gen_docs.documents(ROOT)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_generated_parts_agree_with_the_code() -> None:
    stale = gen_docs.stale(ROOT)
    assert not stale, f"generated docs are stale: {', '.join(_rel(p) for p in stale)} — run `make docs`"


def test_every_generated_part_is_used_and_each_table_has_rows() -> None:
    used = {m.group(1) for path in DOCUMENTS for m in gen_docs.BEGIN.finditer(path.read_text(encoding="utf-8"))}
    assert used == set(gen_docs.SECTIONS)
    for name, make in gen_docs.SECTIONS.items():
        assert make().count("\n| ") >= 2, name  # a header and at least one row (the first is the separator)


def _help_flags(help_text: str) -> set[str]:
    """The flags `--help` lists: each option line starts with its flags (``-o, --output DIR  …``)."""
    options = help_text.split("Options:", 1)[1]
    flags = r"^  ((?:-{1,2}[a-z][\w-]*(?:, | / )?)+)"  # `-o, --output` and on/off pairs `--normalize / --no-normalize`
    return {f for m in re.finditer(flags, options, re.M) for f in re.split(r", | / ", m.group(1))}


def test_flag_tables_list_every_option_of_every_command() -> None:
    """Independently of the generator: every command `mobilegen --help` lists has a section in docs/cli.md,
    and its table has every flag `mobilegen COMMAND --help` prints."""
    from typer.testing import CliRunner

    from mobilegen.cli import app

    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^### mobilegen (\S+)\n(.*?)(?=^### |^## |\Z)", text, re.M | re.S))
    runner = CliRunner()
    listing = runner.invoke(app, ["--help"], terminal_width=200).output
    commands = re.findall(r"^  ([a-z][\w-]*)\s{2,}", listing.split("Commands:", 1)[1], re.M)
    assert len(commands) >= 10 and sorted(commands) == sorted(sections)
    for command in commands:
        flags = _help_flags(runner.invoke(app, [command, "--help"], terminal_width=200).output)
        rows = [row.split(" | ")[0] for row in sections[command].splitlines() if row.startswith("| `-")]
        documented = {f for row in rows for f in re.findall(r"`(-[^`]+)`", row)}
        assert "--json" in flags and flags == documented, (command, flags ^ documented)


def test_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES}): move the detail to docs/"


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (duplicates numbered -1, -2, …)."""
    out: set[str] = set()
    fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        if not fence and (m := re.match(r"#{1,6} (.*)", line)):
            base = gen_docs._anchor(m.group(1))
            anchor, n = base, 0
            while anchor in out:
                n += 1
                anchor = f"{base}-{n}"
            out.add(anchor)
    return out


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)  # not links inside code blocks
    text = re.sub(r"`[^`\n]*`", "", text.replace("](", "]\0("))  # keep link targets, drop code spans
    return re.findall(r"\]\0\(([^)\s]+)\)", text)


@pytest.mark.parametrize("path", DOCUMENTS, ids=_rel)
def test_relative_links_reach_a_file_and_heading(path: Path) -> None:
    broken = []
    for target in _links(path):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading with that anchor in {_rel(dest)}")
    assert not broken, f"{_rel(path)}: " + "; ".join(broken)


def test_every_docs_page_is_reachable_from_the_index() -> None:
    index = ROOT / "docs" / "index.md"
    linked = {(index.parent / t.partition("#")[0]).resolve() for t in _links(index)}
    pages = {p.resolve() for p in (ROOT / "docs").rglob("*.md")} - {index.resolve()}
    assert not sorted(_rel(p) for p in pages - linked)


def test_regenerate_rewrites_only_the_marked_part() -> None:
    text = "prose before\n<!-- generated: exit-codes -->\nold table\n<!-- end generated -->\nprose after\n"
    new = gen_docs.regenerate(text)
    assert new.startswith("prose before\n<!-- generated: exit-codes -->\n| code |") and new.endswith("\n<!-- end generated -->\nprose after\n")
    assert "old table" not in new and gen_docs.regenerate(new) == new
    with pytest.raises(ValueError, match="unknown generated part 'nope'"):
        gen_docs.regenerate("<!-- generated: nope -->\n<!-- end generated -->\n")
    with pytest.raises(ValueError, match="has no '<!-- end generated -->'"):
        gen_docs.regenerate("<!-- generated: passes -->\n")


def test_mkdocs_nav_lists_every_page() -> None:
    nav = re.findall(r":\s*(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M)
    pages = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    assert sorted(nav) == pages


_REPO_PATH = re.compile(r"`((?:mobilegen|tests|benchmarks|scripts|templates)/[^`\s]*)`")
_PYTHON_NAME = re.compile(r"`(mobilegen(?:\.[A-Za-z_]\w*)+)(?:\([^`]*\))?`")


def _expand(path: str) -> list[str]:
    """``a/{b,c}/d`` → ``a/b/d``, ``a/c/d``."""
    m = re.search(r"\{([^{}]*)\}", path)
    if m is None:
        return [path]
    return [x for part in m.group(1).split(",") for x in _expand(path[: m.start()] + part + path[m.end() :])]


def _resolves(name: str) -> bool:
    """``mobilegen.a.b`` names a module, or an attribute of the longest module prefix."""
    import importlib

    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.parametrize("path", DOCUMENTS, ids=_rel)
def test_named_files_and_python_names_exist(path: Path) -> None:
    """The repository paths (`mobilegen/passes/registry.py`) and Python names (`mobilegen.tasks.reference`)
    a page names in code still exist: a module moved or renamed is a page to update."""
    text = path.read_text(encoding="utf-8")
    missing = [
        p
        for raw in _REPO_PATH.findall(text)
        if not re.search(r"[<>…*]|\.\.\.", raw)  # a placeholder (`mobilegen/passes/<name>.py`), not a path
        for p in _expand(raw.rstrip(".,;:"))
        if not (ROOT / p).exists()
    ]
    missing += [name for name in _PYTHON_NAME.findall(text) if name != "mobilegen.toml" and not _resolves(name)]
    assert not missing, f"{_rel(path)} names what does not exist: {', '.join(missing)}"
