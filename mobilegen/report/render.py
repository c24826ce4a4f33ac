"""Render the report templates (``templates/report/``) from a :class:`ReportContext`.

Markdown: no autoescape; every model-derived value goes through the ``md`` filter (``md_escape``).
HTML: autoescape on; values are escaped with ``html.escape(quote=True)`` (the ``finalize`` hook), the
escaping every mobilegen HTML page has always used, so a quote is ``&quot;``, not markupsafe's ``&#34;``.
"""

from __future__ import annotations

import dataclasses
import functools
import html
from typing import TYPE_CHECKING

from mobilegen.errors import InternalError
from mobilegen.render.markdown import md_escape
from mobilegen.render.tree import templates_root
from mobilegen.report.context import ReportContext

if TYPE_CHECKING:
    import jinja2

REPORT_TEMPLATES = "report"
MARKDOWN_TEMPLATE = "report.md.jinja"
HTML_TEMPLATE = "report.html.jinja"


@functools.cache
def _environment(autoescape: bool) -> jinja2.Environment:
    import jinja2
    import markupsafe

    def finalize(value: object) -> object:
        if isinstance(value, markupsafe.Markup):  # a macro's output, already escaped
            return value
        return markupsafe.Markup(html.escape(str(value), quote=True))

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_root() / REPORT_TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=autoescape,
        finalize=finalize if autoescape else None,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["md"] = md_escape
    return env


def render(template: str, context: ReportContext) -> str:
    import jinja2

    env = _environment(template.endswith(".html.jinja"))
    fields = {f.name: getattr(context, f.name) for f in dataclasses.fields(context)}
    try:
        return str(env.get_template(template).render(fields))
    except jinja2.TemplateError as err:
        raise InternalError(f"template report/{template}: {err}", hint="this is a bug in mobilegen's report templates; please report it") from err


def render_markdown_text(context: ReportContext) -> str:
    # Sections end with a blank line; the file ends with exactly one newline.
    return render(MARKDOWN_TEMPLATE, context).rstrip("\n") + "\n"


def render_html_text(context: ReportContext) -> str:
    return render(HTML_TEMPLATE, context)
