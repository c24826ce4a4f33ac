"""Render a template tree: ``*.jinja`` files are rendered (suffix dropped), every other file is copied
byte-exact with its mode (exec bit kept, e.g. ``gradlew``). Path components may be templates too
(``{{ package_path }}/{{ class_name }}.kt.jinja``); a component that renders empty skips the file.

Templates never compute: callers pass a ready context (safe identifiers, escaped literals) and the
language filters from ``mobilegen.render.lang``.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any

import jinja2

from mobilegen.artifacts import ModelLink
from mobilegen.errors import InternalError, RenderError

TEMPLATE_SUFFIX = ".jinja"


def templates_root() -> Path:
    """``templates/`` of the source tree, or the ``mobilegen.templates`` data package of a wheel."""
    src = Path(__file__).resolve().parents[2] / "templates"  # mobilegen/render/tree.py -> the repository root
    if src.is_dir():
        return src
    return Path(str(resources.files("mobilegen.templates")))


FRAGMENTS = "providers"  # include "providers/<name>/<platform>/<file>": a provider's template fragment


def fragments_dir(provider: str) -> Path:
    """Where the template fragments of the provider called ``provider`` are: its own ``fragments`` folder
    (a plug-in's), else ``templates/providers/<name>/`` (the built-ins')."""
    from mobilegen import providers

    found = providers.find(provider)
    if found is not None and found.fragments:
        return Path(found.fragments)
    return templates_root() / FRAGMENTS / provider


def has_fragment(provider: str, name: str) -> bool:
    """Whether the provider has the fragment ``name`` ("android/add_provider.kt.jinja")."""
    return (fragments_dir(provider) / name).is_file()


class _ProviderFragments(jinja2.BaseLoader):
    """``providers/<name>/<path>``: ``<path>`` in the provider's fragment folder (:func:`fragments_dir`), so
    a template includes each chosen provider's piece without naming any provider."""

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str | None, Callable[[], bool] | None]:
        prefix, _, rest = template.partition("/")
        name, _, path = rest.partition("/")
        if prefix != FRAGMENTS or not name or not path:
            raise jinja2.TemplateNotFound(template)
        return jinja2.FileSystemLoader(str(fragments_dir(name))).get_source(environment, path)


def _environment(loader: jinja2.BaseLoader | None, filters: Mapping[str, Callable[..., Any]]) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(filters)
    return env


def _render_path(env: jinja2.Environment, rel: PurePosixPath, context: Mapping[str, Any]) -> PurePosixPath | None:
    parts: list[str] = []
    for comp in rel.parts:
        if "{{" in comp or "{%" in comp:
            try:
                value = env.from_string(comp).render(context)
            except jinja2.UndefinedError as err:
                raise InternalError(f"template path {rel}: {err.message}", hint="this is a bug in mobilegen's templates or context") from err
            if not value:
                return None
            parts.extend(p for p in value.split("/") if p)
        else:
            parts.append(comp)
    out = PurePosixPath(*parts)
    if out.is_absolute() or ".." in out.parts:
        raise RenderError(f"template path {rel} renders outside the project: {out}")
    return out


def render_tree(
    template_dir: Path,
    context: Mapping[str, Any],
    dest: Path,
    *,
    filters: Mapping[str, Callable[..., Any]] | None = None,
) -> list[PurePosixPath]:
    """Render ``template_dir`` into ``dest`` (which must not exist yet). Returns the written paths, sorted."""
    filters = dict(filters or {})
    env = _environment(jinja2.ChoiceLoader([jinja2.FileSystemLoader(str(template_dir)), _ProviderFragments()]), filters)
    path_env = _environment(None, filters)
    written: list[PurePosixPath] = []
    for src in sorted(p for p in template_dir.rglob("*") if p.is_file()):
        rel = PurePosixPath(src.relative_to(template_dir).as_posix())
        if "__pycache__" in rel.parts:
            continue
        is_template = rel.name.endswith(TEMPLATE_SUFFIX)
        if is_template:
            rel = rel.with_name(rel.name[: -len(TEMPLATE_SUFFIX)])
        target_rel = _render_path(path_env, rel, context)
        if target_rel is None:
            continue
        target = dest.joinpath(*target_rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        if is_template:
            name = src.relative_to(template_dir).as_posix()
            try:
                text = env.get_template(name).render(context)
            except jinja2.UndefinedError as err:
                raise InternalError(
                    f"template {name}: {err.message}",
                    hint="this is a bug in mobilegen's templates or context; please report it",
                ) from err
            except jinja2.TemplateError as err:
                raise InternalError(f"template {name}: {err}", hint="this is a bug in mobilegen's templates") from err
            target.write_text(text, encoding="utf-8", newline="\n")
            shutil.copymode(src, target)
        else:
            shutil.copyfile(src, target)
            shutil.copymode(src, target)
        if target.read_bytes()[:2] == b"#!":
            # Scripts stay executable even where the template's mode was lost (e.g. some wheel installers).
            target.chmod(target.stat().st_mode | 0o111)
        written.append(target_rel)
    return sorted(written)


_SAFE_LINK = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*")


def model_link_context(link: ModelLink | None) -> dict[str, Any] | None:
    """The render context of a project that copies its model from the package folder at build time:
    the model's package path, the same path seen from the project folder (one level down), its size and
    sha256. The path is a fixed name of mobilegen's layout; anything else is a bug, never rendered."""
    if link is None:
        return None
    if not _SAFE_LINK.fullmatch(link.path) or ".." in link.path.split("/") or not re.fullmatch(r"[0-9a-f]{64}", link.sha256) or link.size < 0:
        raise InternalError(f"model link {link.path!r} is not a plain package path with a sha256", hint="this is a bug in mobilegen's pipeline")
    return {"package_path": link.path, "from_project": f"../{link.path}", "size": link.size, "sha256": link.sha256}
